package kpcmdline

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// semantic ignores what Format cannot preserve (offsets, raw spelling).
var semantic = cmp.Options{
	cmpopts.IgnoreFields(Flag{}, "Offset", "Raw", "Pos"),
	cmpopts.IgnoreFields(Arg{}, "Offset", "Pos"),
	cmpopts.IgnoreFields(Cmdline{}, "Pos"),
	cmpopts.EquateEmpty(),
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []Flag
		args []string
	}{
		{"equals and separate", "kube-proxy --proxy-mode=ipvs --cluster-cidr 10.0.0.0/8",
			[]Flag{{Name: "proxy-mode", Dashes: 2, Value: "ipvs", HasValue: true, Form: FormEquals, Index: 1},
				{Name: "cluster-cidr", Dashes: 2, Value: "10.0.0.0/8", HasValue: true, Form: FormSeparate, Index: 2}}, nil},
		{"booleans never take the next word", "kube-proxy --masquerade-all false --masquerade-all=false",
			[]Flag{{Name: "masquerade-all", Dashes: 2, Form: FormAlone, Index: 1},
				{Name: "masquerade-all", Dashes: 2, Value: "false", HasValue: true, Form: FormEquals, Index: 3}}, []string{"false"}},
		{"shorthand forms", "kube-proxy -v=2 -v 3 -v4",
			[]Flag{{Name: "v", Dashes: 1, Value: "2", HasValue: true, Form: FormEquals, Index: 1},
				{Name: "v", Dashes: 1, Value: "3", HasValue: true, Form: FormSeparate, Index: 2},
				{Name: "v", Dashes: 1, Value: "4", HasValue: true, Form: FormAttached, Index: 4}}, nil},
		{"quotes", `kube-proxy --hostname-override 'node one' --feature-gates="A=true,B=false"`,
			[]Flag{{Name: "hostname-override", Dashes: 2, Value: "node one", HasValue: true, Form: FormSeparate, Index: 1},
				{Name: "feature-gates", Dashes: 2, Value: "A=true,B=false", HasValue: true, Form: FormEquals, Index: 3}}, nil},
		{"double dash ends flags", "kube-proxy --config=x -- --not-a-flag",
			[]Flag{{Name: "config", Dashes: 2, Value: "x", HasValue: true, Form: FormEquals, Index: 1}}, []string{"--not-a-flag"}},
		{"value missing at the end", "kube-proxy --config",
			[]Flag{{Name: "config", Dashes: 2, Form: FormAlone, Index: 1}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("cmdline.txt", []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, c.Flags, semantic); diff != "" {
				t.Errorf("flags (-want +got):\n%s", diff)
			}
			var args []string
			for _, a := range c.Args {
				args = append(args, a.Value)
			}
			if diff := cmp.Diff(tc.args, args, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFlagHelper(t *testing.T) {
	c, err := Parse("cmdline", []byte("kube-proxy\x00--masquerade-all\x00--nodeport-addresses=a\x00--nodeport-addresses=b\x00"))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := c.Flag("masquerade-all"); !ok || v != "true" {
		t.Errorf("Flag(masquerade-all) = %q, %v", v, ok)
	}
	if v, ok := c.Flag("nodeport-addresses"); !ok || v != "b" {
		t.Errorf("Flag(nodeport-addresses) = %q, %v", v, ok)
	}
	if _, ok := c.Flag("config"); ok {
		t.Error("Flag(config) found")
	}
	if n := len(c.Lookup("nodeport-addresses")); n != 2 {
		t.Errorf("Lookup found %d", n)
	}
	if !c.NUL || c.Binary != "kube-proxy" {
		t.Errorf("NUL=%v Binary=%q", c.NUL, c.Binary)
	}
}

func TestErrors(t *testing.T) {
	for _, in := range []string{"", "   \n", "kube-proxy 'unterminated", `kube-proxy "x`, "kube-proxy \\", "kube-proxy --a=1\nkube-proxy --b=2", "kube-proxy ---x", "kube-proxy --=x"} {
		if _, err := Parse("cmdline.txt", []byte(in)); err == nil || !parsers.IsInputError(err) {
			t.Errorf("Parse(%q) error = %v, want an input error", in, err)
		}
	}
}

func TestGolden(t *testing.T) {
	parsetest.Golden(t, "parsers/kpcmdline/*.txtar", func(t *testing.T, name string, a *txtar.Archive) map[string][]byte {
		c, err := Parse("cmdline.txt", parsetest.Section(a, "input"))
		if err != nil {
			return map[string][]byte{"want-error.txt": []byte(err.Error() + "\n")}
		}
		checkRoundTrip(t, c)
		out := map[string][]byte{"want.json": parsetest.JSON(t, c)}
		var b []byte
		for _, e := range c.Validate() {
			b = append(b, e.Error()+"\n"...)
		}
		out["want-validate.txt"] = b
		return out
	})
}

func checkRoundTrip(t *testing.T, c *Cmdline) {
	t.Helper()
	back, err := Parse("formatted", Format(c))
	if err != nil {
		t.Fatalf("Parse(Format(x)): %v", err)
	}
	if diff := cmp.Diff(c, back, semantic); diff != "" {
		t.Fatalf("Parse(Format(x)) differs (-x +back):\n%s", diff)
	}
}

func FuzzParse(f *testing.F) {
	parsetest.Seeds(f, "parsers/kpcmdline/*.txtar")
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz", data)
		if err != nil {
			if !parsers.IsInputError(err) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		checkRoundTrip(t, c)
		c.Validate()
		_ = c.String()
	})
}

func TestFromArgv(t *testing.T) {
	c, err := FromArgv("pod.yaml", []string{"kube-apiserver", "--service-cluster-ip-range", "10.96.0.0/12", "--feature-gates=A=true", "--service-cluster-ip-range=10.112.0.0/16,fd00::/108"})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := c.Flag("service-cluster-ip-range"); !ok || v != "10.112.0.0/16,fd00::/108" {
		t.Errorf("service-cluster-ip-range = %q, %v; want the last occurrence", v, ok)
	}
	if v, _ := c.Flag("feature-gates"); v != "A=true" {
		t.Errorf("feature-gates = %q", v)
	}
	if _, err := FromArgv("pod.yaml", nil); err == nil {
		t.Error("an empty command line parsed")
	}
}
