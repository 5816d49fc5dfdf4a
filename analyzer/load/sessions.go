package load

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/paste"
)

// maxSessionFile is the size above which a file is not looked at as a
// terminal's transcript of several commands: such pastes are a few
// megabytes at most, and a larger file is read as one input.
const maxSessionFile = 16 << 20

// splitSessions reads each file read leniently that is a terminal's
// transcript of commands whose outputs are of several kinds ("$ ipvsadm
// -Ln", its listing, then "$ kubectl get cm kube-proxy -o yaml" and the
// ConfigMap) as one input per kind: each holds the lines of its commands'
// outputs, at their lines in the file (the lines above them blank), so that its
// evidence cites the file's own lines, and its note says which lines and
// commands it is. The outputs of commands of no known kind are left out
// of every part, and the first part's note says so. A file whose
// commands all printed one kind (iptables-save, then ip6tables-save) is
// read as one input, as before; so is a file whose head reads as a dump
// or an export as it is (no prompt, no words above it), and the files of
// plain directories named by their candidate nodes (see
// nameByCandidates).
func splitSessions(files []file) []file {
	out := files[:0:0]
	for _, f := range files {
		if parts := sessionParts(f); parts != nil {
			out = append(out, parts...)
			continue
		}
		out = append(out, f)
	}
	return out
}

// sessionParts returns the parts of a transcript of commands of several
// kinds (see splitSessions), nil for any other file.
func sessionParts(f file) []file {
	if f.strict || f.parsed != nil || f.skipped || f.orig != "" || f.length() > maxSessionFile || f.length() == 0 {
		return nil
	}
	dump := f.det.done && f.det.loose == parsers.KindIPTablesSave
	if f.det.done && f.det.kind != parsers.KindUnknown && !f.det.damaged && !dump {
		// Its head reads as it is: an export or a listing, not a
		// transcript that starts with a prompt or the words above one.
		// (An iptables dump may be followed by another of the other
		// family, see dumpSessions.)
		return nil
	}
	if dump && f.det.kind != parsers.KindUnknown && !f.det.damaged && !mixedDumps(f) {
		// A dump as iptables-save writes it, of one family and backend.
		return nil
	}
	data := f.data
	if f.path != "" {
		fh, err := os.Open(f.path)
		if err != nil {
			return nil
		}
		data, err = io.ReadAll(io.LimitReader(fh, maxSessionFile+1))
		fh.Close()
		if err != nil || int64(len(data)) != f.size {
			return nil
		}
	}
	ss := paste.Sessions(data)
	if ss == nil && dump {
		ss = dumpSessions(data)
	}
	if ss == nil {
		return nil
	}
	starts := lineStarts(data)
	text := func(s paste.Session) []byte {
		return data[starts[s.From-1]:starts[s.To]]
	}
	type part struct {
		kind     parsers.Kind
		sessions []paste.Session
	}
	var parts []*part
	// byKind holds the parts by kind, and iptables dumps by family and
	// backend (see saveTool): an iptables-save and an ip6tables-save are
	// two dumps.
	byKind := map[string]*part{}
	var unknown []paste.Session
	var words []int
	for _, s := range ss {
		sec := text(s)
		k := detect(sec, int64(len(sec)), func() (io.Reader, func(), error) { return bytes.NewReader(sec), func() {}, nil }).loose
		if k == parsers.KindUnknown {
			unknown = append(unknown, s)
			continue
		}
		if k == parsers.KindKube || k == parsers.KindKubeProxyConfig {
			s = trimWords(s, data, starts, &words)
		}
		key := string(k)
		if k == parsers.KindIPTablesSave {
			key += "/" + saveTool(s.Command, sec)
		}
		p := byKind[key]
		if p == nil {
			p = &part{kind: k}
			byKind[key] = p
			parts = append(parts, p)
		}
		p.sessions = append(p.sessions, s)
	}
	if len(parts) < 2 {
		return nil
	}
	if len(parts)*len(starts) > 2*len(data)+1<<20 {
		// Each part holds a newline for each line of the others: a file
		// of hundreds of thousands of near-empty lines would be read
		// many times over.
		return nil
	}
	out := make([]file, 0, len(parts))
	for i, p := range parts {
		masked := make([]byte, 0, len(data))
		line := 1
		for _, s := range p.sessions {
			masked = append(masked, bytes.Repeat([]byte{'\n'}, s.From-line)...)
			masked = append(masked, text(s)...)
			line = s.To + 1
		}
		g := f
		g.path, g.data, g.size = "", masked, int64(len(masked))
		g.det = g.detect()
		g.kind = g.det.kindOf(false)
		g.session, g.lines = describeSessions(p.sessions), sessionLines(p.sessions)
		if i == 0 && len(unknown) > 0 {
			g.session += "; " + describeSessions(unknown) + " left out: output of no kind proxyscan reads"
		}
		if i == 0 && len(words) > 0 {
			g.session += "; " + describeLines(words) + " left out: words below an export"
		}
		out = append(out, g)
	}
	return out
}

// lineStarts returns the offset of each line of data, and len(data) last.
func lineStarts(data []byte) []int {
	starts := []int{0}
	for i, c := range data {
		if c == '\n' && i+1 < len(data) {
			starts = append(starts, i+1)
		}
	}
	return append(starts, len(data))
}

