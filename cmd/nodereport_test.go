package cmd

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/nodereport"
	"github.com/proxyscan/proxyscan/analyzer/report"
	"github.com/proxyscan/proxyscan/collect"
	"github.com/proxyscan/proxyscan/parsers/manifest"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

const reportVersion = "v0.0.0-test"

// reportedBundles copies every bundle of testdata into a directory, under
// its path relative to testdata with / replaced by -, and writes each one's
// node report into it, as collect --analyze does.
func reportedBundles(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	var out []string
	for _, b := range testBundles(t) {
		rel, err := filepath.Rel(testdata(t), b)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, strings.ReplaceAll(rel, string(filepath.Separator), "-"))
		parsetest.CopyTree(t, b, dst, nil)
		if err := writeNodeReport(dst, &CollectOptions{Tool: toolOf(reportVersion)}); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		out = append(out, dst)
	}
	return out
}

// fleetJSON analyses paths as analyze does and returns the JSON report.
func fleetJSON(t *testing.T, paths []string, fo fleetOptions) ([]byte, error) {
	t.Helper()
	if fo.checks == nil {
		fo.checks = checks.All
	}
	fo.load.Compact, fo.jobs = true, max(fo.jobs, 1)
	if fo.version == "" {
		fo.version = reportVersion
	}
	nodes, drift, err := analyzeFleet(paths, &fo)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := report.RenderJSON(&buf, report.BuildNodes(report.Tool{Name: "proxyscan", Version: reportVersion}, nodes, drift), report.Options{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), nil
}

// dropDumps removes every file of a bundle but its node report.
func dropDumps(t *testing.T, bundle string) {
	t.Helper()
	err := filepath.WalkDir(bundle, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == load.NodeReportFile {
			return err
		}
		return os.Remove(p)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestNodeReportSameAnswers: for every testdata bundle, the report of the
// bundle read from its node report is the report of the bundle analysed
// from its dumps, byte for byte, also once the dumps are gone; and so is
// the fleet of all of them (node-drift's findings and matrix included),
// with the bundles in any order and with some of them analysed from
// their dumps.
func TestNodeReportSameAnswers(t *testing.T) {
	bundles := reportedBundles(t)
	fleetWant, err := fleetJSON(t, bundles, fleetOptions{reanalyze: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for _, b := range bundles {
		w, err := fleetJSON(t, []string{b}, fleetOptions{reanalyze: true})
		if err != nil {
			t.Fatal(err)
		}
		want[b] = w
		got, err := fleetJSON(t, []string{b}, fleetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, w) {
			t.Errorf("%s: read from its node report:\n%s\nwant:\n%s", filepath.Base(b), got, w)
		}
	}
	// Half the bundles analysed from their dumps, half from their reports.
	for i, b := range bundles {
		if i%2 == 0 {
			if err := os.Remove(filepath.Join(b, load.NodeReportFile)); err != nil {
				t.Fatal(err)
			}
			if err := writeNodeReportAgain(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, jobs := range fleetJobs() {
		got, err := fleetJSON(t, bundles, fleetOptions{jobs: jobs})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, fleetWant) {
			t.Errorf("jobs %d: the fleet read from node reports differs from the fleet analysed from dumps", jobs)
		}
	}
	for _, b := range bundles {
		dropDumps(t, b)
	}
	for _, b := range bundles {
		got, err := fleetJSON(t, []string{b}, fleetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want[b]) {
			t.Errorf("%s without its dumps: the report differs", filepath.Base(b))
		}
	}
	got, err := fleetJSON(t, []string{filepath.Dir(bundles[0])}, fleetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, fleetWant) {
		t.Errorf("the fleet without dumps differs from the fleet analysed from them")
	}
}

// writeNodeReportAgain writes a bundle's node report again.
func writeNodeReportAgain(b string) error {
	return writeNodeReport(b, &CollectOptions{Tool: toolOf(reportVersion)})
}

// TestLooseNodeReports: node reports copied out of their bundles (kubectl
// cp), given as files, a directory or a glob, give the findings and the
// drift of the bundles.
func TestLooseNodeReports(t *testing.T) {
	t.Chdir(parsetest.Root(t))
	nodes := []string{"node-a", "node-b", "node-c"}
	dir := t.TempDir()
	var bundles, files []string
	for _, n := range nodes {
		b := filepath.Join(dir, "bundles", n)
		parsetest.CopyTree(t, filepath.Join("testdata", "fleet", "nodes", n), b, nil)
		if err := writeNodeReportAgain(b); err != nil {
			t.Fatal(err)
		}
		bundles = append(bundles, b)
		f := filepath.Join(dir, "reports", n, load.NodeReportFile)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(b, load.NodeReportFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	findings := func(data []byte) string {
		var r struct {
			Findings json.RawMessage `json:"findings"`
			Drift    json.RawMessage `json:"drift"`
			Summary  json.RawMessage `json:"summary"`
		}
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
		return string(r.Findings) + string(r.Drift) + string(r.Summary)
	}
	want, err := fleetJSON(t, bundles, fleetOptions{reanalyze: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{files, {filepath.Join(dir, "reports")}, {filepath.Join(dir, "reports", "node-*", load.NodeReportFile)}} {
		got, err := fleetJSON(t, args, fleetOptions{})
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if findings(got) != findings(want) {
			t.Errorf("%v: findings and drift differ from the bundles':\n%s\nwant:\n%s", args, findings(got), findings(want))
		}
		if !strings.Contains(string(got), `"bundle": "`+files[0]+`"`) {
			t.Errorf("%v: the node is not named by its report's path", args)
		}
	}
	// A node report among loose dump files is refused.
	_, err = fleetJSON(t, []string{files[0], filepath.Join("testdata", "fleet", "nodes", "node-a", "node", "iptables-save.txt")}, fleetOptions{})
	if err == nil || !load.IsInputError(err) || !strings.Contains(err.Error(), "is a node report") {
		t.Errorf("a report with loose files: %v", err)
	}
}

// TestNodeReportMismatch: a report of another proxyscan or other checks is
// never merged: its bundle is analysed from its dumps (with a note), a
// report of its own is refused (exit status 2).
func TestNodeReportMismatch(t *testing.T) {
	t.Chdir(parsetest.Root(t))
	dir := t.TempDir()
	b := filepath.Join(dir, "node-a")
	parsetest.CopyTree(t, filepath.Join("testdata", "fleet", "nodes", "node-a"), b, nil)
	if err := writeNodeReport(b, &CollectOptions{Tool: toolOf("v0.0.0-old")}); err != nil {
		t.Fatal(err)
	}
	want, err := fleetJSON(t, []string{b}, fleetOptions{reanalyze: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := fleetJSON(t, []string{b}, fleetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	note := "node-report.json not used: a node report of proxyscan v0.0.0-old, not v0.0.0-test; the node was analysed from its dumps"
	if !bytes.Contains(got, []byte(note)) {
		t.Errorf("no note of the report not used:\n%s", got)
	}
	if !bytes.Equal(bytes.Replace(got, []byte("\n  \"notes\": [\n    \""+note+"\"\n  ],"), nil, 1), want) {
		t.Errorf("the bundle analysed again differs from its analysis:\n%s\nwant:\n%s", got, want)
	}
	own := filepath.Join(b, load.NodeReportFile)
	if _, err := fleetJSON(t, []string{own}, fleetOptions{}); err == nil || !load.IsInputError(err) || !strings.Contains(err.Error(), "v0.0.0-old") {
		t.Errorf("a report of its own of another version: %v", err)
	}
	// Other checks: --only service-missing.
	if err := writeNodeReportAgain(b); err != nil {
		t.Fatal(err)
	}
	only, err := checks.Select(checks.All, checks.Options{Only: []string{"service-missing"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = fleetJSON(t, []string{own}, fleetOptions{checks: only})
	if err == nil || !strings.Contains(err.Error(), "a node report of other checks (it ran nodeport-missing") {
		t.Errorf("a report of other checks: %v", err)
	}
	got, err = fleetJSON(t, []string{b}, fleetOptions{checks: only})
	if err != nil || !bytes.Contains(got, []byte("a node report of other checks")) {
		t.Errorf("a bundle of other checks: %v\n%s", err, got)
	}
	// --version is not the report's: the bundle is analysed again, a
	// report of its own is refused.
	if err := writeNodeReportAgain(b); err != nil {
		t.Fatal(err)
	}
	got, err = fleetJSON(t, []string{b}, fleetOptions{load: load.Options{Version: "1.28"}})
	if err != nil || !bytes.Contains(got, []byte("node-report.json not used: it was written without --version")) || !bytes.Contains(got, []byte(`"kubeProxyVersion": "v1.28`)) {
		t.Errorf("--version with a bundle's report: %v\n%s", err, got)
	}
	if _, err := fleetJSON(t, []string{own}, fleetOptions{load: load.Options{Node: "x"}}); err == nil || !load.IsInputError(err) || !strings.Contains(err.Error(), "--node cannot apply") {
		t.Errorf("--node with a report of its own: %v", err)
	}
	// A damaged report in a bundle is an input error that names it.
	data, err := os.ReadFile(own)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(own, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := fleetJSON(t, []string{b}, fleetOptions{}); err == nil || !load.IsInputError(err) || !strings.Contains(err.Error(), "--reanalyze") {
		t.Errorf("a damaged report: %v", err)
	}
	f, output := testFactory()
	if code := Run(f, []string{"analyze", own}); code != 2 {
		_, stderr := output()
		t.Errorf("a damaged report of its own: exit %d, want 2: %s", code, stderr)
	}
}

// TestNodeReportInArchive: a .tgz bundle's report is read from the archive,
// with the same answers.
func TestNodeReportInArchive(t *testing.T) {
	t.Chdir(parsetest.Root(t))
	dir := t.TempDir()
	b := filepath.Join(dir, "node-c")
	parsetest.CopyTree(t, filepath.Join("testdata", "fleet", "nodes", "node-c"), b, nil)
	if err := writeNodeReportAgain(b); err != nil {
		t.Fatal(err)
	}
	tgz := filepath.Join(dir, "node-c.tgz")
	writeTGZ(t, b, tgz)
	want, err := fleetJSON(t, []string{tgz}, fleetOptions{reanalyze: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := fleetJSON(t, []string{tgz}, fleetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("read from the archive's report:\n%s\nwant:\n%s", got, want)
	}
	r, ok, err := nodereport.Open(tgz)
	if err != nil || !ok {
		t.Fatalf("no report found in the archive: %v", err)
	}
	r.Close()
}

// writeTGZ archives a bundle directory as collect does: under one top
// directory, node-report.json first.
func writeTGZ(t *testing.T, dir, out string) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	var files []string
	files = append(files, load.NodeReportFile)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != load.NodeReportFile {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bundle/" + filepath.ToSlash(f), Mode: 0o600, Size: int64(len(data))}); err != nil {
			t.Fatal(err)
		}
		tw.Write(data)
	}
	tw.Close()
	zw.Close()
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestNodeReportFileName: collect writes the report under the name the
// loader looks for.
func TestNodeReportFileName(t *testing.T) {
	if collect.NodeReportFile != load.NodeReportFile {
		t.Errorf("collect writes %s, analyze reads %s", collect.NodeReportFile, load.NodeReportFile)
	}
}

func toolOf(version string) manifest.Tool { return manifest.Tool{Name: "proxyscan", Version: version} }

// TestNodeReportSharedFinding: three bundles that carry the same export
// (testdata/fleet's, with fleet/shared's ServiceCIDR listing) give one
// clusterip-outside-servicecidr finding naming the three nodes, and the
// same report read from their node reports as analysed from their dumps.
func TestNodeReportSharedFinding(t *testing.T) {
	dir := t.TempDir()
	cidrs, err := os.ReadFile(testdata(t, "fleet", "shared", "servicecidrs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var bundles []string
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		dst := filepath.Join(dir, n)
		parsetest.CopyTree(t, testdata(t, "fleet", "nodes", n), dst, nil)
		if err := os.WriteFile(filepath.Join(dst, "cluster", "servicecidrs.yaml"), cidrs, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := writeNodeReport(dst, &CollectOptions{Tool: toolOf(reportVersion)}); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		bundles = append(bundles, dst)
	}
	want, err := fleetJSON(t, bundles, fleetOptions{reanalyze: true})
	if err != nil {
		t.Fatal(err)
	}
	var rep report.Report
	if err := json.Unmarshal(want, &rep); err != nil {
		t.Fatal(err)
	}
	var shared []checks.Finding
	for _, f := range rep.Findings {
		if f.Check == "clusterip-outside-servicecidr" {
			shared = append(shared, f)
		}
	}
	if len(shared) != 1 || strings.Join(shared[0].Nodes, ",") != "node-a,node-b,node-c" {
		t.Fatalf("clusterip-outside-servicecidr findings %+v, want one naming node-a, node-b and node-c", shared)
	}
	for _, b := range bundles {
		dropDumps(t, b)
	}
	got, err := fleetJSON(t, bundles, fleetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("read from node reports:\n%s\nwant:\n%s", got, want)
	}
}

// TestNodeReportCheckSelection: `collect --analyze --skip` writes a report
// of the selected checks, which analyze with the same selection merges
// (the same answers as analysing the bundle with it) and analyze with
// every check does not.
func TestNodeReportCheckSelection(t *testing.T) {
	t.Chdir(parsetest.Root(t))
	b := filepath.Join(t.TempDir(), "node-a")
	parsetest.CopyTree(t, filepath.Join("testdata", "fleet", "nodes", "node-a"), b, nil)
	skip := []string{"node-drift", "sync-failures"}
	selected, err := checks.Select(checks.All, checks.Options{Skip: skip})
	if err != nil {
		t.Fatal(err)
	}
	if err := writeNodeReport(b, &CollectOptions{Tool: toolOf(reportVersion), Skip: skip, checks: selected}); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(b, load.NodeReportFile)
	merged, err := fleetJSON(t, []string{own}, fleetOptions{checks: selected})
	if err != nil {
		t.Fatalf("the report with the selection it was written with: %v", err)
	}
	want, err := fleetJSON(t, []string{b}, fleetOptions{checks: selected, reanalyze: true})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.Replace(merged, []byte(own), []byte(b), -1), want) {
		t.Errorf("merging the report differs from analysing the bundle with the same checks:\n%s\nwant:\n%s", merged, want)
	}
	if bytes.Contains(merged, []byte(`"sync-failures"`)) {
		t.Errorf("a skipped check is in the merged report:\n%s", merged)
	}
	if _, err := fleetJSON(t, []string{own}, fleetOptions{}); err == nil || !strings.Contains(err.Error(), "a node report of other checks") {
		t.Errorf("the report merged with every check: %v", err)
	}
}
