package report

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/net/html"

	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

var reportInputs = []string{"single-node", "multi-node", "clean", "fleet", "inconclusive", "pasted"}

func render(t *testing.T, format string, r *Report) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, format, r, Options{Width: 120}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestSARIFSchema validates the SARIF logs of every report input against
// the SARIF 2.1.0 JSON schema (testdata/schemas, see its README), with
// format assertions on, and checks the locations code-scanning UIs use.
func TestSARIFSchema(t *testing.T) {
	schemaFile := filepath.Join(parsetest.Root(t), "testdata", "schemas", "sarif-schema-2.1.0.json")
	f, err := os.Open(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("file:///sarif-schema-2.1.0.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("file:///sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	// A result without its message must not validate (the schema is applied).
	bad, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"ruleId": "x"}]}]}`))
	if sch.Validate(bad) == nil {
		t.Fatal("the schema accepted a result without a message")
	}
	for _, in := range reportInputs {
		t.Run(in, func(t *testing.T) {
			r := loadReport(t, in+".in.json")
			out := render(t, "sarif", r)
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(inst); err != nil {
				t.Fatalf("SARIF log does not validate: %v", err)
			}
			var log struct {
				Runs []struct {
					Tool struct {
						Driver struct {
							Rules []struct{ ID string }
						}
					}
					Results []struct {
						RuleID    string
						RuleIndex int
						Level     string
						Locations []struct {
							PhysicalLocation struct {
								ArtifactLocation struct{ URI string }
								Region           struct{ StartLine int }
							}
						}
						RelatedLocations []json.RawMessage
					}
				}
			}
			if err := json.Unmarshal(out, &log); err != nil {
				t.Fatal(err)
			}
			run := log.Runs[0]
			if len(run.Results) != len(r.Findings) {
				t.Fatalf("%d results for %d findings", len(run.Results), len(r.Findings))
			}
			for i, res := range run.Results {
				f := r.Findings[i]
				if run.Tool.Driver.Rules[res.RuleIndex].ID != res.RuleID || res.RuleID != f.Check {
					t.Errorf("result %d: rule %s at index %d, finding of %s", i, res.RuleID, res.RuleIndex, f.Check)
				}
				if want := map[string]string{"error": "error", "warning": "warning", "info": "note"}[f.Severity.String()]; res.Level != want {
					t.Errorf("result %d: level %s for severity %s", i, res.Level, f.Severity)
				}
				loc := res.Locations[0].PhysicalLocation
				if loc.Region.StartLine != f.Evidence[0].Line || !strings.HasSuffix(loc.ArtifactLocation.URI, f.Evidence[0].File) || strings.HasPrefix(loc.ArtifactLocation.URI, "/") {
					t.Errorf("result %d: location %s:%d for evidence %s:%d", i, loc.ArtifactLocation.URI, loc.Region.StartLine, f.Evidence[0].File, f.Evidence[0].Line)
				}
				if len(res.RelatedLocations) != len(f.Evidence)-1 {
					t.Errorf("result %d: %d related locations for %d evidence", i, len(res.RelatedLocations), len(f.Evidence))
				}
			}
		})
	}
}

// TestJUnitSchema validates the JUnit files of every report input with
// xmllint against Jenkins' JUnit schema (testdata/schemas/junit-10.xsd).
func TestJUnitSchema(t *testing.T) {
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Skip("xmllint not found: install it (Debian: apt-get install -y libxml2-utils) to validate the JUnit output")
	}
	xsd := filepath.Join(parsetest.Root(t), "testdata", "schemas", "junit-10.xsd")
	// The inputs, and an inconclusive one that fails the run (--fail-on
	// inconclusive: its coverage case is a failure).
	for _, in := range append(reportInputs[:len(reportInputs):len(reportInputs)], "pasted-failing") {
		t.Run(in, func(t *testing.T) {
			r := loadReport(t, strings.TrimSuffix(in, "-failing")+".in.json")
			var buf bytes.Buffer
			if err := RenderJUnit(&buf, r, Options{FailInconclusive: strings.HasSuffix(in, "-failing")}); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), in+".xml")
			if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(xmllint, "--noout", "--nonet", "--schema", xsd, file).CombinedOutput()
			if err != nil {
				t.Fatalf("xmllint: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), "validates") {
				t.Fatalf("xmllint did not say the file validates:\n%s", out)
			}
		})
	}
	// A broken file must not validate (the validator really runs).
	bad := filepath.Join(t.TempDir(), "bad.xml")
	os.WriteFile(bad, []byte(`<testsuites><testsuite name="x"><testcase/></testsuite></testsuites>`), 0o644)
	if out, err := exec.Command(xmllint, "--noout", "--nonet", "--schema", xsd, bad).CombinedOutput(); err == nil {
		t.Errorf("xmllint accepted an invalid file:\n%s", out)
	}
}

// TestHTMLSelfContained checks that the HTML pages load nothing: no
// script, no element or style pointing at another resource.
func TestHTMLSelfContained(t *testing.T) {
	for _, in := range reportInputs {
		page := render(t, "html", loadReport(t, in+".in.json"))
		z := html.NewTokenizer(bytes.NewReader(page))
		for {
			tt := z.Next()
			if tt == html.ErrorToken {
				break
			}
			tok := z.Token()
			if tok.Data == "script" || tok.Data == "link" || tok.Data == "iframe" || tok.Data == "img" {
				t.Errorf("%s: <%s> in the page", in, tok.Data)
			}
			for _, a := range tok.Attr {
				if (a.Key == "src" || a.Key == "href") && !strings.HasPrefix(a.Val, "#") {
					t.Errorf("%s: %s=%q in the page", in, a.Key, a.Val)
				}
			}
		}
		if bytes.Contains(page, []byte("url(")) || bytes.Contains(page, []byte("@import")) {
			t.Errorf("%s: the style loads a resource", in)
		}
	}
}

var reConsole = regexp.MustCompile(`(?m)^.*:CONSOLE[:(].*$`)

// chromium renders a page headless into a screenshot and returns the PNG
// and the console messages it logged. Networking goes to a closed local
// port, so that a page fetching anything would fail.
func chromium(t *testing.T, bin, page string) ([]byte, []string) {
	t.Helper()
	dir := t.TempDir()
	shot := filepath.Join(dir, "shot.png")
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--proxy-server=127.0.0.1:9", "--enable-logging=stderr", "--v=0",
		"--screenshot="+shot, "--window-size=1280,2000", "file://"+page)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	png, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, stderr.String())
	}
	return png, reConsole.FindAllString(stderr.String(), -1)
}

// TestHTMLChromium renders the HTML reports in headless Chromium: each
// gives a screenshot of the window's size that is not blank, and the page
// logs nothing to the console. A control page that logs an error proves
// the console is read.
func TestHTMLChromium(t *testing.T) {
	netnstest.SkipShort(t, "browser test")
	bin := os.Getenv("CHROMIUM")
	if bin == "" {
		for _, name := range []string{"chromium", "chromium-browser"} {
			if p, err := exec.LookPath(name); err == nil {
				bin = p
				break
			}
		}
	}
	if bin == "" {
		t.Skip("chromium not found: install it (Debian: apt-get install -y chromium) or set CHROMIUM to render the HTML report")
	}
	dir := t.TempDir()
	control := filepath.Join(dir, "control.html")
	os.WriteFile(control, []byte(`<!DOCTYPE html><html><body><p>control</p><script>console.error("control-error")</script></body></html>`), 0o644)
	if _, msgs := chromium(t, bin, control); len(msgs) == 0 || !strings.Contains(strings.Join(msgs, "\n"), "control-error") {
		t.Fatalf("the console of the control page was not captured: %q", msgs)
	}
	for _, in := range reportInputs {
		t.Run(in, func(t *testing.T) {
			page := filepath.Join(dir, in+".html")
			if err := os.WriteFile(page, render(t, "html", loadReport(t, in+".in.json")), 0o644); err != nil {
				t.Fatal(err)
			}
			shot, msgs := chromium(t, bin, page)
			if len(msgs) > 0 {
				t.Errorf("console messages:\n%s", strings.Join(msgs, "\n"))
			}
			img, err := png.Decode(bytes.NewReader(shot))
			if err != nil {
				t.Fatalf("screenshot is not a PNG: %v", err)
			}
			b := img.Bounds()
			if b.Dx() != 1280 || b.Dy() != 2000 {
				t.Errorf("screenshot is %dx%d, want 1280x2000", b.Dx(), b.Dy())
			}
			colors := map[[4]uint32]bool{}
			for y := b.Min.Y; y < b.Max.Y && len(colors) < 16; y += 7 {
				for x := b.Min.X; x < b.Max.X; x += 7 {
					r, g, bl, a := img.At(x, y).RGBA()
					colors[[4]uint32{r, g, bl, a}] = true
				}
			}
			if len(colors) < 16 {
				t.Errorf("screenshot looks blank (%d colours)", len(colors))
			}
		})
	}
}

// TestSARIFInconclusive: the SARIF log of an inconclusive run says so. Its
// run's properties hold the verdict, the gaps and the inputs that would
// close them, and each gap is a tool execution notification of level
// error (SARIF 2.1.0, appendix I: the results cannot be taken as
// complete) whose descriptor is the driver's coverage-gap notification. A
// complete run has the verdict and no such notification.
func TestSARIFInconclusive(t *testing.T) {
	type sarifDoc struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Notifications []struct{ ID string }
				}
			}
			Invocations []struct {
				ExecutionSuccessful        bool
				ToolExecutionNotifications []struct {
					Descriptor struct {
						ID    string
						Index *int
					}
					Message struct{ Text string }
					Level   string
				}
			}
			Properties struct {
				Verdict string
				Gaps    []string
				Needs   []struct{ Input, Command string }
			}
		}
	}
	for _, tc := range []struct {
		in      string
		verdict string
	}{{"pasted", "inconclusive"}, {"inconclusive", "inconclusive"}, {"fleet", "findings"}} {
		t.Run(tc.in, func(t *testing.T) {
			r := loadReport(t, tc.in+".in.json")
			var doc sarifDoc
			if err := json.Unmarshal(render(t, "sarif", r), &doc); err != nil {
				t.Fatal(err)
			}
			run := doc.Runs[0]
			wantGaps, wantNeeds := r.gaps()
			if run.Properties.Verdict != tc.verdict || len(run.Properties.Gaps) != len(wantGaps) || len(run.Properties.Needs) != len(wantNeeds) {
				t.Errorf("properties %+v, want verdict %s, %d gaps, %d needs", run.Properties, tc.verdict, len(wantGaps), len(wantNeeds))
			}
			gaps := 0
			for _, n := range run.Invocations[0].ToolExecutionNotifications {
				if n.Descriptor.ID != "coverage-gap" {
					continue
				}
				gaps++
				if n.Level != "error" || n.Descriptor.Index == nil || run.Tool.Driver.Notifications[*n.Descriptor.Index].ID != "coverage-gap" || !strings.HasPrefix(n.Message.Text, "coverage gap: ") {
					t.Errorf("gap notification %+v", n)
				}
			}
			if gaps != len(wantGaps) {
				t.Errorf("%d gap notifications for %d gaps", gaps, len(wantGaps))
			}
			if tc.verdict == "inconclusive" && gaps == 0 {
				t.Error("an inconclusive run has no gap notification")
			}
		})
	}
}
