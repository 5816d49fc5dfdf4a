package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// A mutation damages one input file the way files are damaged on their way
// to proxyscan: a copy that stopped, bits flipped on a bad disk, a paste
// into the wrong editor. apply returns the new content and name of the
// file, or false when the mutation does not apply to it (a YAML damage to
// a dump). same says the damage keeps the file's meaning (an encoding,
// comments, a name: the contract reads kinds by their content): the run
// is then expected to be the undamaged one's.
type mutation struct {
	name  string
	apply func(rnd *rand.Rand, rel string, data []byte) ([]byte, string, bool)
	same  func(rel string) bool
}

func isYAML(rel string) bool { return strings.HasSuffix(rel, ".yaml") }

// hashComments reports a file whose format takes "#" lines as comments.
func hashComments(rel string) bool {
	return !strings.HasSuffix(rel, ".json") && !strings.HasSuffix(rel, "version.txt") && !strings.HasSuffix(rel, "log.txt")
}

// lineStarts returns the offsets where the lines of data start (the
// first included).
func lineStarts(data []byte) []int {
	out := []int{0}
	for i, c := range data {
		if c == '\n' && i+1 < len(data) {
			out = append(out, i+1)
		}
	}
	return out
}

// mutations are the damages the corpus applies, in a fixed order.
var mutations = []mutation{
	{name: "truncate at 1/3", apply: func(_ *rand.Rand, rel string, d []byte) ([]byte, string, bool) {
		return d[:len(d)/3], rel, len(d) > 3
	}},
	{name: "truncate at 1/2", apply: func(_ *rand.Rand, rel string, d []byte) ([]byte, string, bool) {
		return d[:len(d)/2], rel, len(d) > 2
	}},
	{name: "truncate at a line end", apply: func(_ *rand.Rand, rel string, d []byte) ([]byte, string, bool) {
		ls := lineStarts(d)
		return d[:ls[len(ls)*2/3]], rel, len(ls) > 3
	}},
	{name: "truncate one byte short", apply: func(_ *rand.Rand, rel string, d []byte) ([]byte, string, bool) {
		// The final newline, or the last character of the last value.
		return d[:len(d)-2], rel, len(d) > 2
	}},
	{name: "flip bits", apply: func(rnd *rand.Rand, rel string, d []byte) ([]byte, string, bool) {
		out := bytes.Clone(d)
		for range 8 {
			out[rnd.Intn(len(out))] ^= 1 << rnd.Intn(8)
		}
		return out, rel, len(d) > 0
	}},
	{name: "insert NUL", apply: func(_ *rand.Rand, rel string, d []byte) ([]byte, string, bool) {
		return slices.Concat(d[:len(d)/2], []byte{0}, d[len(d)/2:]), rel, true
	}},
	{name: "blank file", apply: func(_ *rand.Rand, rel string, d []byte) ([]byte, string, bool) {
		return nil, rel, true
	}},
	{name: "UTF-16 re-encoded", apply: func(_ *rand.Rand, rel string, d []byte) ([]byte, string, bool) {
		return []byte(utf16Text(string(d), false, true)), rel, true
	}, same: func(string) bool { return true }},
	{name: "64 KiB comment prefix", apply: func(_ *rand.Rand, rel string, d []byte) ([]byte, string, bool) {
		return append([]byte(strings.Repeat("# a note pasted above the output, nothing of it is data...........\n", 1024)), d...), rel, true
	}, same: hashComments},
	{name: "duplicate YAML key", apply: func(_ *rand.Rand, rel string, d []byte) ([]byte, string, bool) {
		// The first name: of a metadata, twice.
		i := bytes.Index(d, []byte("\n  name: "))
		if !isYAML(rel) || i < 0 {
			return nil, rel, false
		}
		j := i + 1 + bytes.IndexByte(d[i+1:], '\n')
		return slices.Concat(d[:j+1], []byte("  name: other\n"), d[j+1:]), rel, true
	}},
	{name: "tab-indented YAML line", apply: func(_ *rand.Rand, rel string, d []byte) ([]byte, string, bool) {
		i := bytes.Index(d, []byte("\n    "))
		if !isYAML(rel) || i < 0 {
			return nil, rel, false
		}
		return slices.Concat(d[:i+1], []byte("\t"), d[i+5:]), rel, true
	}},
	{name: "swap two lines", apply: func(rnd *rand.Rand, rel string, d []byte) ([]byte, string, bool) {
		lines := strings.SplitAfter(string(d), "\n")
		if len(lines) < 4 {
			return nil, rel, false
		}
		for range 20 {
			i, j := rnd.Intn(len(lines)-1), rnd.Intn(len(lines)-1)
			if lines[i] != lines[j] {
				lines[i], lines[j] = lines[j], lines[i]
				return []byte(strings.Join(lines, "")), rel, true
			}
		}
		return nil, rel, false
	}},
	{name: "cut between YAML items", apply: func(_ *rand.Rand, rel string, d []byte) ([]byte, string, bool) {
		// Before the last item of a List: every item read is whole.
		i := bytes.LastIndex(d, []byte("\n- "))
		if !isYAML(rel) || i < 0 || !bytes.HasPrefix(d, []byte("apiVersion: v1\nitems:\n")) {
			return nil, rel, false
		}
		return d[:i+1], rel, true
	}},
	{name: "garbage of the same size", apply: func(rnd *rand.Rand, rel string, d []byte) ([]byte, string, bool) {
		out := make([]byte, len(d))
		rnd.Read(out)
		return out, rel, len(d) > 0
	}},
	{name: "wrong extension", apply: func(_ *rand.Rand, rel string, d []byte) ([]byte, string, bool) {
		ext := filepath.Ext(rel)
		to := ".yaml"
		if ext == ".yaml" || ext == ".json" {
			to = ".txt"
		}
		return d, strings.TrimSuffix(rel, ext) + to, true
	}, same: func(string) bool { return true }},
}

