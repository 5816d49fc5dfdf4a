// Package checktest runs checks on scenario files and compares their
// findings with expectations written next to the evidence, in the style of
// go/analysis's analysistest.
//
// A scenario is a txtar archive whose files form a bundle (node/..., cluster/...,
// kube-proxy/...). Its comment may hold directives, one per line:
//
//	base: bundles/iptables-healthy   start from this directory of testdata/ and overlay the files
//	remove: node/ip6tables-save.txt  drop a file of the base
//	node: worker-1                   the --node option
//	version: 1.23                    the --version option
//
// In any file, a line
//
//	# want check-id "regexp"
//
// expects a finding of that check whose message matches the regexp and whose
// evidence points at the next line that is not itself a want line.
//
// Files that cannot hold comments (JSON: `nft -j list ruleset`, kubectl -o
// json) take their expectations from a section named "want", which is not
// written to the bundle. Each of its lines (blank lines and lines starting
// with # aside) is
//
//	FILE LOCATION check-id "regexp"
//
// where FILE is the file's name in the bundle and LOCATION the JSON path the
// evidence must point at ($.nftables[42], $.nftables[10].map.elem[1]) or a
// 1-based line number:
//
//	-- want --
//	node/nft-ruleset.json $.nftables[10].map.elem[1] service-missing "cluster IP"
//
// Every finding must be expected and every expectation met. A scenario without
// wants must produce no finding at all (the healthy scenarios).
package checktest

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// Want is one expectation of a scenario.
type Want struct {
	Check string
	Re    *regexp.Regexp
	File  string
	// Line is the line the evidence must point at, or Path (when not
	// empty) the JSON path.
	Line int
	Path string
	// At is where the want line itself is (for messages).
	At string
}

// WantSection is the name of the txtar section of expectations by
// location.
const WantSection = "want"

var (
	reWant    = regexp.MustCompile(`^\s*#\s*want\s+([a-z0-9-]+)\s+"((?:[^"\\]|\\.)*)"\s*$`)
	reWantAt  = regexp.MustCompile(`^\s*(\S+)\s+(\$\S*|[0-9]+)\s+([a-z0-9-]+)\s+"((?:[^"\\]|\\.)*)"\s*$`)
	reWantKey = regexp.MustCompile(`^[a-z0-9-]+$`)
)

// Scenario is a parsed scenario file.
type Scenario struct {
	Name    string
	Dir     string // where its bundle was written
	Wants   []Want
	Options load.Options
}

