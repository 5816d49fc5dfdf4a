package paste

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/internal/bytestr"
)

// Reasons of the notes [Clean] writes: why a line was removed or changed.
const (
	ReasonPrompt         = "shell prompt"        // a prompt, with or without a command after it (removed)
	ReasonCommand        = "shell command"       // a command line without its prompt (removed)
	ReasonFence          = "code fence"          // a markdown code fence (removed)
	ReasonKubectl        = "kubectl table"       // kubectl get's table output (removed)
	ReasonLog            = "kube-proxy log"      // a log line around a logged payload (removed)
	ReasonSystemctl      = "systemctl status"    // the unit's status above the log lines systemctl status shows (removed)
	ReasonCurl           = "curl progress meter" // the lines of curl's progress meter among what it fetched (removed)
	ReasonWarning        = "kubectl warning"     // a "Warning: ..." line kubectl writes on stderr before its output (removed)
	ReasonPS             = "ps listing"          // ps's header and columns before kube-proxy's command line (removed, or changed to the command), and grep's own line
	ReasonOutsideFences  = "outside code blocks" // text of a ticket around its fenced blocks (removed)
	ReasonQuote          = "quote marker"        // "> " before the content (changed)
	ReasonLineNumber     = "line number"         // an editor's line number before the content (changed)
	ReasonCarriageReturn = "carriage return"     // a "\r" line end (changed)
	ReasonColour         = "colour codes"        // terminal escape sequences (changed)
	ReasonTrailingBlanks = "trailing blanks"     // spaces or tabs at the end (changed)
)

// Options choose the repairs of [Clean] that could change a format's own
// content; the others (prompts, commands, fences, quote markers, colour
// codes, kubectl tables) are always made.
type Options struct {
	// LineNumbers removes an editor's line numbers, found with one
	// separator and consecutive numbers on every line that is not
	// otherwise removed.
	LineNumbers bool
	// CarriageReturns removes "\r" line ends.
	CarriageReturns bool
	// TrailingBlanks removes spaces and tabs at line ends.
	TrailingBlanks bool
	// Log removes kube-proxy (klog) log lines, such as the one that
	// carries an iptables-restore payload kube-proxy logged ("Restoring
	// iptables" rules=<) and the " >" ending it.
	Log bool
}

// All makes every repair: for formats in which none of them can change
// what a line means (iptables-save).
var All = Options{LineNumbers: true, CarriageReturns: true, TrailingBlanks: true, Log: true}

// A Result is the repaired input and what was done to it.
type Result struct {
	// Data is the input with the damage removed: as many lines as the
	// input, a removed line left empty. It is the input itself when
	// nothing was repaired.
	Data []byte
	// Notes say, line by line in order, what was removed or changed.
	Notes []parsers.LineNote
}

// Significant reports whether the repairs go beyond line ends and
// trailing blanks, which most parsers read as they are.
func (r *Result) Significant() bool {
	for _, n := range r.Notes {
		if n.Reason != ReasonCarriageReturn && n.Reason != ReasonTrailingBlanks {
			return true
		}
	}
	return false
}

// line is one line of the input while it is repaired.
type line struct {
	text    string
	removed string   // the reason it was removed, "" when kept
	changed []string // the reasons it was changed
}

