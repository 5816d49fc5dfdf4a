package load

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/kube"
)

// Plain directories of several nodes: a ticket's captures of the same
// commands on several nodes come as one directory per node
// (case-123/n001/paste.txt, case-123/n002/paste.txt), given each or by
// their parent. Read into one node, two captures of one table are not one
// ruleset, and what one node lacks is hidden by another's: each such
// directory is a node of its own, its directory as its bundle, its files
// named by their paths in it.
//
// Which directories are candidates is told by the files' heads
// (dirCandidates): a directory given that holds node-level files (dumps,
// listings, logs) is one; one that holds them only in subdirectories has
// one per subdirectory, the files beside them being exports and
// configuration that apply to every node. Whether they are nodes is told
// by their contents, once parsed (sharesCapture): every one must hold a
// capture of what the others hold, an iptables dump of one family and
// backend with a table in common, an nft ruleset, an IPVS table, a log,
// ...; directories that hold one node's files sorted by kind, family or
// table (dumps/ and logs/, v4/ and v6/, nat/ and filter/) have none in
// common and are one node.

// dirCandidates returns the candidate nodes among the files read from a
// plain directory given as arg (see above), by their heads: arg itself,
// or its subdirectories (the files beside them, exports, configuration or
// notes, are not a node's); ok is false when arg holds a bundle, no
// node-level file, or a subdirectory of none.
func dirCandidates(arg string, fs []file) (cands []string, ok bool) {
	top := false
	sub := map[string]bool{} // subdirectory -> holds a node-level file
	for i := range fs {
		f := &fs[i]
		rel, err := filepath.Rel(arg, f.disk)
		if f.archive || f.disk == "" || err != nil {
			return nil, false
		}
		rel = filepath.ToSlash(rel)
		if path.Base(rel) == "manifest.json" || strings.Contains("/"+rel, "/node/") {
			return nil, false // a bundle inside
		}
		first, _, nested := strings.Cut(rel, "/")
		node := nodeLevelKind(f.detectKind())
		switch {
		case !nested && node:
			top = true
		case nested:
			sub[first] = sub[first] || node
		}
	}
	if top {
		return []string{filepath.Clean(arg)}, true
	}
	if len(sub) == 0 {
		return nil, false
	}
	for s, node := range sub {
		if !node {
			return nil, false
		}
		cands = append(cands, filepath.Join(arg, s))
	}
	sort.Strings(cands)
	return cands, true
}

// nodeLevelKind reports whether a kind, told by a file's head, is a
// node's capture: not an export, a configuration, a manifest or unknown.
func nodeLevelKind(k parsers.Kind) bool {
	switch k {
	case parsers.KindKube, parsers.KindKubeProxyConfig, parsers.KindManifest, parsers.KindUnknown, "":
		return false
	}
	return true
}

// candidateOf returns the candidate (of the set) whose directory holds a
// file on disk, or "".
func candidateOf(cands map[string]bool, p string) string {
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		if cands[d] {
			return d
		}
		if d == "." || d == string(filepath.Separator) || d == filepath.Dir(d) {
			return ""
		}
	}
}

// nameByCandidates names the files of plain directories given (files
// whose dir is the argument) by their paths in their candidate node
// (see dirCandidates) and sets their dir to it, when every plain
// directory given is of nodes' directories by the heads of its files (the
// files of bundles aside: a bundle is a node of its own beside them), and
// they are two nodes or more. It returns whether it did (then each
// renamed file keeps its name in orig).
func nameByCandidates(files []file) bool {
	byArg := map[string][]file{}
	var args []string
	for _, f := range files {
		if f.group != "" || f.dir == "" {
			continue
		}
		if byArg[f.dir] == nil {
			args = append(args, f.dir)
		}
		byArg[f.dir] = append(byArg[f.dir], f)
	}
	cands := map[string]bool{}
	for _, a := range args {
		c, ok := dirCandidates(a, byArg[a])
		if !ok {
			return false
		}
		for _, x := range c {
			cands[x] = true
		}
	}
	if len(cands) < 2 {
		return false
	}
	for i := range files {
		f := &files[i]
		if f.dir == "" {
			continue
		}
		c := candidateOf(cands, f.disk)
		if c == "" {
			continue // an export beside the node directories
		}
		rel, _ := filepath.Rel(c, f.disk)
		f.orig, f.origDir = f.name, f.dir
		f.name, f.dir = filepath.ToSlash(rel), c
	}
	return true
}

// sharesCapture reports whether the candidate nodes of the files named by
// nameByCandidates all hold a capture in common, once parsed.
func sharesCapture(results []parsed) bool {
	by := map[string][]parsed{}
	for _, r := range results {
		if r.f.orig != "" {
			by[r.f.dir] = append(by[r.f.dir], r)
		}
	}
	var d dirSplit
	for _, rs := range by {
		d.record(rs)
	}
	return len(by) >= 2 && !d.empty && len(d.common) > 0
}

