package checks_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/checktest"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// A removal takes one input out of a bundle: files left out, files
// rewritten without a part (a table, a family, the objects of a kind).
type removal struct {
	name string
	drop []string          // slash paths relative to the bundle
	edit map[string]string // slash path → new content
	// verdict says that the verdict depends on the input: without it the
	// run may not be a clean bill of health.
	verdict bool
}

// TestNoFindingFromMissingInput takes each optional input out of each
// healthy bundle, one at a time (with -short every other one, in turn, and
// ip addr; without, all of them and every two at once),
// all but what a ticket usually holds, and all at once, and analyses the
// rest:
// no error or warning may appear that the whole bundle does not have, a
// run that lacks an input its verdict depends on is never ok, and an
// inconclusive one names what to add. The bundles that have no manifest
// are also swept as collected, with one whose sources are all ok: there
// an input taken out is a source the manifest records as skipped.
func TestNoFindingFromMissingInput(t *testing.T) {
	t.Parallel()
	bundles, err := filepath.Glob(filepath.Join(parsetest.Root(t), "testdata", "bundles", "*"))
	if err != nil {
		t.Fatal(err)
	}
	cases, tried := 0, 0
	ipAddr := map[string]bool{} // modes swept without ip addr
	for _, dir := range bundles {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		bundle := filepath.Base(dir)
		for _, collected := range []bool{false, true} {
			files := bundleFiles(t, dir)
			name, base := bundle, map[string]string{}
			if collected {
				if _, ok := files["manifest.json"]; ok || !strings.HasSuffix(bundle, "-healthy-mini") && bundle != "iptables-mini" && bundle != "nftables-healthy" {
					continue
				}
				name += " (collected)"
				base["manifest.json"] = manifestOf(files, "")
				files["manifest.json"] = base["manifest.json"]
			}
			full := analyse(t, copyBundle(t, bundle, nil, base), load.Options{})
			if v := full.Verdict(); v != checks.VerdictOK {
				t.Errorf("%s: the whole bundle's verdict is %s, want ok (%v)", name, v, full.Coverage.Gaps)
			}
			had := map[string]bool{}
			for _, f := range full.Findings {
				had[findingKey(f)] = true
			}
			removals := optionalInputs(full.Mode, files)
			if !testing.Short() {
				removals = append(removals, pairs(removals)...)
			}
			for _, r := range removals {
				// With -short, every other input in turn (ip addr always);
				// every input, and every pair, without.
				if tried++; testing.Short() && tried%2 == 1 && r.name != "node/ip-addr.txt" {
					continue
				}
				cases++
				if r.name == "node/ip-addr.txt" {
					ipAddr[full.Mode] = true
				}
				edit := map[string]string{}
				for k, v := range base {
					edit[k] = v
				}
				for k, v := range r.edit {
					edit[k] = v
				}
				if collected {
					// The manifest of what is left, or none.
					cur := map[string]string{}
					for k, v := range files {
						cur[k] = v
					}
					for k, v := range r.edit {
						cur[k] = v
					}
					edit["manifest.json"] = manifestOf(cur, r.drop...)
					if contains(r.drop, "manifest.json") {
						delete(edit, "manifest.json")
					}
				}
				t.Run(name+"/without "+r.name, func(t *testing.T) {
					res := analyse(t, copyBundle(t, bundle, func(rel string) bool { return contains(r.drop, rel) }, edit), load.Options{})
					for _, f := range res.Findings {
						if f.Severity >= checks.Warning && !had[findingKey(f)] {
							t.Errorf("%s without %s: %s (%s) %s: %s", name, r.name, f.Check, f.Severity, f.Service, f.Message)
						}
					}
					if r.verdict && res.Verdict() == checks.VerdictOK {
						t.Errorf("%s without %s: verdict ok, although the verdict depends on it", name, r.name)
					}
					if res.Verdict() == checks.VerdictInconclusive && len(res.Coverage.Needs) == 0 {
						t.Errorf("%s without %s: inconclusive, with no input named to add (gaps %q)", name, r.name, res.Coverage.Gaps)
					}
				})
			}
		}
	}
	for _, mode := range []string{"iptables", "ipvs", "nftables"} {
		if !ipAddr[mode] {
			t.Errorf("no %s bundle swept without ip addr", mode)
		}
	}
	t.Logf("%d (bundle, removed input) cases", cases)
}

