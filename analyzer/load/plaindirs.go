package load

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/proxyscan/proxyscan/parsers/iptables"
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
	// The nat table, where kube-proxy's Services are, names them best.
	sort.Slice(common, func(i, j int) bool {
		ni, nj := strings.HasSuffix(common[i], "\x00nat"), strings.HasSuffix(common[j], "\x00nat")
		if ni != nj {
			return ni
		}
		return common[i] < common[j]
	})
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
	return fmt.Sprintf("%d plain directories (%s) each hold %s: each is read as a node of its own, its directory as its bundle "+
		"(to read them as one node's files, give them in one directory)", len(dirs), listFiles(dirs), describeKey(common[0]))
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

// describeKey names a capture key for people: "an iptables dump of IPv4
// (table nat)", "a file of kind nft-ruleset".
func describeKey(k string) string {
	parts := strings.Split(k, "\x00")
	if len(parts) == 4 {
		return fmt.Sprintf("an iptables dump of %s (table %s)", parts[1], parts[3])
	}
	return "a file of kind " + k
}