func init() { mutations = append(mutations, ruleFlips...) }

// ruleToken is a token of an iptables rule line: its offsets in the
// file, and what it is.
type ruleToken struct {
	start, end int
	option     bool   // an option name ("-m", "--dport")
	after      string // for a value, the option it follows
}

// ruleTokens returns the option names and unquoted values of the rule
// lines ("-A CHAIN ...") of an iptables dump, the chain names of "-A"
// and the free texts (comments, log prefixes) left out.
func ruleTokens(data []byte) []ruleToken {
	var out []ruleToken
	for _, ls := range lineStarts(data) {
		end := ls + bytes.IndexByte(data[ls:], '\n')
		if end < ls {
			end = len(data)
		}
		if !bytes.HasPrefix(data[ls:end], []byte("-A ")) {
			continue
		}
		last := ""
		for i := ls; i < end; {
			for i < end && data[i] == ' ' {
				i++
			}
			if i >= end {
				break
			}
			j := i
			if data[i] == '"' {
				for j = i + 1; j < end && data[j] != '"'; j++ {
					if data[j] == '\\' {
						j++
					}
				}
				i = j + 1
				continue // a quoted free text
			}
			for j < end && data[j] != ' ' {
				j++
			}
			tok := string(data[i:j])
			switch {
			case strings.HasPrefix(tok, "-") && len(tok) > 1:
				last = tok
				if tok != "-A" {
					out = append(out, ruleToken{start: i, end: j, option: true})
				}
			case last != "-A" && last != "--comment" && last != "--log-prefix" && last != "--nflog-prefix":
				out = append(out, ruleToken{start: i, end: j, after: last})
			}
			i = j
		}
	}
	return out
}

