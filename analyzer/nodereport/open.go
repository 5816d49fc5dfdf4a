package nodereport

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/load"
)

// Open opens the node report of a bundle: node-report.json at the top of a
// directory, or of a gzip-compressed tar archive (under its one top
// directory or none). ok is false when the bundle holds none; an archive is
// read until its report is found (collect writes it right after
// manifest.json).
func Open(bundle string) (r io.ReadCloser, ok bool, err error) {
	st, err := os.Stat(bundle)
	if err != nil {
		return nil, false, err
	}
	if st.IsDir() {
		p := filepath.Join(bundle, load.NodeReportFile)
		if !load.IsNodeReportFile(p) {
			return nil, false, nil
		}
		f, err := os.Open(p)
		if err != nil {
			return nil, false, err
		}
		return f, true, nil
	}
	f, err := os.Open(bundle)
	if err != nil {
		return nil, false, err
	}
	zr, err := gzip.NewReader(bufio.NewReaderSize(f, 64<<10))
	if err != nil {
		f.Close()
		return nil, false, nil // not a gzip archive: no report is looked for
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			f.Close()
			return nil, false, nil
		}
		if err != nil {
			f.Close()
			return nil, false, fmt.Errorf("%s: %w", bundle, err)
		}
		if h.Typeflag != tar.TypeReg || !reportEntry(h.Name) {
			continue
		}
		br := bufio.NewReader(tr)
		head, _ := br.Peek(64)
		if !load.IsNodeReport(head) {
			continue
		}
		return readCloser{br, f}, true, nil
	}
}

// reportEntry reports whether an archive entry is the bundle's report.
func reportEntry(name string) bool {
	name = strings.TrimPrefix(name, "./")
	if name == load.NodeReportFile {
		return true
	}
	dir, file, ok := strings.Cut(name, "/")
	return ok && dir != "" && file == load.NodeReportFile
}

type readCloser struct {
	io.Reader
	c io.Closer
}

func (r readCloser) Close() error { return r.c.Close() }
