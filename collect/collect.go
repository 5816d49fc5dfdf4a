package collect

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/proxyscan/proxyscan/collect/redact"
	"github.com/proxyscan/proxyscan/internal/fault"
	"github.com/proxyscan/proxyscan/parsers/manifest"
)

// ErrInterrupted is returned by [Run] when its context was cancelled (the
// user pressed Ctrl-C): nothing was written.
var ErrInterrupted = errors.New("collection interrupted: no bundle written")

// DefaultTotalTimeout is how long the sources may take in all when
// Options.TotalTimeout is not set.
const DefaultTotalTimeout = 2 * time.Minute

// Options configure a collection.
type Options struct {
	// Runner runs commands; nil means ExecRunner{}.
	Runner Runner
	// Root is where the node's file system is ("/" when empty): /proc,
	// /var/log/pods and /lib/modules are read below it.
	Root string
	// HTTP fetches kube-proxy's metrics and health endpoints; nil means a
	// client that never follows redirects.
	HTTP *http.Client
	// Kube gives access to the cluster's API; nil means none.
	Kube KubeAccess
	// Netlink reads IPVS and nf_tables directly when the tools are absent;
	// nil means the system's (Linux only).
	Netlink Netlink
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Hostname overrides the node's host name.
	Hostname string
	// Tool is written into the manifest.
	Tool manifest.Tool
	// Sources is the table to collect (nil: [Sources]).
	Sources []Source
	// Parallel is how many sources are read at once (4 when 0).
	Parallel int
	// Timeout, when set, caps every source's own timeout.
	Timeout time.Duration
	// TotalTimeout bounds the reading of all the sources together
	// ([DefaultTotalTimeout] when 0): each source's timeout is cut to what
	// is left of it, and a source not started by then is recorded as
	// failed. The bundle is still written: within what is left of it, or
	// within the total timeout (at most 10 s) when less is left; an output
	// too slow for that (a stalled device, a pipe nobody reads) makes Run
	// fail, and no bundle is left.
	TotalTimeout time.Duration
	// ConntrackSample is the most conntrack entries listed per family
	// (5000 when 0).
	ConntrackSample int
	// LogLines and LogBytes bound the kube-proxy log tail (10000 lines,
	// 8 MiB when 0).
	LogLines int
	LogBytes int64
	// Progress, when set, is called as each source finishes.
	Progress func(manifest.Source)

	// Dir writes an unpacked bundle into this directory (which must not
	// exist or be empty).
	Dir string
	// Output writes a .tgz bundle to this file; "-" writes it to Stdout.
	// With neither Dir nor Output, the bundle is
	// proxyscan-<host>-<UTC time>.tgz in the working directory.
	Output string
	Stdout io.Writer

	// Analyze, when set, is called once the bundle's files and
	// manifest.json are written, with the directory that holds them (the
	// bundle before it is moved into place or archived): it may add files
	// to it (collect --analyze writes node-report.json). Its error does
	// not stop the bundle from being written: it is returned in
	// Result.AnalyzeErr.
	Analyze func(dir string) error

	// Redact, when set, replaces addresses and names in every file by
	// consistent pseudonyms; the mapping is returned in Result.Redaction
	// and never written into the bundle.
	Redact *redact.Redactor
}

// Result is what a collection wrote.
type Result struct {
	// Manifest is the bundle's manifest.
	Manifest *manifest.Manifest
	// Path is the bundle written ("-" for stdout).
	Path string
	// AnalyzeErr is the error of Options.Analyze.
	AnalyzeErr error
}

