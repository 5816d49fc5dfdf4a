package load

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Units splits the arguments of a run into units that [Load] reads one at
// a time, each giving its own nodes, so that a fleet is analysed node by
// node. An argument that names no file and holds glob characters (*, ?,
// [) is expanded as the shell would, matches sorted; one that matches
// nothing is an error.
//
// A node report (see [IsNodeReport]) counts as a bundle: it is a unit of
// its own.
//
// When every argument is a bundle or a directory of bundles, each bundle
// is a unit, in the order of their paths (the order [Load] gives their
// nodes). A bundle is an archive (a gzip file) or a directory holding
// manifest.json or a node/ directory; a directory of bundles is a
// directory that is not a bundle and whose every entry (hidden ones
// aside) is a bundle or a directory of bundles. Otherwise, when loose
// files or plain directories are among the arguments, their cluster-level
// files (exports, configuration) apply to every bundle: the arguments are
// one unit, read together ([Plan] reads loose files that are all
// cluster-level once, for units of one bundle each).
func Units(paths []string) ([][]string, error) {
	var args []string
	for _, p := range paths {
		expanded, err := expand(p)
		if err != nil {
			return nil, err
		}
		args = append(args, expanded...)
	}
	var bundles []string
	for _, p := range args {
		found, beside, ok, err := bundlesIn(p)
		if err != nil {
			return nil, err
		}
		if !ok || len(beside) > 0 {
			return [][]string{args}, nil
		}
		bundles = append(bundles, found...)
	}
	return bundleUnits(bundles), nil
}

// expand returns the paths a glob pattern matches, or p when it names a
// file or holds no glob characters.
func expand(p string) ([]string, error) {
	if !strings.ContainsAny(p, "*?[") {
		return []string{p}, nil
	}
	if _, err := os.Lstat(p); err == nil {
		return []string{p}, nil
	}
	m, err := filepath.Glob(p)
	if err != nil {
		return nil, inputErrorf("pattern %s: %v", p, err)
	}
	if len(m) == 0 {
		return nil, inputErrorf("no file matches %s", p)
	}
	return m, nil
}

// bundlesIn returns the bundles a path is (a bundle) or holds (a directory
// of them, at any depth), and the other regular files beside them in
// those directories (a README, notes, an export: beside); ok is false when
// the path is neither a bundle nor a directory holding one, or holds a
// directory, a special file or a link that leads nowhere that is not one.
// Symbolic links are followed, as the loader follows them (see walkTree):
// a directory of links to bundles is a directory of bundles.
func bundlesIn(p string) (bundles, beside []string, ok bool, err error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, nil, false, inputErrorf("reading %s: %v", p, errors.Unwrap(err))
	}
	return bundlesBelow(p, st, nil)
}

// bundlesBelow is bundlesIn of p, of the info st, below the directories
// up (a link to one of them is a loop, which the loader reports).
func bundlesBelow(p string, st fs.FileInfo, up []fs.FileInfo) (bundles, beside []string, ok bool, err error) {
	if !st.IsDir() {
		return []string{p}, nil, st.Mode().IsRegular() && unitFile(p), nil
	}
	if isBundleDir(p) {
		return []string{p}, nil, true, nil
	}
	if onPath(up, st) {
		return nil, nil, false, nil
	}
	up = append(up[:len(up):len(up)], st)
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, nil, false, inputErrorf("reading %s: %v", p, errors.Unwrap(err))
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		q := filepath.Join(p, e.Name())
		est, err := os.Stat(q)
		if err != nil {
			return nil, nil, false, nil // the loader says what it is
		}
		if !est.IsDir() {
			if !est.Mode().IsRegular() {
				return nil, nil, false, nil
			}
			if unitFile(q) {
				bundles = append(bundles, q)
			} else {
				beside = append(beside, q)
			}
			continue
		}
		found, more, ok, err := bundlesBelow(q, est, up)
		if err != nil || !ok {
			return nil, nil, false, err
		}
		bundles = append(bundles, found...)
		beside = append(beside, more...)
	}
	return bundles, beside, len(bundles) > 0, nil
}

// isBundleDir reports whether a directory holds manifest.json or node/.
func isBundleDir(dir string) bool {
	if st, err := os.Stat(filepath.Join(dir, "manifest.json")); err == nil && st.Mode().IsRegular() {
		return true
	}
	st, err := os.Stat(filepath.Join(dir, "node"))
	return err == nil && st.IsDir()
}

// unitFile reports whether a file is a unit of its own: an archive
// proxyscan reads (or refuses by name), or a node report. A single
// compressed file (a dump or an export compressed alone) is not: it is
// read with the other files of its node.
func unitFile(p string) bool {
	head := fileHead(p, 512)
	if archiveFormat(head) != "" {
		return !isCompressedFile(p, head)
	}
	return IsNodeReport(head)
}

// fileHead returns the first n bytes of a file (fewer when it is shorter
// or cannot be read).
func fileHead(p string, n int) []byte {
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	head := make([]byte, n)
	k, _ := io.ReadFull(f, head)
	return head[:k]
}

// A Repeat is a file or directory named more than once on the command
// line (see SamePaths).
type Repeat struct {
	// Path is the argument read; Again the others that name the same file
	// (the same path, ./path, a link to it), in their order.
	Path  string
	Again []string
	// Dir says it is a directory.
	Dir bool
}

// Note says, for the report, that the arguments of r are one input.
func (r Repeat) Note() string {
	what := "file"
	if r.Dir {
		what = "directory"
	}
	var others []string
	for _, a := range r.Again {
		if a != r.Path && !slices.Contains(others, a) {
			others = append(others, a)
		}
	}
	if len(others) == 0 {
		return fmt.Sprintf("%s is given %d times: the same %s, read once", r.Path, len(r.Again)+1, what)
	}
	return fmt.Sprintf("%s is given again as %s: the same %s, read once", r.Path, strings.Join(others, ", "), what)
}

// SamePaths returns the arguments with each file or directory that
// several of them name (the same path twice, path and ./path, a link and
// what it leads to: the same device and inode) kept once, at its first
// place, and what was dropped. Arguments that name no file (glob patterns,
// missing files) are kept as they are: Units and Load say what they are.
func SamePaths(paths []string) (kept []string, repeats []Repeat) {
	var infos []fs.FileInfo
	at := map[int]int{} // index in kept: index in repeats
	for _, p := range paths {
		st, err := os.Stat(p)
		dup := -1
		if err == nil {
			for i, fi := range infos {
				if fi != nil && os.SameFile(fi, st) {
					dup = i
					break
				}
			}
		}
		if dup < 0 {
			kept = append(kept, p)
			if err != nil {
				st = nil
			}
			infos = append(infos, st)
			continue
		}
		r, ok := at[dup]
		if !ok {
			r = len(repeats)
			at[dup] = r
			repeats = append(repeats, Repeat{Path: kept[dup], Dir: st.IsDir()})
		}
		repeats[r].Again = append(repeats[r].Again, p)
	}
	return kept, repeats
}
