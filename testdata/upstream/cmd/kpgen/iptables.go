package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	sysctltest "k8s.io/component-helpers/node/util/sysctl/testing"
	"k8s.io/kubernetes/pkg/proxy"
	"k8s.io/kubernetes/pkg/proxy/iptables"
	"k8s.io/kubernetes/pkg/proxy/metaproxier"
	utiliptables "k8s.io/kubernetes/pkg/util/iptables"
	iptablestest "k8s.io/kubernetes/pkg/util/iptables/testing"
)

// recIPT is the iptables fake of pkg/util/iptables/testing with every call
// recorded. EnsureRule receives its arguments as an argv (as the real
// implementation passes them to /sbin/iptables); the fake stores them joined
// by spaces, which loses the quoting of comments with spaces, so the
// properly quoted restore form of every such rule is kept aside.
type recIPT struct {
	*iptablestest.FakeIPTables

	mu      sync.Mutex
	calls   []string
	quoted  map[string]string // rule as the fake stores it -> restore form
	monitor chan monitorReq
}

type monitorReq struct {
	canary utiliptables.Chain
	tables []utiliptables.Table
}

var _ utiliptables.Interface = &recIPT{}

func newRecIPT(fam v1.IPFamily) *recIPT {
	f := iptablestest.NewFake()
	if fam == v1.IPv6Protocol {
		f = iptablestest.NewIPv6Fake()
	}
	return &recIPT{FakeIPTables: f, quoted: map[string]string{}, monitor: make(chan monitorReq, 1)}
}

func (r *recIPT) record(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf(format, args...))
}

func (r *recIPT) EnsureChain(table utiliptables.Table, chain utiliptables.Chain) (bool, error) {
	r.record("EnsureChain %s %s", table, chain)
	return r.FakeIPTables.EnsureChain(table, chain)
}

func (r *recIPT) FlushChain(table utiliptables.Table, chain utiliptables.Chain) error {
	r.record("FlushChain %s %s", table, chain)
	return r.FakeIPTables.FlushChain(table, chain)
}

func (r *recIPT) DeleteChain(table utiliptables.Table, chain utiliptables.Chain) error {
	r.record("DeleteChain %s %s", table, chain)
	return r.FakeIPTables.DeleteChain(table, chain)
}

func (r *recIPT) EnsureRule(pos utiliptables.RulePosition, table utiliptables.Table, chain utiliptables.Chain, args ...string) (bool, error) {
	stored := "-A " + string(chain) + " " + strings.Join(args, " ")
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = quoteArg(a)
	}
	restoreForm := "-A " + string(chain) + " " + strings.Join(q, " ")
	r.mu.Lock()
	r.quoted[stored] = restoreForm
	r.mu.Unlock()
	r.record("EnsureRule %s %s %s", pos, table, restoreForm)
	return r.FakeIPTables.EnsureRule(pos, table, chain, args...)
}

func (r *recIPT) DeleteRule(table utiliptables.Table, chain utiliptables.Chain, args ...string) error {
	r.record("DeleteRule %s %s %s", table, chain, strings.Join(args, " "))
	return r.FakeIPTables.DeleteRule(table, chain, args...)
}

func (r *recIPT) Restore(table utiliptables.Table, data []byte, flush utiliptables.FlushFlag, counters utiliptables.RestoreCountersFlag) error {
	r.record("Restore %s flush=%v counters=%v\n%s", table, flush, counters, data)
	return r.FakeIPTables.Restore(table, data, flush, counters)
}

func (r *recIPT) RestoreAll(data []byte, flush utiliptables.FlushFlag, counters utiliptables.RestoreCountersFlag) error {
	r.record("RestoreAll flush=%v counters=%v\n%s", flush, counters, data)
	return r.FakeIPTables.RestoreAll(data, flush, counters)
}

// Monitor is started by the iptables proxier's constructor in a goroutine.
// The real Monitor first creates the canary chain in every table, then
// polls; here the request is handed to the main goroutine, which creates the
// chains before the first sync (applyMonitor).
func (r *recIPT) Monitor(canary utiliptables.Chain, tables []utiliptables.Table, _ func(), _ time.Duration, _ <-chan struct{}) {
	r.monitor <- monitorReq{canary: canary, tables: tables}
}

