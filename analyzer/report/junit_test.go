package report

import (
	"bytes"
	"encoding/xml"
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
