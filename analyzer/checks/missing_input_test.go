package checks_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// findingKey identifies a finding across runs whose messages may differ
// in what they say was assumed.
func findingKey(f checks.Finding) string {
	return f.Check + " " + f.Service + " " + f.Protocol + " " + f.Endpoint
}

// An iptTable is one table of an iptables-save dump.
type iptTable struct{ name, text string }

// splitTables cuts an iptables-save dump into its tables, the lines
// before the first one (comments) going with it.
func splitTables(dump string) []iptTable {
	var out []iptTable
	var cur strings.Builder
	name := ""
	for _, l := range strings.SplitAfter(dump, "\n") {
		cur.WriteString(l)
		if strings.HasPrefix(l, "*") {
			name = strings.TrimSpace(l[1:])
		}
		if strings.HasPrefix(l, "COMMIT") || strings.HasPrefix(l, "# Completed") {
			if strings.HasPrefix(l, "# Completed") && len(out) > 0 {
				out[len(out)-1].text += cur.String()
				cur.Reset()
				continue
			}
			out = append(out, iptTable{name, cur.String()})
			cur.Reset()
		}
	}
	if len(out) > 0 {
		out[len(out)-1].text += cur.String()
	}
	return out
}

// joinTables joins tables but the one at skip.
func joinTables(tables []iptTable, skip int) string {
	var b strings.Builder
	for i, tb := range tables {
		if i != skip {
			b.WriteString(tb.text)
		}
	}
	return b.String()
}

// splitNFT cuts an nft list ruleset listing into its tables (a table's
// block ends with a "}" at the start of a line).
func splitNFT(text string) []iptTable {
	var out []iptTable
	var cur strings.Builder
	name := ""
	for _, l := range strings.SplitAfter(text, "\n") {
		cur.WriteString(l)
		if strings.HasPrefix(l, "table ") {
			name = strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(l, "table ")), " {")
		}
		if strings.HasPrefix(l, "}") {
			out = append(out, iptTable{name, cur.String()})
			cur.Reset()
		}
	}
	if len(out) > 0 {
		out[len(out)-1].text += cur.String()
	}
	return out
}

// joinNFT joins tables but the one at skip.
func joinNFT(tables []iptTable, skip int) string { return joinTables(tables, skip) }

// listItems cuts a v1 List as kubectl prints it into the lines before its
// items, each item, and the lines after them.
func listItems(list string) (head string, items []string, tail string) {
	lines := strings.SplitAfter(list, "\n")
	i := 0
	for i < len(lines) && lines[i] != "items:\n" {
		head += lines[i]
		i++
	}
	if i < len(lines) {
		head += lines[i]
		i++
	}
	for ; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "- "):
			items = append(items, l)
		case (strings.HasPrefix(l, " ") || strings.HasPrefix(l, "#") || l == "\n") && len(items) > 0:
			items[len(items)-1] += l
		default:
			tail += strings.Join(lines[i:], "")
			return head, items, tail
		}
	}
	return head, items, tail
}

// itemKind returns the kind of one item of a List.
func itemKind(item string) string {
	for _, l := range strings.Split(item, "\n") {
		if strings.HasPrefix(l, "  kind: ") {
			return strings.TrimSpace(strings.TrimPrefix(l, "  kind: "))
		}
	}
	return ""
}