func (r *recIPT) applyMonitor() error {
	select {
	case req := <-r.monitor:
		for _, t := range req.tables {
			if _, err := r.EnsureChain(t, req.canary); err != nil {
				return err
			}
		}
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("the iptables proxier did not start its Monitor")
	}
}

func quoteArg(a string) string {
	if strings.ContainsAny(a, " \t") && !strings.HasPrefix(a, `"`) {
		return `"` + a + `"`
	}
	return a
}

// builtinChains lists the built-in chains of each table in iptables-save's
// order.
var builtinChains = map[utiliptables.Table][]utiliptables.Chain{
	utiliptables.TableMangle: {"PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"},
	utiliptables.TableFilter: {"INPUT", "FORWARD", "OUTPUT"},
	utiliptables.TableNAT:    {"PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"},
}

// renderRestore writes the final state of a recording fake as one complete
// iptables-restore input that recreates it in an empty namespace: the jump
// rules the proxier ensured in built-in chains (in the order the prepends
// left them) merged with the chains and rules of its restore payloads.
func renderRestore(r *recIPT, sortChains map[utiliptables.Table][]string) (string, error) {
	var buf bytes.Buffer
	for _, tname := range []utiliptables.Table{utiliptables.TableMangle, utiliptables.TableFilter, utiliptables.TableNAT} {
		t, err := r.Dump.GetTable(tname)
		if err != nil {
			return "", err
		}
		if len(t.Chains) == 0 {
			continue
		}
		isBuiltin := map[utiliptables.Chain]bool{}
		for _, c := range builtinChains[tname] {
			isBuiltin[c] = true
		}
		var order []*iptablestest.Chain
		for _, bc := range builtinChains[tname] {
			for i := range t.Chains {
				if t.Chains[i].Name == bc {
					order = append(order, &t.Chains[i])
				}
			}
		}
		var user []*iptablestest.Chain
		for i := range t.Chains {
			if !isBuiltin[t.Chains[i].Name] {
				user = append(user, &t.Chains[i])
			}
		}
		sort.Slice(user, func(i, j int) bool { return user[i].Name < user[j].Name })
		order = append(order, user...)

		fmt.Fprintf(&buf, "*%s\n", tname)
		for _, c := range order {
			if isBuiltin[c.Name] {
				fmt.Fprintf(&buf, ":%s ACCEPT [0:0]\n", c.Name)
			} else {
				fmt.Fprintf(&buf, ":%s - [0:0]\n", c.Name)
			}
		}
		sortable := map[string]bool{}
		for _, c := range sortChains[tname] {
			sortable[c] = true
		}
		for _, c := range order {
			var lines []string
			for _, rule := range c.Rules {
				line := rule.Raw
				if q, ok := r.quoted[line]; ok {
					line = q
				}
				lines = append(lines, line)
			}
			if sortable[string(c.Name)] {
				lines = sortServiceRules(lines)
			}
			for _, l := range lines {
				buf.WriteString(l)
				buf.WriteByte('\n')
			}
		}
		buf.WriteString("COMMIT\n")
	}
	return buf.String(), nil
}

var commentRE = regexp.MustCompile(`--comment (?:"([^"]*)"|(\S+))`)

// ruleComment returns the text of a rule's --comment, if any.
func ruleComment(rule string) (string, bool) {
	m := commentRE.FindStringSubmatch(rule)
	if m == nil {
		return "", false
	}
	if m[1] != "" {
		return m[1], true
	}
	return m[2], true
}

// sortServiceRules stable-sorts the rules of a chain that kube-proxy fills
// while ranging over a Go map. The key is the service port name that starts
// the rule's comment ("ns/name:port ..."), so the rules of one service port
// keep their relative order; rules without a comment are keyed by their
// text. The NodePorts tail rules of KUBE-SERVICES stay last.
func sortServiceRules(lines []string) []string {
	type keyed struct {
		key  string
		line string
	}
	var body, tail []keyed
	for _, l := range lines {
		c, ok := ruleComment(l)
		switch {
		case ok && strings.HasPrefix(c, "kubernetes service nodeports"):
			tail = append(tail, keyed{l, l})
		case ok:
			key, _, _ := strings.Cut(c, " ")
			body = append(body, keyed{key, l})
		default:
			body = append(body, keyed{l, l})
		}
	}
	sort.SliceStable(body, func(i, j int) bool { return body[i].key < body[j].key })
	sort.SliceStable(tail, func(i, j int) bool { return tail[i].key < tail[j].key })
	out := make([]string, 0, len(lines))
	for _, k := range append(body, tail...) {
		out = append(out, k.line)
	}
	return out
}