// Clean removes paste damage from data. Data is not modified.
func Clean(data []byte, o Options) *Result {
	if !mayBeDamaged(data, o) {
		return &Result{Data: data}
	}
	src := string(data)
	final := strings.HasSuffix(src, "\n")
	body := strings.TrimSuffix(src, "\n")
	if src == "" {
		return &Result{Data: data}
	}
	raw := strings.Split(body, "\n")
	ls := make([]line, len(raw))
	for i, t := range raw {
		l := &ls[i]
		if o.CarriageReturns && strings.HasSuffix(t, "\r") {
			t = strings.TrimRight(t, "\r")
			l.changed = append(l.changed, ReasonCarriageReturn)
		}
		if strings.IndexByte(t, 0x1b) >= 0 {
			if s := reANSI.ReplaceAllString(t, ""); s != t {
				t = s
				l.changed = append(l.changed, ReasonColour)
			}
		}
		l.text = t
	}
	// Prompts, commands and fences as pasted; then an editor's line
	// numbers and quote markers, which may hide more of them.
	for i := range ls {
		ls[i].removed = classify(bomless(ls[i].text, i))
	}
	if o.LineNumbers {
		stripLineNumbers(ls)
	}
	for i := range ls {
		l := &ls[i]
		if l.removed != "" {
			continue
		}
		if t, ok := stripQuote(l.text); ok {
			l.text = t
			l.changed = append(l.changed, ReasonQuote)
		}
		l.removed = classify(bomless(l.text, i))
	}
	removeOutsideFences(ls)
	removeKubectlWarnings(ls)
	removeKubectlTables(ls)
	removeSystemctlStatus(ls)
	removeCurlMeter(ls)
	keepPSCommand(ls)
	if o.Log {
		removeLogLines(ls)
	}
	if o.TrailingBlanks {
		for i := range ls {
			l := &ls[i]
			if s := strings.TrimRight(l.text, " \t"); s != l.text && l.removed == "" {
				if strings.TrimSpace(s) != "" {
					l.changed = append(l.changed, ReasonTrailingBlanks)
				} // a blank line: nothing to report
				l.text = s
			}
		}
	}
	res := &Result{}
	repaired := false
	for i, l := range ls {
		switch {
		case l.removed != "":
			res.Notes = append(res.Notes, parsers.LineNote{Line: i + 1, Reason: l.removed, Skipped: true})
			repaired = true
		case len(l.changed) > 0:
			for _, c := range l.changed {
				res.Notes = append(res.Notes, parsers.LineNote{Line: i + 1, Reason: c})
			}
			repaired = true
		}
	}
	if !repaired {
		res.Data = data
		return res
	}
	out := make([]byte, 0, len(data))
	for i, l := range ls {
		if i > 0 {
			out = append(out, '\n')
		}
		if l.removed == "" {
			out = append(out, l.text...)
		}
	}
	if final {
		out = append(out, '\n')
	}
	res.Data = out
	return res
}

// MayBeDamaged reports whether Clean(data, o) may change data: when false,
// Clean returns data as it is, with no notes. It is the quick look Clean
// takes first, for a caller that reads data meanwhile.
func MayBeDamaged(data []byte, o Options) bool { return mayBeDamaged(data, o) }

// mayBeDamaged is a quick look at data: false when no line has anything
// Clean would remove or change, so that a clean input costs one pass and
// no allocation.
func mayBeDamaged(data []byte, o Options) bool {
	first := true
	for i := 0; len(data) > 0; i++ {
		var l []byte
		if j := bytes.IndexByte(data, '\n'); j >= 0 {
			l, data = data[:j], data[j+1:]
		} else {
			l, data = data, nil
		}
		if len(l) == 0 {
			continue
		}
		t := bomless(bytestr.Of(l), i)
		switch last := t[len(t)-1]; {
		case last == '\r' && o.CarriageReturns, (last == ' ' || last == '\t') && o.TrailingBlanks,
			strings.IndexByte(t, 0x1b) >= 0, t[0] == '>', classify(t) != "",
			strings.HasPrefix(t, "NAME") || strings.HasPrefix(t, "No resources found"), unitLine(t),
			strings.Contains(t, "% Total") || strings.Contains(t, "Dload"),
			psLine(t), strings.HasPrefix(t, "Warning: "),
			o.Log && strings.IndexByte("IWEF0123456789", t[0]) >= 0 && reKlog.MatchString(t):
			return true
		}
		if first && o.LineNumbers {
			if _, f, _ := lineNumber(t); f != numNone {
				return true
			}
		}
		first = false
	}
	return false
}

// bomless returns the text of line i without the UTF-8 byte order mark
// the first line may start with.
func bomless(t string, i int) string {
	if i == 0 {
		return strings.TrimPrefix(t, "\ufeff")
	}
	return t
}