// listKinds returns the kinds of a List's items, each once, in order.
func listKinds(list string) []string {
	_, items, _ := listItems(list)
	var out []string
	seen := map[string]bool{}
	for _, it := range items {
		if k := itemKind(it); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// filterKind rewrites a List keeping the items keep accepts.
func filterKind(list string, keep func(kind string) bool) string {
	head, items, tail := listItems(list)
	var b strings.Builder
	b.WriteString(head)
	for _, it := range items {
		if keep(itemKind(it)) {
			b.WriteString(it)
		}
	}
	b.WriteString(tail)
	return b.String()
}

// TestWithoutInput: a healthy bundle without one input gets no finding
// from its absence; the check that lacks it notes what was not checked,
// or is skipped, saying what to add.
func TestWithoutInput(t *testing.T) {
	for _, tc := range []struct {
		bundle, name string
		// without returns the files to leave out and to rewrite, from the
		// bundle's files.
		without func(files map[string]string) (drop []string, edit map[string]string)
		check   string
		// state is the check's state; note is in its notes or reason.
		state, note string
		// gap is in one of the coverage gaps ("" for none required).
		gap string
		// need is in the command of one of the coverage needs.
		need string
	}{
		{"iptables-healthy", "the nat table", withoutTable("node/iptables-save.txt", "nat"),
			"service-missing", "ran", "not checked for 19 service ports", "node/iptables-save.txt (IPv4) is partial: it holds no nat table", "iptables-save > iptables-save.txt"},
		{"iptables-mini", "the filter table", withoutTable("node/iptables-save.txt", "filter"),
			"no-endpoints-unrejected", "ran", "not checked for 2 service ports", "it holds no filter table", "iptables-save > iptables-save.txt"},
		{"iptables-healthy", "the nat table of ip6tables-save", withoutTable("node/ip6tables-save.txt", "nat"),
			"service-missing", "ran", "not checked for 2 service ports (media/web6:http, media/web:http)", "node/ip6tables-save.txt (IPv6) is partial", "ip6tables-save > ip6tables-save.txt"},
		{"ipvs-healthy-mini", "the filter table", withoutTable("node/iptables-save.txt", "filter"),
			"external-missing", "ran", "not checked for 1 service port", "it holds no filter table", "iptables-save > iptables-save.txt"},
		{"nftables-healthy", "its EndpointSlices", withoutKind("cluster/cluster.yaml", "EndpointSlice"),
			"no-endpoints-unrejected", "skipped", "no EndpointSlices in the inputs", "did not run: no EndpointSlices", "kubectl get services,endpointslices"},
		{"ipvs-healthy-mini", "its EndpointSlices", withoutKind("cluster/cluster.yaml", "EndpointSlice"),
			"no-endpoints-unrejected", "skipped", "no EndpointSlices in the inputs", "did not run: no EndpointSlices", "kubectl get services,endpointslices"},
		{"ipvs-healthy", "its EndpointSlices", withoutKind("cluster/cluster.yaml", "EndpointSlice"),
			"orphan-rules", "ran", "1 member of KUBE-LOOP-BACK not checked: no EndpointSlices in the inputs", "did not run: no EndpointSlices", "kubectl get services,endpointslices"},
		{"nftables-healthy", "its Node object", drop("cluster/node.yaml"),
			"endpoint-missing", "ran", "node unknown", "Local traffic policy of shop/catalog:http, shop/checkout:http, shop/payments:grpc, shop/recommender:http not checked", "kubectl get node"},
		{"iptables-mini", "its Node object", drop("cluster/node.yaml"),
			"service-missing", "ran", "node unknown", "Local traffic policy of shop/front:web, shop/ledger:grpc, shop/static:http not checked", "kubectl get node"},
		{"nftables-healthy", "the ip6 table", withoutNFTTable("ip6 kube-proxy"),
			"service-missing", "ran", "no IPv6 data plane in the inputs", "2 IPv6 service ports not checked", "nft list ruleset"},
		{"iptables-healthy", "ip6tables-save", drop("node/ip6tables-save.txt"),
			"endpoint-stale", "ran", "no IPv6 data plane in the inputs", "2 IPv6 service ports not checked", "ip6tables-save"},
		{"ipvs-healthy-mini", "its ipset listing", drop("node/ipset-save.txt"),
			"service-missing", "ran", "", "service-missing: no ipset listing in the inputs", "ipset save > ipset-save.txt"},
		{"ipvs-healthy", "ip6tables-save", drop("node/ip6tables-save.txt"),
			"service-missing", "ran", "", "service-missing: no IPv6 iptables rules in the inputs", "iptables-save > iptables-save.txt"},
		{"ipvs-healthy-mini", "ip addr", drop("node/ip-addr.txt"),
			"service-missing", "ran", "service addresses are taken as bound to kube-ipvs0", "", ""},
		{"ipvs-healthy-mini", "ip addr", drop("node/ip-addr.txt"),
			"service-unreachable", "ran", "", "", ""},
		{"iptables-mini", "ip addr", drop("node/ip-addr.txt"),
			"service-unreachable", "ran", "", "", ""},
		{"nftables-healthy", "ip addr", drop("node/ip-addr.txt"),
			"service-unreachable", "ran", "", "", ""},
		{"iptables-mini", "its configuration, on a node without kube-proxy rules", func(map[string]string) ([]string, map[string]string) {
			return []string{"kube-proxy/config.yaml", "cluster/kube-proxy-configmap.yaml"},
				map[string]string{"node/iptables-save.txt": "*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n"}
		}, "service-missing", "ran", "the proxy mode is assumed (iptables), and what this check found missing may be programmed by the mode the node runs",
			"the proxy mode is assumed", "configmap kube-proxy"},
	} {
		t.Run(tc.bundle+"/without "+tc.name, func(t *testing.T) {
			drop, edit := tc.without(bundleFiles(t, filepath.Join(parsetest.Root(t), "testdata", "bundles", tc.bundle)))
			dir := copyBundle(t, tc.bundle, func(rel string) bool { return contains(drop, rel) }, edit)
			res := analyse(t, dir, load.Options{})
			for _, f := range res.Findings {
				if f.Severity >= checks.Warning {
					t.Errorf("%s (%s) %s: %s", f.Check, f.Severity, f.Service, f.Message)
				}
			}
			var st checks.Status
			for _, s := range res.Statuses {
				if s.ID == tc.check {
					st = s
				}
			}
			if st.State != tc.state || !strings.Contains(st.Reason+"\n"+strings.Join(st.Notes, "\n"), tc.note) {
				t.Errorf("%s: %s (%s) notes %q; want %s with %q", tc.check, st.State, st.Reason, st.Notes, tc.state, tc.note)
			}
			if tc.gap != "" && !strings.Contains(strings.Join(res.Coverage.Gaps, "\n"), tc.gap) {
				t.Errorf("no gap with %q in %q", tc.gap, res.Coverage.Gaps)
			}
			var cmds []string
			for _, n := range res.Coverage.Needs {
				cmds = append(cmds, n.Command)
			}
			if !strings.Contains(strings.Join(cmds, "\n"), tc.need) {
				t.Errorf("no need with %q in %q", tc.need, cmds)
			}
			if tc.gap != "" && res.Verdict() == checks.VerdictOK {
				t.Errorf("verdict ok")
			}
		})
	}
}

// withoutTable removes a table from an iptables dump of the bundle.
func withoutTable(file, table string) func(map[string]string) ([]string, map[string]string) {
	return func(files map[string]string) ([]string, map[string]string) {
		tables := splitTables(files[file])
		for i, tb := range tables {
			if tb.name == table {
				return nil, map[string]string{file: joinTables(tables, i)}
			}
		}
		return nil, nil
	}
}

// drop leaves files of the bundle out.
func drop(files ...string) func(map[string]string) ([]string, map[string]string) {
	return func(map[string]string) ([]string, map[string]string) { return files, nil }
}

// withoutNFTTable removes a table ("ip6 kube-proxy") from the bundle's
// nft list ruleset, and its JSON form.
func withoutNFTTable(table string) func(map[string]string) ([]string, map[string]string) {
	return func(files map[string]string) ([]string, map[string]string) {
		tables := splitNFT(files["node/nft-ruleset.txt"])
		for i, tb := range tables {
			if tb.name == table {
				return []string{"node/nft-ruleset.json"}, map[string]string{"node/nft-ruleset.txt": joinTables(tables, i)}
			}
		}
		return nil, nil
	}
}

// withoutKind removes the objects of a kind from a List of the bundle.
func withoutKind(file, kind string) func(map[string]string) ([]string, map[string]string) {
	return func(files map[string]string) ([]string, map[string]string) {
		return nil, map[string]string{file: filterKind(files[file], func(k string) bool { return k != kind })}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
