package checks_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/internal/pastetest"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// pasteBase is the bundle whose dump the fixtures of testdata/paste are
// made from, and whose exports and configuration they are analysed with.
const pasteBase = "testdata/bundles/iptables-mini"

// TestPasteFixtures keeps the fixtures of testdata/paste equal to the
// dump of pasteBase with each kind of paste damage (internal/pastetest)
// applied (rewritten with -update).
func TestPasteFixtures(t *testing.T) {
	root := parsetest.Root(t)
	clean, err := os.ReadFile(filepath.Join(root, pasteBase, "node", "iptables-save.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, d := range pastetest.Damages {
		want[d.Name+".txt"] = d.Apply(string(clean))
	}
	for _, c := range pastetest.Cuts {
		want[c.Name+".txt"] = c.Apply(string(clean))
	}
	have, _ := filepath.Glob(filepath.Join(root, "testdata", "paste", "*.txt"))
	for _, f := range have {
		if _, ok := want[filepath.Base(f)]; !ok {
			t.Errorf("%s is no fixture of internal/pastetest", f)
		}
	}
	for name, content := range want {
		file := filepath.Join(root, "testdata", "paste", name)
		got, err := os.ReadFile(file)
		if err == nil && string(got) == content {
			continue
		}
		if *parsetest.Update {
			if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s is not the fixture internal/pastetest makes (run go test -update)", file)
	}
}

// TestFormFixtures keeps the fixtures of testdata/paste/forms that are
// made from the dump of pasteBase (internal/pastetest's Forms) current,
// and every fixture there one of pastetest's Forms or Listings
// (rewritten with -update).
func TestFormFixtures(t *testing.T) {
	root := parsetest.Root(t)
	clean, err := os.ReadFile(filepath.Join(root, pasteBase, "node", "iptables-save.txt"))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, l := range pastetest.Listings {
		known[l.Name+".txt"] = true
	}
	for _, f := range pastetest.Forms {
		known[f.Name+".txt"] = true
		file := filepath.Join(root, "testdata", "paste", "forms", f.Name+".txt")
		base := clean
		if f.Base != "" {
			if base, err = os.ReadFile(filepath.Join(root, "testdata", "bundles", f.Base)); err != nil {
				t.Fatal(err)
			}
		}
		content := f.Apply(string(base))
		got, err := os.ReadFile(file)
		if err == nil && string(got) == content {
			continue
		}
		if *parsetest.Update {
			if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s is not the fixture internal/pastetest makes (run go test -update)", file)
	}
	have, _ := filepath.Glob(filepath.Join(root, "testdata", "paste", "forms", "*.txt"))
	for _, f := range have {
		if !known[filepath.Base(f)] {
			t.Errorf("%s is no fixture of internal/pastetest", f)
		}
	}
}

// listingTools are the versions of the tools that made the listings of
// testdata/paste/forms.
var listingTools = map[string]string{"iptables": "iptables v1.8.9 (nf_tables)", "nft": "nftables v1.0.6 (Lester Gooch #5)"}

// TestListingFixtures keeps the fixtures of testdata/paste/forms equal to
// what iptables -L prints of the dump of pasteBase (internal/pastetest's
// Listings): the dump is restored in a scratch network namespace and
// listed by the iptables installed, with the names of
// testdata/paste/forms/etc in place of the node's (so that iptables -L
// without -n prints the same names everywhere). Rewritten with -update;
// it needs root.
func TestListingFixtures(t *testing.T) {
	netnstest.RequireTools(t, "iptables-restore", "nfacct", "nft", "unshare", "mount")
	root := parsetest.Root(t)
	clean, err := os.ReadFile(filepath.Join(root, pasteBase, "node", "iptables-save.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// What iptables and nft print differs between their versions: the
	// fixtures are those of the versions that made them.
	for tool, want := range listingTools {
		out, err := exec.Command(tool, "--version").Output()
		if err != nil {
			t.Skipf("%s --version: %v", tool, err)
		}
		if got := strings.TrimSpace(string(out)); got != want {
			t.Skipf("the fixtures are what %s prints, this is %s", want, got)
		}
	}
	ns := netnstest.New(t)
	// The nfacct objects the dump's rules count in.
	ns.Run(nil, "nfacct", "add", "ct_state_invalid_dropped_pkts")
	ns.Run(nil, "nfacct", "add", "localhost_nps_accepted_pkts")
	ns.Run(clean, "iptables-restore")
	etc := filepath.Join(root, "testdata", "paste", "forms", "etc")
	var binds []string
	for _, f := range []string{"hosts", "networks", "services", "nsswitch.conf"} {
		binds = append(binds, fmt.Sprintf("mount --bind %s /etc/%s", filepath.Join(etc, f), f))
	}
	for _, l := range pastetest.Listings {
		var outs []string
		for _, c := range l.Commands {
			script := strings.Join(binds, " && ") + " && exec " + l.Program() + " " + strings.Join(c, " ")
			outs = append(outs, string(ns.Run(nil, "unshare", "-m", "sh", "-c", script)))
		}
		content := l.Paste(outs)
		file := filepath.Join(root, "testdata", "paste", "forms", l.Name+".txt")
		got, err := os.ReadFile(file)
		if err == nil && string(got) == content {
			continue
		}
		if *parsetest.Update {
			if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s is not what iptables prints (run go test -update):\n%s", file, parsetest.Diff(got, []byte(content)))
	}
}

// TestPasteGolden analyses every fixture of testdata/paste (and
// testdata/paste/forms) with the
// exports and configuration of pasteBase, and compares what was
// understood, skipped and changed, what the checks ran on and the verdict
// with <fixture>.golden (rewritten with -update).
func TestPasteGolden(t *testing.T) {
	root := parsetest.Root(t)
	t.Chdir(root)
	files, err := filepath.Glob("testdata/paste/*.txt")
	forms, _ := filepath.Glob("testdata/paste/forms/*.txt")
	files = append(files, forms...)
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txt")
		t.Run(name, func(t *testing.T) {
			paths := []string{file, pasteBase + "/cluster", pasteBase + "/kube-proxy"}
			if strings.HasPrefix(name, "configmap-") {
				// The node without its configuration, which the fixture is.
				paths = []string{file, pasteBase + "/node", pasteBase + "/cluster/cluster.yaml", pasteBase + "/cluster/node.yaml", pasteBase + "/kube-proxy/version.txt"}
			}
			if strings.HasPrefix(name, "export-") {
				// The node's export, which the fixture is, and the rest.
				paths = []string{file, pasteBase + "/node", pasteBase + "/cluster/node.yaml", pasteBase + "/cluster/kube-proxy-configmap.yaml", pasteBase + "/kube-proxy"}
			}
			if strings.HasPrefix(name, "nftables-") {
				// An nftables-mode node's listing, analysed with its
				// cluster's export alone.
				paths = []string{file, "testdata/bundles/nftables-healthy/cluster/cluster.yaml"}
			}
			if strings.HasPrefix(name, "ipvs-") {
				// The rest of an IPVS node, but what the fixture holds.
				b := "testdata/bundles/" + pastetest.IPVSBase
				paths = []string{file, b + "/cluster", b + "/kube-proxy/config.yaml", b + "/kube-proxy/version.txt", b + "/node/iptables-save.txt", b + "/node/ip-addr.txt"}
				if !strings.Contains(name, "metrics") {
					paths = append(paths, b+"/kube-proxy/metrics.txt")
				}
				if !strings.Contains(name, "ipvsadm") {
					paths = append(paths, b+"/node/ipvsadm.txt")
				}
				if !strings.Contains(name, "ipset") {
					paths = append(paths, b+"/node/ipset-save.txt")
				}
			}
			parsetest.GoldenFile(t, strings.TrimSuffix(file, ".txt")+".golden", pasteSummary(t, file, paths))
		})
	}
}

// pasteSummary describes the analysis of a pasted fixture.
func pasteSummary(t *testing.T, file string, paths []string) []byte {
	var b strings.Builder
	if snaps, err := load.Load(paths, load.Options{Strict: true}); err != nil {
		fmt.Fprintf(&b, "strict: %s\n", strings.SplitN(err.Error(), "\n", 2)[0])
	} else {
		for _, in := range snaps[0].Inputs {
			if in.Path == file {
				fmt.Fprintf(&b, "strict: read as %s\n", in.Kind)
			}
		}
	}
	snaps, err := load.Load(paths, load.Options{})
	if err != nil {
		fmt.Fprintf(&b, "lenient: %v\n", err)
		return []byte(b.String())
	}
	s := snaps[0]
	for _, in := range s.Inputs {
		if in.Path != file {
			continue
		}
		fmt.Fprintf(&b, "kind: %s\n", in.Kind)
		if in.Note != "" {
			fmt.Fprintf(&b, "note: %s\n", in.Note)
		}
		writeRanges(&b, "skipped", in.Skipped)
		writeRanges(&b, "changed", in.Changed)
		if in.Partial != "" {
			fmt.Fprintf(&b, "partial: %s\n", in.Partial)
		}
	}
	for _, d := range s.IPTables {
		if d.Name == file {
			fmt.Fprintf(&b, "understood: %s\n", understood(d))
		}
	}
	for _, l := range s.Logs {
		if l.File != file {
			continue
		}
		var ids []string
		truncated := 0
		for _, m := range l.Matches() {
			ids = append(ids, fmt.Sprintf("%s (line %d)", m.Pattern.ID, m.Entry.Pos.Line))
		}
		for _, e := range l.Entries {
			if e.Truncated {
				truncated++
			}
		}
		fmt.Fprintf(&b, "log: %d entries (%d truncated), known: %s\n", len(l.Entries), truncated, orNone(strings.Join(ids, ", ")))
	}
	if m := s.Metrics; m != nil && m.File == file {
		for _, f := range m.KubeProxy().Families {
			if d := f.SyncDuration; d != nil && d.P50 != nil {
				fmt.Fprintf(&b, "metrics: family %q: %v syncs, p50 %.3gs\n", f.IPFamily, float64(d.Count), float64(*d.P50))
			}
		}
	}
	if strings.Contains(file, "/forms/") {
		r := resolve.Resolve(s, resolve.Options{})
		fmt.Fprintf(&b, "mode: %s (%s)\n", r.Mode, r.ModeSource)
	}
	res := checks.Run(s, checks.All)
	ran, skipped := 0, 0
	var notes []string
	for _, st := range res.Statuses {
		if st.State == "ran" {
			ran++
		} else {
			skipped++
		}
		for _, n := range st.Notes {
			if strings.Contains(n, "is partial") {
				notes = append(notes, st.ID+": "+n)
			}
		}
	}
	fmt.Fprintf(&b, "checks: %d ran, %d skipped\n", ran, skipped)
	count := map[string]int{}
	for _, f := range res.Findings {
		count[f.Check]++
	}
	var fs []string
	for c, n := range count {
		fs = append(fs, fmt.Sprintf("%s %d", c, n))
	}
	sort.Strings(fs)
	fmt.Fprintf(&b, "findings: %s\n", orNone(strings.Join(fs, ", ")))
	for _, n := range notes {
		fmt.Fprintf(&b, "not checked: %s\n", n)
	}
	fmt.Fprintf(&b, "verdict: %s\n", res.Verdict())
	for _, g := range res.Coverage.Gaps {
		fmt.Fprintf(&b, "gap: %s\n", g)
	}
	for _, n := range res.Coverage.Needs {
		fmt.Fprintf(&b, "need: %s: %s\n", n.Input, n.Command)
	}
	return []byte(b.String())
}

func writeRanges(b *strings.Builder, what string, rs []parsers.LineRange) {
	if len(rs) == 0 {
		return
	}
	n := parsers.CountLines(rs)
	fmt.Fprintf(b, "%s: %d line%s:", what, n, map[bool]string{true: "s"}[n != 1])
	for _, r := range rs {
		if r.From == r.To {
			fmt.Fprintf(b, " %d", r.From)
		} else {
			fmt.Fprintf(b, " %d-%d", r.From, r.To)
		}
		fmt.Fprintf(b, " %s", r.Reason)
		if r.Detail != "" {
			fmt.Fprintf(b, " (%s)", r.Detail)
		}
		b.WriteString(";")
	}
	b.WriteString("\n")
}

// understood counts the rules of each table of a dump.
func understood(d *iptables.Dump) string {
	var parts []string
	for _, t := range d.Tables {
		n := 0
		for _, c := range t.Chains {
			n += len(c.Rules)
		}
		parts = append(parts, fmt.Sprintf("%s %d rules", t.Name, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