// Load writes the bundle of a scenario file into a temporary directory and
// collects its expectations.
func Load(t *testing.T, file string) *Scenario {
	t.Helper()
	a, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := &Scenario{Name: strings.TrimSuffix(filepath.Base(file), ".txtar"), Dir: t.TempDir()}
	for _, line := range strings.Split(string(a.Comment), "\n") {
		key, val, ok := strings.Cut(line, ":")
		val = strings.TrimSpace(val)
		if !ok {
			continue
		}
		switch strings.TrimSpace(key) {
		case "base":
			copyDir(t, filepath.Join(parsetest.Root(t), "testdata", val), s.Dir)
		case "remove":
			if err := os.Remove(filepath.Join(s.Dir, val)); err != nil {
				t.Fatalf("%s: remove %s: %v", file, val, err)
			}
		case "node":
			s.Options.Node = val
		case "version":
			s.Options.Version = val
		}
	}
	for _, f := range a.Files {
		if f.Name == WantSection {
			s.Wants = append(s.Wants, sectionWants(t, file, f)...)
			continue
		}
		p := filepath.Join(s.Dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		s.Wants = append(s.Wants, wants(t, file, f)...)
	}
	return s
}

func wants(t *testing.T, file string, f txtar.File) []Want {
	var out, pending []Want
	for i, line := range strings.Split(string(f.Data), "\n") {
		if m := reWant.FindStringSubmatch(line); m != nil {
			re, err := regexp.Compile(strings.ReplaceAll(m[2], `\"`, `"`))
			if err != nil {
				t.Fatalf("%s: %s:%d: bad regexp: %v", file, f.Name, i+1, err)
			}
			pending = append(pending, Want{Check: m[1], Re: re, File: f.Name, At: fmt.Sprintf("%s:%d", f.Name, i+1)})
			continue
		}
		if strings.Contains(line, "# want") {
			t.Fatalf("%s: %s:%d: malformed want line %q", file, f.Name, i+1, line)
		}
		for _, w := range pending {
			w.Line = i + 1
			out = append(out, w)
		}
		pending = nil
	}
	if len(pending) > 0 {
		t.Fatalf("%s: %s: want line at the end of the file", file, f.Name)
	}
	return out
}

// sectionWants reads the expectations of the want section.
func sectionWants(t *testing.T, file string, f txtar.File) []Want {
	var out []Want
	for i, line := range strings.Split(string(f.Data), "\n") {
		if tl := strings.TrimSpace(line); tl == "" || strings.HasPrefix(tl, "#") {
			continue
		}
		m := reWantAt.FindStringSubmatch(line)
		if m == nil || !reWantKey.MatchString(m[3]) {
			t.Fatalf("%s: %s:%d: malformed want %q (want FILE LOCATION check-id \"regexp\")", file, f.Name, i+1, line)
		}
		re, err := regexp.Compile(strings.ReplaceAll(m[4], `\"`, `"`))
		if err != nil {
			t.Fatalf("%s: %s:%d: bad regexp: %v", file, f.Name, i+1, err)
		}
		w := Want{Check: m[3], Re: re, File: m[1], At: fmt.Sprintf("%s:%d", f.Name, i+1)}
		if strings.HasPrefix(m[2], "$") {
			w.Path = m[2]
		} else {
			w.Line, _ = strconv.Atoi(m[2])
		}
		out = append(out, w)
	}
	return out
}

// compactKey names a scenario run with a list of checks (its length and
// first check).
type compactKey struct {
	file  string
	n     int
	first *checks.Check
}

// compactChecked holds the runs whose compacted loading was compared.
var compactChecked sync.Map

// Run loads a scenario, runs the checks and reports unexpected findings and
// unmet expectations as test errors. It returns the findings.
func Run(t *testing.T, file string, list []*checks.Check) []checks.Finding {
	t.Helper()
	s := Load(t, file)
	snaps, err := load.Load([]string{s.Dir}, s.Options)
	if err != nil {
		t.Fatalf("%s: loading: %v", s.Name, err)
	}
	var all []checks.Finding
	var results []*checks.Result
	for _, snap := range snaps {
		res := checks.Run(snap, list)
		results = append(results, res)
		all = append(all, res.Findings...)
	}
	// analyze loads with Compact and reads the dumps ahead as soon as
	// they are parsed: the checks must find the same there (once per
	// scenario and list of checks in a test binary: the tests that run a
	// scenario again do not compare again).
	if _, done := compactChecked.LoadOrStore(compactKey{file, len(list), firstCheck(list)}, true); !done {
		opts := s.Options
		opts.Compact = true
		forget := func() {}
		opts.Parsed = func(dumps []*iptables.Dump) { forget = checks.ReadAhead(dumps, list) }
		compact, err := load.Load([]string{s.Dir}, opts)
		if err != nil {
			forget()
			t.Fatalf("%s: loading with Compact: %v", s.Name, err)
		}
		for i, snap := range compact {
			if res := checks.Run(snap, list); i >= len(results) || !reflect.DeepEqual(res, results[i]) {
				t.Errorf("%s: snapshot %d: the checks find otherwise when the objects are compacted and the dumps read ahead", s.Name, i)
			}
		}
		forget()
	}
	met := make([]bool, len(s.Wants))
	for _, f := range all {
		matched := false
		for i, w := range s.Wants {
			if w.Check == f.Check && w.Re.MatchString(f.Message) && points(f, w) {
				met[i] = true
				matched = true
			}
		}
		if !matched {
			t.Errorf("%s: unexpected finding %s: %s\n\tevidence: %s", s.Name, f.Check, f.Message, evidence(f))
		}
	}
	for i, w := range s.Wants {
		if !met[i] {
			t.Errorf("%s: %s: no %s finding matching %q with evidence at %s", s.Name, w.At, w.Check, w.Re, w.Location())
		}
	}
	return all
}

// Location returns "file:line" or "file:path".
func (w Want) Location() string {
	if w.Path != "" {
		return w.File + ":" + w.Path
	}
	return w.File + ":" + strconv.Itoa(w.Line)
}

func points(f checks.Finding, w Want) bool {
	for _, e := range f.Evidence {
		if filepath.ToSlash(e.File) != w.File {
			continue
		}
		if w.Path != "" && e.Path == w.Path || w.Path == "" && e.Path == "" && e.Line == w.Line {
			return true
		}
	}
	return false
}

func evidence(f checks.Finding) string {
	var parts []string
	for _, e := range f.Evidence {
		if e.Path != "" {
			parts = append(parts, e.File+":"+e.Path)
			continue
		}
		parts = append(parts, e.File+":"+strconv.Itoa(e.Line))
	}
	return strings.Join(parts, ", ")
}

// Files returns the scenario files matching a pattern under testdata/.
func Files(t *testing.T, pattern string) []string {
	return parsetest.Files(t, pattern)
}

// WantedChecks returns the check IDs the scenarios of a pattern expect.
func WantedChecks(t *testing.T, pattern string) map[string][]string {
	out := map[string][]string{}
	for _, file := range Files(t, pattern) {
		a, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range a.Files {
			for _, line := range strings.Split(string(f.Data), "\n") {
				if m := reWant.FindStringSubmatch(line); m != nil {
					out[m[1]] = append(out[m[1]], filepath.Base(file))
				}
				if m := reWantAt.FindStringSubmatch(line); m != nil && f.Name == WantSection {
					out[m[3]] = append(out[m[3]], filepath.Base(file))
				}
			}
		}
	}
	for k := range out {
		sort.Strings(out[k])
	}
	return out
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	parsetest.CopyTree(t, from, to, nil)
}

func firstCheck(list []*checks.Check) *checks.Check {
	if len(list) == 0 {
		return nil
	}
	return list[0]
}
