// Package fleetreports writes the node reports of a generated fleet, for
// the benchmarks of analyze's merge of node reports.
package fleetreports

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/nodereport"
	"github.com/proxyscan/proxyscan/analyzer/report"
	"github.com/proxyscan/proxyscan/internal/benchgen"
)

// Write writes the node reports of n nodes of the spec's
// cluster into dir, as collect --analyze would on each node and kubectl cp
// would copy them out: dir/node-0001/node-report.json... Every node runs
// the same data plane, but for one node in a hundred (the 50th, 150th...)
// which lacks the rules of one Service (node-drift then reports it). Two
// nodes are analysed (in a directory removed afterwards); the reports of
// the others are theirs under another name. tool is the proxyscan that
// writes them.
func Write(s benchgen.Spec, dir string, n int, tool report.Tool) error {
	work, err := os.MkdirTemp("", "benchgen-reports-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	healthy := filepath.Join(work, "healthy")
	drifted := filepath.Join(work, "drifted")
	s.Node = "node-0001"
	if err := s.WriteBundle(healthy); err != nil {
		return err
	}
	if err := s.WriteBundle(drifted); err != nil {
		return err
	}
	// The drifted node lacks the rules of the first Service.
	ipt := filepath.Join(drifted, "node", "iptables-save.txt")
	data, err := os.ReadFile(ipt)
	if err != nil {
		return err
	}
	var kept [][]byte
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if !bytes.Contains(line, []byte(s.ServiceName(0))) {
			kept = append(kept, line)
		}
	}
	if err := os.WriteFile(ipt, bytes.Join(kept, nil), 0o644); err != nil {
		return err
	}
	type node struct {
		sum    *report.Node
		print  []byte
		bundle string
	}
	var nodes []node
	for _, b := range []string{healthy, drifted} {
		snaps, err := load.Load([]string{b}, load.Options{Compact: true})
		if err != nil {
			return err
		}
		fn := checks.AnalyzeNode(snaps[0], checks.All, checks.NewPrints())
		var print bytes.Buffer
		if err := fn.WritePrint(&print); err != nil {
			return err
		}
		nodes = append(nodes, node{report.Summarize(snaps[0], fn.Result()), print.Bytes(), b})
	}
	meta := nodereport.Meta{Tool: tool, Checks: checks.IDs(checks.All)}
	for i := 1; i <= n; i++ {
		nd := nodes[0]
		if i%100 == 50 {
			nd = nodes[1]
		}
		name := fmt.Sprintf("node-%04d", i)
		sum := *nd.sum
		sum.Name = name
		sum.Inputs = append([]model.Input(nil), sum.Inputs...)
		// The findings name their node too.
		res := *sum.Result
		res.Findings = slices.Clone(res.Findings)
		for j := range res.Findings {
			res.Findings[j].Node = name
		}
		sum.Result = &res
		p := filepath.Join(dir, name, load.NodeReportFile)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		err = nodereport.WritePrinted(f, &sum, nd.print, meta, nd.bundle)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", p, err)
		}
	}
	return nil
}