// judgedTrue are findings that appear when an input is taken out of a
// scenario and are true of the inputs left.
var judgedTrue = map[string]bool{
	// Without the nf_tables dump's nat table, the legacy backend's nat
	// rules are the node's iptables rules: they are live in the kernel,
	// and their stale endpoint is one.
	"iptables/iptables-backend-mixed without table nat of node/iptables-save.txt: endpoint-stale": true,
	// The load balancer entry of a Local-policy port that bypasses its
	// firewall chain is judged by external-missing only when the node and
	// its endpoints are known; without them, the firewall chain no rule
	// reaches is still a kube-proxy chain nothing references.
	"iptables/lb-source-ranges-bypassed without cluster/node.yaml: orphan-rules":                                    true,
	"iptables/lb-source-ranges-bypassed without EndpointSlice objects of cluster/cluster.yaml: orphan-rules":        true,
	"iptables/lb-source-ranges-bypassed without all but the data plane, the ConfigMap and the export: orphan-rules": true,
	// A Service port without endpoints whose reject entry was deleted has
	// neither a forward nor a reject entry; without its EndpointSlices,
	// that is what service-missing reports of it (whose evidence is where
	// the forward entries live, no-endpoints-unrejected's where the
	// reject entries do).
	"nftables/no-endpoints-unrejected without every optional input: service-missing":                          true,
	"nftables/no-endpoints-unrejected without EndpointSlice objects of cluster/cluster.yaml: service-missing": true,
	"iptables/no-endpoints-unrejected without EndpointSlice objects of cluster/cluster.yaml: service-missing": true,
	// A rule of a service chain jumping to another endpoint's chain
	// leaves the chain of the endpoint it names unreferenced: with the
	// EndpointSlices, part of the load-balance-skew finding of that rule;
	// without them, a KUBE-SEP chain nothing jumps to.
	"iptables/load-balance-misdirected without EndpointSlice objects of cluster/cluster.yaml: orphan-rules":            true,
	"iptables/load-balance-misdirected-one-of-two without EndpointSlice objects of cluster/cluster.yaml: orphan-rules": true,
	// Without the EndpointSlices and the filter table, the nat table read
	// whole still shows that rule's chain listing the endpoint it jumps to
	// twice (load-balance-skew's warning rather than its error).
	"iptables/load-balance-misdirected without every optional input: load-balance-skew":            true,
	"iptables/load-balance-misdirected-one-of-two without every optional input: load-balance-skew": true,
	// A rule naming an endpoint chain the nat table does not have is
	// refused by iptables-restore whatever else is known; without the
	// EndpointSlices or with the dump's lines moved (no filter table), its
	// finding holds nothing that follows from it and points at another
	// line. The endpoint the lagging rules still forward to is in no
	// EndpointSlice either way.
	"iptables/endpoint-chain-missing-one-of-two without every optional input: ruleset-invalid":                   true,
	"iptables/endpoint-chain-missing-one-of-two without table filter of node/iptables-save.txt: ruleset-invalid": true,
	"iptables/endpoint-chain-missing-lag without every optional input: ruleset-invalid":                          true,
	"iptables/endpoint-chain-missing-lag without table filter of node/iptables-save.txt: ruleset-invalid":        true,
	"iptables/endpoint-chain-missing-lag without table filter of node/iptables-save.txt: endpoint-stale":         true,
}

// nodeEvidence keys a piece of evidence in the node's own files (rules,
// logs, metrics), "" for one in the cluster's exports.
func nodeEvidence(e model.Evidence) string {
	if strings.HasPrefix(e.File, "cluster/") || e.File == "" || e.Line == 0 && e.Path == "" {
		return ""
	}
	return fmt.Sprintf("evidence %s:%d%s", e.File, e.Line, e.Path)
}

