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
// directory or none). ok is false when the bundle holds none. An archive
// is read up to its report (collect writes it right after manifest.json)
// or up to its first other entry larger than [ScanLimit]: a bundle without
// a report is not decompressed whole to learn that, before its dumps are
// read.
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
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if !reportEntry(h.Name) {
			if h.Size > ScanLimit {
				f.Close()
				return nil, false, nil
			}
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

// ScanLimit is the size of the first entry of an archive, other than its
// node report, at which Open stops looking for the report: a dump or an
// export of any size that matters comes after the report in a bundle
// collect writes, and small files before it (an archive made again from
// an unpacked bundle) cost little to pass.
const ScanLimit = 1 << 20

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
