package cmd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/proxyscan/proxyscan/analyzer/report"
	"github.com/proxyscan/proxyscan/internal/fault"
	"github.com/proxyscan/proxyscan/parsers"
)

// Main runs proxyscan with args and returns the process exit code.
func Main(args []string) int {
	processEnds = true
	return Run(NewFactory(System()), args)
}

// Run runs the root command with a factory; the testable Main.
func Run(f *Factory, args []string) int {
	root, prof := newRootCmd(f)
	root.SetArgs(args)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	cmd, err := execute(root)
	if err != nil && strings.HasPrefix(err.Error(), "unknown command ") {
		// cobra's own message, with its suggestions: a usage error.
		err = &FlagError{Err: err}
	}
	// The profile is written whatever the outcome: a run that reports
	// findings (exit 1) is the one most worth profiling.
	if perr := prof.stop(); perr != nil && (err == nil || errors.Is(err, errFindings)) {
		err = perr
	}
	if err != nil && !errors.Is(err, errFindings) {
		printError(f, cmd, err)
	}
	return exitCode(err)
}

// execute runs the command tree. A panic of the command, or one a worker
// pool raised again in it, is returned as a *fault.Error.
func execute(root *cobra.Command) (cmd *cobra.Command, err error) {
	defer fault.Catch(&err)
	return root.ExecuteC()
}

// reportRequest ends the message of proxyscan's own failures.
const reportRequest = "please report it with the command and its inputs"

func printError(f *Factory, cmd *cobra.Command, err error) {
	if fault.Is(err) {
		fmt.Fprintf(f.IO.ErrOut, "proxyscan: internal error: %s; %s\n", report.Escape(err.Error()), reportRequest)
		var fe *fault.Error
		if errors.As(err, &fe) && len(fe.Stack) > 0 {
			f.IO.ErrOut.Write(fe.Stack)
		}
		return
	}
	var list parsers.ErrorList
	if errors.As(err, &list) {
		for i, e := range list {
			if i == 10 {
				fmt.Fprintf(f.IO.ErrOut, "... and %d more errors\n", len(list)-10)
				break
			}
			fmt.Fprintf(f.IO.ErrOut, "proxyscan: %s\n", report.Escape(e.Error()))
		}
		return
	}
	// Messages quote the inputs: file and archive member names, the text
	// of a malformed line.
	msg := err.Error()
	fmt.Fprintf(f.IO.ErrOut, "proxyscan: %s\n", report.Escape(msg))
	var fe *FlagError
	if errors.As(err, &fe) && !strings.Contains(msg, "--help") {
		path := "proxyscan"
		if cmd != nil {
			path = cmd.CommandPath()
		}
		fmt.Fprintf(f.IO.ErrOut, "Run '%s --help' for usage.\n", path)
	}
}

// NewRootCmd builds the command tree.
func NewRootCmd(f *Factory) *cobra.Command {
	root, _ := newRootCmd(f)
	return root
}

// newRootCmd builds the command tree and its --profile options, which the
// caller stops once the command has run.
func newRootCmd(f *Factory) (*cobra.Command, *ProfileOptions) {
	root := &cobra.Command{
		Use:   "proxyscan",
		Short: "Inspect kube-proxy's data plane offline",
		Long: "proxyscan makes kube-proxy's data plane inspectable offline.\n\n" +
			"It reads the rules kube-proxy programmed on a node (iptables, IPVS and ipset, nftables), the\n" +
			"Services and EndpointSlices they come from and kube-proxy's configuration, and reports what is\n" +
			"missing, stale or misconfigured, with the exact rule, file and line as evidence.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(flagError)
	prof := &ProfileOptions{}
	prof.addFlags(root)
	root.PersistentFlags().BoolVar(&f.Strict, "strict", false, "read every input strictly: a line that is not understood is an error (exit 2); without it only bundles written by proxyscan collect are, and other files are read leniently (paste damage repaired, a dump cut short or a fragment read as far as it goes, skipped lines reported)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return prof.start() }
	root.AddCommand(
		NewCmdAnalyze(f, nil),
		NewCmdCollect(f, nil),
		NewCmdChecks(f, nil),
		NewCmdDiff(f, nil),
		NewCmdExpect(f, nil),
		NewCmdTrace(f, nil),
		NewCmdVersion(f),
		NewCmdDocs(f, nil),
	)
	// The completion command is made runnable (its help, as before) so
	// that cobra refuses an argument that names no shell it has a
	// subcommand for ("unknown command", exit 2) rather than print the
	// help and exit 0. Its scripts are written to the streams set here.
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.InitDefaultCompletionCmd()
	if c, _, err := root.Find([]string{"completion"}); err == nil && c != root {
		c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	}
	return root, prof
}
