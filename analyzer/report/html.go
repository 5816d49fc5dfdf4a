package report

import (
	"html/template"
	"io"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/checks"
)

// htmlNode is one node's part of the HTML page.
type htmlNode struct {
	Name      string
	Checklist []ChecklistItem
}

// htmlGroup is the findings of one Service.
type htmlGroup struct {
	Service  string
	Findings []checks.Finding
}

// htmlPage is what the HTML template shows.
type htmlPage struct {
	R      *Report
	Title  string
	Inputs string
	// Reading says what was skipped or changed in inputs read leniently.
	Reading []string
	Checks  string
	Nodes   []htmlNode
	Groups  []htmlGroup
	Drifted []checks.DriftPort
	Alike   []checks.DriftPort
	// AlikeText says how many service ports every node programs alike;
	// Clusters, which nodes each cluster holds when there are several.
	AlikeText, Clusters string
	Skipped             []string
	Notes               []string
	// Inconclusive is set, with the gaps and the inputs that would close
	// them, when no finding is not a clean bill of health.
	Inconclusive bool
	Gaps         []string
	Needs        []checks.InputNeed
	Multi        bool
	Findings     []checks.Finding
	// Items is the checklist as items × nodes, for several nodes.
	Items []htmlItem
}

// htmlItem is one checklist item across the nodes.
type htmlItem struct {
	Title string
	Cells []ChecklistItem
}

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"loc":    evidenceLoc,
	"port":   portTitle,
	"cell":   cellText,
	"sev":    func(s checks.Severity) string { return s.String() },
	"plural": plural,
	"orDash": orDash,
	"nodes":  nodesText,
	"label":  nodesLabel,
	"add":    func(a, b int) int { return a + b },
}).Parse(htmlSource))