var (
	reANSI = regexp.MustCompile("\x1b(?:\\[[0-?]*[ -/]*[@-~]|\\][^\x07\x1b]*(?:\x07|\x1b\\\\)|[@-Z\\\\-_])")

	reFence         = regexp.MustCompile("^\\s*(?:```+|~~~+)\\s*[A-Za-z0-9_+.#-]*\\s*$")
	reBracketPrompt = regexp.MustCompile(`^\[[^\]@]*@[^\]]*\][#$%](?: |$)`)
	reUserHost      = regexp.MustCompile(`^[A-Za-z0-9._-]+@[A-Za-z0-9._-]+(?::[^\s#$%]*)?\s?[#$%](?: |$)`)
	reShellVersion  = regexp.MustCompile(`^(?:sh|bash|zsh|ash|dash)(?:-[0-9.]+)?[#$](?: |$)`)
	rePowerShell    = regexp.MustCompile(`^PS [A-Za-z]:\\[^>]*> `)
	reIPCommand     = regexp.MustCompile(`^ip (?:-\S+ )*(?:a|addr|address|r|ro|route|l|link|rule|neigh)(?: |$)`)
)

// commands are the programs whose command lines a paste holds: the tools
// that print proxyscan's inputs, and what runs them on a node. ("ip" is
// recognised with its object, as reIPCommand.)
var commands = map[string]bool{
	"sudo": true, "kubectl": true, "k": true, "oc": true, "crictl": true, "docker": true, "nerdctl": true,
	"ssh": true, "iptables": true, "iptables-save": true, "iptables-legacy-save": true, "iptables-nft-save": true,
	"ip6tables": true, "ip6tables-save": true, "ip6tables-legacy-save": true, "ip6tables-nft-save": true,
	"iptables-legacy": true, "iptables-nft": true, "ipvsadm": true, "ipset": true, "nft": true, "conntrack": true,
	"sysctl": true, "journalctl": true, "curl": true, "cat": true, "grep": true, "egrep": true, "watch": true,
	"tail": true, "head": true, "less": true, "lsmod": true, "systemctl": true,
}

// classify returns why a line is removed: a prompt, a command line or a
// code fence; "" for a line that stays.
func classify(t string) string {
	if t == "" {
		return ""
	}
	switch c := t[0]; {
	case c == '`' || c == '~' || c == ' ' || c == '\t':
		if f := strings.TrimLeft(t, " \t"); f != "" && (f[0] == '`' || f[0] == '~') && reFence.MatchString(t) {
			return ReasonFence
		}
		return ""
	case c == '$':
		if t == "$" || t[1] == ' ' {
			return ReasonPrompt
		}
		return ""
	case c == '#':
		if strings.HasPrefix(t, "# ") && isCommand(strings.TrimLeft(t[2:], " ")) {
			return ReasonPrompt // a root prompt, "# iptables-save"
		}
		return ""
	case c == '[':
		if strings.IndexByte(t, '@') >= 0 && reBracketPrompt.MatchString(t) {
			return ReasonPrompt
		}
		return ""
	case c == '-' || c == ':' || c == '*':
		return "" // what iptables-save writes
	}
	if strings.IndexByte(t, '@') >= 0 && reUserHost.MatchString(t) ||
		strings.Contains(t[:min(len(t), 5)], "sh") && reShellVersion.MatchString(t) || strings.HasPrefix(t, "PS ") && rePowerShell.MatchString(t) || hostPrompt(t) {
		return ReasonPrompt
	}
	if isCommand(t) {
		return ReasonCommand
	}
	return ""
}

