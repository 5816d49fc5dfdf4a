package report

import (
	"bytes"
	"encoding/xml"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
)

// TestJUnitFailOn: findings below --fail-on are written to system-out and
// the test case passes.
func TestJUnitFailOn(t *testing.T) {
	r := loadReport(t, "fleet.in.json")
	for _, tc := range []struct {
		failOn   checks.Severity
		failures int
	}{{0, 4}, {checks.Warning, 4}, {checks.Error, 3}, {NeverFail, 0}} {
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
		c := doc.Suites[2].Cases[len(doc.Suites[2].Cases)-1]
		if c.Name != "node-drift" || c.Classname != "node-c" {
			t.Fatalf("last case of node-c: %s %s", c.Name, c.Classname)
		}
		if tc.failOn > checks.Warning && (c.Failure != nil || !bytes.Contains([]byte(c.SystemOut), []byte("node-c forwards to 10.244.3.4:8080"))) {
			t.Errorf("FailOn %d: node-drift warnings not in system-out: %+v", tc.failOn, c)
		}
	}
}
