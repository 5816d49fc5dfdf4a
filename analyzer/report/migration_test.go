package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestMigrationSection renders the report of an IPVS-mode node with its
// migration section (testdata/report/ipvs-migration.in.json, the JSON
// report of scenario config/ipvs-scheduler-sh-draining) in the table and
// JSON formats, and a multi-node report carrying it per node.
func TestMigrationSection(t *testing.T) {
	r := loadReport(t, "ipvs-migration.in.json")
	if r.Migration == nil || len(r.Migration.Items) == 0 {
		t.Fatal("input has no migration section")
	}
	multi := &Report{SchemaVersion: r.SchemaVersion, Tool: r.Tool, Inputs: r.Inputs, Findings: r.Findings, Summary: r.Summary,
		Nodes: []NodeReport{{Node: "node-a", Mode: "ipvs", Summary: r.Summary, Migration: r.Migration}, {Node: "node-b", Mode: "iptables"}}}
	for _, tc := range []struct {
		name   string
		r      *Report
		format string
		color  bool
	}{
		{"ipvs-migration.golden.table", r, "table", false},
		{"ipvs-migration.golden.color.table", r, "table", true},
		{"ipvs-migration.golden.json", r, "json", false},
		{"ipvs-migration-multi.golden.table", multi, "table", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Render(&buf, tc.format, tc.r, Options{Color: tc.color, Width: 120}); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.name, buf.Bytes())
		})
	}
	var buf bytes.Buffer
	if err := RenderTable(&buf, r, Options{Width: 120}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"Migration ipvs → nftables: nothing blocks it", "change  scheduler", "info    metrics", "services: shop/sessions"} {
		if !strings.Contains(out, want) {
			t.Errorf("table output lacks %q", want)
		}
	}
	if strings.Index(out, "Migration ipvs") < strings.Index(out, "[1]") {
		t.Error("the migration section comes before the findings' details")
	}
	// Nothing known blocks the move, but what could is not in the inputs.
	unknown := *r
	m := *r.Migration
	m.Unknown = []string{"kube-proxy's version", "the node's kernel version"}
	unknown.Migration = &m
	buf.Reset()
	if err := RenderTable(&buf, &unknown, Options{Width: 200}); err != nil {
		t.Fatal(err)
	}
	if want := "Migration ipvs → nftables: no blocker known (kube-proxy's version and the node's kernel version are not in the inputs), 5 changes to plan"; !strings.Contains(buf.String(), want) {
		t.Errorf("table output lacks %q:\n%s", want, buf.String())
	}
}
