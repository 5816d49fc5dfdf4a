package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"github.com/spf13/cobra"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/nodereport"
	"github.com/proxyscan/proxyscan/analyzer/report"
	"github.com/proxyscan/proxyscan/collect"
	"github.com/proxyscan/proxyscan/collect/redact"
	"github.com/proxyscan/proxyscan/parsers/manifest"
)

// CollectOptions are the flags of `proxyscan collect`.
type CollectOptions struct {
	IO              *IOStreams
	Output          string
	Dir             string
	Kubeconfig      string
	Redact          bool
	RedactMap       string
	RedactKeyFile   string
	Timeout         time.Duration
	TotalTimeout    time.Duration
	Force           bool
	ConntrackSample int
	LogLines        int
	Root            string
	NoColor         bool
	// Analyze analyses the bundle once collected and writes its node
	// report into it.
	Analyze bool
	// Only and Skip select the checks of that analysis, as analyze's
	// flags of the same names do.
	Only, Skip []string
	checks     []*checks.Check
	Tool       manifest.Tool
	Now        func() time.Time
}

// NewCmdCollect builds `proxyscan collect`; runF replaces collectRun in
// tests.
func NewCmdCollect(f *Factory, runF func(*CollectOptions) error) *cobra.Command {
	opts := &CollectOptions{IO: f.IO, Tool: manifest.Tool{Name: "proxyscan", Version: f.Version}, Now: f.Now}
	c := &cobra.Command{
		Use:   "collect [-o FILE | --dir DIR]",
		Short: "Snapshot this node's kube-proxy data plane into a bundle",
		Long: "Read everything proxyscan can analyze on this node — iptables (every backend), IPVS, ipset and nftables\n" +
			"rules, addresses, routes, sysctls, modules, conntrack, kube-proxy's command line, version, configuration,\n" +
			"metrics, health and logs, and with a kubeconfig the Services, EndpointSlices, kube-proxy ConfigMap,\n" +
			"DaemonSet, pods and this Node — into one bundle. Nothing on the node is changed: every source is read\n" +
			"with a timeout and a size cap, all of them within --total-timeout (2 minutes), and one that is missing\n" +
			"or fails is recorded in manifest.json instead of stopping the collection. Run it as root.\n\n" +
			"Exit status: 0 when the bundle was written (whatever sources failed), 2 on a usage error, 3 when no\n" +
			"bundle could be written.",
		Example: "  sudo proxyscan collect\n" +
			"  sudo proxyscan collect -o node1.tgz --kubeconfig ~/.kube/config\n" +
			"  sudo proxyscan collect --dir ./node1\n" +
			"  sudo proxyscan collect --redact --redact-map node1-map.json -o node1.tgz\n" +
			"  sudo proxyscan collect --analyze --dir /var/lib/proxyscan/$(hostname)",
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return flagErrorf("collect takes no arguments (unknown command %q); see proxyscan collect --help", args[0])
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if opts.Output != "" && opts.Dir != "" {
				return flagErrorf("-o and --dir cannot be used together")
			}
			if (opts.RedactMap != "" || opts.RedactKeyFile != "" || opts.Force) && !opts.Redact {
				return flagErrorf("--redact-map, --redact-key-file and --force need --redact")
			}
			if (len(opts.Only) > 0 || len(opts.Skip) > 0) && !opts.Analyze {
				return flagErrorf("--only and --skip select the checks of --analyze, which is not given")
			}
			selected, err := checks.Select(checks.All, checks.Options{Only: opts.Only, Skip: opts.Skip})
			if err != nil {
				return unknownCheck(err)
			}
			opts.checks = selected
			if opts.TotalTimeout < 0 {
				return flagErrorf("--total-timeout %s: must not be negative", opts.TotalTimeout)
			}
			for _, f := range append(report.Formats(), "yaml", "text", "wide") {
				if opts.Output == f {
					return flagErrorf("collect writes a bundle: -o names its file, and %q is an output format of analyze, not a file name (write -o %s.tgz, or -o ./%s for a file of that name)", f, f, f)
				}
			}
			if opts.Output == "-" && opts.IO.OutTTY {
				return flagErrorf("refusing to write a binary bundle to a terminal (-o -): redirect stdout")
			}
			if runF != nil {
				return runF(opts)
			}
			return collectRun(opts)
		},
	}
	fl := c.Flags()
	fl.StringVarP(&opts.Output, "output", "o", "", "write the bundle to FILE (.tgz); - writes it to stdout (default proxyscan-<host>-<UTC time>.tgz)")
	fl.StringVar(&opts.Dir, "dir", "", "write an unpacked bundle into DIR (which must not exist or be empty)")
	fl.StringVar(&opts.Kubeconfig, "kubeconfig", "", "kubeconfig for the cluster objects (default $KUBECONFIG, else in-cluster, else none)")
	fl.BoolVar(&opts.Redact, "redact", false, "replace IP addresses and node/namespace/service names by consistent pseudonyms")
	fl.StringVar(&opts.RedactMap, "redact-map", "", "with --redact: where to write the translation table (kept locally, never in the bundle; mode 0600); an existing file is refused, and with --force its key and pseudonyms are reused and it is replaced; a symbolic link is always refused")
	fl.BoolVar(&opts.Force, "force", false, "with --redact: reuse and replace an existing redaction map")
	fl.StringVar(&opts.RedactKeyFile, "redact-key-file", "", "with --redact: a file whose content keys the pseudonyms (the same key on every node gives the same pseudonyms)")
	fl.DurationVar(&opts.Timeout, "timeout", 0, "cap every source's own timeout (e.g. 5s)")
	fl.DurationVar(&opts.TotalTimeout, "total-timeout", collect.DefaultTotalTimeout, "bound the reading of all the sources together: each source's timeout is cut to what is left, and sources not started by then are recorded as failed; writing the bundle then gets what is left, and at least the total (at most 10s) (0: the default)")
	fl.IntVar(&opts.ConntrackSample, "conntrack-sample", 5000, "most NATed conntrack entries listed per IP family")
	fl.IntVar(&opts.LogLines, "log-lines", 10000, "most lines of kube-proxy's log kept")
	fl.StringVar(&opts.Root, "root", "/", "where the node's file system is (/proc, /var/log/pods, /lib/modules are read below it)")
	fl.BoolVar(&opts.NoColor, "no-color", false, "disable colour in the progress lines (NO_COLOR is honoured too)")
	fl.BoolVar(&opts.Analyze, "analyze", false, "analyze the bundle once collected, as analyze does, and write the node's report into it (node-report.json): analyze merges the reports of many nodes without loading their dumps")
	fl.StringSliceVar(&opts.Only, "only", nil, "with --analyze: run only these checks (comma-separated IDs); analyze merges the report when given the same selection")
	fl.StringSliceVar(&opts.Skip, "skip", nil, "with --analyze: do not run these checks (comma-separated IDs)")
	registerCompletions(c, map[string]cobra.CompletionFunc{
		"dir":              completeDirs,
		"root":             completeDirs,
		"timeout":          completeNothing,
		"total-timeout":    completeNothing,
		"conntrack-sample": completeNothing,
		"log-lines":        completeNothing,
		"only":             completeCheckList,
		"skip":             completeCheckList,
	})
	return c
}

