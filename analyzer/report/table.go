package report

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/proxyscan/proxyscan/analyzer/checks"
)

// theme holds the styles of the terminal output, all made by one renderer
// so that colour follows Options.Color.
type theme struct {
	re                       *lipgloss.Renderer
	title, dim, ok, advice   lipgloss.Style
	header, cell, border     lipgloss.Style
	head, plain              lipgloss.Style
	sev                      map[checks.Severity]lipgloss.Style
	evidenceFile, checkStyle lipgloss.Style
}

func newTheme(w io.Writer, color bool) *theme {
	re := lipgloss.NewRenderer(w)
	if color {
		re.SetColorProfile(termenv.ANSI256)
	} else {
		re.SetColorProfile(termenv.Ascii)
	}
	t := &theme{re: re}
	t.title = re.NewStyle().Bold(true)
	t.dim = re.NewStyle().Foreground(lipgloss.Color("245"))
	t.ok = re.NewStyle().Foreground(lipgloss.Color("34")).Bold(true)
	t.advice = re.NewStyle().Foreground(lipgloss.Color("111"))
	t.header = re.NewStyle().Bold(true).Padding(0, 1)
	t.head = re.NewStyle().Bold(true)
	t.plain = re.NewStyle()
	t.cell = re.NewStyle().Padding(0, 1)
	t.border = re.NewStyle().Foreground(lipgloss.Color("240"))
	// A plain colour: lipgloss underlines character by character, one
	// escape sequence per character.
	t.evidenceFile = re.NewStyle().Foreground(lipgloss.Color("109"))
	t.checkStyle = re.NewStyle().Foreground(lipgloss.Color("75"))
	t.sev = map[checks.Severity]lipgloss.Style{
		checks.Error:   re.NewStyle().Foreground(lipgloss.Color("196")).Bold(true),
		checks.Warning: re.NewStyle().Foreground(lipgloss.Color("214")).Bold(true),
		checks.Info:    re.NewStyle().Foreground(lipgloss.Color("39")),
	}
	return t
}

// RenderTable writes the report for a terminal of opts.Width columns (no
// line is wider), as a diagnosis: the verdict and the counts, what was
// analysed, the findings in a table grouped by severity and service (each
// row leads with the service and the check), then each finding with its
// evidence and advice, the migration and drift sections, and what the
// checks could not do: one line for the checks that need inputs not given
// (every skipped check, with its reason, with opts.Verbose; checks that
// cannot apply to the node are listed only then), notes, unknown inputs.
func RenderTable(w io.Writer, r *Report, opts Options) error {
	t := newTheme(w, opts.Color)
	width := opts.Width
	if width <= 0 {
		width = 120
	}
	var b strings.Builder
	fs := sortedForTable(r)
	verdictLine(&b, t, r, len(fs), width)
	contextLines(&b, t, r, width)
	b.WriteString("\n")
	gapLines(&b, t, r, width)
	if len(r.Findings) > 0 {
		multi := len(r.Nodes) > 1
		b.WriteString(findingsTable(t, fs, multi, width))
		b.WriteString("\n")
		b.WriteString(details(t, fs, multi, width))
	}
	b.WriteString(migrationSection(t, r, width))
	b.WriteString(driftTable(t, r, width))
	checkLines(&b, t, r, width, opts.Verbose)
	_, err := io.WriteString(w, b.String())
	return err
}

// verdictOf returns a report's verdict, judged from its findings and
// coverage when the report predates the field.
func verdictOf(r *Report) string {
	switch {
	case r.Verdict != "":
		return r.Verdict
	case len(r.Findings) > 0:
		return checks.VerdictFindings
	case r.Inconclusive():
		return checks.VerdictInconclusive
	}
	return checks.VerdictOK
}