// Run collects a bundle. Sources that fail or are missing are recorded in
// the manifest and never stop the collection; Run's error means that no
// bundle was written (an unwritable output, or ErrInterrupted).
func Run(ctx context.Context, opts Options) (*Result, error) {
	e := newEnv(opts)
	started := e.now()
	host := e.hostname()
	stamp := started.UTC().Format("20060102T150405Z")
	base := "proxyscan-" + safeName(host) + "-" + stamp
	out, err := newOutput(opts, base)
	if err != nil {
		return nil, err
	}
	defer out.cleanup()
	e.staging = out.staging
	e.prepare(ctx)
	e.total = opts.TotalTimeout
	if e.total <= 0 {
		e.total = DefaultTotalTimeout
	}
	e.deadline = time.Now().Add(e.total)

	table := opts.Sources
	if table == nil {
		table = Sources
	}
	recs := make([]manifest.Source, len(table))
	byPhase := map[int][]int{}
	var phases []int
	for i, s := range table {
		if _, ok := byPhase[s.Phase]; !ok {
			phases = append(phases, s.Phase)
		}
		byPhase[s.Phase] = append(byPhase[s.Phase], i)
	}
	sort.Ints(phases)
	for _, ph := range phases {
		if err := e.runAll(ctx, table, byPhase[ph], recs); err != nil {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, ErrInterrupted
		}
		e.afterPhase(ph)
	}

	m := &manifest.Manifest{
		Schema: manifest.Schema, Tool: opts.Tool, Host: host, Kernel: e.kernelRelease(),
		NodeIPs: e.nodeIPs(), CollectedAt: started.UTC(), Sources: recs,
	}
	if opts.Redact != nil {
		if err := e.redact(opts.Redact, m); err != nil {
			return nil, fmt.Errorf("redacting the bundle: %w", err)
		}
		// The bundle's name carries the host name too.
		out.base = "proxyscan-" + safeName(m.Host) + "-" + stamp
	}
	if err := os.WriteFile(filepath.Join(out.staging, "manifest.json"), manifest.Format(m), 0o600); err != nil {
		return nil, fmt.Errorf("writing manifest.json: %w", err)
	}
	if ctx.Err() != nil {
		return nil, ErrInterrupted
	}
	var analyzeErr error
	if opts.Analyze != nil {
		analyzeErr = opts.Analyze(out.staging)
	}
	if ctx.Err() != nil {
		return nil, ErrInterrupted
	}
	wctx, cancel := context.WithDeadline(ctx, e.writeDeadline())
	defer cancel()
	path, err := out.commit(wctx, m)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ErrInterrupted
		}
		if wctx.Err() != nil {
			return nil, fmt.Errorf("writing the bundle did not end within what was left of the %s --total-timeout (and at least %s): the output is too slow; no bundle written",
				e.total, writeMinimum(e.total))
		}
		return nil, err
	}
	return &Result{Manifest: m, Path: path, AnalyzeErr: analyzeErr}, nil
}

// maxWriteMinimum is the most time writing the bundle is given past
// --total-timeout when the sources used it all.
const maxWriteMinimum = 10 * time.Second

// writeMinimum is the least time writing the bundle is given: the total
// timeout, at most maxWriteMinimum.
func writeMinimum(total time.Duration) time.Duration { return min(total, maxWriteMinimum) }

// writeDeadline is when writing the bundle (the archive, to its file or
// stdout) must be done: what is left of the total timeout, and at least
// writeMinimum from now, so that sources that used it all still leave a
// bundle written and a slow output device cannot hold collect longer than
// --total-timeout plus that minimum.
func (e *env) writeDeadline() time.Time {
	if least := time.Now().Add(writeMinimum(e.total)); least.After(e.deadline) {
		return least
	}
	return e.deadline
}

// runAll reads the sources idx of table with a bounded worker pool; the
// sources of a Serial group form one job, read one after the other. The
// error is a worker's panic (how each source went is in its record).
func (e *env) runAll(ctx context.Context, table []Source, idx []int, recs []manifest.Source) error {
	n := e.opts.Parallel
	if n <= 0 {
		n = 4
	}
	var jobs [][]int
	group := map[string]int{}
	for _, i := range idx {
		g := table[i].Serial
		if g == "" {
			jobs = append(jobs, []int{i})
			continue
		}
		if j, ok := group[g]; ok {
			jobs[j] = append(jobs[j], i)
			continue
		}
		group[g] = len(jobs)
		jobs = append(jobs, []int{i})
	}
	// At most n jobs run at once, handed out in order.
	pool := fault.Group{Name: "collect"}
	pool.SetLimit(n)
	var mu sync.Mutex
	for _, job := range jobs {
		if ctx.Err() != nil {
			break
		}
		pool.Go(func() error {
			for _, i := range job {
				if ctx.Err() != nil {
					break
				}
				rec := e.read(ctx, &table[i])
				e.record(ctx, &mu, recs, i, rec)
			}
			return nil
		})
	}
	return pool.Wait()
}

// record keeps the record of source i and reports it to the progress
// callback (unless the run was interrupted), one worker at a time.
func (e *env) record(ctx context.Context, mu *sync.Mutex, recs []manifest.Source, i int, rec manifest.Source) {
	mu.Lock()
	defer mu.Unlock()
	recs[i] = rec
	if e.opts.Progress != nil && ctx.Err() == nil {
		e.opts.Progress(rec)
	}
}