// reraise ends the process by the signal that interrupted it, after the
// partial bundle was removed, as a shell expects of an interrupted
// program.
var reraise = func(sig os.Signal) {
	signal.Reset(sig)
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Signal(sig)
		// The default action ends the process; give it the moment it takes.
		time.Sleep(time.Second)
	}
}

func collectRun(opts *CollectOptions) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var got os.Signal
	go func() {
		if s, ok := <-sigs; ok {
			got = s
			cancel()
		}
	}()

	copts := collect.Options{
		Root: opts.Root, Tool: opts.Tool, Now: opts.Now, Timeout: opts.Timeout, TotalTimeout: opts.TotalTimeout,
		ConntrackSample: opts.ConntrackSample, LogLines: opts.LogLines,
		Dir: opts.Dir, Output: opts.Output, Stdout: opts.IO.Out,
		Kube: collect.Kubeconfig(opts.Kubeconfig),
	}
	if opts.IO.ErrTTY {
		p := newProgress(opts.IO.ErrOut, !opts.NoColor && !opts.IO.NoColorEnv)
		copts.Progress = p.line
	}
	if opts.Analyze {
		copts.Analyze = func(dir string) error { return writeNodeReport(dir, opts) }
	}
	var r *redact.Redactor
	if opts.Redact {
		var err error
		if r, err = redactor(opts); err != nil {
			return err
		}
		copts.Redact = r
	}
	res, err := collect.Run(ctx, copts)
	if errors.Is(err, collect.ErrInterrupted) {
		fmt.Fprintln(opts.IO.ErrOut, "proxyscan: interrupted: no bundle written")
		if got != nil {
			reraise(got)
		}
		return err
	}
	if err != nil {
		return err
	}
	if res.AnalyzeErr != nil {
		fmt.Fprintf(opts.IO.ErrOut, "proxyscan: the bundle was written without its node report: %v\n", res.AnalyzeErr)
	}
	if r != nil {
		path := opts.RedactMap
		if path == "" {
			path = strings.TrimSuffix(bundleName(res), ".tgz") + "-redact-map.json"
		}
		if err := writeSecret(path, r.Map().Format(), opts.Force); err != nil {
			return fmt.Errorf("writing the redaction map: %w", err)
		}
		fmt.Fprintf(opts.IO.ErrOut, "proxyscan: redaction map written to %s: keep it to translate findings back, and do not send it with the bundle\n", path)
	}
	if opts.IO.ErrTTY {
		failed := 0
		for _, s := range res.Manifest.Sources {
			if s.Status == manifest.StatusFailed {
				failed++
			}
		}
		where := res.Path
		if where == "-" {
			where = "stdout"
		}
		fmt.Fprintf(opts.IO.ErrOut, "bundle written to %s (%d sources, %d failed)\n", where, len(res.Manifest.Sources), failed)
	}
	return nil
}

