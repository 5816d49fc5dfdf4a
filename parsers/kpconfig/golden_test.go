package kpconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/kpcmdline"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// errorLines renders an error (or each error of an ErrorList) one per line.
func errorLines(err error) []byte {
	var l parsers.ErrorList
	if errors.As(err, &l) {
		var b strings.Builder
		for _, e := range l {
			b.WriteString(e.Error() + "\n")
		}
		return []byte(b.String())
	}
	return []byte(err.Error() + "\n")
}

type goldenView struct {
	Config   json.RawMessage `json:"config"`
	Fields   []*FieldInfo    `json:"fields"`
	Warnings []string        `json:"warnings,omitempty"`
	Merged   []string        `json:"merged,omitempty"`
	Key      string          `json:"configMapKey,omitempty"`
	KeyNote  string          `json:"configMapNote,omitempty"`
}

func view(t *testing.T, c *Config) []byte {
	t.Helper()
	cfg, err := json.Marshal(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	v := goldenView{Config: cfg, Fields: c.SortedFields(), Merged: c.Merged, Key: c.ConfigMapKey, KeyNote: c.ConfigMapNote}
	for _, w := range c.Warnings {
		v.Warnings = append(v.Warnings, w.Error())
	}
	return parsetest.JSON(t, v)
}

// roundTrip checks Parse(Format(c)) == c for the configuration value.
func roundTrip(t *testing.T, c *Config) {
	t.Helper()
	text, err := Format(c)
	if err != nil {
		t.Fatalf("Format: %v", err)
	}
	back, err := Parse("formatted.yaml", text)
	if err != nil {
		t.Fatalf("Parse(Format(x)): %v\n%s", err, text)
	}
	want := c.Config
	want.APIVersion, want.Kind = APIVersion, Kind
	if !equality.Semantic.DeepEqual(want, back.Config) || !equality.Semantic.DeepEqual(c.UDPIdleTimeout, back.UDPIdleTimeout) {
		t.Errorf("Parse(Format(x)) differs from x:\n%s", text)
	}
}

func TestGolden(t *testing.T) {
	parsetest.Golden(t, "parsers/kpconfig/*.txtar", func(t *testing.T, name string, a *txtar.Archive) map[string][]byte {
		out := map[string][]byte{}
		ver := kpversion.Newest
		if s := parsetest.Section(a, "version"); s != nil {
			v, err := kpversion.ParseString(string(s))
			if err != nil {
				t.Fatal(err)
			}
			ver = v
		}
		lenient := parsetest.Section(a, "lenient") != nil
		var (
			cfg *Config
			err error
		)
		switch {
		case parsetest.Section(a, "input.configmap") != nil:
			cfg, err = ParseConfigMap("kube-proxy-configmap.yaml", parsetest.Section(a, "input.configmap"), lenient)
		case parsetest.Section(a, "input") != nil:
			if lenient {
				cfg, err = ParseLenient("config.yaml", parsetest.Section(a, "input"))
			} else {
				cfg, err = Parse("config.yaml", parsetest.Section(a, "input"))
			}
		}
		if err != nil {
			out["want-error.txt"] = errorLines(err)
			return out
		}
		if cfg != nil {
			roundTrip(t, cfg)
		}
		if cl := parsetest.Section(a, "input.cmdline"); cl != nil {
			c, err := kpcmdline.Parse("cmdline.txt", cl)
			if err != nil {
				out["want-error.txt"] = errorLines(err)
				return out
			}
			f, err := ParseFlags(c, ver)
			if err != nil {
				out["want-error.txt"] = errorLines(err)
				return out
			}
			eff, err := Effective(f, cfg)
			if err != nil {
				out["want-error.txt"] = errorLines(err)
				return out
			}
			cfg = eff
		} else {
			out["want.json"] = view(t, cfg)
			cfg = cfg.Clone()
			Defaults(cfg, ver)
		}
		var b strings.Builder
		for _, f := range cfg.SortedFields() {
			if f.Note != "" || f.Origin == OriginFlag {
				fmt.Fprintf(&b, "%s %s %s", f.Pos, f.Path, f.Origin)
				if f.Flag != "" {
					fmt.Fprintf(&b, " %s", f.Flag)
				}
				if f.Note != "" {
					fmt.Fprintf(&b, ": %s", f.Note)
				}
				b.WriteString("\n")
			}
		}
		for _, m := range cfg.Merged {
			fmt.Fprintf(&b, "merged: %s\n", m)
		}
		out["want-effective.txt"] = []byte(b.String())
		var vb strings.Builder
		for _, e := range UnknownIn(cfg, ver) {
			vb.WriteString("unknown: " + e.Error() + "\n")
		}
		for _, e := range Validate(cfg, ver) {
			vb.WriteString(e.Error() + "\n")
		}
		out["want-validate.txt"] = []byte(vb.String())
		return out
	})
}
