package ipaddr

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
	"github.com/rogpeppe/go-internal/txtar"
)

var ignorePos = cmp.Options{
	cmpopts.IgnoreFields(Interface{}, "Pos", "Raw"),
	cmpopts.IgnoreFields(Address{}, "Pos", "Raw"),
	cmpopts.EquateComparable(netip.Addr{}, netip.Prefix{}),
	cmpopts.EquateEmpty(),
}

func TestGolden(t *testing.T) {
	parsetest.Golden(t, "parsers/ipaddr/*.txtar", func(t *testing.T, name string, a *txtar.Archive) map[string][]byte {
		in := parsetest.Section(a, "input")
		d, err := Parse("input", in)
		if err != nil {
			if !parsers.IsInputError(err) {
				t.Errorf("not an input error: %v", err)
			}
			return map[string][]byte{"want.error": parsetest.ErrorText(err)}
		}
		got := map[string][]byte{"want.json": parsetest.JSON(t, d)}
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
		return got
	})
}

// TestFormsAgree checks that the text, one-line and JSON captures of the
// same namespace describe the same addresses.
func TestFormsAgree(t *testing.T) {
	load := func(name string) *Dump {
		a, err := txtar.ParseFile(parsetest.Root(t) + "/testdata/parsers/ipaddr/" + name + ".txtar")
		if err != nil {
			t.Fatal(err)
		}
		d, err := Parse(name, parsetest.Section(a, "input"))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	text, one, js := load("text"), load("oneline"), load("json")
	if diff := cmp.Diff(text, js, ignorePos, cmpopts.IgnoreFields(Dump{}, "Form"),
		cmpopts.IgnoreFields(Address{}, "ValidLft", "PreferredLft")); diff != "" {
		t.Errorf("text and JSON differ (-text +json):\n%s", diff)
	}
	if got, want := one.LocalAddresses(), text.LocalAddresses(); !slices.Equal(got, want) {
		t.Errorf("one-line addresses %v, text addresses %v", got, want)
	}
}

func TestHelpers(t *testing.T) {
	a, err := txtar.ParseFile(parsetest.Root(t) + "/testdata/parsers/ipaddr/text.txtar")
	if err != nil {
		t.Fatal(err)
	}
	d, err := Parse("text", parsetest.Section(a, "input"))
	if err != nil {
		t.Fatal(err)
	}
	var vips []string
	for _, x := range d.KubeIPVSAddresses() {
		vips = append(vips, x.Prefix().String())
	}
	if want := []string{"10.96.0.1/32", "10.96.0.10/32", "10.96.45.7/32", "fd00:10:96::a/128", "fd00:10:96::1/128"}; !slices.Equal(vips, want) {
		t.Errorf("kube-ipvs0 addresses %v, want %v", vips, want)
	}
	var node []string
	for _, x := range d.NodeAddresses() {
		node = append(node, x.String())
	}
	if want := []string{"192.168.49.2", "192.168.49.20", "192.168.49.30", "fd00:192:168:49::2"}; !slices.Equal(node, want) {
		t.Errorf("node addresses %v, want %v", node, want)
	}
	eth0 := d.Interface("eth0")
	if eth0 == nil || eth0.Peer != "veth-peer" || eth0.MTU != 1450 || eth0.State != "UP" || !eth0.HasFlag("LOWER_UP") {
		t.Fatalf("eth0 = %+v", eth0)
	}
	if k := d.Interface("kube-ipvs0"); k.State != "DOWN" || k.HasFlag("UP") {
		t.Errorf("kube-ipvs0 state %s flags %v", k.State, k.Flags)
	}
	vip := eth0.Addresses[2]
	if vip.Label != "eth0:vip" || !vip.HasFlag("secondary") || !vip.HasFlag("dynamic") || vip.ValidLft == Forever {
		t.Errorf("labelled address %+v", vip)
	}
	if d.Interface("nope") != nil || len(d.LocalAddresses()) != 13 {
		t.Errorf("Interface(nope) or LocalAddresses (%d) wrong", len(d.LocalAddresses()))
	}
}

func FuzzParse(f *testing.F) {
	parsetest.Seeds(f, "parsers/ipaddr/*.txtar")
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
		if !strings.Contains(string(out), "\n") && len(d.Interfaces) > 0 && d.Form != FormJSON {
			t.Fatal("no newline in output")
		}
	})
}

// TestBriefLongLine reads the `ip -br addr` line of the kube-ipvs0 of a
// large IPVS node, longer than the lines of the other forms may be: every
// address is local, and the node's addresses are eth0's.
func TestBriefLongLine(t *testing.T) {
	var b strings.Builder
	b.WriteString("lo               UNKNOWN        127.0.0.1/8 ::1/128 \nkube-ipvs0       DOWN           ")
	const n = 20000
	for i := range n {
		fmt.Fprintf(&b, "10.96.%d.%d/32 ", i/250, i%250+1)
	}
	b.WriteString("\neth0             UP             192.168.49.2/24 \n")
	d, err := Parse("ip-br.txt", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if d.Form != FormBrief || len(d.Interfaces) != 3 || len(d.Interface(KubeIPVSInterface).Addresses) != n {
		t.Fatalf("form %s, %d interfaces", d.Form, len(d.Interfaces))
	}
	if got := len(d.LocalAddresses()); got != n+3 {
		t.Errorf("%d local addresses, want %d", got, n+3)
	}
	if got := d.NodeAddresses(); len(got) != 1 || got[0].String() != "192.168.49.2" {
		t.Errorf("node addresses %v, want 192.168.49.2", got)
	}
}
