package proxier

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// FuzzCanonicalize checks that canonicalising any dump the parser accepts
// never panics and is idempotent: a canonical dump is its own canonical
// form.
func FuzzCanonicalize(f *testing.F) {
	parsetest.Seeds(f, "parsers/iptables/*.txtar")
	for _, fam := range []iptables.Family{iptables.IPv4, iptables.IPv6} {
		f.Add(restoreText("filter", synthRules(fam)))
		f.Add(restoreText("nat", synthNATRules(fam)))
	}
	if data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "upstream", "golden", "iptables", "session-affinity", "iptables-restore.v4")); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := iptables.Parse("fuzz", append([]byte(nil), data...))
		if err != nil {
			return
		}
		c1, err := Canonicalize(d)
		if err != nil {
			return // e.g. a canonical form the parser rejects: no table left
		}
		c2, err := Canonicalize(c1)
		if err != nil {
			t.Fatalf("canonical dump does not canonicalise: %v\n%s", err, iptables.Format(c1))
		}
		if a, b := iptables.Format(c1), iptables.Format(c2); !bytes.Equal(a, b) {
			t.Fatalf("not idempotent:\n%s\n---\n%s", a, b)
		}
	})
}