// flipRuleLetter flips one bit of a letter of a token of an iptables
// rule that keep picks: a letter, so that the flip never yields a NUL
// (and, on bits 6 and 7, may yield a control character or a byte past
// ASCII).
func flipRuleLetter(keep func(ruleToken, string) bool) func(*rand.Rand, string, []byte) ([]byte, string, bool) {
	return func(rnd *rand.Rand, rel string, d []byte) ([]byte, string, bool) {
		if !strings.Contains(rel, "iptables") {
			return nil, rel, false
		}
		var picks []ruleToken
		for _, t := range ruleTokens(d) {
			if tok := string(d[t.start:t.end]); keep(t, tok) && strings.IndexFunc(tok, isASCIILetter) >= 0 {
				picks = append(picks, t)
			}
		}
		if len(picks) == 0 {
			return nil, rel, false
		}
		t := picks[rnd.Intn(len(picks))]
		var letters []int
		for i := t.start; i < t.end; i++ {
			if c := d[i]; c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
				letters = append(letters, i)
			}
		}
		if len(letters) == 0 {
			return nil, rel, false
		}
		out := bytes.Clone(d)
		out[letters[rnd.Intn(len(letters))]] ^= 1 << rnd.Intn(8)
		return out, rel, true
	}
}

func isASCIILetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

// ruleFlips are the bit flips inside iptables rules, each three times
// with other draws: in an option's name, in a match module's name, in a
// target's name, in another option's value.
var ruleFlips = func() []mutation {
	kinds := []struct {
		name string
		keep func(ruleToken, string) bool
	}{
		{"flip a letter of an option", func(t ruleToken, _ string) bool { return t.option }},
		{"flip a letter of a module", func(t ruleToken, _ string) bool { return t.after == "-m" || t.after == "--match" }},
		{"flip a letter of a target", func(t ruleToken, _ string) bool { return t.after == "-j" || t.after == "-g" }},
		{"flip a letter of a value", func(t ruleToken, _ string) bool {
			return !t.option && t.after != "-m" && t.after != "-j" && t.after != "-g"
		}},
	}
	var out []mutation
	for _, k := range kinds {
		for i := range 3 {
			out = append(out, mutation{name: fmt.Sprintf("%s #%d", k.name, i+1), apply: flipRuleLetter(k.keep)})
		}
	}
	return out
}()

// corpusRun is what one analyze of a (damaged) bundle gave.
type corpusRun struct {
	code           int
	stdout, stderr string
	verdict        string
	findings       []string // check and message, sorted
	doc            map[string]any
}

func analyzeCorpus(t *testing.T, dir string) corpusRun {
	t.Helper()
	f, outputs := testFactory()
	var r corpusRun
	r.code = Run(f, []string{"analyze", dir, "-o", "json"})
	r.stdout, r.stderr = outputs()
	if r.code > 1 {
		return r
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("analyze %s: exit %d, output not one JSON object: %v\n%s", dir, r.code, err, r.stderr)
	}
	r.doc = doc
	r.verdict, _ = doc["verdict"].(string)
	fs, _ := doc["findings"].([]any)
	for _, x := range fs {
		m, _ := x.(map[string]any)
		r.findings = append(r.findings, fmt.Sprint(m["check"], " ", m["message"]))
	}
	sort.Strings(r.findings)
	return r
}

// reported says whether the run reports the input rel as not read or
// read only in part, anywhere (its note, its partial field, the gaps of
// the coverage).
func (r corpusRun) reported(rel string) bool {
	ins, _ := r.doc["inputs"].([]any)
	for _, x := range ins {
		m, _ := x.(map[string]any)
		if m["path"] != rel {
			continue
		}
		note, _ := m["note"].(string)
		if p, _ := m["partial"].(string); p != "" || strings.Contains(note, "not read") || strings.Contains(note, "not used") {
			return true
		}
	}
	cov, _ := json.Marshal(r.doc["coverage"])
	return bytes.Contains(cov, []byte(rel))
}

