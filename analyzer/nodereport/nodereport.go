// Package nodereport writes and reads node reports: the analysis of one
// node, as `proxyscan collect --analyze` leaves it in the node's bundle, in
// a versioned JSON form that `proxyscan analyze` merges with the reports
// and bundles of other nodes without reading the node's dumps again.
//
// A report holds what the fleet report and the cross-node checks need of
// the node: its summary (inputs, notes, checklist, the findings, statuses
// and coverage of its checks) and its print (see [checks.FleetNode]). Its
// shape is documented in docs/contract.md; the print comes last, so that
// a reader that already holds the print's service ports (nodes that
// program their Services alike) stops before them.
package nodereport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/report"
)

// SchemaVersion is the version of the node report's shape.
const SchemaVersion = 1

// Meta is what a report says of the run that wrote it.
type Meta struct {
	// Tool wrote the report.
	Tool report.Tool `json:"tool"`
	// Checks are the IDs of the checks run, in their order.
	Checks []string `json:"checks"`
}

// nodeJSON is the "node" object: the node's summary and the result of its
// checks on their own.
type nodeJSON struct {
	Name          string                 `json:"name,omitempty"`
	Inputs        []model.Input          `json:"inputs"`
	Version       string                 `json:"kubeProxyVersion,omitempty"`
	VersionSource string                 `json:"versionSource,omitempty"`
	Notes         []string               `json:"notes,omitempty"`
	Checklist     []report.ChecklistItem `json:"checklist,omitempty"`
	Mode          string                 `json:"mode,omitempty"`
	ModeSource    string                 `json:"modeSource,omitempty"`
	ModeOrigin    string                 `json:"modeOrigin,omitempty"`
	Programmed    []string               `json:"programmed,omitempty"`
	Verdict       string                 `json:"verdict"`
	Coverage      checks.Coverage        `json:"coverage"`
	Findings      []checks.Finding       `json:"findings"`
	Statuses      []checks.Status        `json:"checks"`
	Migration     *checks.Migration      `json:"migration,omitempty"`
}

// Write writes the report of a node analysed on its own with prints
// ([checks.AnalyzeNode], before [checks.CompareFleet]): sum is its summary,
// n its node. Inputs of the bundle analysed (bundle, the path it was read
// at) are written without it: a reader gives them the bundle the report is
// found in.
func Write(w io.Writer, sum *report.Node, n *checks.FleetNode, meta Meta, bundle string) error {
	var print bytes.Buffer
	if err := n.WritePrint(&print); err != nil {
		return err
	}
	return WritePrinted(w, sum, print.Bytes(), meta, bundle)
}

// WritePrinted is [Write] with the node's print written already (by
// [checks.FleetNode.WritePrint]).
func WritePrinted(w io.Writer, sum *report.Node, print []byte, meta Meta, bundle string) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	res := sum.Result
	node := nodeJSON{Name: sum.Name, Version: sum.Version, VersionSource: sum.VersionSource, Notes: sum.Notes, Checklist: sum.Checklist,
		Mode: res.Mode, ModeSource: res.ModeSource, ModeOrigin: res.ModeOrigin, Programmed: res.Programmed, Verdict: res.Verdict(),
		Coverage: res.Coverage, Findings: res.Findings, Statuses: res.Statuses, Migration: res.Migration}
	if node.Findings == nil {
		node.Findings = []checks.Finding{}
	}
	for _, in := range sum.InputList() {
		if in.Bundle == bundle {
			in.Bundle = ""
		}
		node.Inputs = append(node.Inputs, in)
	}
	head := []struct {
		key   string
		value any
	}{
		{"kind", load.NodeReportKind},
		{"schemaVersion", SchemaVersion},
		{"tool", meta.Tool},
		{"checks", meta.Checks},
		{"node", node},
	}
	bw.WriteString("{")
	for _, f := range head {
		data, err := json.Marshal(f.value)
		if err != nil {
			return fmt.Errorf("encoding the node report's %s: %w", f.key, err)
		}
		fmt.Fprintf(bw, "%q:%s,\n", f.key, data)
	}
	bw.WriteString(`"print":`)
	bw.Write(print)
	bw.WriteString("}\n")
	return bw.Flush()
}

