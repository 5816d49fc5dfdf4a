package nodereport

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/report"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

var tool = report.Tool{Name: "proxyscan", Version: "v0.0.0-test"}

var expect = Expect{Version: tool.Version, Checks: checks.IDs(checks.All)}

// reportOf writes the node report of a testdata bundle.
func reportOf(t testing.TB, parts ...string) []byte {
	t.Helper()
	bundle := filepath.Join(append([]string{parsetest.Root(t), "testdata"}, parts...)...)
	var buf bytes.Buffer
	if _, err := AnalyzeBundle(bundle, load.Options{Compact: true}, checks.All, tool, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// summary is what a report says of a node, as JSON.
func summary(t testing.TB, n *Node) string {
	t.Helper()
	data, err := json.Marshal(struct {
		Sum  *report.Node
		Name string
	}{n.Summary, n.Fleet.Name})
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestRoundTrip: a report read and written again is the same report, and
// its print the same print.
func TestRoundTrip(t *testing.T) {
	for _, b := range [][]string{{"fleet", "nodes", "node-a"}, {"bundles", "ipvs-healthy"}, {"bundles", "nftables-healthy"}} {
		data := reportOf(t, b...)
		n, err := Read(bytes.NewReader(data), "where", checks.NewPrints(), expect)
		if err != nil {
			t.Fatalf("%v: %v", b, err)
		}
		for _, in := range n.Summary.Inputs {
			if in.Bundle != "where" {
				t.Errorf("%v: input %s of bundle %q, want the bundle the report is in", b, in.Path, in.Bundle)
			}
		}
		var again bytes.Buffer
		if err := Write(&again, n.Summary, n.Fleet, n.Meta, "where"); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again.Bytes(), data) {
			t.Errorf("%v: written again, the report differs", b)
		}
	}
}

// TestSharedPrints: the second report of a node whose print the store
// holds is not read past its fingerprints: it reads whole when cut there.
func TestSharedPrints(t *testing.T) {
	data := reportOf(t, "fleet", "nodes", "node-a")
	ps := checks.NewPrints()
	first, err := Read(bytes.NewReader(data), "a", ps, expect)
	if err != nil {
		t.Fatal(err)
	}
	cut := data[:bytes.Index(data, []byte(`"linesGzip"`))+len(`"linesGzip"`)]
	second, err := Read(bytes.NewReader(cut), "a", ps, expect)
	if err != nil {
		t.Fatalf("the second report read past its fingerprints: %v", err)
	}
	if p1, l1 := first.Fleet.PrintFingerprints(); true {
		p2, l2 := second.Fleet.PrintFingerprints()
		if p1 != p2 || l1 != l2 {
			t.Errorf("fingerprints %s %s, want %s %s", p2, l2, p1, l1)
		}
	}
	// With a store that does not hold it, the cut report is refused.
	if _, err := Read(bytes.NewReader(cut), "a", checks.NewPrints(), expect); err == nil {
		t.Error("a report cut short was read")
	}
}

// TestReadErrors: damaged or foreign reports are refused with a reason.
func TestReadErrors(t *testing.T) {
	data := string(reportOf(t, "fleet", "nodes", "node-b"))
	replace := func(old, new string) string {
		if !strings.Contains(data, old) {
			t.Fatalf("%q not in the report", old)
		}
		return strings.Replace(data, old, new, 1)
	}
	fp := data[strings.Index(data, `"portsFingerprint":"`)+len(`"portsFingerprint":"`):]
	fp = fp[:strings.IndexByte(fp, '"')]
	lfp := data[strings.Index(data, `"linesFingerprint":"`)+len(`"linesFingerprint":"`):]
	lfp = lfp[:strings.IndexByte(lfp, '"')]
	for _, tc := range []struct {
		name, in string
		mismatch bool
		want     string
	}{
		{"not JSON", "iptables-save", false, "not a node report"},
		{"an array", "[]", false, "not a JSON object"},
		{"another kind", replace(`"kind":"proxyscan-node-report"`, `"kind":"other"`), false, `kind "other"`},
		{"newer schema", replace(`"schemaVersion":1`, `"schemaVersion":2`), true, "schema version 2"},
		{"another version", replace(`"version":"v0.0.0-test"`, `"version":"v9"`), true, "proxyscan v9, not v0.0.0-test"},
		{"other checks", replace(`"node-drift"]`, `"node-drift","x"]`), true, "it ran x too"},
		{"unknown field", replace(`"node":{`, `"extra":1,"node":{`), false, `unknown field "extra"`},
		{"twice", replace(`"node":{`, `"tool":{},"node":{`), false, `"tool" appears twice`},
		{"ports fingerprint", replace(fp, "sha256:00"), false, "service ports' fingerprint"},
		{"lines fingerprint", replace(lfp, "sha256:00"), false, "lines' fingerprint"},
		{"cut", data[:len(data)-100], false, "unexpected EOF"},
		{"no print", replace(`"print":{`, `"x":{`), false, `unknown field "x"`},
	} {
		_, err := Read(strings.NewReader(tc.in), "b", checks.NewPrints(), expect)
		var mm *MismatchError
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		} else if isMM := asMismatch(err, &mm); isMM != tc.mismatch {
			t.Errorf("%s: mismatch %v, want %v", tc.name, isMM, tc.mismatch)
		}
	}
}

func asMismatch(err error, mm **MismatchError) bool {
	m, ok := err.(*MismatchError)
	*mm = m
	return ok
}

// seedFile is a node report of testdata/fleet/nodes/node-c, kept as it
// was written (go test -run TestSeed -update writes it again): reports of
// this schema version stay readable, and it seeds FuzzRead.
var seedFile = filepath.Join("testdata", "node-c.node-report.json")

// TestSeed: the kept report is read (with its own version and checks).
func TestSeed(t *testing.T) {
	if *parsetest.Update {
		if err := os.WriteFile(seedFile, reportOf(t, "fleet", "nodes", "node-c"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(seedFile)
	if err != nil {
		t.Fatal(err)
	}
	n, err := Read(bytes.NewReader(data), "node-c", checks.NewPrints(), ownExpect(data))
	if err != nil {
		t.Fatalf("%s: %v", seedFile, err)
	}
	if n.Summary.Name != "node-c" || len(n.Summary.Result.Statuses) == 0 {
		t.Errorf("%s: node %q, %d statuses", seedFile, n.Summary.Name, len(n.Summary.Result.Statuses))
	}
}

// ownExpect is what a report says of itself: its version and checks.
func ownExpect(data []byte) Expect {
	var head struct {
		Tool   report.Tool `json:"tool"`
		Checks []string    `json:"checks"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	_ = dec.Decode(&head)
	return Expect{Version: head.Tool.Version, Checks: head.Checks}
}

// FuzzRead: no input makes the reader panic, and a report it reads is
// written again into a report it reads alike.
func FuzzRead(f *testing.F) {
	data, err := os.ReadFile(seedFile)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add([]byte(`{"kind":"proxyscan-node-report","schemaVersion":1}`))
	f.Add([]byte(`{"kind":"proxyscan-node-report","schemaVersion":1,"tool":{"name":"proxyscan","version":"v0.0.0-test"},"checks":[],"node":{},"print":{"portsGzip":"","linesGzip":""}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		expect := ownExpect(in)
		n, err := Read(bytes.NewReader(in), "x", checks.NewPrints(), expect)
		if err != nil {
			return
		}
		var again bytes.Buffer
		if err := Write(&again, n.Summary, n.Fleet, n.Meta, "x"); err != nil {
			t.Fatalf("written again: %v", err)
		}
		m, err := Read(&again, "x", checks.NewPrints(), expect)
		if err != nil {
			t.Fatalf("read again: %v", err)
		}
		if summary(t, m) != summary(t, n) {
			t.Errorf("read again:\n%s\nwant:\n%s", summary(t, m), summary(t, n))
		}
	})
}

// TestLazyLines: with Reopen, the lines of a print are read from the
// report when needed, and are those of the report read whole; a report
// that changed since gives evidence without lines.
func TestLazyLines(t *testing.T) {
	data := reportOf(t, "fleet", "nodes", "node-b")
	whole, err := Read(bytes.NewReader(data), "b", checks.NewPrints(), expect)
	if err != nil {
		t.Fatal(err)
	}
	wantPorts, wantLines := whole.Fleet.PrintFingerprints()
	opened := 0
	lazy := expect
	lazy.Reopen = func() (io.ReadCloser, error) { opened++; return io.NopCloser(bytes.NewReader(data)), nil }
	n, err := Read(bytes.NewReader(data), "b", checks.NewPrints(), lazy)
	if err != nil {
		t.Fatal(err)
	}
	if opened != 0 {
		t.Errorf("the report was opened again %d times before its lines were needed", opened)
	}
	if p, l := n.Fleet.PrintFingerprints(); p != wantPorts || l != wantLines || opened != 1 {
		t.Errorf("lazy lines: fingerprints %s %s (opened %d times), want %s %s", p, l, opened, wantPorts, wantLines)
	}
	changed := expect
	changed.Reopen = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("{}")), nil }
	n, err = Read(bytes.NewReader(data), "b", checks.NewPrints(), changed)
	if err != nil {
		t.Fatal(err)
	}
	if _, l := n.Fleet.PrintFingerprints(); l == wantLines {
		t.Errorf("a report gone: its lines were read")
	}
}