// iptablesSortChains are the chains the iptables proxier writes in map order.
var iptablesSortChains = map[utiliptables.Table][]string{
	utiliptables.TableNAT:    {"KUBE-SERVICES", "KUBE-NODEPORTS"},
	utiliptables.TableFilter: {"KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES", "KUBE-NODEPORTS", "KUBE-PROXY-FIREWALL"},
}

var nfacctRE = regexp.MustCompile(`--nfacct-name\s+(\S+)`)

// nfacctCounters lists the nfacct counters the rules reference.
func nfacctCounters(restores ...string) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range restores {
		for _, m := range nfacctRE.FindAllStringSubmatch(r, -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				out = append(out, m[1])
			}
		}
	}
	sort.Strings(out)
	return out
}

func newSysctl(in *inputs) *sysctltest.Fake {
	s := sysctltest.NewFake()
	// platformSetup applies conntrack.tcpBeLiberal before the proxier
	// reads it back.
	if in.config.Linux.Conntrack.TCPBeLiberal {
		s.Settings["net/netfilter/nf_conntrack_tcp_be_liberal"] = 1
	}
	return s
}

func recorder() events.EventRecorder { return &events.FakeRecorder{} }

type iptablesBackend struct {
	families []v1.IPFamily
	ipt      map[v1.IPFamily]*recIPT
	prov     proxy.Provider
}

func newIPTablesBackend(ctx context.Context, in *inputs) (*iptablesBackend, error) {
	b := &iptablesBackend{families: in.families, ipt: map[v1.IPFamily]*recIPT{}}
	det := localDetectors(in.config, in.podCIDRs)
	provs := map[v1.IPFamily]proxy.Provider{}
	for _, fam := range in.families {
		ipt := newRecIPT(fam)
		p, err := iptables.NewProxier(ctx, in.config, fam, ipt, newSysctl(in), det[fam],
			in.nodeName, in.nodeIPs[fam], recorder(), nil, false)
		if err != nil {
			return nil, fmt.Errorf("%s iptables proxier: %w", fam, err)
		}
		replaceHostHandles(p, in)
		setField(p, "nfacct", newFakeNFAcct())
		if err := ipt.applyMonitor(); err != nil {
			return nil, err
		}
		b.ipt[fam] = ipt
		provs[fam] = p
	}
	b.prov = joinProviders(in.families, provs)
	return b, nil
}

// joinProviders returns the single proxier, or the IPv4 and IPv6 proxiers
// joined by metaproxier as kube-proxy does on a dual-stack node.
func joinProviders(families []v1.IPFamily, p map[v1.IPFamily]proxy.Provider) proxy.Provider {
	if len(families) == 1 {
		return p[families[0]]
	}
	return metaproxier.NewMetaProxier(p[v1.IPv4Protocol], p[v1.IPv6Protocol])
}

func (b *iptablesBackend) provider() proxy.Provider { return b.prov }

func (b *iptablesBackend) write(dir string, opts options) error {
	var all []string
	for _, fam := range b.families {
		var sortChains map[utiliptables.Table][]string
		if opts.sort {
			sortChains = iptablesSortChains
		}
		text, err := renderRestore(b.ipt[fam], sortChains)
		if err != nil {
			return err
		}
		all = append(all, text)
		if err := writeFile(dir, "iptables-restore."+familySuffix(fam), text); err != nil {
			return err
		}
	}
	counters := nfacctCounters(all...)
	content := ""
	if len(counters) > 0 {
		content = strings.Join(counters, "\n") + "\n"
	}
	return writeFile(dir, "nfacct.txt", content)
}