// RenderHTML writes the report as one self-contained HTML page (inline
// CSS, no script, no external asset): the summary, the operational
// checklist filled with each node's values, the drift matrix of several
// nodes, the findings per service with their evidence, skipped checks and
// notes.
func RenderHTML(w io.Writer, r *Report, _ Options) error {
	p := htmlPage{R: r, Title: header(r), Inputs: inputsLine(r), Reading: readingLines(r), Checks: checksLine(r),
		Multi: len(r.Nodes) > 0, Findings: sortedForTable(r), Inconclusive: r.Inconclusive()}
	if p.Inconclusive {
		p.Gaps, p.Needs = r.gaps()
	}
	for _, g := range groupByService(r.Findings) {
		p.Groups = append(p.Groups, htmlGroup{Service: g.service, Findings: g.findings})
	}
	if len(r.Nodes) > 0 {
		for _, n := range r.Nodes {
			p.Nodes = append(p.Nodes, htmlNode{Name: orDash(n.Label()), Checklist: n.Checklist})
		}
	} else {
		p.Nodes = []htmlNode{{Name: orDash(r.Node), Checklist: r.Checklist}}
	}
	if p.Multi {
		for _, n := range p.Nodes {
			for i, it := range n.Checklist {
				for len(p.Items) <= i {
					p.Items = append(p.Items, htmlItem{Cells: make([]ChecklistItem, len(p.Nodes))})
				}
				if p.Items[i].Title == "" {
					p.Items[i].Title = it.Title
				}
			}
		}
		for j, n := range p.Nodes {
			for i, it := range n.Checklist {
				p.Items[i].Cells[j] = it
			}
		}
	}
	if r.Drift != nil {
		p.Clusters = clustersText(r.Drift)
		for _, row := range r.Drift.Ports {
			if row.Drifted() {
				p.Drifted = append(p.Drifted, row)
			} else {
				p.Alike = append(p.Alike, row)
			}
		}
		p.AlikeText = alikeText(r.Drift, r.Drift.Alike+len(p.Alike))
	}
	for s := range allStatuses(r) {
		who := s.status.ID
		if p.Multi {
			who += " on " + s.node
		}
		if s.status.State == "skipped" {
			p.Skipped = append(p.Skipped, who+": "+s.status.Reason)
		}
		for _, n := range s.status.Notes {
			p.Notes = append(p.Notes, who+": "+n)
		}
	}
	p.Notes = append(p.Notes, r.Notes...)
	for _, n := range r.Nodes {
		for _, x := range n.Notes {
			p.Notes = append(p.Notes, n.Label()+": "+x)
		}
	}
	for _, u := range r.Unknown {
		p.Notes = append(p.Notes, "unknown input "+u+": "+unknownReason(r, u)+", not analysed")
	}
	var b strings.Builder
	if err := htmlTemplate.Execute(&b, p); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

const htmlSource = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
:root { color-scheme: light; --err: #b3261e; --warn: #a15c00; --info: #0b57d0; --ok: #1e7d32; --muted: #5f6368; --line: #dadce0; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #202124; background: #fafafa; }
header, main { max-width: 1200px; margin: 0 auto; padding: 16px 24px; }
header { border-bottom: 1px solid var(--line); background: #fff; max-width: none; }
header h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 6px; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
.muted { color: var(--muted); }
.cards { display: flex; gap: 12px; margin: 12px 0; flex-wrap: wrap; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 10px 16px; min-width: 120px; }
.card b { display: block; font-size: 22px; }
.card.error b { color: var(--err); } .card.warning b { color: var(--warn); } .card.info b { color: var(--info); }
table { border-collapse: collapse; width: 100%; background: #fff; margin: 8px 0; }
th, td { border: 1px solid var(--line); padding: 6px 8px; text-align: left; vertical-align: top; }
th { background: #f1f3f4; font-weight: 600; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12.5px; }
pre { background: #f6f8fa; border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; overflow-x: auto; white-space: pre; margin: 6px 0; }
.badge { display: inline-block; border-radius: 10px; padding: 0 8px; font-size: 12px; font-weight: 600; color: #fff; }
.badge.error { background: var(--err); } .badge.warning { background: var(--warn); } .badge.info { background: var(--info); }
.state { font-weight: 600; white-space: nowrap; }
.state.ok { color: var(--ok); } .state.problem { color: var(--err); } .state.unknown { color: var(--muted); } .state.inconclusive { color: var(--warn); }
.finding { background: #fff; border: 1px solid var(--line); border-left: 4px solid var(--line); border-radius: 6px; padding: 8px 12px; margin: 8px 0; }
.finding.error { border-left-color: var(--err); } .finding.warning { border-left-color: var(--warn); } .finding.info { border-left-color: var(--info); }
.advice { color: #174ea6; margin: 4px 0 0; }
td.cell-ok, td.cell-none { color: var(--muted); }
td.cell-missing, td.cell-extra, td.cell-differs { background: #fce8e6; color: var(--err); font-weight: 600; }
td.cell-unknown { background: #f1f3f4; color: var(--muted); }
details summary { cursor: pointer; color: var(--muted); margin: 6px 0; }
footer { max-width: 1200px; margin: 0 auto; padding: 16px 24px 32px; color: var(--muted); }
</style>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
<div class="muted">{{.Inputs}} · {{.Checks}}</div>
{{- range .Reading}}
<div class="muted">{{.}}</div>
{{- end}}
</header>
<main>
<section id="summary">
<h2>Summary</h2>
<div class="cards">
<div class="card error"><b>{{.R.Summary.Error}}</b>errors</div>
<div class="card warning"><b>{{.R.Summary.Warning}}</b>warnings</div>
<div class="card info"><b>{{.R.Summary.Info}}</b>info</div>
</div>
{{- if .R.KubeProxyVersion}}
<p>kube-proxy <code>{{.R.KubeProxyVersion}}</code>{{if .R.VersionSource}} ({{.R.VersionSource}}){{end}}{{if .R.Mode}}; mode <code>{{.R.Mode}}</code>{{if .R.ModeSource}} ({{.R.ModeSource}}){{end}}{{end}}.</p>
{{- end}}
{{- if .Multi}}
<table>
<tr><th>node</th><th>bundle</th><th>mode</th><th>kube-proxy</th><th>errors</th><th>warnings</th><th>info</th></tr>
{{- range .R.Nodes}}
<tr><td>{{orDash .Node}}</td><td><code>{{orDash .Bundle}}</code></td><td>{{orDash .Mode}}</td><td>{{orDash .KubeProxyVersion}}</td><td>{{.Summary.Error}}</td><td>{{.Summary.Warning}}</td><td>{{.Summary.Info}}</td></tr>
{{- end}}
</table>
{{- end}}
</section>


{{- if .R.Drift}}
<section id="drift">
<h2>Drift between nodes</h2>
{{- if .Clusters}}
<p>{{.Clusters}}.</p>
{{- end}}
<table>
<tr><th>service port</th>{{range .R.Drift.Nodes}}<th>{{.}}</th>{{end}}</tr>
{{- range .Drifted}}
<tr><td><code>{{port .}}</code></td>{{range .Cells}}<td class="cell-{{.State}}">{{cell .}}</td>{{end}}</tr>
{{- end}}
</table>
<p class="muted">{{.AlikeText}}.</p>
{{- if .Alike}}
<details><summary>service ports programmed alike</summary>
<table>
<tr><th>service port</th>{{range .R.Drift.Nodes}}<th>{{.}}</th>{{end}}</tr>
{{- range .Alike}}
<tr><td><code>{{port .}}</code></td>{{range .Cells}}<td class="cell-{{.State}}">{{cell .}}</td>{{end}}</tr>
{{- end}}
</table>
</details>
{{- end}}
{{- if .R.Drift.Fields}}
<table>
<tr><th>setting</th>{{range .R.Drift.Nodes}}<th>{{.}}</th>{{end}}</tr>
{{- range .R.Drift.Fields}}
<tr><td><code>{{.Field}}</code></td>{{range .Values}}<td>{{orDash .}}</td>{{end}}</tr>
{{- end}}
</table>
{{- end}}
</section>
{{- end}}

<section id="findings">
<h2>Findings</h2>
{{- if and (not .Findings) .Inconclusive}}
<p class="state inconclusive">Inconclusive: no findings, but not everything that matters was checked.</p>
<ul>
{{- range .Gaps}}
<li>{{.}}</li>
{{- end}}
</ul>
{{- if .Needs}}
<p>To settle it, add:</p>
<ul>
{{- range .Needs}}
<li>{{.Input}}: <code>{{.Command}}</code></li>
{{- end}}
</ul>
{{- end}}
{{- else if not .Findings}}
<p class="state ok">No findings.</p>
{{- else}}
<table>
<tr><th>#</th><th>severity</th>{{if .Multi}}<th>node</th>{{end}}<th>service</th><th>check</th><th>finding</th></tr>
{{- range $i, $f := .Findings}}
<tr><td>{{add $i 1}}</td><td><span class="badge {{sev $f.Severity}}">{{sev $f.Severity}}</span></td>{{if $.Multi}}<td>{{orDash (nodes $f)}}</td>{{end}}<td><code>{{orDash $f.Service}}</code></td><td><code>{{$f.Check}}</code></td><td>{{$f.Message}}</td></tr>
{{- end}}
</table>
{{- end}}
</section>

{{- if .Groups}}
<section id="services">
<h2>Per service</h2>
{{- range .Groups}}
<h3>{{if .Service}}{{.Service}}{{else}}not about one service{{end}}</h3>
{{- range .Findings}}
<div class="finding {{sev .Severity}}">
<div><span class="badge {{sev .Severity}}">{{sev .Severity}}</span> <code>{{.Check}}</code>{{if .Service}} · <code>{{.Service}}</code>{{end}}{{if .Node}} · {{label .}}{{end}}</div>
<div>{{.Message}}</div>
{{- if .Evidence}}
<pre>{{range .Evidence}}{{loc .}}
{{if .Text}}    {{.Text}}
{{end}}{{end}}</pre>
{{- end}}
{{- if .Advice}}<p class="advice">→ {{.Advice}}</p>{{end}}
</div>
{{- end}}
{{- end}}
</section>
{{- end}}

<section id="checklist">
<h2>Operational checklist</h2>
{{- if .Multi}}
<table>
<tr><th>#</th><th>item</th>{{range .Nodes}}<th>{{.Name}}</th>{{end}}</tr>
{{- range $i, $it := .Items}}
<tr><td>{{add $i 1}}</td><td>{{$it.Title}}</td>{{range $it.Cells}}<td>{{if .State}}<span class="state {{.State}}">{{.State}}</span>{{if .Value}}<br>{{.Value}}{{end}}{{else}}-{{end}}</td>{{end}}</tr>
{{- end}}
</table>
{{- end}}
{{- range .Nodes}}
{{- if $.Multi}}<details><summary>node {{.Name}}: where the values come from</summary>{{end}}
{{- if .Checklist}}
<table>
<tr><th>#</th><th>item</th><th>state</th><th>value</th><th>from the inputs</th><th>verify on the cluster</th></tr>
{{- range $i, $it := .Checklist}}
<tr><td>{{add $i 1}}</td><td>{{$it.Title}}</td><td class="state {{$it.State}}">{{$it.State}}</td><td>{{orDash $it.Value}}</td>
<td>{{$it.Detail}}{{range $it.Evidence}}<br><code>{{loc .}}</code>{{end}}</td><td><code>{{$it.Command}}</code></td></tr>
{{- end}}
</table>
{{- else}}
<p class="muted">This report holds no checklist values{{if $.Multi}} for node {{.Name}}{{end}}: it was written without the node's snapshot.</p>
{{- end}}
{{- if $.Multi}}</details>{{end}}
{{- end}}
</section>

{{- if .Skipped}}
<section id="skipped">
<h2>Skipped checks</h2>
<ul>{{range .Skipped}}<li>{{.}}</li>{{end}}</ul>
</section>
{{- end}}
{{- if .Notes}}
<section id="notes">
<h2>Notes</h2>
<ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul>
</section>
{{- end}}
</main>
<footer>Written by {{orDash .R.Tool.Name}} {{.R.Tool.Version}}.</footer>
</body>
</html>
`