// corpusAllowed lists the outcomes the corpus tolerates though they are
// not clean, by bundle, file and mutation, each with the reason.
var corpusAllowed = func() map[string]string {
	m := map[string]string{}
	for _, b := range []string{"iptables-mini", "ipvs-healthy-mini", "nftables-healthy"} {
		// Cut at a line end inside status.conditions, nodeInfo lost: a
		// single object cut between two lines leaves nothing kubectl's
		// format would show (no List trailer, no open key, no other
		// Node to compare with), and what is read of a Node (addresses,
		// pod CIDRs) comes before the cut, whole.
		m[b+" cluster/node.yaml truncate at a line end"] = "a single Node cut at a line end after everything read of it"
	}
	for _, b := range []string{"iptables-mini", "ipvs-healthy-mini"} {
		// The cut falls in the "# Completed on" comment after the last
		// COMMIT: every table is whole, the verdict is the whole dump's.
		m[b+" node/iptables-save.txt truncate one byte short"] = "only the trailing comment after the last COMMIT is cut"
	}
	// The lines swapped are the create of an empty set and the add of a
	// member of another set, each still after its set's create: ipset
	// restore loads the same sets.
	m["ipvs-healthy-mini node/ipset-save.txt swap two lines"] = "the same sets and members"
	// A chain's declaration swapped with a rule of another chain, which
	// then comes before that chain's declaration: iptables-nft-restore
	// (the dump's backend) loads it as the same ruleset, though
	// iptables-save never prints it so.
	m["ipvs-healthy-mini node/iptables-save.txt swap two lines"] = "the same ruleset for the nf_tables backend"
	return m
}()