// read reads one source and returns its manifest record.
func (e *env) read(ctx context.Context, s *Source) manifest.Source {
	w := &Writer{env: e, rec: manifest.Source{Name: s.Name, Method: s.Method, Path: s.Path}, file: s.File}
	if len(s.Commands) > 0 {
		w.rec.Command = s.Commands[0].Args
	}
	start := time.Now()
	if !e.deadline.IsZero() && !start.Before(e.deadline) {
		w.Fail("not read: the %s all the sources may take (--total-timeout) ran out", e.total)
		w.finish()
		return w.rec
	}
	if !e.deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, e.deadline)
		defer cancel()
	}
	if b := s.check(e); b.why != "" {
		if b.failed {
			w.Fail("%s", b.why)
		} else {
			w.Skip("%s", b.why)
		}
	} else if s.Read != nil {
		s.Read(ctx, e, s, w)
	} else {
		runExec(ctx, e, s, w)
	}
	w.finish()
	w.rec.DurationMS = time.Since(start).Milliseconds()
	return w.rec
}

// A Writer receives one source's output and its outcome. The bundle file
// is created on the first write; a source that fails or is skipped
// leaves no file, and an empty output writes none.
type Writer struct {
	env    *env
	rec    manifest.Source
	file   string
	f      *os.File
	buf    *bytes.Buffer
	h      hash.Hash
	n      int64
	err    error
	status string
}

// Write implements io.Writer.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.f == nil && w.buf == nil {
		if err := w.open(); err != nil {
			w.err = fmt.Errorf("writing %s: %w", w.file, err)
			return 0, w.err
		}
	}
	if w.buf != nil {
		w.buf.Write(p)
		w.h.Write(p)
		w.n += int64(len(p))
		return len(p), nil
	}
	n, err := w.f.Write(p)
	w.h.Write(p[:n])
	w.n += int64(n)
	if err != nil {
		// The path is the staging directory's: the bundle file says more.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		w.err = fmt.Errorf("writing %s: %w", w.file, err)
	}
	return n, w.err
}

// open creates the source's bundle file, or its buffer in memory.
func (w *Writer) open() error {
	if w.file == "" {
		return errors.New("source has no bundle file")
	}
	w.h = sha256.New()
	if w.env.memory {
		w.buf = &bytes.Buffer{}
		return nil
	}
	p := filepath.Join(w.env.staging, filepath.FromSlash(w.file))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	w.f = f
	return nil
}

// Skip marks the source skipped: what it needs is absent.
func (w *Writer) Skip(format string, args ...any) {
	w.status, w.rec.Error = manifest.StatusSkipped, fmt.Sprintf(format, args...)
}

// Fail marks the source failed.
func (w *Writer) Fail(format string, args ...any) {
	w.status, w.rec.Error = manifest.StatusFailed, fmt.Sprintf(format, args...)
}

// Partial marks the output as bounded or incomplete by design, with a note.
func (w *Writer) Partial(format string, args ...any) {
	if w.status == "" {
		w.status = manifest.StatusPartial
	}
	w.Note(format, args...)
}

// Note adds a note to the source's record.
func (w *Writer) Note(format string, args ...any) {
	w.rec.Notes = append(w.rec.Notes, fmt.Sprintf(format, args...))
}

// Record gives access to the record (method, command, path, statuses).
func (w *Writer) Record() *manifest.Source { return &w.rec }

// Failed reports whether the source was marked failed or skipped.
func (w *Writer) Failed() bool {
	return w.status == manifest.StatusFailed || w.status == manifest.StatusSkipped
}

func (w *Writer) finish() {
	if w.err != nil && w.status != manifest.StatusFailed && w.status != manifest.StatusSkipped {
		w.Fail("%v", w.err)
	}
	if w.f != nil {
		if err := w.f.Close(); err != nil && !w.Failed() {
			w.Fail("writing %s: %v", w.file, err)
		}
		if w.Failed() || w.n == 0 {
			_ = os.Remove(w.f.Name())
		}
	}
	if (w.f != nil || w.buf != nil) && !w.Failed() && w.n > 0 {
		if w.buf != nil {
			w.env.keep(w.file, w.buf.Bytes())
		}
		w.rec.File = w.file
		w.rec.Bytes = w.n
		w.rec.SHA256 = hex.EncodeToString(w.h.Sum(nil))
	}
	if !w.Failed() && w.n == 0 {
		w.Note("empty output: nothing written")
	}
	if w.status == "" {
		w.status = manifest.StatusOK
	}
	w.rec.Status = w.status
}

// safeName keeps a host name usable in a file name.
func safeName(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
			return r
		}
		return '_'
	}, s)
	if s == "" || s[0] == '.' {
		s = "node" + s
	}
	return s
}

// nodeIPs returns the node's addresses: those of its Node object, else
// the global addresses of ip addr (without kube-ipvs0's service VIPs and
// the pod-network interfaces).
func (e *env) nodeIPs() []netip.Addr {
	if len(e.nodeAddrs) > 0 {
		return e.nodeAddrs
	}
	data, err := e.stagedData("node/ip-addr.txt")
	if err != nil {
		return []netip.Addr{}
	}
	return hostAddrs(data)
}
