package proxier

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

const miniBundle = "../../testdata/bundles/iptables-mini"

// miniCase returns the mini bundle's snapshot, its expected data plane and
// its captured dump text.
func miniCase(t *testing.T) (*model.Snapshot, *Dataplane, string) {
	t.Helper()
	snap := loadScenario(t, miniBundle)
	exp, err := expectFor(snap, testOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(miniBundle, "node", "iptables-save.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return snap, exp, string(data)
}

func captured(t *testing.T, snap *model.Snapshot, text string) *Dataplane {
	t.Helper()
	d, err := iptables.Parse("node/iptables-save.txt", []byte(text))
	if err != nil {
		t.Fatalf("parsing the edited dump: %v", err)
	}
	d.Family = iptables.IPv4
	return &Dataplane{Mode: model.ModeIPTables, IPTables: []*iptables.Dump{d}, ports: snap.Ports}
}

// edit applies regexp replacements to a dump, failing when one matches
// nothing.
func edit(t *testing.T, text string, pairs ...string) string {
	t.Helper()
	for i := 0; i < len(pairs); i += 2 {
		re := regexp.MustCompile(pairs[i])
		if !re.MatchString(text) {
			t.Fatalf("edit %q matches nothing", pairs[i])
		}
		text = re.ReplaceAllString(text, pairs[i+1])
	}
	return text
}

// want describes one expected difference: its kind, chain, service and a
// substring of its rule.
type want struct {
	kind           DiffKind
	chain, service string
	rule, note     string
}

func checkDiffs(t *testing.T, got []Difference, wants []want) {
	t.Helper()
	used := make([]bool, len(got))
	for _, w := range wants {
		found := false
		for i, d := range got {
			if used[i] || d.Kind != w.kind || d.Chain != w.chain || d.Service != w.service ||
				!strings.Contains(d.Rule, w.rule) || !strings.Contains(d.Note, w.note) {
				continue
			}
			used[i], found = true, true
			break
		}
		if !found {
			t.Errorf("no difference %+v", w)
		}
	}
	for i, d := range got {
		if !used[i] {
			t.Errorf("unexpected difference: %s %s %s %q (%s, by %s) %s", d.Kind, d.Table, d.Chain, d.Rule, d.Service, d.How, d.Note)
		}
	}
}

func TestCompare(t *testing.T) {
	const svcWeb = "KUBE-SVC-67NZLRHBNDSAWJRO"
	for _, tc := range []struct {
		name  string
		edits []string
		want  []want
	}{
		{name: "identical"},
		{
			name: "services in another order",
			edits: []string{
				`(-A KUBE-SERVICES -d 10\.96\.0\.1/32 [^\n]*\n)((?:-A KUBE-SERVICES -d [^\n]*\n)+)`, "$2$1",
				`(-A KUBE-NODEPORTS -d 127[^\n]*front[^\n]*\n-A KUBE-NODEPORTS -p tcp[^\n]*front[^\n]*\n)((?:-A KUBE-NODEPORTS [^\n]*ledger[^\n]*\n)+)`, "$2$1",
			},
		},
		{
			name:  "restore-input spelling",
			edits: []string{`-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000`, `-A KUBE-MARK-MASQ -j MARK --or-mark 0x00004000`},
		},
		{
			name:  "missing endpoint rule",
			edits: []string{`-A KUBE-SVC-67NZLRHBNDSAWJRO -m comment --comment "shop/web:http -> 10\.244\.3\.5:8080" -j KUBE-SEP-FT7X35X732GD6ZKC\n`, ""},
			want:  []want{{kind: MissingRule, chain: svcWeb, service: "shop/web:http", rule: "10.244.3.5:8080"}},
		},
		{
			name:  "wrong probability",
			edits: []string{`(shop/web:http -> 10\.244\.1\.5:8080" -m statistic --mode random --probability) 0\.33333333349`, "$1 0.50000000000"},
			want: []want{
				{kind: MissingRule, chain: svcWeb, service: "shop/web:http", rule: "0.33333333349"},
				{kind: ExtraRule, chain: svcWeb, service: "shop/web:http", rule: "10.244.1.5:8080\" -m statistic --mode random --probability 0.50000000000"},
			},
		},
		{
			name:  "endpoint rules swapped",
			edits: []string{`(-A KUBE-SVC-U5MVZ3EQIVJ2AQZC [^\n]*--rcheck[^\n]*3QZT[^\n]*\n)(-A KUBE-SVC-U5MVZ3EQIVJ2AQZC [^\n]*--rcheck[^\n]*\n)`, "$2$1"},
			want: []want{
				{kind: MissingRule, chain: "KUBE-SVC-U5MVZ3EQIVJ2AQZC", service: "shop/sessions", rule: "--rcheck", note: "another position"},
				{kind: ExtraRule, chain: "KUBE-SVC-U5MVZ3EQIVJ2AQZC", service: "shop/sessions", rule: "--rcheck", note: "out of order"},
			},
		},
		{
			name:  "service rule after the node-ports rule",
			edits: []string{`(-A KUBE-SERVICES -d 10\.96\.0\.1/32 [^\n]*\n)((?:-A KUBE-SERVICES [^\n]*\n)+)`, "$2$1"},
			want: []want{
				{kind: ExtraRule, chain: "KUBE-SERVICES", service: "default/kubernetes:https", rule: "10.96.0.1/32", note: "node-ports rule"},
				{kind: MissingRule, chain: "KUBE-SERVICES", service: "default/kubernetes:https", rule: "10.96.0.1/32"},
			},
		},
		{
			name: "stale endpoint chain of a gone service",
			edits: []string{
				`(:KUBE-SERVICES - \[0:0\]\n)(:KUBE-SVC-)`, ":KUBE-SEP-ZZZZZZZZZZZZZZZZ - [0:0]\n$1$2",
				`(\nCOMMIT\n# Completed on [^\n]*\n)$`, "\n-A KUBE-SEP-ZZZZZZZZZZZZZZZZ -p tcp -m tcp -j DNAT --to-destination 10.244.7.7:80$1",
			},
			want: []want{
				{kind: ExtraChain, chain: "KUBE-SEP-ZZZZZZZZZZZZZZZZ"},
				{kind: ExtraRule, chain: "KUBE-SEP-ZZZZZZZZZZZZZZZZ", rule: "10.244.7.7:80"},
			},
		},
		{
			name: "missing endpoint chain",
			edits: []string{
				`:KUBE-SEP-FT7X35X732GD6ZKC - \[0:0\]\n`, "",
				`-A KUBE-SEP-FT7X35X732GD6ZKC [^\n]*\n`, "",
			},
			want: []want{
				{kind: MissingChain, chain: "KUBE-SEP-FT7X35X732GD6ZKC", service: "shop/web:http"},
				{kind: MissingRule, chain: "KUBE-SEP-FT7X35X732GD6ZKC", service: "shop/web:http", rule: "-j KUBE-MARK-MASQ"},
				{kind: MissingRule, chain: "KUBE-SEP-FT7X35X732GD6ZKC", service: "shop/web:http", rule: "DNAT"},
			},
		},
		{
			name: "foreign and kubelet rules are not compared",
			edits: []string{
				`(:KUBE-EXTERNAL-SERVICES - \[0:0\]\n)`, ":CNI-FORWARD - [0:0]\n$1:KUBE-MARK-DROP - [0:0]\n:KUBE-KUBELET-CANARY - [0:0]\n",
				`(-A INPUT -j KUBE-FIREWALL\n)`, "-A INPUT -j CNI-FORWARD\n$1",
				`(-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall")`, "-A FORWARD -j CNI-FORWARD\n$1",
				`(-A KUBE-FIREWALL ! -s)`, "-A KUBE-FIREWALL -m comment --comment \"kubernetes firewall for dropping marked packets\" -m mark --mark 0x8000/0x8000 -j DROP\n$1",
				`(-A KUBE-FORWARD -m conntrack --ctstate INVALID)`, "-A KUBE-MARK-DROP -j MARK --set-xmark 0x8000/0x8000\n$1",
			},
		},
		{
			name:  "jump rules of a built-in chain in another order",
			edits: []string{`(-A INPUT -j KUBE-FIREWALL\n)(-A INPUT [^\n]*\n)`, "$2$1"},
		},
		{
			name:  "missing jump rule",
			edits: []string{`-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES\n`, ""},
			want:  []want{{kind: MissingRule, chain: "OUTPUT", rule: "kubernetes service portals"}},
		},
		{
			name:  "reject rule attributed by address",
			edits: []string{`-m comment --comment "shop/cart:http has no endpoints" `, ""},
			want: []want{
				{kind: MissingRule, chain: "KUBE-SERVICES", service: "shop/cart:http", rule: "has no endpoints"},
				{kind: ExtraRule, chain: "KUBE-SERVICES", service: "shop/cart:http", rule: "-d 10.96.10.40/32 -p tcp -m tcp --dport 80 -j REJECT"},
			},
		},
		{
			name:  "rule without comment attributed by chain hash",
			edits: []string{`-A KUBE-SVC-3B5O6DIIKSXDYUHS -m comment --comment "shop/front:web -> 10\.244\.2\.6:8080" `, "-A KUBE-SVC-3B5O6DIIKSXDYUHS "},
			want: []want{
				{kind: MissingRule, chain: "KUBE-SVC-3B5O6DIIKSXDYUHS", service: "shop/front:web"},
				{kind: ExtraRule, chain: "KUBE-SVC-3B5O6DIIKSXDYUHS", service: "shop/front:web", rule: "-A KUBE-SVC-3B5O6DIIKSXDYUHS -j KUBE-SEP-HYRXJA7HILW3OHNS"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap, exp, text := miniCase(t)
			act := captured(t, snap, edit(t, text, tc.edits...))
			checkDiffs(t, Compare(exp, act), tc.want)
		})
	}
}

func TestCompareNoCapture(t *testing.T) {
	snap, exp, _ := miniCase(t)
	diffs := Compare(exp, &Dataplane{Mode: model.ModeIPTables})
	rules, chains := 0, 0
	for _, d := range diffs {
		switch d.Kind {
		case MissingRule:
			rules++
		case MissingChain:
			chains++
		default:
			t.Errorf("unexpected %s", d.Kind)
		}
	}
	if want := exp.IPTables[0].NumRules(); rules != want {
		t.Errorf("%d missing rules, want all %d", rules, want)
	}
	if chains == 0 {
		t.Error("no missing chains")
	}
	rep, err := ServiceDiff(resolved(snap), "shop/web", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Captured || len(rep.Differences) != 0 || rep.ExpectedRules != 11 {
		t.Errorf("ServiceDiff(shop/web) = %+v, want a clean comparison of 11 rules", rep)
	}
}

func TestForService(t *testing.T) {
	diffs := []Difference{{Service: "a/b:x"}, {Service: "a/b:y"}, {Service: "a/b"}, {Service: "a/bc:x"}, {}}
	for _, tc := range []struct {
		name string
		n    int
	}{{"a/b", 3}, {"a/b:x", 1}, {"a/bc", 1}, {"z/z", 0}} {
		if got := len(ForService(diffs, tc.name)); got != tc.n {
			t.Errorf("ForService(%s) = %d differences, want %d", tc.name, got, tc.n)
		}
	}
}

func TestLIS(t *testing.T) {
	for _, tc := range []struct {
		seq  []int
		want int
	}{{nil, 0}, {[]int{0, 1, 2}, 3}, {[]int{1, 0, 2}, 2}, {[]int{3, 2, 1, 0}, 1}, {[]int{0, 4, 1, 2, 3}, 4}} {
		n := 0
		for _, m := range lis(tc.seq) {
			if m {
				n++
			}
		}
		if n != tc.want {
			t.Errorf("lis(%v) marks %d, want %d", tc.seq, n, tc.want)
		}
	}
}