// verdictLine writes the verdict with the counts of findings, coloured
// only where they are not zero, and how many entries list them when
// findings several nodes report alike are listed once (shown).
func verdictLine(b *strings.Builder, t *theme, r *Report, shown, width int) {
	switch verdictOf(r) {
	case checks.VerdictFindings:
		sev := checks.Info
		switch {
		case r.Summary.Error > 0:
			sev = checks.Error
		case r.Summary.Warning > 0:
			sev = checks.Warning
		}
		line := t.sev[sev].Render("✗ findings") + ": " + counts(t, r.Summary)
		if shown < len(r.Findings) {
			entries := fmt.Sprintf("%d entries", shown)
			if shown == 1 {
				entries = "1 entry"
			}
			line += " (" + entries + " below: what several nodes report alike is one)"
		}
		b.WriteString(line + "\n")
	case checks.VerdictInconclusive:
		text := inconclusiveText
		if r.Summary.Info > 0 {
			text = fmt.Sprintf("inconclusive: %s only, and not everything that matters was checked", plural(r.Summary.Info, "informational finding"))
		}
		paragraph(b, t.sev[checks.Warning], "? "+text, width, "", "  ")
	default:
		paragraph(b, t.ok, "✓ ok: no findings, and what matters was checked", width, "", "  ")
	}
}

// gapLines writes what was not checked, if anything, and the inputs (with
// the command that gets each) that would settle it.
func gapLines(b *strings.Builder, t *theme, r *Report, width int) {
	gaps, needs := r.gaps()
	if len(gaps) == 0 {
		return
	}
	b.WriteString(t.title.Render("not checked:") + "\n")
	for _, g := range mergeByText(gaps) {
		paragraph(b, t.plain, g, width, "  - ", "    ")
	}
	if len(needs) > 0 {
		b.WriteString(t.title.Render("to settle it, add:") + "\n")
		for _, n := range needs {
			paragraph(b, t.plain, n.Input+":", width, "  - ", "    ")
			paragraph(b, t.dim, n.Command, width, "    ", "      ")
		}
	}
	b.WriteString("\n")
}

// nodeList names nodes: all of them up to four, else the first three and
// how many more.
func nodeList(nodes []string) string { return listNames(nodes, "node") }

// listNames names things of a kind ("node", "bundle"): all of them up to
// four, else the first three and how many more ("a, b, c and 9 more
// nodes").
func listNames(names []string, kind string) string {
	if len(names) <= 4 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more %ss", strings.Join(names[:3], ", "), len(names)-3, kind)
}

// nodesText names the nodes a finding applies to (see nodeList).
func nodesText(f checks.Finding) string { return nodeList(f.NodeNames()) }

// nodeCell names the nodes of a finding in the table's NODE column: up to
// three, else the first and how many more ("n01 +21 more"), so that the
// message keeps its room; the details below name more of them.
func nodeCell(f checks.Finding) string {
	names := f.NodeNames()
	if len(names) <= 3 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s +%d more", names[0], len(names)-1)
}

// nodesLabel is "node NAME", or "nodes A, B, C" for a finding that
// several nodes share.
func nodesLabel(f checks.Finding) string {
	if len(f.Nodes) > 1 {
		return "nodes " + nodesText(f)
	}
	return "node " + f.Node
}

// mergeByText joins the lines "ID: text" of checks that say the same
// text (on the same node, in a fleet: "node: ID: text") into one line
// naming every check, at the place of the first; other lines stay as they
// are.
func mergeByText(lines []string) []string {
	var out, keys []string
	var ids [][]string
	for _, l := range lines {
		node, id, text, ok := splitCheckLine(l)
		if !ok {
			out, keys, ids = append(out, l), append(keys, "\x00"+l), append(ids, nil)
			continue
		}
		key := node + "\x00" + text
		if i := slices.Index(keys, key); i >= 0 {
			ids[i] = append(ids[i], id)
			continue
		}
		out, keys, ids = append(out, l), append(keys, key), append(ids, []string{id})
	}
	for i, key := range keys {
		if len(ids[i]) < 2 {
			continue
		}
		node, text, _ := strings.Cut(key, "\x00")
		out[i] = node + strings.Join(ids[i], ", ") + ": " + text
	}
	return out
}