// TestHostileCorpus damages every input file of a bundle of each mode
// with each mutation, analyzes the damaged bundle in-process and
// classifies the outcome. Clean: an input error naming the file (exit 2);
// the file reported as not read or partial with a verdict other than ok;
// the same findings as without the file at all (the verdict does not
// depend on it); for a damage that keeps the meaning (an encoding, a
// comment prefix, a name), the undamaged run's findings; or a verdict
// other than ok whose findings the damage changed. Unclean: a panic, exit
// 3, an error that does not name the file, or an ok verdict on a damaged
// file the findings depend on. Under -short, one bundle, three files and
// six mutations.
func TestHostileCorpus(t *testing.T) {
	bundles := []string{"iptables-mini", "ipvs-healthy-mini", "nftables-healthy"}
	muts := mutations
	var files map[string]bool
	if testing.Short() {
		bundles = bundles[:1]
		files = map[string]bool{"node/iptables-save.txt": true, "cluster/cluster.yaml": true, "kube-proxy/config.yaml": true}
		muts = nil
		for _, m := range mutations {
			switch m.name {
			case "truncate at 1/2", "truncate one byte short", "insert NUL", "blank file", "cut between YAML items", "garbage of the same size",
				"flip a letter of a module #1", "flip a letter of a value #1":
				muts = append(muts, m)
			}
		}
	}
	type tally struct{ tried, clean, allowed int }
	perKind := map[string]*tally{}
	outcomes := map[string]int{}
	var unclean []string
	for _, b := range bundles {
		src := testdata(t, "bundles", b)
		var rels []string
		err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(src, p)
			if files == nil || files[filepath.ToSlash(rel)] {
				rels = append(rels, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		clean := analyzeCorpus(t, src)
		if clean.code != 0 || clean.verdict != "ok" {
			t.Fatalf("%s: exit %d, verdict %q undamaged, want ok", b, clean.code, clean.verdict)
		}
		for _, rel := range rels {
			data, err := os.ReadFile(filepath.Join(src, rel))
			if err != nil {
				t.Fatal(err)
			}
			without := analyzeCorpus(t, changedBundle(t, b, map[string]string{rel: ""}))
			for mi, m := range muts {
				rnd := rand.New(rand.NewSource(int64(mi*7919 + len(rel))))
				out, name, ok := m.apply(rnd, rel, data)
				if !ok {
					continue
				}
				dir := copyBundle(t, b)
				if err := os.Remove(filepath.Join(dir, rel)); err != nil {
					t.Fatal(err)
				}
				if err := writeBundleFile(dir, name, out); err != nil {
					t.Fatal(err)
				}
				r := analyzeCorpus(t, dir)
				kind := classify(r, clean, without, name, m.same != nil && m.same(rel))
				outcomes[kind]++
				tl := perKind[m.name]
				if tl == nil {
					tl = &tally{}
					perKind[m.name] = tl
				}
				tl.tried++
				key := b + " " + rel + " " + m.name
				if !strings.HasPrefix(kind, "unclean") {
					tl.clean++
					continue
				}
				if why, ok := corpusAllowed[key]; ok {
					t.Logf("allowed: %s: %s (%s)", key, kind, why)
					tl.allowed++
					continue
				}
				unclean = append(unclean, fmt.Sprintf("%s: %s: exit %d, verdict %q\n  findings: %q\n  stderr: %s\n  damage: %s", key, kind, r.code, r.verdict, r.findings,
					strings.TrimSpace(r.stderr), damage(data, out)))
			}
		}
	}
	var tb strings.Builder
	tried, handled, allowed := 0, 0, 0
	fmt.Fprintf(&tb, "%-28s %6s %8s %8s\n", "mutation", "tried", "cleanly", "allowed")
	for _, m := range muts {
		if tl := perKind[m.name]; tl != nil {
			fmt.Fprintf(&tb, "%-28s %6d %8d %8d\n", m.name, tl.tried, tl.clean, tl.allowed)
			tried, handled, allowed = tried+tl.tried, handled+tl.clean, allowed+tl.allowed
		}
	}
	fmt.Fprintf(&tb, "%-28s %6d %8d %8d\n", "all", tried, handled, allowed)
	var kinds []string
	for k := range outcomes {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(&tb, "  %s: %d\n", k, outcomes[k])
	}
	t.Logf("hostile corpus (%s):\n%s", strings.Join(bundles, ", "), tb.String())
	if tried == 0 {
		t.Fatal("no mutation applied")
	}
	for _, u := range unclean {
		t.Error(u)
	}
}

// classify names the outcome r of analyzing a bundle whose file name
// (after the mutation) was damaged; clean is the undamaged bundle's run,
// without that of the bundle without the file; same says the damage keeps
// the file's meaning.
func classify(r, clean, without corpusRun, name string, same bool) string {
	switch {
	case r.code == 3 || strings.Contains(r.stderr, "panic"):
		return "unclean: internal error"
	case r.code == 2 && strings.Contains(r.stderr, name):
		return "clean: input error naming the file"
	case r.code == 2:
		return "unclean: error not naming the file"
	case r.code > 2:
		return fmt.Sprintf("unclean: exit %d", r.code)
	case r.reported(name) && r.verdict != "ok":
		return "clean: reported unread or partial"
	case slices.Equal(r.findings, without.findings) && r.verdict == without.verdict:
		return "clean: irrelevant (as without the file)"
	case same && slices.Equal(r.findings, clean.findings) && r.verdict == clean.verdict:
		return "clean: read as the undamaged file"
	case r.verdict != "ok":
		return "clean: verdict not ok, findings changed"
	}
	return "unclean: ok verdict on a damaged file that matters"
}

// damage says which lines of a the mutation changed into b's (the first
// few), for the report of an unclean outcome.
func damage(a, b []byte) string {
	x, y := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	var out []string
	for i := 0; i < max(len(x), len(y)) && len(out) < 8; i++ {
		var l, m string
		if i < len(x) {
			l = x[i]
		}
		if i < len(y) {
			m = y[i]
		}
		if l != m {
			out = append(out, fmt.Sprintf("line %d %q -> %q", i+1, l, m))
		}
	}
	return strings.Join(out, "; ")
}