// groupByCandidates makes each candidate node's files a group of their
// own (its directory as their bundle) and returns the note each such node
// gets, and the groups; the files of the candidates are those with dir
// set and either orig set (read together) or in units (read one candidate
// at a time).
func groupByCandidates(results []parsed, units bool) (string, map[string]bool) {
	var dirs []string
	seen := map[string]bool{}
	for i := range results {
		f := &results[i].f
		if f.dir == "" || !units && f.orig == "" {
			continue
		}
		f.group = f.dir
		if !seen[f.dir] {
			seen[f.dir] = true
			dirs = append(dirs, f.dir)
		}
	}
	sort.Strings(dirs)
	return splitNoteOf(dirs), seen
}

// nodeLevelInDir reports whether a parsed file is a node-level file (a
// dump, a listing, a log) found in a plain directory.
func nodeLevelInDir(r parsed) bool {
	return r.f.dir != "" && r.value != nil && !clusterLevel(r)
}

// captureKeys returns what a node-level file captures, one key per part
// that two captures of one node would both hold: a table of an iptables
// dump of a family and backend, else the file's kind.
func captureKeys(r parsed) []string {
	d, ok := r.value.(*iptables.Dump)
	if !ok {
		return []string{string(r.kind)}
	}
	out := make([]string, 0, len(d.Tables))
	for _, t := range d.Tables {
		out = append(out, fmt.Sprintf("%s\x00%s\x00%s\x00%s", r.kind, d.Family, d.Backend, t.Name))
	}
	return out
}

// dirSplit is the plain directories of a run that [Plan] made units of
// their own (see dirCandidates): each is loaded alone, its files named by
// their paths in it, and the capture keys of each are gathered so that,
// once every unit is loaded, [Shared.CheckSplit] can tell whether they
// all hold a capture in common (else the run reads every argument
// together, which reads them as one node).
type dirSplit struct {
	units map[string]bool
	note  string

	mu     sync.Mutex
	common map[string]bool // capture keys every unit recorded so far holds
	seen   int             // units recorded
	empty  bool            // a unit held no node-level file after all
}

// planPlainDirs returns, when the loose arguments (no bundle among them)
// are plain directories of nodes' directories by their heads (see
// dirCandidates), two nodes or more, and files, the candidate nodes as
// units, the files to share (the files given and those beside the node
// directories) with their names as when read together, and the split.
// split is nil when the arguments are to be read together.
func planPlainDirs(loose []string, lim Limits, ko kube.Options) (units, rest []string, names map[string]string, split *dirSplit) {
	names = map[string]string{}
	for _, p := range loose {
		st, err := os.Stat(p)
		if err != nil {
			return nil, nil, nil, nil
		}
		if !st.IsDir() {
			rest = append(rest, p)
			continue
		}
		rd := &reader{lim: lim, ko: ko, planning: true}
		fs, err := rd.dir(p)
		if err != nil {
			return nil, nil, nil, nil
		}
		cands, ok := dirCandidates(p, fs)
		if !ok {
			return nil, nil, nil, nil
		}
		units = append(units, cands...)
		if len(cands) == 1 && cands[0] == filepath.Clean(p) {
			continue
		}
		for _, f := range fs {
			if rel, _ := filepath.Rel(p, f.disk); !strings.Contains(filepath.ToSlash(rel), "/") {
				rest = append(rest, f.disk)
				names[f.disk] = f.name
			}
		}
	}
	sort.Strings(units)
	units = slices.Compact(units)
	if len(units) < 2 {
		return nil, nil, nil, nil
	}
	set := map[string]bool{}
	for _, u := range units {
		set[u] = true
	}
	return units, rest, names, &dirSplit{units: set, note: splitNoteOf(units)}
}

// splitNoteOf is the note of the nodes read from plain directories.
func splitNoteOf(dirs []string) string {
	return fmt.Sprintf("%d plain directories (%s) each hold a capture of what the others hold (the same command's output from several nodes): "+
		"each is read as a node of its own, its directory as its bundle (to read them as one node's files, give them in one directory)",
		len(dirs), listFiles(dirs))
}

// record gathers the capture keys of a unit's node-level files and
// returns the note its node gets.
func (d *dirSplit) record(results []parsed) string {
	keys := map[string]bool{}
	for _, r := range results {
		if nodeLevelInDir(r) {
			for _, k := range captureKeys(r) {
				keys[k] = true
			}
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seen++
	switch {
	case len(keys) == 0:
		d.empty = true
	case d.common == nil:
		d.common = keys
	default:
		for k := range d.common {
			if !keys[k] {
				delete(d.common, k)
			}
		}
	}
	return d.note
}

// CheckSplit returns [ErrReadTogether] when the plain directories [Plan]
// made units of their own turn out, once all are loaded, not to hold a
// capture in common (one node's files sorted into directories by family
// or table, which only their contents tell): the run then reads every
// argument together, which reads them as one node. It returns nil
// otherwise, and for a nil Shared or one of no such directories.
func (s *Shared) CheckSplit() error {
	if s == nil || s.dirs == nil {
		return nil
	}
	d := s.dirs
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.empty || len(d.common) == 0 || d.seen < len(d.units) {
		return ErrReadTogether
	}
	return nil
}

// dirSplit returns the plain directories made units of their own, or nil.
func (s *Shared) dirSplit() *dirSplit {
	if s == nil {
		return nil
	}
	return s.dirs
}