// splitCheckLine splits "ID: text" or "node: ID: text", where ID is the ID
// of a check.
func splitCheckLine(l string) (node, id, text string, ok bool) {
	if id, text, ok := strings.Cut(l, ": "); ok && checks.ByID(id) != nil {
		return "", id, text, true
	}
	n, rest, ok := strings.Cut(l, ": ")
	if !ok {
		return "", "", "", false
	}
	if id, text, ok := strings.Cut(rest, ": "); ok && checks.ByID(id) != nil {
		return n + ": ", id, text, true
	}
	return "", "", "", false
}

// counts says how many findings of each severity there are, in colour
// only where there are some.
func counts(t *theme, s Summary) string {
	style := func(n int, sev checks.Severity, text string) string {
		if n == 0 {
			return text
		}
		return t.sev[sev].Render(text)
	}
	return style(s.Error, checks.Error, plural(s.Error, "error")) + ", " +
		style(s.Warning, checks.Warning, plural(s.Warning, "warning")) + ", " +
		style(s.Info, checks.Info, fmt.Sprintf("%d info", s.Info))
}

// contextLines says what was analysed: the node (or each node with its
// verdict), its mode and kube-proxy version, and the inputs.
func contextLines(b *strings.Builder, t *theme, r *Report, width int) {
	var parts []string
	if r.Node != "" {
		parts = append(parts, "node "+r.Node)
	}
	if len(r.Nodes) > 1 {
		parts = append(parts, fmt.Sprintf("%d nodes", len(r.Nodes)))
	}
	var modes, versions []string
	if r.Mode != "" {
		mode := r.Mode
		if r.ModeOrigin == "assumed" {
			mode += " (assumed)"
		}
		modes = append(modes, mode)
	}
	if r.KubeProxyVersion != "" {
		version := r.KubeProxyVersion
		if strings.HasPrefix(r.VersionSource, "assumed") {
			version += " (assumed)"
		}
		versions = append(versions, version)
	}
	for _, n := range r.Nodes {
		if n.Mode != "" && !slices.Contains(modes, n.Mode) {
			modes = append(modes, n.Mode)
		}
		if n.KubeProxyVersion != "" && !slices.Contains(versions, n.KubeProxyVersion) {
			versions = append(versions, n.KubeProxyVersion)
		}
	}
	if len(modes) > 0 {
		parts = append(parts, "mode "+strings.Join(modes, ", "))
	}
	if len(versions) > 0 {
		parts = append(parts, "kube-proxy "+strings.Join(versions, ", "))
	}
	if len(parts) > 0 {
		paragraph(b, t.title, strings.Join(parts, " · "), width, "", "  ")
	}
	switch {
	case len(r.Nodes) > 4:
		// Many nodes: one line per verdict, naming a few of its nodes.
		var verdicts []string
		nodesOf := map[string][]string{}
		for _, n := range r.Nodes {
			v := nodeVerdict(n)
			if nodesOf[v] == nil {
				verdicts = append(verdicts, v)
			}
			nodesOf[v] = append(nodesOf[v], n.Label())
		}
		for _, v := range verdicts {
			paragraph(b, t.plain, fmt.Sprintf("%s: %s", plural(len(nodesOf[v]), "node"), v)+" ("+nodeList(nodesOf[v])+")", width, "", "  ")
		}
	case len(r.Nodes) > 1:
		var nodes []string
		for _, n := range r.Nodes {
			nodes = append(nodes, n.Label()+": "+nodeVerdict(n))
		}
		paragraph(b, t.plain, strings.Join(nodes, " · "), width, "", "  ")
	}
	// A kind and its count stay together.
	paragraph(b, t.dim, strings.ReplaceAll(inputsLine(r), " ×", "\u00a0×"), width, "", "  ")
	for _, l := range readingLines(r) {
		paragraph(b, t.dim, l, width, "", "  ")
	}
}

// nodeVerdict says in a few words how a node of a multi-node report fared.
func nodeVerdict(n NodeReport) string {
	s := n.Summary
	if s.Error+s.Warning+s.Info > 0 {
		var parts []string
		if s.Error > 0 {
			parts = append(parts, plural(s.Error, "error"))
		}
		if s.Warning > 0 {
			parts = append(parts, plural(s.Warning, "warning"))
		}
		if s.Info > 0 {
			parts = append(parts, fmt.Sprintf("%d info", s.Info))
		}
		return strings.Join(parts, ", ")
	}
	if n.Verdict == checks.VerdictInconclusive {
		return "inconclusive"
	}
	return "ok"
}

