package view_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checktest"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/view"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestFromIPTablesGolden renders the view of every iptables-mode dump of
// the example bundles and the iptables scenarios, every element with the
// positions of its evidence, and compares it with
// testdata/view/iptables/NAME.golden (-update rewrites them).
func TestFromIPTablesGolden(t *testing.T) {
	root := parsetest.Root(t)
	type input struct {
		name, dir string
		opts      load.Options
	}
	var inputs []input
	bundles, _ := filepath.Glob(filepath.Join(root, "testdata", "bundles", "iptables-*"))
	for _, dir := range bundles {
		inputs = append(inputs, input{name: "bundle-" + filepath.Base(dir), dir: dir})
	}
	for _, file := range checktest.Files(t, "scenarios/iptables/*.txtar") {
		s := checktest.Load(t, file)
		inputs = append(inputs, input{name: s.Name, dir: s.Dir, opts: s.Options})
	}
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			snaps, err := load.Load([]string{in.dir}, in.opts)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			for _, s := range snaps {
				attr := view.NewAttribution(s.Ports)
				for _, d := range s.IPTables {
					if !resolve.IsIPTablesMode(d) {
						continue
					}
					renderView(&buf, view.FromIPTables(d, attr), in.dir)
				}
			}
			parsetest.GoldenFile(t, filepath.Join(root, "testdata", "view", "iptables", in.name+".golden"), buf.Bytes())
		})
	}
}

// renderView writes every element of a view, one per line, with the
// positions of its evidence relative to dir.
func renderView(w *bytes.Buffer, v *view.View, dir string) {
	rel := func(f string) string {
		if r, err := filepath.Rel(dir, f); err == nil && filepath.IsAbs(f) {
			return filepath.ToSlash(r)
		}
		return filepath.ToSlash(f)
	}
	ev := func(evs []model.Evidence) string {
		var parts []string
		for _, e := range evs {
			p := fmt.Sprintf("%s:%d", rel(e.File), e.Line)
			if e.Path != "" {
				p += "@" + e.Path
			}
			parts = append(parts, p)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	fmt.Fprintf(w, "view %s %s %s\n", v.Mode, v.Family, rel(v.Source))
	fmt.Fprintf(w, "nodeports %v %q %s\n", v.NodePorts, v.NodePortsWhy, ev(v.NodePortsEvidence))
	var kinds []string
	for k := range v.Anchors {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(w, "anchor %s %q %s\n", k, v.Where[view.Kind(k)], ev([]model.Evidence{v.Anchors[view.Kind(k)]}))
	}
	printed := map[*view.Dispatch]bool{}
	for _, e := range v.Entries {
		fmt.Fprintf(w, "entry %s service=%q how=%s action=%s localhost=%v nodeips=%v %s\n", e.Key(), e.Service, e.How, e.Action, e.Localhost, e.NodeIPs, ev(e.Evidence))
		if fw := e.Firewall; fw != nil {
			fmt.Fprintf(w, "  firewall %v defaultdrop=%v %s\n", fw.Ranges, fw.DefaultDrop, ev(fw.Evidence))
		}
		for _, o := range model.Origins {
			if via := e.Via(o); len(via) > 0 {
				fmt.Fprintf(w, "  via %s %s\n", o, ev(via))
			}
			d := e.Dispatch[o]
			if d == nil {
				continue
			}
			fmt.Fprintf(w, "  dispatch %s %s\n", o, d.ID)
			if printed[d] {
				continue
			}
			printed[d] = true
			fmt.Fprintf(w, "    %s service=%q policy=%s scheduler=%s drops=%v %s\n", d.ID, d.Service, d.Policy, d.Scheduler, d.Drops, ev(d.Evidence))
			if a := d.Affinity; a != nil {
				fmt.Fprintf(w, "    affinity %ds complete=%v %s\n", a.Timeout, a.Complete, ev(a.Evidence))
			}
			for _, b := range d.Backends {
				fmt.Fprintf(w, "    backend %s %v:%d share=%.6f weight=%d graceful=%v conns=%d unreachable=%v id=%s %s\n",
					b.Endpoint, b.IP, b.Port, b.Share, b.Weight, b.Graceful, b.Connections, b.Unreachable, b.ID, ev(b.Evidence()))
			}
		}
		for i, d := range e.Also {
			fmt.Fprintf(w, "  also %d %s\n", i, d.ID)
		}
	}
	for _, h := range v.HealthChecks {
		fmt.Fprintf(w, "healthcheck %d service=%q %s\n", h.Port, h.Service, ev(h.Evidence))
	}
	for _, o := range v.Objects {
		fmt.Fprintf(w, "object %s %s service=%q hashed=%v referenced=%v flushed=%v %s\n", o.Kind, o.Name, o.Service, o.Hashed, o.Referenced, o.Flushed, ev([]model.Evidence{o.Evidence()}))
	}
	fmt.Fprintf(w, "unrecognised %s\n", ev(v.Unrecognised))
}
