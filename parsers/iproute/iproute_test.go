package iproute

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
	"github.com/rogpeppe/go-internal/txtar"
)

var ignorePos = cmp.Options{
	cmpopts.IgnoreFields(Route{}, "Pos", "Raw"),
	cmpopts.IgnoreFields(Nexthop{}, "Pos", "Raw"),
	cmpopts.EquateComparable(netip.Addr{}, netip.Prefix{}),
	cmpopts.EquateEmpty(),
}

func TestGolden(t *testing.T) {
	parsetest.Golden(t, "parsers/iproute/*.txtar", func(t *testing.T, name string, a *txtar.Archive) map[string][]byte {
		in := parsetest.Section(a, "input")
		d, err := Parse("input", in)
		if err != nil {
			if !parsers.IsInputError(err) {
				t.Errorf("not an input error: %v", err)
			}
			return map[string][]byte{"want.error": parsetest.ErrorText(err)}
		}
		out := Format(d)
		if !bytes.Equal(out, in) {
			t.Errorf("Format(Parse(input)) differs from the input:\n%s", parsetest.Diff(in, out))
		}
		d2, err := Parse("input", out)
		if err != nil {
			t.Fatalf("reparse: %v", err)
		}
		if diff := cmp.Diff(d, d2, ignorePos); diff != "" {
			t.Errorf("Parse(Format(x)) != x:\n%s", diff)
		}
		return map[string][]byte{"want.json": parsetest.JSON(t, d)}
	})
}

func TestLookup(t *testing.T) {
	d, err := Parse("r", []byte("default via 192.168.49.1 dev eth0 \n10.244.1.0/24 via 192.168.49.3 dev eth0 proto static \n10.244.0.0/16 dev cni0 \nblackhole 10.244.1.128/25 \n10.200.0.0/16 via 192.168.49.5 dev eth0 table 100 \nlocal 10.96.0.1 dev kube-ipvs0 table local proto kernel scope host src 10.96.0.1 \n"))
	if err != nil {
		t.Fatal(err)
	}
	for ip, want := range map[string]string{
		"10.244.1.200": "10.244.1.0/24", "10.244.7.1": "10.244.0.0/16", "8.8.8.8": "0.0.0.0/0",
		"10.200.1.1": "0.0.0.0/0", "10.96.0.1": "10.96.0.1/32",
	} {
		r := d.Lookup(netip.MustParseAddr(ip))
		if r == nil || r.Dst.String() != want {
			t.Errorf("Lookup(%s) = %v, want %s", ip, r, want)
		}
	}
	if len(d.Defaults()) != 1 || d.Defaults()[0].Via.String() != "192.168.49.1" {
		t.Errorf("Defaults() = %v", d.Defaults())
	}
}

func FuzzParse(f *testing.F) {
	parsetest.Seeds(f, "parsers/iproute/*.txtar")
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse("fuzz", data)
		if err != nil {
			if !parsers.IsInputError(err) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		out := Format(d)
		d2, err := Parse("fuzz", out)
		if err != nil {
			t.Fatalf("reparse: %v\n%q\n%q", err, data, out)
		}
		if diff := cmp.Diff(d, d2, ignorePos); diff != "" {
			t.Fatalf("Parse(Format(x)) != x:\n%s\n%q\n%q", diff, data, out)
		}
	})
}