func header(r *Report) string {
	var parts []string
	if r.Node != "" {
		parts = append(parts, "node "+r.Node)
	} else if len(r.Nodes) > 1 {
		parts = append(parts, fmt.Sprintf("%d nodes", len(r.Nodes)))
	}
	if r.Mode != "" {
		mode := "mode " + r.Mode
		if r.ModeOrigin == "assumed" {
			mode += " (assumed)"
		}
		parts = append(parts, mode)
	}
	if r.KubeProxyVersion != "" {
		parts = append(parts, "kube-proxy "+r.KubeProxyVersion)
	}
	if len(parts) == 0 {
		return "proxyscan analyze"
	}
	return "proxyscan analyze · " + strings.Join(parts, " · ")
}

// inputsLine counts the files given by kind: a loose file read with every
// node of a fleet (an export beside the bundles) is one file, and a
// transcript of commands whose outputs are of several kinds is one file
// counted under the kind of each of its parts.
func inputsLine(r *Report) string {
	counts := map[string]int{}
	seen := map[[3]string]bool{}
	seenFile := map[[2]string]bool{}
	files := 0
	for _, in := range r.Inputs {
		k := [3]string{in.Bundle, in.Path, in.Lines}
		if seen[k] {
			continue
		}
		seen[k] = true
		counts[string(in.Kind)]++
		if f := [2]string{in.Bundle, in.Path}; !seenFile[f] {
			seenFile[f] = true
			files++
		}
	}
	var kinds []string
	for k, n := range counts {
		kinds = append(kinds, fmt.Sprintf("%s ×%d", k, n))
	}
	sort.Strings(kinds)
	return fmt.Sprintf("inputs: %s (%s)", plural(files, "file"), strings.Join(kinds, ", "))
}

// sortedForTable orders findings by severity, node, service and check,
// those several nodes report alike listed once (see alikeOnNodes).
func sortedForTable(r *Report) []checks.Finding {
	fs := alikeOnNodes(r.Findings)
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.Severity != b.Severity {
			return a.Severity > b.Severity
		}
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		if a.Service != b.Service {
			return a.Service < b.Service
		}
		return a.Check < b.Check
	})
	return fs
}

// findingTitle names what a finding is about: its service port (with the
// protocol), "-" for a finding about no service.
func findingTitle(f checks.Finding) string {
	switch {
	case f.Service == "":
		return "-"
	case f.Protocol != "":
		return f.Service + " (" + f.Protocol + ")"
	}
	return f.Service
}

// findingsTable renders one row per finding, in the order of the details
// below it (the number refers to them): the service port, the node when
// there are several, the check, the severity, and the message, a column
// dropped when the terminal leaves it too little room. Every cell is
// filled, also where it repeats the row above.
func findingsTable(t *theme, fs []checks.Finding, multi bool, width int) string {
	num := column{header: "#", key: true}
	svc := column{header: "SERVICE", key: true}
	node := column{header: "NODE"}
	check := column{header: "CHECK", style: func(int) lipgloss.Style { return t.checkStyle }}
	sev := column{header: "SEVERITY", style: func(row int) lipgloss.Style { return t.sev[fs[row].Severity] }}
	msg := column{header: "FINDING", flex: true, minFlex: 32, drop: 1}
	for i, f := range fs {
		num.cells = append(num.cells, fmt.Sprint(i+1))
		svc.cells = append(svc.cells, findingTitle(f))
		node.cells = append(node.cells, orDash(nodeCell(f)))
		check.cells = append(check.cells, f.Check)
		sev.cells = append(sev.cells, f.Severity.String())
		m := f.Message
		if f.Endpoint != "" && !strings.Contains(m, f.Endpoint) {
			m += " [" + f.Endpoint + "]"
		}
		msg.cells = append(msg.cells, m)
	}
	cols := []column{num, svc, check, sev, msg}
	if multi {
		cols = []column{num, svc, node, check, sev, msg}
	}
	return fitTable(t, cols, width)
}