// sameCause reports whether a finding points at a line of the node's files
// that a finding of the whole scenario points at too: the fault the whole
// scenario reports, reported by another check (the one that explained it
// lacks its input); or it groups objects as a finding of the whole
// scenario does (one cause, whose objects the input taken out changes).
func sameCause(had map[string]bool, f checks.Finding) bool {
	if len(f.Objects) > 0 && had["grouped"] {
		return true
	}
	for _, e := range f.Evidence {
		if k := nodeEvidence(e); k != "" && had[k] {
			return true
		}
	}
	return false
}

// collectSources names the sources of collect that write a bundle's
// files (collect's source table).
var collectSources = map[string][2]string{
	"node/iptables-save.txt":            {"iptables-nft-save", "exec"},
	"node/ip6tables-save.txt":           {"ip6tables-nft-save", "exec"},
	"node/ipvsadm.txt":                  {"ipvsadm", "exec"},
	"node/ipvsadm-save.txt":             {"ipvsadm-save", "exec"},
	"node/ipset-save.txt":               {"ipset-save", "exec"},
	"node/nft-ruleset.txt":              {"nft-ruleset", "exec"},
	"node/nft-ruleset.json":             {"nft-ruleset-json", "exec"},
	"node/ip-addr.txt":                  {"ip-addr", "exec"},
	"node/sysctl.txt":                   {"sysctl", "file"},
	"node/modules.txt":                  {"modules", "file"},
	"node/conntrack.txt":                {"conntrack-dnat", "exec"},
	"kube-proxy/config.yaml":            {"kube-proxy-config", "file"},
	"kube-proxy/version.txt":            {"kube-proxy-version", "exec"},
	"kube-proxy/metrics.txt":            {"kube-proxy-metrics", "http"},
	"kube-proxy/healthz.json":           {"kube-proxy-healthz", "http"},
	"kube-proxy/log.txt":                {"kube-proxy-log", "file"},
	"cluster/kube-proxy-configmap.yaml": {"cluster-kube-proxy-configmap", "kube-api"},
	"cluster/node.yaml":                 {"cluster-node", "kube-api"},
}

// manifestOf writes the manifest of a bundle as collect would: a source
// for each file it writes, ok, but skipped for the files left out (the
// tool or the endpoint was not there).
func manifestOf(files map[string]string, skipped ...string) string {
	var srcs []string
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		src, ok := collectSources[p]
		if !ok {
			continue
		}
		if contains(skipped, p) {
			srcs = append(srcs, fmt.Sprintf(`{"name": %q, "method": %q, "status": "skipped", "error": "not available on the node", "duration_ms": 0, "bytes": 0}`, src[0], src[1]))
			continue
		}
		sum := sha256.Sum256([]byte(files[p]))
		srcs = append(srcs, fmt.Sprintf(`{"name": %q, "method": %q, "file": %q, "status": "ok", "duration_ms": 1, "bytes": %d, "sha256": %q}`,
			src[0], src[1], p, len(files[p]), hex.EncodeToString(sum[:])))
	}
	return `{"schema": 1, "tool": {"name": "proxyscan", "version": "v0.1.0"}, "host": "node-a", "node_ips": [], "collected_at": "2026-04-14T09:30:00Z",
 "sources": [
  ` + strings.Join(srcs, ",\n  ") + `
 ]}
`
}

// bundleFiles returns the slash paths of a bundle's files with their
// content.
func bundleFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	parsetest.CopyTree(t, dir, t.TempDir(), func(rel string, data []byte) bool {
		files[rel] = string(data)
		return false
	})
	return files
}