// describeSessions names the lines and commands of sessions: "lines 3-42
// (`ipvsadm -Ln`)".
func describeSessions(ss []paste.Session) string {
	var cmds []string
	for _, s := range ss {
		cmds = append(cmds, "`"+s.Command+"`")
	}
	word := "lines "
	if len(ss) == 1 && ss[0].From == ss[0].To {
		word = "line "
	}
	return word + sessionLines(ss) + " (" + strings.Join(cmds, ", ") + ")"
}

// sessionLines names the lines of sessions: "3-42, 50".
func sessionLines(ss []paste.Session) string {
	var lines []string
	for _, s := range ss {
		if s.From == s.To {
			lines = append(lines, fmt.Sprint(s.From))
		} else {
			lines = append(lines, fmt.Sprintf("%d-%d", s.From, s.To))
		}
	}
	return strings.Join(lines, ", ")
}

// trimWords takes off the end of the session s of a YAML export the lines
// of words pasted below it ("Thanks", "let me know"): a line that starts
// with a letter and holds no colon is no line of a YAML document's top
// level (a block's lines are indented), and would make the export
// refused. Their lines are added to words.
func trimWords(s paste.Session, data []byte, starts []int, words *[]int) paste.Session {
	to := s.To
	var taken []int
	for to > s.From {
		l := strings.TrimRight(string(data[starts[to-1]:starts[to]]), "\r\n")
		switch {
		case strings.TrimSpace(l) == "":
		case l[0] >= 'A' && l[0] <= 'Z' || l[0] >= 'a' && l[0] <= 'z':
			if strings.ContainsAny(l, ":\"") || l == "apiVersion" {
				return trimmed(s, to, taken, words)
			}
			taken = append(taken, to)
		default:
			return trimmed(s, to, taken, words)
		}
		to--
	}
	return s
}

// trimmed returns s ending at line to, the lines taken added to words.
func trimmed(s paste.Session, to int, taken []int, words *[]int) paste.Session {
	if len(taken) == 0 {
		return s
	}
	for i := len(taken) - 1; i >= 0; i-- {
		*words = append(*words, taken[i])
	}
	s.To = to
	return s
}

// describeLines names lines: "line 94", "lines 90, 94".
func describeLines(ls []int) string {
	var parts []string
	for _, l := range ls {
		parts = append(parts, fmt.Sprint(l))
	}
	if len(ls) == 1 {
		return "line " + parts[0]
	}
	return "lines " + strings.Join(parts, ", ")
}

// dumpSessions cuts a file of iptables dumps given one after another
// without the commands that printed them (iptables-save's output, then
// ip6tables-save's) where the "# Generated by" line above a table names
// another family or backend than the one before it (see saveTool); nil
// when all name one.
func dumpSessions(data []byte) []paste.Session {
	if bytes.Count(data, []byte("# Generated by ip")) < 2 {
		return nil
	}
	var out []paste.Session
	last, line := "", 0
	for len(data) > 0 {
		var l []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			l, data = data, nil
		}
		line++
		rest, ok := bytes.CutPrefix(l, []byte("# Generated by "))
		if !ok {
			continue
		}
		tool, _, _ := strings.Cut(string(rest), " ")
		key := saveTool("", l)
		switch {
		case key == last:
		case len(out) == 0:
			out = append(out, paste.Session{From: 1, Command: tool})
		default:
			out[len(out)-1].To = line - 1
			out = append(out, paste.Session{From: line, Command: tool})
		}
		last = key
	}
	if len(out) < 2 {
		return nil
	}
	out[len(out)-1].To = line
	return out
}

// saveTool returns the family and backend of an iptables dump, "ipv4",
// "ipv6", "ipv4-legacy" or "ipv6-legacy": from the first "# Generated by"
// line of its text (sec) when it has one (its tool, and the backend after
// its version), else from the command that printed it ("sudo
// ip6tables-save", "iptables-legacy-save -t nat").
func saveTool(command string, sec []byte) string {
	tool, legacy := "", false
	if i := bytes.Index(sec, []byte("# Generated by ")); i >= 0 {
		header := sec[i+len("# Generated by "):]
		if j := bytes.IndexByte(header, '\n'); j >= 0 {
			header = header[:j]
		}
		// "iptables-save v1.8.7 (legacy)": the backend after the version.
		legacy = bytes.Contains(header, []byte("(legacy)"))
		tool, _, _ = strings.Cut(string(header), " ")
	}
	if tool == "" {
		for _, w := range strings.Fields(command) {
			if strings.Contains(w, "tables") {
				tool = w
				break
			}
		}
	}
	tool = strings.ToLower(tool)
	fam := "ipv4"
	if strings.Contains(tool, "ip6tables") {
		fam = "ipv6"
	}
	if legacy || strings.Contains(tool, "legacy") {
		fam += "-legacy"
	}
	return fam
}

// mixedDumps reports whether a file's "# Generated by" lines name iptables
// dumps of several families or backends (see saveTool), reading it a line
// at a time from disk, not into memory.
func mixedDumps(f file) bool {
	var r io.Reader
	if f.path != "" {
		fh, err := os.Open(f.path)
		if err != nil {
			return false
		}
		defer fh.Close()
		r = fh
	} else {
		r = bytes.NewReader(f.data)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxSessionFile)
	first := ""
	for sc.Scan() {
		if !bytes.HasPrefix(sc.Bytes(), []byte("# Generated by ")) {
			continue
		}
		key := saveTool("", sc.Bytes())
		if first == "" {
			first = key
		} else if key != first {
			return true
		}
	}
	return false
}
