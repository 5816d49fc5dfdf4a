package resolve_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// TestLayout checks the release read off each bundle's rule layout, and
// that the version of a dump without one is the newest release writing
// its layout, with a note naming that layout.
func TestLayout(t *testing.T) {
	for _, tc := range []struct {
		bundle         string
		oldest, newest int // 0, 0: no old layout
	}{
		{"iptables-v1.18-mini", 10, 18},
		{"iptables-v1.20-mini", 10, 20}, // no filter KUBE-NODEPORTS: 1.20 or older
		{"iptables-v1.22-mini", 10, 22},
		{"iptables-v1.23-mini", 10, 23},
		{"iptables-v1.24-mini", 24, 24},
		{"iptables-mini", 0, 0},
		{"iptables-healthy", 0, 0},
	} {
		t.Run(tc.bundle, func(t *testing.T) {
			s := loadOne(t, bundle(t, tc.bundle))
			l := resolve.RecognizeLayout(s)
			if tc.newest == 0 {
				if l.Old() || l.Mixed() {
					t.Fatalf("layout %s recognised in a current dump", l)
				}
				return
			}
			if !l.Old() || l.Mixed() || l.Oldest != tc.oldest || l.Newest != tc.newest {
				t.Fatalf("layout %d-%d (%v), want 1.%d-1.%d", l.Oldest, l.Newest, l, tc.oldest, tc.newest)
			}
			if len(l.Evidence) != len(l.Traits) {
				t.Errorf("%d traits, %d pieces of evidence", len(l.Traits), len(l.Evidence))
			}
			// The dump alone: the version is assumed from the layout.
			d := loadOne(t, filepath.Join(bundle(t, tc.bundle), "node", "iptables-save.txt"))
			if d.Version.Minor != tc.newest || !strings.Contains(d.Version.Source, "rule layout of kube-proxy") {
				t.Errorf("dump alone: version %s (%s), want 1.%d from the layout", d.Version, d.Version.Source, tc.newest)
			}
			if !slices.ContainsFunc(d.Notes, func(n string) bool { return strings.HasPrefix(n, "rule layout of kube-proxy "+l.Range()) }) {
				t.Errorf("no note of the layout in %q", d.Notes)
			}
		})
	}
}

// TestLayoutMixed checks that rules of two releases are said to be so,
// and that a version that does not write the layout is noted.
func TestLayoutMixed(t *testing.T) {
	dir := copyWithout(t, bundle(t, "iptables-v1.18-mini"), func(string, string) bool { return false })
	s := loadOne(t, dir)
	l := resolve.RecognizeLayout(s)
	if l.Mixed() {
		t.Fatalf("one release's dump read as mixed: %s", l)
	}
	// KUBE-PROXY-FIREWALL is 1.25+, comments with an empty port name up to 1.18.
	s.IPTables[0].Tables[1].Chains[0].Name = "KUBE-PROXY-FIREWALL"
	if l := resolve.RecognizeLayout(s); !l.Mixed() || !strings.Contains(l.String(), "mix the layouts") {
		t.Errorf("mixed layout read as %v", l)
	}
}