// hostPrompt recognises "controlplane $ kubectl ...": a host name, a
// space and a "$" or "#" alone.
func hostPrompt(t string) bool {
	i := strings.IndexByte(t, ' ')
	if i <= 0 || i+1 >= len(t) || t[i+1] != '$' && t[i+1] != '#' || i+2 < len(t) && t[i+2] != ' ' {
		return false
	}
	for _, c := range []byte(t[:i]) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// isCommand reports whether t is a command line of one of commands (and
// not a line a tool prints about itself, "conntrack v1.4.7 ...").
func isCommand(t string) bool {
	w, rest, _ := strings.Cut(t, " ")
	if commands[w] {
		arg, _, _ := strings.Cut(strings.TrimLeft(rest, " "), " ")
		return !(len(arg) > 1 && arg[0] == 'v' && arg[1] >= '0' && arg[1] <= '9')
	}
	return w == "ip" && reIPCommand.MatchString(t)
}

// stripQuote removes markdown quote markers ("> ", nested "> > ").
func stripQuote(t string) (string, bool) {
	ok := false
	for strings.HasPrefix(t, ">") && (len(t) == 1 || t[1] == ' ') {
		t = strings.TrimPrefix(strings.TrimPrefix(t, ">"), " ")
		ok = true
	}
	return t, ok
}

// numbering is the form of an editor's line numbers.
type numbering int

const (
	numNone  numbering = iota
	numBar             // "  12 | text", "12| text"
	numColon           // "12: text"
	numTab             // "    12\ttext" (cat -n)
	numSpace           // "  12 text" (vim)
)

// lineNumber splits an editor's line number from a line.
func lineNumber(t string) (n int, form numbering, rest string) {
	i := 0
	for i < len(t) && t[i] == ' ' {
		i++
	}
	j := i
	for j < len(t) && t[j] >= '0' && t[j] <= '9' {
		j++
	}
	if j == i || j-i > 9 {
		return 0, numNone, ""
	}
	n, _ = strconv.Atoi(t[i:j])
	r := t[j:]
	switch {
	case r == "":
		return n, numSpace, ""
	case r[0] == '\t':
		return n, numTab, r[1:]
	case strings.HasPrefix(strings.TrimLeft(r, " "), "|"):
		r = strings.TrimLeft(r, " ")[1:]
		return n, numBar, strings.TrimPrefix(r, " ")
	case r[0] == ':':
		return n, numColon, strings.TrimPrefix(r[1:], " ")
	case r[0] == ' ':
		return n, numSpace, r[1:]
	}
	return 0, numNone, ""
}

// stripLineNumbers removes line numbers when every line that is kept
// (not removed, not empty) carries one, all in one form, numbered as the
// lines are (a constant offset from the line's index), on at least two
// lines (three for numbers followed by spaces alone, vim's form).
func stripLineNumbers(ls []line) {
	form, offset, count := numNone, 0, 0
	for i, l := range ls {
		if l.removed != "" || l.text == "" {
			continue
		}
		n, f, _ := lineNumber(l.text)
		if f == numNone {
			return
		}
		// A number alone is an empty line, whatever the form.
		if strings.TrimSpace(l.text) != strconv.Itoa(n) {
			if form == numNone {
				form = f
			} else if f != form {
				return
			}
		}
		if count == 0 {
			offset = n - i
		} else if n-i != offset {
			return
		}
		count++
	}
	if count < 2 || form == numNone || form == numSpace && count < 3 {
		return
	}
	for i := range ls {
		l := &ls[i]
		if l.removed != "" || l.text == "" {
			continue
		}
		_, _, rest := lineNumber(l.text)
		l.text = rest
		l.changed = append(l.changed, ReasonLineNumber)
	}
}

// removeOutsideFences removes, when the code fences pair up and enclose
// something, the lines outside them: the text of a ticket or chat around
// the pasted output.
func removeOutsideFences(ls []line) {
	fences, inside := 0, 0
	for _, l := range ls {
		switch {
		case l.removed == ReasonFence:
			fences++
		case fences%2 == 1 && l.removed == "" && strings.TrimSpace(l.text) != "":
			inside++
		}
	}
	if fences == 0 || fences%2 == 1 || inside == 0 {
		return
	}
	fences = 0
	for i := range ls {
		l := &ls[i]
		switch {
		case l.removed == ReasonFence:
			fences++
		case fences%2 == 0 && l.removed == "" && strings.TrimSpace(l.text) != "":
			l.removed = ReasonOutsideFences
		}
	}
}

// reKubectlColumn matches a column name of kubectl get's table header:
// upper-case words, single spaces apart ("NOMINATED NODE").
var reKubectlColumn = regexp.MustCompile(`^[A-Z][A-Z0-9()/._-]*(?: [A-Z][A-Z0-9()/._-]*)*$`)

var reColumnGap = regexp.MustCompile(`\s{2,}|\t`)

// columns splits a kubectl table line on runs of two or more blanks.
func columns(t string) []string {
	var out []string
	for _, f := range reColumnGap.Split(strings.TrimSpace(t), -1) {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

// kubectlHeader returns the number of columns of a kubectl table header
// (upper-case column names two or more spaces apart, the first NAME or
// NAMESPACE), 0 when t is none.
func kubectlHeader(t string) int {
	if !strings.HasPrefix(t, "NAME") {
		return 0
	}
	cols := columns(t)
	if len(cols) < 2 || cols[0] != "NAME" && cols[0] != "NAMESPACE" {
		return 0
	}
	for _, c := range cols {
		if !reKubectlColumn.MatchString(c) {
			return 0
		}
	}
	return len(cols)
}

// removeKubectlTables removes kubectl get's tables: a header and the rows
// after it, up to an empty line or one that is not a row (it starts with
// a blank or with what a dump's lines start with, or has more columns
// than the header), and kubectl's "No resources found" line.
func removeKubectlTables(ls []line) {
	for i := 0; i < len(ls); i++ {
		if ls[i].removed != "" {
			continue
		}
		t := ls[i].text
		if strings.HasPrefix(t, "No resources found") {
			ls[i].removed = ReasonKubectl
			continue
		}
		n := kubectlHeader(t)
		if n == 0 {
			continue
		}
		ls[i].removed = ReasonKubectl
		for i+1 < len(ls) && ls[i+1].removed == "" && isRow(ls[i+1].text, n) {
			i++
			ls[i].removed = ReasonKubectl
		}
	}
}

func isRow(t string, n int) bool {
	if t == "" || strings.IndexByte(" \t-*:#[{}<>", t[0]) >= 0 {
		return false
	}
	c := len(columns(t))
	return c >= 2 && c <= n
}

// reKlog matches a klog line (with the prefix a container runtime or
// kubectl logs --timestamps adds).
var reKlog = regexp.MustCompile(`^(\d{4}-\d\d-\d\dT\S+ ((stdout|stderr) [FP] )?)?[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+ +\d+ \S+:\d+\]`)

// removeLogLines removes klog lines and the " >" that ends a multi-line
// value ("rules=<" ... " >") such as the iptables-restore payload
// kube-proxy logs; the payload's lines, indented by a tab, stay.
func removeLogLines(ls []line) {
	open := false
	for i := range ls {
		l := &ls[i]
		if l.removed != "" {
			continue
		}
		switch {
		case open && strings.TrimSpace(l.text) == ">" && strings.HasPrefix(l.text, " "):
			l.removed, open = ReasonLog, false
		case l.text != "" && strings.IndexByte("IWEF0123456789", l.text[0]) >= 0 && reKlog.MatchString(l.text) &&
			!strings.Contains(l.text, `rules=[{"Line":`): // the lines around a failed restore: the parser reads them
			l.removed = ReasonLog
			open = strings.HasSuffix(l.text, "=<")
		}
	}
}

var (
	// reUnit matches the first line of systemctl status: the unit's
	// state mark, its name and description.
	reUnit = regexp.MustCompile(`^(?:●|○|×|\*) \S+\.(?:service|scope)(?: - .*)?$`)
	// reUnitField matches the lines under it: "Loaded: ...", "Main PID:
	// ...", and the process tree of its CGroup.
	reUnitField = regexp.MustCompile(`^\s+(?:[A-Z][A-Za-z ]*: |[├└│])`)
)

// removeSystemctlStatus removes what systemctl status prints of a unit
// above the log lines it shows: its first line and the fields and
// process tree under it.
func removeSystemctlStatus(ls []line) {
	for i := 0; i < len(ls); i++ {
		if ls[i].removed != "" || !unitLine(ls[i].text) {
			continue
		}
		ls[i].removed = ReasonSystemctl
		for i+1 < len(ls) && ls[i+1].removed == "" && reUnitField.MatchString(ls[i+1].text) {
			i++
			ls[i].removed = ReasonSystemctl
		}
	}
}

var (
	// reCurlHeader matches the two header lines of curl's progress meter;
	// reCurlRow its rows ("100 12345  100 12345    0     0  1234k      0
	// --:--:-- --:--:-- --:--:-- 1234k").
	reCurlHeader = regexp.MustCompile(`^\s*(?:% Total\s+% Received\s+% Xferd\s+Average Speed\s+Time\s+Time\s+Time\s+Current|Dload\s+Upload\s+Total\s+Spent\s+Left\s+Speed)\s*$`)
	reCurlRow    = regexp.MustCompile(`^\s*\d{1,3}\s+[\d.]+[kMGTP]?\s+\d{1,3}\s+[\d.]+[kMGTP]?\s+\d{1,3}\s+[\d.]+[kMGTP]?\s+[\d.]+[kMGTP]?\s+[\d.]+[kMGTP]?\s+[-\d:]+\s+[-\d:]+\s+[-\d:]+\s+[\d.]+[kMGTP]?\s*$`)
)

// removeCurlMeter removes curl's progress meter, which a terminal shows
// among the lines curl fetched when its output is piped (curl ... | grep):
// its header lines, and the rows under one.
func removeCurlMeter(ls []line) {
	seen := false
	for i := range ls {
		l := &ls[i]
		if l.removed != "" {
			continue
		}
		switch {
		case reCurlHeader.MatchString(l.text):
			l.removed, seen = ReasonCurl, true
		case seen && reCurlRow.MatchString(l.text):
			l.removed = ReasonCurl
		}
	}
}

var (
	// rePSHeader matches the header of ps -ef and of ps aux; rePS a row
	// of either, its command in the group.
	rePSHeader = regexp.MustCompile(`^\s*(?:UID|USER)\s+PID\s+(?:PPID|%CPU)\s`)
	rePS       = regexp.MustCompile(`^\S+\s+\d+\s+(?:\d+\s+\d+\s+\S+\s+\S+\s+(?:\d+-)?\d+:\d+:\d+|[\d.]+\s+[\d.]+\s+\d+\s+\d+\s+\S+\s+\S+\s+\S+\s+\d+:\d+)\s+(\S.*)$`)
)

// removeKubectlWarnings removes the "Warning: ..." lines kubectl writes on
// stderr (a deprecated API, an unknown field) before its output, which a
// redirection with 2>&1 puts at the top of an export: only those before
// the first line kept, so that a line of the content is never taken for
// one.
func removeKubectlWarnings(ls []line) {
	for i := range ls {
		l := &ls[i]
		switch {
		case l.removed != "" || strings.TrimSpace(l.text) == "":
			continue
		case strings.HasPrefix(l.text, "Warning: "):
			l.removed = ReasonWarning
			continue
		}
		return
	}
}

// unitLine reports whether t is the first line of systemctl status (its
// regexp is tried only on a line starting as one can: with "●", "○", "×"
// or "*", so that a clean dump's lines cost a byte test each).
func unitLine(t string) bool {
	return t != "" && (t[0] == '*' || strings.HasPrefix(t, "●") || strings.HasPrefix(t, "○") || strings.HasPrefix(t, "×")) && reUnit.MatchString(t)
}

// psHeader reports whether t is the header of a ps listing (its regexp is
// tried only on a line holding "PID").
func psHeader(t string) bool { return strings.Contains(t, "PID") && rePSHeader.MatchString(t) }

// psLine reports whether t is the header of a ps listing or a row of it
// that names kube-proxy (the regexp is tried only on a line that does).
func psLine(t string) bool {
	return psHeader(t) || strings.Contains(t, "kube-proxy") && rePS.MatchString(t)
}

// keepPSCommand keeps, of a ps listing (ps -ef | grep kube-proxy), the
// command line of kube-proxy: ps's header and the rows of other commands
// (grep's own) are removed, and kube-proxy's row becomes its command.
func keepPSCommand(ls []line) {
	// Most inputs hold no ps listing: a look for its header or a row of
	// kube-proxy, cheap on each line, spares them a regexp per line.
	listing := false
	for i := range ls {
		if ls[i].removed == "" && psLine(ls[i].text) {
			listing = true
			break
		}
	}
	if !listing {
		return
	}
	for i := range ls {
		l := &ls[i]
		if l.removed != "" {
			continue
		}
		if psHeader(l.text) {
			l.removed = ReasonPS
			continue
		}
		m := rePS.FindStringSubmatch(l.text)
		if m == nil {
			continue
		}
		cmd := m[1]
		prog, args, _ := strings.Cut(cmd, " ")
		prog = prog[strings.LastIndexByte(prog, '/')+1:]
		switch {
		case prog == "kube-proxy" || prog == "hyperkube" && (strings.HasPrefix(args, "kube-proxy") || strings.HasPrefix(args, "proxy")):
			l.text = cmd
			l.changed = append(l.changed, ReasonPS)
		default:
			l.removed = ReasonPS
		}
	}
}

// lineFilters are the programs that, after a pipe, keep only some lines of
// what they are given.
var lineFilters = map[string]bool{
	"grep": true, "egrep": true, "fgrep": true, "rg": true, "head": true, "tail": true,
	"sed": true, "awk": true, "gawk": true, "sort": true, "uniq": true, "cut": true,
}

// LineFilter returns the filter of a command line a paste shows above its
// output, when the output was piped through a program that keeps only
// some lines ("grep -E KUBE" of "# iptables-save | grep -E KUBE"): what
// follows was filtered, and its absence of a line proves nothing. It is ""
// for a line that is no prompt or command line, or pipes into nothing that
// drops lines.
func LineFilter(line string) string {
	t := strings.TrimSpace(line)
	if r := classify(t); r != ReasonPrompt && r != ReasonCommand {
		return ""
	}
	for _, seg := range pipeline(t)[1:] {
		seg = strings.TrimSpace(seg)
		w, _, _ := strings.Cut(seg, " ")
		if w == "sudo" {
			w, _, _ = strings.Cut(strings.TrimSpace(strings.TrimPrefix(seg, "sudo")), " ")
		}
		if lineFilters[w] {
			return seg
		}
	}
	return ""
}

// FilterKeeps reports whether the filter of a command line (LineFilter's
// result) surely keeps every line that holds word: a grep of one fixed
// pattern (options -i, -F, -E, -a, -h, -s, --color aside) that word holds,
// a dot of the pattern standing for itself. It is false for any other
// filter (head, sed, grep -v, a pattern with other special characters,
// several patterns): which lines those keep is not known.
func FilterKeeps(filter, word string) bool {
	words := strings.Fields(filter)
	if len(words) < 2 || words[0] == "sudo" {
		return false
	}
	if prog := words[0][strings.LastIndexByte(words[0], '/')+1:]; prog != "grep" && prog != "egrep" && prog != "fgrep" {
		return false
	}
	fold, pattern := false, ""
	for _, w := range words[1:] {
		switch {
		case w == "-i" || w == "--ignore-case":
			fold = true
		case w == "-F" || w == "-E" || w == "-a" || w == "-h" || w == "-s" || strings.HasPrefix(w, "--color"):
		case strings.HasPrefix(w, "-"):
			return false // -v, -w, -x, -e, -o, -m, ...: not a plain match
		case pattern != "":
			return false // a second pattern, or a file
		default:
			pattern = strings.Trim(w, `'"`)
		}
	}
	if pattern == "" || strings.ContainsAny(pattern, `\^$*+?()[]{}|`) {
		return false
	}
	if fold {
		return strings.Contains(strings.ToLower(word), strings.ToLower(pattern))
	}
	return strings.Contains(word, pattern)
}

// pipeline splits a shell command line at its pipes, not at a "|" inside
// quotes.
func pipeline(t string) []string {
	var segs []string
	var quote byte
	from := 0
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' {
				i++
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '\\':
			i++
		case c == '|' && (i+1 >= len(t) || t[i+1] != '|'):
			segs = append(segs, t[from:i])
			from = i + 1
		case c == '|':
			i++ // "||" is no pipe
		}
	}
	return append(segs, t[from:])
}