// A Node is a node read from its report.
type Node struct {
	// Meta says what wrote the report.
	Meta Meta
	// Summary is the node's summary for the fleet report.
	Summary *report.Node
	// Fleet is the node for the cross-node checks.
	Fleet *checks.FleetNode
}

// MismatchError says that a report was not written by this proxyscan with
// these checks: merging it would mix the answers of two analyses.
type MismatchError struct {
	// What differs, in a sentence.
	What string
}

func (e *MismatchError) Error() string { return e.What }

// Expect is what a reader requires of a report: the tool version that wrote
// it and the checks it ran.
type Expect struct {
	Version string
	Checks  []string
	// Reopen, when set, opens the report again: the lines of the print's
	// evidence are then not read with it, but from the report when a
	// cross-node check reports the node, so that they take no memory
	// for the nodes it does not.
	Reopen func() (io.ReadCloser, error)
}

// Read reads a node report from r. where is the bundle the report was
// found in, or the report's own path: inputs written without a bundle are
// given it. Prints stores the prints of the fleet; the node shares those
// whose fingerprints it holds already, and what follows them in r is not
// read. A report of another schema version, tool version or selection of
// checks than expect is a [*MismatchError], returned as soon as its first
// fields are read.
func Read(r io.Reader, where string, prints *checks.Prints, expect Expect) (*Node, error) {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 32<<10))
	t, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("not a node report: %w", err)
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a node report: not a JSON object")
	}
	out := &Node{}
	var node *nodeJSON
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		if seen[key] {
			return nil, fmt.Errorf("field %q appears twice", key)
		}
		seen[key] = true
		switch key {
		case "kind":
			var kind string
			if err := dec.Decode(&kind); err != nil {
				return nil, fmt.Errorf("kind: %w", err)
			}
			if kind != load.NodeReportKind {
				return nil, fmt.Errorf("kind %q is not %q", kind, load.NodeReportKind)
			}
		case "schemaVersion":
			var v int
			if err := dec.Decode(&v); err != nil {
				return nil, fmt.Errorf("schemaVersion: %w", err)
			}
			if v != SchemaVersion {
				return nil, &MismatchError{fmt.Sprintf("a node report of schema version %d, which this proxyscan (schema version %d) does not read", v, SchemaVersion)}
			}
		case "tool":
			if err := dec.Decode(&out.Meta.Tool); err != nil {
				return nil, fmt.Errorf("tool: %w", err)
			}
			if v := out.Meta.Tool.Version; v != expect.Version {
				return nil, &MismatchError{fmt.Sprintf("a node report of proxyscan %s, not %s", v, expect.Version)}
			}
		case "checks":
			if err := dec.Decode(&out.Meta.Checks); err != nil {
				return nil, fmt.Errorf("checks: %w", err)
			}
			if !slices.Equal(out.Meta.Checks, expect.Checks) {
				return nil, &MismatchError{"a node report of other checks (" + checkDiff(out.Meta.Checks, expect.Checks) + ")"}
			}
		case "node":
			if !seen["tool"] || !seen["checks"] || !seen["schemaVersion"] {
				return nil, errors.New("node: before the report's schemaVersion, tool and checks")
			}
			node = &nodeJSON{}
			if err := dec.Decode(node); err != nil {
				return nil, fmt.Errorf("node: %w", err)
			}
		case "print":
			if node == nil {
				return nil, errors.New("print: before the node")
			}
			p, done, err := prints.ReadPrint(dec, reopenPrint(expect.Reopen))
			if err != nil {
				return nil, err
			}
			out.Summary, out.Fleet = restore(node, p, where)
			if done {
				return out, nil
			}
		default:
			return nil, fmt.Errorf("unknown field %q", key)
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if !seen["kind"] || out.Fleet == nil {
		return nil, errors.New("not a node report: kind, node or print missing")
	}
	return out, nil
}

