package modules

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

func TestGolden(t *testing.T) {
	parsetest.Golden(t, "parsers/modules/*.txtar", func(t *testing.T, name string, a *txtar.Archive) map[string][]byte {
		file := "node/modules.txt"
		l, err := Parse(file, parsetest.Section(a, "input"))
		if err != nil {
			var pe *parsers.Error
			var el parsers.ErrorList
			if errors.As(err, &el) && len(el) > 0 {
				pe = el[0]
			} else if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *parsers.Error", err)
			}
			if pe.Pos.File != file {
				t.Fatalf("error %v does not name %s", err, file)
			}
			return map[string][]byte{"error": []byte(err.Error() + "\n")}
		}
		if k := parsers.Detect(parsetest.Section(a, "input")); k != parsers.KindModules {
			t.Errorf("Detect says %q, want %q", k, parsers.KindModules)
		}
		checkRoundTrip(t, l)
		var has bytes.Buffer
		for _, m := range []string{"ip_vs", "ip_vs_rr", "ip_vs_wrr", "ip_vs_sh", "ip_vs_mh", "nf_conntrack", "br_netfilter", "nf_nat_ftp", "nf-conntrack"} {
			fmt.Fprintf(&has, "%s %v\n", m, l.Has(m))
		}
		return map[string][]byte{"want.json": parsetest.JSON(t, l), "format.txt": Format(l), "has.txt": has.Bytes()}
	})
}

func content(l *List) string {
	var b bytes.Buffer
	for _, m := range l.Modules {
		m.Pos, m.Raw = parsers.Pos{}, ""
		fmt.Fprintf(&b, "%#v\n", m)
	}
	return b.String()
}

func checkRoundTrip(t *testing.T, l *List) {
	t.Helper()
	l2, err := Parse(l.File, Format(l))
	if err != nil {
		t.Fatalf("Parse(Format(x)): %v\n%s", err, Format(l))
	}
	if a, b := content(l), content(l2); a != b {
		t.Fatalf("Parse(Format(x)) != x:\n%s\nvs\n%s", a, b)
	}
}

func TestStates(t *testing.T) {
	l, err := Parse("m", []byte("ip_vs 196608 0 - Unloading 0x0000000000000000\nip_vs_rr 16384 - - Loading 0x0000000000000000\nnf_nat 57344 1 nf_conntrack, Live 0x0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if l.Has("ip_vs") || l.Has("ip_vs_rr") || !l.Has("nf_nat") || !l.Has("nf-nat") {
		t.Errorf("Has does not follow module states")
	}
	if m, _ := l.Get("ip_vs_rr"); m.RefCount != -1 {
		t.Errorf("refcount %d, want -1 for \"-\"", m.RefCount)
	}
}