func bundleName(res *collect.Result) string {
	if res.Path == "-" {
		return "proxyscan-" + res.Manifest.Host + "-" + res.Manifest.CollectedAt.UTC().Format("20060102T150405Z")
	}
	return strings.TrimSuffix(res.Path, "/")
}

func redactor(opts *CollectOptions) (*redact.Redactor, error) {
	if opts.RedactMap != "" {
		// Refused before collecting rather than after.
		if err := checkSecretPath(opts.RedactMap, opts.Force); err != nil {
			return nil, &FlagError{Err: fmt.Errorf("--redact-map: %w", err)}
		}
		if data, err := os.ReadFile(opts.RedactMap); err == nil {
			r, err := redact.FromMap(data)
			if err != nil {
				return nil, &FlagError{Err: fmt.Errorf("--redact-map %s: %w", opts.RedactMap, err)}
			}
			return r, nil
		}
	}
	var key []byte
	if opts.RedactKeyFile != "" {
		data, err := os.ReadFile(opts.RedactKeyFile)
		if err != nil {
			return nil, &FlagError{Err: fmt.Errorf("--redact-key-file: %w", err)}
		}
		if len(strings.TrimSpace(string(data))) < 16 {
			return nil, flagErrorf("--redact-key-file %s holds less than 16 bytes of key", opts.RedactKeyFile)
		}
		key = []byte(strings.TrimSpace(string(data)))
	}
	return redact.New(key)
}

// checkSecretPath says why a file holding a secret may not be written at
// path: a symbolic link (whose target would receive the secret) or
// anything but a regular file is always refused, an existing file unless
// force.
func checkSecretPath(path string, force bool) error {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case st.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link: refused, even with --force (the key would be written where it points)", path)
	case !st.Mode().IsRegular():
		return fmt.Errorf("%s exists and is not a regular file: refused", path)
	case !force:
		return fmt.Errorf("%s exists: refused (--force reuses its key and pseudonyms and replaces it)", path)
	}
	return nil
}

// writeSecret writes a file that holds a secret, with mode 0600 whatever
// the umask or an earlier file's mode, never through a symbolic link: a
// new file is created exclusively (O_EXCL, which follows no link), an
// existing one (with force) is replaced by renaming a new file over it.
func writeSecret(path string, data []byte, force bool) error {
	if err := checkSecretPath(path, force); err != nil {
		return err
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		return finishSecret(f, data, path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	if err := finishSecret(f, data, f.Name()); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	return nil
}

// finishSecret writes data to f, mode 0600, and closes it; on failure the
// file at path is removed.
func finishSecret(f *os.File, data []byte, path string) error {
	err := f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// progress prints one line per source on a terminal.
type progress struct {
	w                      io.Writer
	ok, partial, skip, bad lipgloss.Style
	dim                    lipgloss.Style
}

func newProgress(w io.Writer, color bool) *progress {
	re := lipgloss.NewRenderer(w)
	if color {
		re.SetColorProfile(termenv.ANSI256)
	} else {
		re.SetColorProfile(termenv.Ascii)
	}
	return &progress{
		w:       w,
		ok:      re.NewStyle().Foreground(lipgloss.Color("34")).Bold(true),
		partial: re.NewStyle().Foreground(lipgloss.Color("214")).Bold(true),
		skip:    re.NewStyle().Foreground(lipgloss.Color("245")),
		bad:     re.NewStyle().Foreground(lipgloss.Color("196")).Bold(true),
		dim:     re.NewStyle().Foreground(lipgloss.Color("245")),
	}
}

func (p *progress) line(s manifest.Source) {
	mark, style := "ok  ", p.ok
	switch s.Status {
	case manifest.StatusPartial:
		mark, style = "part", p.partial
	case manifest.StatusSkipped:
		mark, style = "skip", p.skip
	case manifest.StatusFailed:
		mark, style = "FAIL", p.bad
	}
	detail := s.File
	if s.File != "" {
		detail += " " + humanBytes(s.Bytes)
	}
	if s.Error != "" {
		detail = s.Error
	} else if s.Method == manifest.MethodNetlink {
		detail += " (netlink)"
	}
	// A failed command's message holds what it wrote to stderr.
	fmt.Fprintf(p.w, "%s %-30s %s %s\n", style.Render(mark), s.Name, report.Escape(detail), p.dim.Render(fmt.Sprintf("%dms", s.DurationMS)))
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// writeNodeReport analyses the bundle collected in dir with every check,
// as analyze would, and writes its node report into it.
func writeNodeReport(dir string, opts *CollectOptions) error {
	restore := collectLoaded(0, 0)
	defer restore()
	selected := opts.checks
	if selected == nil {
		selected = checks.All
	}
	return nodereport.WriteInto(dir, load.Options{Compact: true}, selected, report.Tool{Name: opts.Tool.Name, Version: opts.Tool.Version})
}