// optionalInputs lists the inputs of a bundle that a node of its mode can
// be analysed without, one removal each, the last one removing them all:
// every file but the one data plane listing the mode needs and the
// Services, each table and family of the rule dumps, and the objects of
// each kind but Service in the exports.
func optionalInputs(mode string, files map[string]string) []removal {
	var out []removal
	all := removal{name: "every optional input", edit: map[string]string{}, verdict: true}
	core := map[string]bool{}
	switch mode {
	case "iptables":
		core["node/iptables-save.txt"] = true
	case "ipvs":
		core["node/ipvsadm-save.txt"] = true
	case "nftables":
		core["node/nft-ruleset.txt"] = true
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		content := files[p]
		base := filepath.Base(p)
		switch {
		case core[p]:
		case p == "cluster/cluster.yaml":
		default:
			out = append(out, removal{name: p, drop: []string{p}, verdict: dataPlaneFile(mode, p)})
			all.drop = append(all.drop, p)
		}
		switch {
		case strings.HasSuffix(base, "tables-save.txt"):
			tables := splitTables(content)
			for i, tb := range tables {
				out = append(out, removal{name: "table " + tb.name + " of " + p, edit: map[string]string{p: joinTables(tables, i)}, verdict: tb.name != "mangle"})
			}
			if core[p] {
				// Of the core dump, the nat table, which holds the
				// Service rules, stays.
				var keep []iptTable
				for _, tb := range tables {
					if tb.name == "nat" {
						keep = append(keep, tb)
					}
				}
				all.edit[p] = joinTables(keep, -1)
			}
		case base == "nft-ruleset.txt":
			fams := splitNFT(content)
			for i, fam := range fams {
				drop := []string(nil)
				if files["node/nft-ruleset.json"] != "" {
					drop = []string{"node/nft-ruleset.json"}
				}
				out = append(out, removal{name: "table " + fam.name + " of " + p, drop: drop, edit: map[string]string{p: joinNFT(fams, i)}, verdict: true})
			}
		case strings.HasSuffix(base, ".yaml") && strings.Contains(content, "\nitems:\n"):
			kinds := listKinds(content)
			for _, k := range kinds {
				if k == "Service" {
					continue
				}
				r := removal{name: k + " objects of " + p, edit: map[string]string{p: filterKind(content, func(x string) bool { return x != k })}, verdict: k == "EndpointSlice"}
				if len(kinds) == 1 {
					// A List of that kind alone: the file goes.
					r.edit, r.drop = nil, []string{p}
				}
				out = append(out, r)
			}
			if core[p] || p == "cluster/cluster.yaml" {
				all.edit[p] = filterKind(content, func(x string) bool { return x == "Service" })
			}
		}
	}
	// The configuration is given twice (the file and the ConfigMap).
	var config []string
	for _, p := range []string{"kube-proxy/config.yaml", "cluster/kube-proxy-configmap.yaml"} {
		if _, ok := files[p]; ok {
			config = append(config, p)
		}
	}
	if len(config) == 2 {
		out = append(out, removal{name: "the kube-proxy configuration", drop: config})
	}
	if mode == "ipvs" {
		// One of the two listings of the IPVS table stays.
		out = append(out, removal{name: "node/ipvsadm-save.txt (ipvsadm -Ln kept)", drop: []string{"node/ipvsadm-save.txt"}, verdict: false})
	}
	// The usual attachment to a ticket: the data plane, the ConfigMap and
	// the export, nothing else of the node.
	// In IPVS mode that is ipvsadm -Ln, ipset save and iptables-save.
	ticket := removal{name: "all but the data plane, the ConfigMap and the export"}
	for _, p := range paths {
		keep := p == "cluster/cluster.yaml" || p == "cluster/kube-proxy-configmap.yaml" || dataPlaneFile(mode, p) || core[p] ||
			mode == "iptables" && p == "node/ip6tables-save.txt" || mode == "ipvs" && p == "node/ipvsadm.txt"
		if mode == "ipvs" && p == "node/ipvsadm-save.txt" && files["node/ipvsadm.txt"] != "" {
			keep = false
		}
		if !keep {
			ticket.drop = append(ticket.drop, p)
		}
	}
	return append(out, ticket, all)
}

