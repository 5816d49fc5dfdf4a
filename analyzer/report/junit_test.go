package report

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
)

// TestJUnitFailOn: findings below --fail-on are written to system-out and
// the test case passes. A finding the nodes share (fleet-shared: one
// clusterip-outside-servicecidr warning naming the three nodes) is a case
// of each node's suite.
func TestJUnitFailOn(t *testing.T) {
	r := loadReport(t, "fleet-shared.in.json")
	for _, tc := range []struct {
		failOn   checks.Severity
		failures int
	}{{0, 6}, {checks.Warning, 6}, {checks.Error, 3}, {NeverFail, 0}} {
		var buf bytes.Buffer
		if err := RenderJUnit(&buf, r, Options{FailOn: tc.failOn}); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Failures int `xml:"failures,attr"`
			Suites   []struct {
				Cases []struct {
					Name      string `xml:"name,attr"`
					Classname string `xml:"classname,attr"`
					Failure   *struct {
						Type string `xml:"type,attr"`
					} `xml:"failure"`
					SystemOut string `xml:"system-out"`
				} `xml:"testcase"`
			} `xml:"testsuite"`
		}
		if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Failures != tc.failures {
			t.Errorf("FailOn %d: %d failures, want %d", tc.failOn, doc.Failures, tc.failures)
		}
		if len(doc.Suites) != 3 {
			t.Fatalf("%d suites, want one per node", len(doc.Suites))
		}
		for _, suite := range doc.Suites {
			found := false
			for _, c := range suite.Cases {
				if c.Name != "clusterip-outside-servicecidr" {
					continue
				}
				found = true
				if tc.failOn <= checks.Warning && c.Failure == nil {
					t.Errorf("FailOn %d: %s: the shared warning is no failure", tc.failOn, c.Classname)
				}
				if tc.failOn > checks.Warning && (c.Failure != nil || !bytes.Contains([]byte(c.SystemOut), []byte("7 Services have a cluster IP"))) {
					t.Errorf("FailOn %d: %s: the shared warning is not in system-out: %+v", tc.failOn, c.Classname, c)
				}
			}
			if !found {
				t.Errorf("a suite has no clusterip-outside-servicecidr case")
			}
		}
	}
}

// TestJUnitInconclusive: an inconclusive run is no clean pass. Each suite
// carries the node's verdict, gaps and needs as properties; a check that
// ran over part of its inputs is skipped with what it did not check; the
// gaps make a case "coverage", skipped, or failed (type inconclusive)
// when an inconclusive verdict fails the run (--fail-on inconclusive).
// A complete run has neither.
func TestJUnitInconclusive(t *testing.T) {
	type junitCase struct {
		Name    string `xml:"name,attr"`
		Skipped *struct {
			Message string `xml:"message,attr"`
		} `xml:"skipped"`
		Failure *struct {
			Type string `xml:"type,attr"`
			Text string `xml:",chardata"`
		} `xml:"failure"`
	}
	type junitDoc struct {
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Props []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Cases []junitCase `xml:"testcase"`
		} `xml:"testsuite"`
	}
	parse := func(t *testing.T, r *Report, opts Options) junitDoc {
		t.Helper()
		var buf bytes.Buffer
		if err := RenderJUnit(&buf, r, opts); err != nil {
			t.Fatal(err)
		}
		var doc junitDoc
		if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Suites) == 0 {
			t.Fatal("no suite")
		}
		return doc
	}
	caseOf := func(doc junitDoc, name string) *junitCase {
		for i, c := range doc.Suites[0].Cases {
			if c.Name == name {
				return &doc.Suites[0].Cases[i]
			}
		}
		return nil
	}
	// pasted: an iptables-save cut short, verdict inconclusive.
	r := loadReport(t, "pasted.in.json")
	for _, failInconclusive := range []bool{false, true} {
		doc := parse(t, r, Options{FailOn: checks.Error, FailInconclusive: failInconclusive})
		props := map[string][]string{}
		for _, p := range doc.Suites[0].Props {
			props[p.Name] = append(props[p.Name], p.Value)
		}
		if len(props["verdict"]) != 1 || props["verdict"][0] != checks.VerdictInconclusive || len(props["gap"]) != len(r.Coverage.Gaps) || len(props["need"]) == 0 {
			t.Errorf("fail inconclusive %v: properties %q, want the verdict, %d gaps and the needs", failInconclusive, props, len(r.Coverage.Gaps))
		}
		if c := caseOf(doc, "service-missing"); c == nil || c.Skipped == nil || !strings.HasPrefix(c.Skipped.Message, "not all checked: not checked for 6 service ports") {
			t.Errorf("fail inconclusive %v: service-missing ran over part of the dump and is not skipped: %+v", failInconclusive, c)
		}
		c := caseOf(doc, "coverage")
		switch {
		case c == nil:
			t.Errorf("fail inconclusive %v: no coverage case", failInconclusive)
		case failInconclusive && (c.Failure == nil || c.Failure.Type != checks.VerdictInconclusive || !strings.Contains(c.Failure.Text, "is partial: cut short") || doc.Failures != 1):
			t.Errorf("fail inconclusive: the coverage case does not fail with the gaps (%d failures): %+v", doc.Failures, c)
		case !failInconclusive && (c.Skipped == nil || c.Failure != nil || doc.Failures != 0):
			t.Errorf("the coverage case is not skipped (%d failures): %+v", doc.Failures, c)
		}
	}
	// fleet: node-a and node-b are complete (ok), node-c has findings.
	doc := parse(t, loadReport(t, "fleet.in.json"), Options{FailOn: checks.Error, FailInconclusive: true})
	if c := caseOf(doc, "coverage"); c != nil {
		t.Errorf("a complete run has a coverage case: %+v", c)
	}
	for _, c := range doc.Suites[0].Cases {
		if c.Skipped != nil && strings.HasPrefix(c.Skipped.Message, "not all checked") {
			t.Errorf("%s of a complete run is skipped: %s", c.Name, c.Skipped.Message)
		}
	}
}
