package load

import (
	"fmt"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/kube"
)

// splitPlainDirs makes each plain directory among the inputs a node of its
// own when they are several and every one holds a capture of what the
// others hold: an iptables dump of one family with a table in common, an
// nft ruleset, an IPVS table, ... (case-123/n001/paste.txt,
// case-123/n002/paste.txt: the same command run on two nodes). Read into
// one node, two captures of one table are not one ruleset, and what one
// node lacks would be hidden by another's. Their files are then grouped
// by directory (the directory is the node's bundle); the files given
// outside them stay loose (the cluster-level ones apply to every node).
// Directories that hold no node-level file (an export alone) are not
// split, and nothing is when a bundle is among the inputs (its files are
// the node, the loose ones join it as before) or when the directories
// hold captures of different things (one with the iptables dump, one with
// the logs: one node's files, sorted by kind). It returns a note on what
// was split, "" when nothing.
func splitPlainDirs(results []parsed) string {
	// A directory given whose node-level files are in it is one candidate;
	// one whose node-level files are all in subdirectories (case-123/n001/,
	// case-123/n002/) has a candidate per subdirectory.
	top := map[string]bool{}
	for _, r := range results {
		if r.f.group != "" && r.f.dir == "" {
			return "" // a bundle among the inputs
		}
		if nodeLevelInDir(r) && !strings.Contains(r.f.name, "/") {
			top[r.f.dir] = true
		}
	}
	unit := func(f *file) string {
		first, _, ok := strings.Cut(f.name, "/")
		if top[f.dir] || !ok {
			return f.dir
		}
		return path.Join(f.dir, first)
	}
	keys := map[string]map[string]bool{} // candidate -> what its node-level files capture
	for i := range results {
		r := &results[i]
		if !nodeLevelInDir(*r) {
			continue
		}
		d := unit(&r.f)
		if keys[d] == nil {
			keys[d] = map[string]bool{}
		}
		for _, k := range captureKeys(*r) {
			keys[d][k] = true
		}
	}
	if len(keys) < 2 {
		return ""
	}
	dirs := make([]string, 0, len(keys))
	for d := range keys {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	var common []string
	for k := range keys[dirs[0]] {
		all := true
		for _, d := range dirs[1:] {
			if !keys[d][k] {
				all = false
				break
			}
		}
		if all {
			common = append(common, k)
		}
	}
	if len(common) == 0 {
		return ""
	}
	for i := range results {
		f := &results[i].f
		if f.dir == "" {
			continue
		}
		// The directory names the node, as a bundle does; the file keeps
		// its name, as its parser gave it to what it read.
		if d := unit(f); keys[d] != nil {
			f.group = d
		}
	}
	return splitNoteOf(dirs)
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
// their own, as [splitPlainDirs] would make them nodes of their own when
// every argument is read together: each is loaded alone, its files named
// as they would be then, and the capture keys of each are gathered so
// that, once every unit is loaded, [Shared.CheckSplit] can tell whether
// they all hold a capture in common (else the run reads every argument
// together, which reads them as one node).
type dirSplit struct {
	// prefix is, per unit, what its files' names start with when read
	// with the argument that held it ("n001/" for case/n001 of case/).
	prefix map[string]string
	note   string

	mu     sync.Mutex
	common map[string]bool // capture keys every unit recorded so far holds
	seen   int             // units recorded
	empty  bool            // a unit held no node-level file after all
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

// planPlainDirs returns the plain directories among the loose arguments
// (no bundle among them) that are to be units of their own, and the loose
// arguments that are not (files, to be shared): when two or more
// directories hold node-level files by their heads, every directory
// argument either holds them itself or holds only subdirectories that
// do. It returns nil when the arguments are to be read together.
func planPlainDirs(loose []string, lim Limits, ko kube.Options) (units []string, rest []string, split *dirSplit) {
	prefix := map[string]string{}
	for _, p := range loose {
		st, err := os.Stat(p)
		if err != nil {
			return nil, nil, nil
		}
		if !st.IsDir() {
			rest = append(rest, p)
			continue
		}
		rd := &reader{lim: lim, ko: ko}
		fs, err := rd.dir(p)
		if err != nil {
			return nil, nil, nil
		}
		fs = regroup(p, fs)
		top := false
		sub := map[string]bool{} // subdirectory -> holds a node-level file
		for i := range fs {
			f := &fs[i]
			if f.group != "" || f.archive {
				return nil, nil, nil // a bundle inside
			}
			first, _, nested := strings.Cut(f.name, "/")
			node := nodeLevelKind(f.detectKind())
			switch {
			case !nested && node:
				top = true
			case !nested:
			default:
				sub[first] = sub[first] || node
			}
		}
		if top {
			units = append(units, p)
			prefix[p] = ""
			continue
		}
		if len(sub) == 0 {
			return nil, nil, nil
		}
		for i := range fs {
			if !strings.Contains(fs[i].name, "/") {
				return nil, nil, nil // a file beside the node directories
			}
		}
		names := make([]string, 0, len(sub))
		for s, node := range sub {
			if !node {
				return nil, nil, nil // a subdirectory of no node's capture
			}
			names = append(names, s)
		}
		sort.Strings(names)
		for _, s := range names {
			u := path.Join(p, s)
			units = append(units, u)
			prefix[u] = s + "/"
		}
	}
	if len(units) < 2 {
		return nil, nil, nil
	}
	sorted := slices.Clone(units)
	sort.Strings(sorted)
	return units, rest, &dirSplit{prefix: prefix, note: splitNoteOf(sorted)}
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
	if d.empty || len(d.common) == 0 || d.seen < len(d.prefix) {
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