// pairs returns the removals of two inputs at once, of every two removals
// of singles (the last two, which remove several, left out) that touch no
// file in common.
func pairs(singles []removal) []removal {
	singles = singles[:len(singles)-2]
	var out []removal
	for i, a := range singles {
		for _, b := range singles[i+1:] {
			touched := map[string]bool{}
			for _, f := range a.drop {
				touched[f] = true
			}
			for f := range a.edit {
				touched[f] = true
			}
			disjoint := true
			for _, f := range b.drop {
				disjoint = disjoint && !touched[f]
			}
			for f := range b.edit {
				disjoint = disjoint && !touched[f]
			}
			if !disjoint {
				continue
			}
			r := removal{name: a.name + " and " + b.name, drop: append(append([]string{}, a.drop...), b.drop...),
				edit: map[string]string{}, verdict: a.verdict || b.verdict}
			for f, c := range a.edit {
				r.edit[f] = c
			}
			for f, c := range b.edit {
				r.edit[f] = c
			}
			out = append(out, r)
		}
	}
	return out
}

// dataPlaneFile reports whether a file is part of the data plane the
// core checks read in a mode (other than a second listing of the same
// thing).
func dataPlaneFile(mode, p string) bool {
	switch mode {
	case "iptables":
		return p == "node/ip6tables-save.txt"
	case "ipvs":
		return p == "node/ip6tables-save.txt" || p == "node/iptables-save.txt" || p == "node/ipset-save.txt"
	}
	return false
}

// TestScenariosWithoutInput takes the optional inputs out of each
// scenario of testdata/scenarios (a node with a fault, or a healthy one of
// another shape), ip addr alone under -short, each one without: no error
// or warning may appear that the whole scenario does not have.
func TestScenariosWithoutInput(t *testing.T) {
	cases := 0
	for _, file := range checktest.Files(t, "scenarios/*/*.txtar") {
		name := filepath.Base(filepath.Dir(file)) + "/" + strings.TrimSuffix(filepath.Base(file), ".txtar")
		sc := checktest.Load(t, file)
		files := bundleFiles(t, sc.Dir)
		if _, ok := files["node/ip-addr.txt"]; testing.Short() && !ok {
			continue // -short sweeps the scenarios without ip addr only
		}
		full := analyse(t, sc.Dir, sc.Options)
		had := map[string]bool{}
		for _, f := range full.Findings {
			had[findingKey(f)] = true
			for _, e := range f.Evidence {
				had[nodeEvidence(e)] = true
			}
			if len(f.Objects) > 0 {
				had["grouped"] = true
			}
		}
		for _, r := range optionalInputs(full.Mode, files) {
			if testing.Short() && r.name != "node/ip-addr.txt" {
				continue
			}
			cases++
			t.Run(name+"/without "+r.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				parsetest.CopyTree(t, sc.Dir, dir, func(rel string, _ []byte) bool { return !contains(r.drop, rel) })
				for rel, content := range r.edit {
					if err := os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				snaps, err := load.Load([]string{dir}, sc.Options)
				if err != nil && strings.Contains(err.Error(), "no input files") {
					t.Skipf("%s without %s holds nothing: %v", name, r.name, err) // the input was all there was
				}
				if err != nil {
					t.Fatalf("%s without %s: %v", name, r.name, err)
				}
				res := checks.Run(snaps[0], checks.All)
				for _, f := range res.Findings {
					if judgedTrue[name+" without "+r.name+": "+f.Check] {
						continue
					}
					if f.Severity >= checks.Warning && !had[findingKey(f)] && !sameCause(had, f) {
						t.Errorf("%s without %s: %s (%s) %s: %s", name, r.name, f.Check, f.Severity, f.Service, f.Message)
					}
				}
			})
		}
	}
	if cases == 0 {
		t.Fatal("no scenario swept")
	}
	t.Logf("%d (scenario, removed input) cases", cases)
}
