package load

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A treeFile is a file found walking a directory given (see walkTree).
type treeFile struct {
	// info is the file's, through a symbolic link; nil when the file
	// is not read (unread says why).
	info fs.FileInfo
	// unread says why the entry is not read: a special file (a named
	// pipe, a socket, a device), a symbolic link that leads nowhere or
	// to a directory that holds it.
	unread string
}

// walkTree calls fn with every file below the directory root, hidden
// files and directories (names starting with ".") aside, in the order of
// the entries of each directory, depth first. Symbolic links are
// followed, wherever they lead, as cat and cp -L follow them: a link to a
// regular file is that file under the link's name, a link to a directory
// is walked as a directory of the tree, unless it leads to a directory
// that holds it (a loop). Special files (named pipes, sockets, devices)
// are never opened, and links that lead nowhere, or in a loop, are not
// followed: fn is given them with why they are not read, so that the
// caller lists them rather than dropping them without a word.
func walkTree(root string, fn func(p string, f treeFile) error) error {
	st, err := os.Stat(root)
	if err != nil {
		return inputErrorf("reading %s: %v", root, pathErr(err))
	}
	return walkTreeDir(root, []fs.FileInfo{st}, fn)
}

// walkTreeDir walks the directory dir, below the directories up (dir's
// own info last).
func walkTreeDir(dir string, up []fs.FileInfo, fn func(p string, f treeFile) error) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return inputErrorf("reading %s: %v", dir, pathErr(err))
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed while the directory was read
		}
		if err != nil {
			return inputErrorf("reading %s: %v", p, pathErr(err))
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			st, err := os.Stat(p)
			if err != nil {
				if err := fn(p, treeFile{unread: fmt.Sprintf("a symbolic link to %s, which cannot be read (%v)", target, pathErr(err))}); err != nil {
					return err
				}
				continue
			}
			if st.IsDir() && onPath(up, st) {
				if err := fn(p, treeFile{unread: fmt.Sprintf("a symbolic link to %s, a directory that holds it (a loop): not followed", target)}); err != nil {
					return err
				}
				continue
			}
			info = st
		}
		switch {
		case info.IsDir():
			if err := walkTreeDir(p, append(up[:len(up):len(up)], info), fn); err != nil {
				return err
			}
			continue
		case !info.Mode().IsRegular():
			err = fn(p, treeFile{unread: specialFile(info.Mode())})
		default:
			err = fn(p, treeFile{info: info})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// onPath reports whether the directory st is one of the directories up.
func onPath(up []fs.FileInfo, st fs.FileInfo) bool {
	for _, u := range up {
		if os.SameFile(u, st) {
			return true
		}
	}
	return false
}

// specialFile says why a file that is not a regular one is not read: it
// is never opened (a named pipe would block the run until written to).
func specialFile(m fs.FileMode) string {
	what := "a special file"
	switch {
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeCharDevice != 0:
		what = "a character device"
	case m&fs.ModeDevice != 0:
		what = "a block device"
	}
	return what + ", not a regular file: not opened"
}