// TestLayoutOtherVersion checks that a version that does not write the
// layout of the rules is noted.
func TestLayoutOtherVersion(t *testing.T) {
	dir := copyWithout(t, bundle(t, "iptables-v1.18-mini"), func(string, string) bool { return false })
	if err := os.WriteFile(filepath.Join(dir, "kube-proxy", "version.txt"), []byte("Kubernetes v1.28.3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := loadOne(t, dir)
	if !slices.ContainsFunc(s.Notes, func(n string) bool {
		return strings.HasPrefix(n, "kube-proxy 1.28 (") && strings.Contains(n, "does not write that layout")
	}) {
		t.Errorf("no note of the version against the layout in %q", s.Notes)
	}
}

// TestLayoutEvidenceRulesOutOfOrder reads the traits of a nat table whose
// rules are written in another order than its chains are declared
// (kube-proxy's restore input): a trait's evidence is still its rule in
// the first chain declared, and a trait found in one chain is found in
// an earlier one written after it.
func TestLayoutEvidenceRulesOutOfOrder(t *testing.T) {
	const text = `*nat
:PREROUTING ACCEPT [0:0]
:KUBE-SVC-AAAAAAAAAAAAAAAA - [0:0]
:KUBE-SVC-BBBBBBBBBBBBBBBB - [0:0]
:KUBE-SVC-CCCCCCCCCCCCCCCC - [0:0]
-A KUBE-SVC-CCCCCCCCCCCCCCCC -m comment --comment "Balancing rule 0 for ns/c:p" -j KUBE-MARK-DROP
-A KUBE-SVC-BBBBBBBBBBBBBBBB -m comment --comment "Balancing rule 0 for ns/b:p" -j KUBE-MARK-DROP
-A KUBE-SVC-AAAAAAAAAAAAAAAA -m comment --comment "ns/a:p cluster IP" -j KUBE-MARK-MASQ
-A KUBE-SVC-AAAAAAAAAAAAAAAA -m comment --comment "Balancing rule 0 for ns/a:p" -j KUBE-MARK-MASQ
COMMIT
`
	d, err := iptables.Parse("nat.txt", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	l := resolve.RecognizeLayout(&model.Snapshot{IPTables: []*iptables.Dump{d}})
	if l == nil {
		t.Fatal("no layout recognised")
	}
	lines := map[string]int{}
	for i, tr := range l.Traits {
		lines[strings.SplitN(tr, " (", 2)[0]] = l.Evidence[i].Line
	}
	// Balancing rules: the first chain's second rule, written last. Jumps to
	// KUBE-MARK-DROP: the second chain's, declared before the third's.
	if got := lines[`"Balancing rule" comments`]; got != 9 {
		t.Errorf("balancing rule evidence at line %d, want 9 (traits %q)", got, l.Traits)
	}
	if got := lines["kube-proxy's jumps to KUBE-MARK-DROP"]; got != 7 {
		t.Errorf("KUBE-MARK-DROP evidence at line %d, want 7 (traits %q)", got, l.Traits)
	}
}

// TestLayoutNoFilterNodePorts: a whole dump of iptables mode whose filter
// table holds kube-proxy's chains but no KUBE-NODEPORTS, which kube-proxy
// creates from 1.21, is of 1.20 or older; a dump without its filter
// table, one of IPVS mode and one of 1.21 or newer do not say so.
func TestLayoutNoFilterNodePorts(t *testing.T) {
	const trait = "no filter KUBE-NODEPORTS (up to 1.20)"
	natOnly := func(dir string) {
		p := filepath.Join(dir, "node", "iptables-save.txt")
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		i := strings.Index(text, "*nat\n")
		j := strings.Index(text[i:], "COMMIT\n")
		if i < 0 || j < 0 {
			t.Fatalf("%s: no nat table", p)
		}
		if err := os.WriteFile(p, []byte(text[i:i+j+len("COMMIT\n")]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, bundle string
		change       func(dir string)
		want         bool
	}{
		{name: "1.20", bundle: "iptables-v1.20-mini", want: true},
		{name: "1.18", bundle: "iptables-v1.18-mini", want: true},
		{name: "1.20 nat table only", bundle: "iptables-v1.20-mini", change: natOnly},
		{name: "1.22", bundle: "iptables-v1.22-mini"},
		{name: "current", bundle: "iptables-mini"},
		{name: "ipvs mode", bundle: "ipvs-healthy-mini"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyWithout(t, bundle(t, tc.bundle), func(string, string) bool { return false })
			if tc.change != nil {
				tc.change(dir)
			}
			l := resolve.RecognizeLayout(loadOne(t, dir))
			var traits []string
			if l != nil {
				traits = l.Traits
			}
			if got := slices.Contains(traits, trait); got != tc.want {
				t.Fatalf("traits %q: %q found %v, want %v", traits, trait, got, tc.want)
			}
			if tc.want && (l.Newest > 20 || l.Evidence[len(l.Evidence)-1].Text != "*filter (no KUBE-NODEPORTS chain)") {
				t.Errorf("layout %s, evidence %v", l.Range(), l.Evidence[len(l.Evidence)-1])
			}
		})
	}
}