// reopenPrint returns the function that reads a report again up to its
// print's object, or nil.
func reopenPrint(reopen func() (io.ReadCloser, error)) func() (*json.Decoder, io.Closer, error) {
	if reopen == nil {
		return nil
	}
	return func() (*json.Decoder, io.Closer, error) {
		rc, err := reopen()
		if err != nil {
			return nil, nil, err
		}
		dec := json.NewDecoder(bufio.NewReaderSize(rc, 32<<10))
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			rc.Close()
			return nil, nil, errors.New("not a node report")
		}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				break
			}
			if t == "print" {
				return dec, rc, nil
			}
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				break
			}
		}
		rc.Close()
		return nil, nil, errors.New("no print in the node report")
	}
}

// restore makes the node's summary and fleet node from what was read.
func restore(n *nodeJSON, p *checks.Print, where string) (*report.Node, *checks.FleetNode) {
	for i := range n.Inputs {
		if n.Inputs[i].Bundle == "" {
			n.Inputs[i].Bundle = where
		}
	}
	res := &checks.Result{Findings: n.Findings, Statuses: n.Statuses, Mode: n.Mode, ModeSource: n.ModeSource, Programmed: n.Programmed,
		Migration: n.Migration, ModeOrigin: n.ModeOrigin, Coverage: n.Coverage}
	sum := &report.Node{Name: n.Name, Inputs: n.Inputs, Version: n.Version, VersionSource: n.VersionSource, Notes: n.Notes,
		Checklist: n.Checklist, Result: res}
	base := checks.BaseName(n.Name, nil)
	if base == "" {
		// A report of its own names the node by its directory.
		w := strings.TrimRight(where, "/")
		if path.Base(w) == load.NodeReportFile {
			w = path.Dir(w)
		}
		base = checks.BaseName("", []model.Input{{Bundle: w}})
	}
	return sum, checks.RestoreNode(base, res, p)
}

// checkDiff says how two lists of check IDs differ.
func checkDiff(got, want []string) string {
	var only, missing []string
	for _, id := range got {
		if !slices.Contains(want, id) {
			only = append(only, id)
		}
	}
	for _, id := range want {
		if !slices.Contains(got, id) {
			missing = append(missing, id)
		}
	}
	var parts []string
	if len(only) > 0 {
		parts = append(parts, "it ran "+strings.Join(only, ", ")+" too")
	}
	if len(missing) > 0 {
		parts = append(parts, "it did not run "+strings.Join(missing, ", "))
	}
	if len(parts) == 0 {
		return "in another order"
	}
	return strings.Join(parts, "; ")
}

// AnalyzeBundle loads a bundle, analyses its node as analyze does and
// writes the node's report to w. The bundle must hold one node.
func AnalyzeBundle(bundle string, lopts load.Options, selected []*checks.Check, tool report.Tool, w io.Writer) (*report.Node, error) {
	snaps, err := load.Load([]string{bundle}, lopts)
	if err != nil {
		return nil, err
	}
	if len(snaps) != 1 {
		return nil, fmt.Errorf("%s: %d nodes in one bundle: a node report is of one node", bundle, len(snaps))
	}
	n := checks.AnalyzeNode(snaps[0], selected, checks.NewPrints())
	sum := report.Summarize(snaps[0], n.Result())
	if err := Write(w, sum, n, Meta{Tool: tool, Checks: checks.IDs(selected)}, bundle); err != nil {
		return nil, fmt.Errorf("writing the node report: %w", err)
	}
	return sum, nil
}

// WriteInto analyses the bundle that is the directory dir (see
// [AnalyzeBundle]) and writes its report into it, as node-report.json
// (replacing one that is there). The report is written under a hidden name
// first, so that the analysis never reads it.
func WriteInto(dir string, lopts load.Options, selected []*checks.Check, tool report.Tool) error {
	f, err := os.CreateTemp(dir, "."+load.NodeReportFile+".tmp-*")
	if err != nil {
		return err
	}
	_, err = AnalyzeBundle(dir, lopts, selected, tool, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o600)
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, load.NodeReportFile))
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}
