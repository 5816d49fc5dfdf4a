package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/checks"
)

// The JUnit XML elements proxyscan writes (the schema of Jenkins' JUnit
// reports, which GitLab, GitHub test reporters and others read).
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name       string          `xml:"name,attr"`
		Tests      int             `xml:"tests,attr"`
		Failures   int             `xml:"failures,attr"`
		Errors     int             `xml:"errors,attr"`
		Skipped    int             `xml:"skipped,attr"`
		Properties *junitPropsList `xml:"properties,omitempty"`
		Cases      []junitCase     `xml:"testcase"`
	}
	junitPropsList struct {
		Props []junitProp `xml:"property"`
	}
	junitProp struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	junitCase struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		Skipped   *junitMessage `xml:"skipped,omitempty"`
		Failure   *junitMessage `xml:"failure,omitempty"`
		SystemOut *junitOut     `xml:"system-out,omitempty"`
	}
	// The texts are escaped by escapeText, with their line breaks kept so
	// that evidence reads in the XML as in the dump.
	junitMessage struct {
		Message string `xml:"message,attr,omitempty"`
		Type    string `xml:"type,attr,omitempty"`
		Text    string `xml:",innerxml"`
	}
	junitOut struct {
		Text string `xml:",innerxml"`
	}
)

// escapeText escapes s for XML element content, keeping newlines and tabs
// as they are (encoding/xml writes them as character references).
func escapeText(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return strings.NewReplacer("&#xA;", "\n", "&#x9;", "\t").Replace(b.String())
}

// RenderJUnit writes the report as JUnit XML: a test suite per node, a
// test case per check (classname the node), failing with the messages and
// evidence of its findings at or above Options.FailOn (findings below it go
// to system-out), skipped with the reason when the check did not run, or
// with what it did not check when it ran over part of its inputs. Each
// suite's properties hold the node's verdict, coverage gaps and the inputs
// that would close them; a node with gaps has a case "coverage" listing
// them, skipped, or failed when Options.FailInconclusive and the node's
// verdict is inconclusive.
func RenderJUnit(w io.Writer, r *Report, opts Options) error {
	type suiteIn struct {
		node     string
		mode     string
		version  string
		verdict  string
		coverage *checks.Coverage
		statuses []checks.Status
	}
	var suites []suiteIn
	if len(r.Nodes) > 0 {
		for _, n := range r.Nodes {
			suites = append(suites, suiteIn{n.Node, n.Mode, n.KubeProxyVersion, n.Verdict, n.Coverage, n.Checks})
		}
	} else {
		suites = append(suites, suiteIn{r.Node, r.Mode, r.KubeProxyVersion, r.Verdict, r.Coverage, r.Checks})
	}
	out := junitSuites{Name: "proxyscan"}
	for _, s := range suites {
		name := s.node
		if name == "" {
			name = "node"
		}
		js := junitSuite{Name: name}
		var props []junitProp
		if s.mode != "" {
			props = append(props, junitProp{"mode", s.mode})
		}
		if s.version != "" {
			props = append(props, junitProp{"kubeProxyVersion", s.version})
		}
		if s.verdict != "" {
			props = append(props, junitProp{"verdict", s.verdict})
		}
		var gaps []string
		if s.coverage != nil {
			gaps = s.coverage.Gaps
			for _, g := range gaps {
				props = append(props, junitProp{"gap", g})
			}
			for _, n := range s.coverage.Needs {
				props = append(props, junitProp{"need", n.Input + ": " + n.Command})
			}
		}
		if len(props) > 0 {
			js.Properties = &junitPropsList{props}
		}
		byCheck := map[string][]checks.Finding{}
		var order []string
		for _, f := range r.Findings {
			if len(r.Nodes) > 0 && !f.AppliesTo(s.node) {
				continue
			}
			// A finding that stands for the faults of several checks
			// (Finding.Checks) is a failure of each.
			seen := map[string]bool{}
			for _, id := range append([]string{f.Check}, f.Checks...) {
				if seen[id] {
					continue
				}
				seen[id] = true
				if byCheck[id] == nil {
					order = append(order, id)
				}
				byCheck[id] = append(byCheck[id], f)
			}
		}
		statuses := s.statuses
		if len(statuses) == 0 {
			// A report without statuses: one case per check with findings.
			for _, id := range order {
				statuses = append(statuses, checks.Status{ID: id, State: "ran", Findings: len(byCheck[id])})
			}
		}
		for _, st := range statuses {
			c := junitCase{Name: st.ID, Classname: name}
			if st.State == "skipped" {
				c.Skipped = &junitMessage{Message: st.Reason}
				js.Skipped++
			}
			var failing, other []checks.Finding
			for _, f := range byCheck[st.ID] {
				if opts.FailOn == 0 || f.Severity >= opts.FailOn {
					failing = append(failing, f)
				} else {
					other = append(other, f)
				}
			}
			if len(failing) > 0 {
				worst := failing[0].Severity
				for _, f := range failing {
					worst = max(worst, f.Severity)
				}
				msg := failing[0].Message
				if len(failing) > 1 {
					msg = fmt.Sprintf("%d findings; first: %s", len(failing), msg)
				}
				c.Failure = &junitMessage{Message: msg, Type: worst.String(), Text: escapeText(findingsText(failing))}
				js.Failures++
			}
			// A check that ran over part of what it checks is no pass.
			if parts := uncheckedParts(gaps, st); len(parts) > 0 && c.Failure == nil {
				c.Skipped = &junitMessage{Message: "not all checked: " + strings.Join(parts, "; ")}
				js.Skipped++
			}
			var outText []string
			for _, n := range st.Notes {
				outText = append(outText, "note: "+n)
			}
			if len(other) > 0 {
				outText = append(outText, strings.TrimRight(findingsText(other), "\n"))
			}
			if len(outText) > 0 {
				c.SystemOut = &junitOut{escapeText(strings.Join(outText, "\n"))}
			}
			js.Cases = append(js.Cases, c)
			js.Tests++
		}
		// What was not checked is a case of its own: skipped, or failed
		// when an inconclusive verdict fails the run.
		if len(gaps) > 0 {
			c := junitCase{Name: "coverage", Classname: name}
			lines := append([]string(nil), gaps...)
			for _, n := range s.coverage.Needs {
				lines = append(lines, "add "+n.Input+": "+n.Command)
			}
			text := escapeText(strings.Join(lines, "\n"))
			if opts.FailInconclusive && s.verdict == checks.VerdictInconclusive {
				c.Failure = &junitMessage{Message: inconclusiveText, Type: checks.VerdictInconclusive, Text: text}
				js.Failures++
			} else {
				c.Skipped = &junitMessage{Message: "not everything that matters was checked"}
				c.SystemOut = &junitOut{text}
				js.Skipped++
			}
			js.Cases = append(js.Cases, c)
			js.Tests++
		}
		out.Tests += js.Tests
		out.Failures += js.Failures
		out.Suites = append(out.Suites, js)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// findingsText lists findings with their evidence and advice.
func findingsText(fs []checks.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "%s", f.Severity)
		if f.Service != "" {
			fmt.Fprintf(&b, " %s", f.Service)
		}
		fmt.Fprintf(&b, ": %s\n", f.Message)
		for _, e := range f.Evidence {
			fmt.Fprintf(&b, "  %s\n", evidenceLoc(e))
			if e.Text != "" {
				fmt.Fprintf(&b, "    %s\n", e.Text)
			}
		}
		if f.Advice != "" {
			fmt.Fprintf(&b, "  advice: %s\n", f.Advice)
		}
	}
	return b.String()
}