// details writes each finding with its evidence and advice. Lines are
// wrapped at spaces to the width; the continuation lines of a rule are
// indented further than its first.
func details(t *theme, fs []checks.Finding, multi bool, width int) string {
	var b strings.Builder
	for i, f := range fs {
		var head []string
		if f.Service != "" {
			head = append(head, findingTitle(f))
		}
		if multi && f.Node != "" {
			head = append(head, nodesLabel(f))
		}
		head = append(head, f.Check, f.Severity.String())
		num := fmt.Sprintf("[%d] ", i+1)
		paragraph(&b, t.sev[f.Severity], num+strings.Join(head, " · "), width, "", strings.Repeat(" ", len(num)))
		paragraph(&b, t.plain, f.Message, width, "    ", "    ")
		objectList(&b, t, f.Objects, width)
		for _, e := range f.Evidence {
			paragraph(&b, t.evidenceFile, evidenceLoc(e), width, "    ", "      ")
			if e.Text != "" {
				paragraph(&b, t.dim, e.Text, width, "      ", "          ")
			}
		}
		if f.Advice != "" {
			paragraph(&b, t.advice, "→ "+f.Advice, width, "    ", "      ")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// maxObjects is how many objects of one finding the table lists.
const maxObjects = 20

// objectList writes the objects of a finding that one cause explains for
// several (Finding.Objects), one a line after its message: the first
// maxObjects, and how many more (the JSON report lists them all).
func objectList(b *strings.Builder, t *theme, objs []string, width int) {
	if len(objs) < 2 {
		return
	}
	for i, o := range objs {
		if i == maxObjects {
			paragraph(b, t.plain, fmt.Sprintf("· and %d more (-o json lists every one)", len(objs)-i), width, "    ", "      ")
			return
		}
		paragraph(b, t.plain, "· "+o, width, "    ", "      ")
	}
}

// skipKind is why a check did not run, for the terminal.
func skipKind(s checks.Status) string {
	if s.NotApplicable {
		return "not applicable"
	}
	return "skipped"
}

// checkLines says what the checks could not do: how many ran, and in one
// line those that need inputs not given (with verbose, every skipped
// check with its reason, those that cannot apply to the node included);
// then the notes of the checks and of the loader (each once, with the
// nodes it is about) and the inputs of no known kind.
func checkLines(b *strings.Builder, t *theme, r *Report, width int, verbose bool) {
	statuses := allStatuses(r)
	multi := len(r.Nodes) > 1
	// Each check once, in the report's order, with the nodes of each
	// state and reason.
	type group struct {
		id, state, reason string
		nodes             []string
	}
	var ids []string
	ran := map[string]bool{}
	var groups []*group
	find := func(id, state, reason string) *group {
		for _, g := range groups {
			if g.id == id && g.state == state && g.reason == reason {
				return g
			}
		}
		g := &group{id: id, state: state, reason: reason}
		groups = append(groups, g)
		return g
	}
	for ns := range statuses {
		s := ns.status
		if !slices.Contains(ids, s.ID) {
			ids = append(ids, s.ID)
		}
		if s.State != "skipped" {
			ran[s.ID] = true
			continue
		}
		g := find(s.ID, skipKind(s), s.Reason)
		g.nodes = append(g.nodes, ns.node)
	}
	onNodes := func(nodes []string) string {
		if !multi || len(nodes) == len(r.Nodes) {
			return ""
		}
		return " (" + strings.Join(nodes, ", ") + ")"
	}
	var ranIDs []string
	for _, id := range ids {
		if ran[id] {
			ranIDs = append(ranIDs, id)
		}
	}
	line := plural(len(ranIDs), "check") + " ran"
	if multi {
		line += fmt.Sprintf(" on %d nodes", len(r.Nodes))
	}
	if verbose {
		if len(ranIDs) > 0 {
			line += ": " + strings.Join(ranIDs, ", ")
		}
		paragraph(b, t.dim, line, width, "", "  ")
		// Checks skipped alike (state, reason, nodes) share a line.
		var lines, keys []string
		for _, g := range groups {
			key := g.state + "\x00" + g.reason + "\x00" + onNodes(g.nodes)
			i := slices.Index(keys, key)
			if i < 0 {
				keys, lines = append(keys, key), append(lines, g.state+" "+g.id)
				continue
			}
			lines[i] += ", " + g.id
		}
		for i, key := range keys {
			parts := strings.Split(key, "\x00")
			paragraph(b, t.dim, lines[i]+parts[2]+": "+parts[1], width, "", "  ")
		}
	} else {
		var need []string
		for _, id := range ids {
			var nodes []string
			for _, g := range groups {
				if g.id == id && g.state == "skipped" {
					nodes = append(nodes, g.nodes...)
				}
			}
			if len(nodes) > 0 {
				need = append(need, id+onNodes(nodes))
			}
		}
		// One line: the checks named when they fit in it, else counted.
		if len(need) > 0 {
			named := fmt.Sprintf("%s; %d need inputs not given: %s (--verbose says why)", line, len(need), strings.Join(need, ", "))
			line = fmt.Sprintf("%s; %d need inputs not given (--verbose lists them and why)", line, len(need))
			if textWidth(named) <= width {
				line = named
			}
		}
		paragraph(b, t.dim, line, width, "", "  ")
	}
	// Notes of the checks, each once with the nodes it is about.
	type note struct {
		id, text string
		nodes    []string
	}
	var notes []*note
	for ns := range statuses {
	next:
		for _, text := range ns.status.Notes {
			for _, n := range notes {
				if n.id == ns.status.ID && n.text == text {
					n.nodes = append(n.nodes, ns.node)
					continue next
				}
			}
			notes = append(notes, &note{id: ns.status.ID, text: text, nodes: []string{ns.node}})
		}
	}
	// A note the gaps above already state, whichever check it is of, is
	// not repeated (--verbose lists it), and checks noting the same thing
	// on the same nodes share one line.
	gaps, _ := r.gapEntries()
	shown := map[string]bool{}
	for _, g := range gaps {
		if _, _, text, ok := splitCheckLine(g.text); ok {
			if len(g.nodes) == 0 {
				shown[text] = true
			}
			for _, node := range g.nodes {
				shown[node+": "+text] = true
			}
		}
	}
	stated := func(n *note) bool {
		if !multi {
			return shown[n.text]
		}
		for _, node := range n.nodes {
			if !shown[node+": "+n.text] {
				return false
			}
		}
		return true
	}
	var lines, keys []string
	for _, n := range notes {
		if !verbose && stated(n) {
			continue
		}
		key := n.text + "\x00" + onNodes(n.nodes)
		if i := slices.Index(keys, key); i >= 0 {
			lines[i] += ", " + n.id
			continue
		}
		keys, lines = append(keys, key), append(lines, n.id)
	}
	for i, key := range keys {
		text, nodes, _ := strings.Cut(key, "\x00")
		paragraph(b, t.dim, "note ("+lines[i]+nodes+"): "+text, width, "", "  ")
	}
	for _, n := range r.Notes {
		paragraph(b, t.dim, "note: "+n, width, "", "  ")
	}
	// The same note of several nodes is one line naming them (a fleet of
	// a thousand nodes without a version file says so once).
	var texts []string
	nodesOf := map[string][]string{}
	for _, n := range r.Nodes {
		for _, x := range n.Notes {
			if nodesOf[x] == nil {
				texts = append(texts, x)
			}
			nodesOf[x] = append(nodesOf[x], n.Label())
		}
	}
	for _, x := range texts {
		paragraph(b, t.dim, "note: "+nodeList(nodesOf[x])+": "+x, width, "", "  ")
	}
	for _, u := range r.Unknown {
		paragraph(b, t.sev[checks.Warning], "unknown input: "+u+" ("+unknownReason(r, u)+", not analysed)", width, "", "  ")
	}
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
