package collect

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/proxyscan/proxyscan/parsers/manifest"
)

// NodeReportFile is the name of the node report collect --analyze adds to
// a bundle.
const NodeReportFile = "node-report.json"

// output is where a bundle goes: a staging directory first, then a
// directory renamed into place or an archive written to a temporary name
// and renamed.
type output struct {
	opts    Options
	base    string // proxyscan-<host>-<time>
	staging string
	tmp     []string // temporary paths removed by cleanup
}

func newOutput(opts Options, base string) (*output, error) {
	o := &output{opts: opts, base: base}
	parent := ""
	switch {
	case opts.Dir != "":
		abs, err := filepath.Abs(opts.Dir)
		if err != nil {
			return nil, err
		}
		if ents, err := os.ReadDir(abs); err == nil && len(ents) > 0 {
			return nil, fmt.Errorf("--dir %s exists and is not empty", opts.Dir)
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("--dir %s: %w", opts.Dir, err)
		}
		parent = filepath.Dir(abs)
	case opts.Output == "-":
		parent = ""
	default:
		out := opts.Output
		if out == "" {
			out = base + ".tgz"
		}
		abs, err := filepath.Abs(out)
		if err != nil {
			return nil, err
		}
		parent = filepath.Dir(abs)
	}
	if parent != "" {
		if st, err := os.Stat(parent); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("cannot write the bundle: directory %s does not exist", parent)
		}
	}
	dir, err := os.MkdirTemp(parent, ".proxyscan-collect-")
	if err != nil {
		return nil, fmt.Errorf("creating a staging directory: %w", err)
	}
	o.staging = dir
	o.addTemp(dir)
	return o, nil
}

// addTemp records a temporary path, removed by cleanup when the run
// fails and by the watchdog when collect is killed.
func (o *output) addTemp(path string) {
	o.tmp = append(o.tmp, path)
	guardPath(path)
}

// cleanup removes what is left of a failed or interrupted run.
func (o *output) cleanup() {
	for _, p := range o.tmp {
		_ = os.RemoveAll(p)
	}
}

// commit moves the staged bundle into place and returns where it went.
func (o *output) commit(ctx context.Context, m *manifest.Manifest) (string, error) {
	if o.opts.Dir != "" {
		abs, _ := filepath.Abs(o.opts.Dir)
		// An empty directory may be there already.
		if err := os.Remove(abs); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("--dir %s: %w", o.opts.Dir, err)
		}
		if err := os.Chmod(o.staging, 0o700); err != nil {
			return "", err
		}
		if err := os.Rename(o.staging, abs); err != nil {
			return "", fmt.Errorf("moving the bundle into %s: %w", o.opts.Dir, err)
		}
		o.tmp = nil
		return o.opts.Dir, nil
	}
	if o.opts.Output == "-" {
		f, err := os.CreateTemp("", ".proxyscan-bundle-*.tgz")
		if err != nil {
			return "", err
		}
		o.addTemp(f.Name())
		w := o.opts.Stdout
		if w == nil {
			w = os.Stdout
		}
		err = bounded(ctx, func() error {
			defer f.Close()
			if err := o.writeArchive(ctx, f); err != nil {
				return err
			}
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return err
			}
			if _, err := io.Copy(w, f); err != nil {
				return fmt.Errorf("writing the bundle to stdout: %w", err)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
		return "-", nil
	}
	out := o.opts.Output
	if out == "" {
		out = o.base + ".tgz"
	}
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("creating %s: %w", out, err)
	}
	o.addTemp(f.Name())
	err = bounded(ctx, func() error {
		if err := o.writeArchive(ctx, f); err != nil {
			f.Close()
			return err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	})
	if err != nil {
		return "", err
	}
	// Only once the archive is whole, and in time, is it moved into place.
	if err := os.Rename(f.Name(), out); err != nil {
		return "", fmt.Errorf("moving the bundle to %s: %w", out, err)
	}
	return out, nil
}

// bounded runs write until it returns or ctx is done, whichever comes
// first: a write blocked on a stalled device or a full pipe cannot be
// interrupted, so it is left to end on its own (its output is a temporary
// file removed by cleanup, or stdout, already given up on).
func bounded(ctx context.Context, write func() error) error {
	done := make(chan error, 1)
	go func() { done <- write() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writeArchive writes the staging directory as a gzip-compressed tar
// under one top directory named after the bundle, files sorted, with
// manifest.json first and node-report.json (collect --analyze) second, so
// that a reader finds the report without decompressing the dumps.
func (o *output) writeArchive(ctx context.Context, w io.Writer) error {
	var files []string
	err := filepath.WalkDir(o.staging, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(o.staging, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return err
	}
	rank := func(f string) int {
		switch f {
		case "manifest.json":
			return 0
		case NodeReportFile:
			return 1
		}
		return 2
	}
	sort.Slice(files, func(i, j int) bool {
		if ri, rj := rank(files[i]), rank(files[j]); ri != rj {
			return ri < rj
		}
		return files[i] < files[j]
	})
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	dirs := map[string]bool{}
	addDir := func(d string) error {
		if dirs[d] {
			return nil
		}
		dirs[d] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: o.base + "/" + d + "/", Mode: 0o700, ModTime: o.modTime()})
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: o.base + "/", Mode: 0o700, ModTime: o.modTime()}); err != nil {
		return err
	}
	for _, rel := range files {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d := filepath.ToSlash(filepath.Dir(rel)); d != "." {
			if err := addDir(d); err != nil {
				return err
			}
		}
		f, err := os.Open(filepath.Join(o.staging, filepath.FromSlash(rel)))
		if err != nil {
			return err
		}
		st, err := f.Stat()
		if err == nil {
			err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: o.base + "/" + rel, Mode: 0o600, Size: st.Size(), ModTime: o.modTime()})
		}
		if err == nil {
			_, err = io.Copy(tw, f)
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("archiving %s: %w", rel, err)
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// modTime is the time stamped on archive entries: the collection's
// clock, to the second.
func (o *output) modTime() time.Time {
	if o.opts.Now != nil {
		return o.opts.Now().UTC().Truncate(time.Second)
	}
	return time.Now().UTC().Truncate(time.Second)
}
