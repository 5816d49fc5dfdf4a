package cmd

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/proxyscan/proxyscan/analyzer/checks"
)

// DocsOptions are the flags of the hidden `proxyscan docs`.
type DocsOptions struct {
	IO   *IOStreams
	Dir  string
	Date string
	Root *cobra.Command
}

// docsDate is the date man pages carry unless --date or SOURCE_DATE_EPOCH
// says otherwise: a fixed one, so that the generated files only change
// when the commands do.
const docsDate = "2026-01-01"

// NewCmdDocs builds the hidden `proxyscan docs`, which writes the
// generated documentation: one page per check (DIR/checks/ID.md), man
// pages of every command (DIR/man/*.1) and shell completions
// (DIR/completion/).
func NewCmdDocs(f *Factory, runF func(*DocsOptions) error) *cobra.Command {
	opts := &DocsOptions{IO: f.IO}
	c := &cobra.Command{
		Use:    "docs",
		Short:  "Write the generated documentation (check pages, man pages, shell completions)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			opts.Root = c.Root()
			if runF != nil {
				return runF(opts)
			}
			return docsRun(opts)
		},
	}
	c.Flags().StringVar(&opts.Dir, "dir", "docs", "directory to write into (checks/, man/ and completion/ below it)")
	c.Flags().StringVar(&opts.Date, "date", "", "date of the man pages, YYYY-MM-DD (default: SOURCE_DATE_EPOCH, else "+docsDate+")")
	registerCompletions(c, map[string]cobra.CompletionFunc{"dir": completeDirs, "date": completeNothing})
	return c
}

func docsRun(opts *DocsOptions) error {
	date, err := manDate(opts.Date)
	if err != nil {
		return err
	}
	checksDir := filepath.Join(opts.Dir, "checks")
	manDir := filepath.Join(opts.Dir, "man")
	complDir := filepath.Join(opts.Dir, "completion")
	for _, d := range []string{checksDir, manDir, complDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	// Pages of checks that no longer exist would go stale: start afresh.
	for _, pattern := range []string{filepath.Join(checksDir, "*.md"), filepath.Join(manDir, "*.1")} {
		old, _ := filepath.Glob(pattern)
		for _, p := range old {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	for _, c := range checks.All {
		if err := writeFile(filepath.Join(checksDir, c.ID+".md"), func(w io.Writer) error { return WriteCheckPage(w, c) }); err != nil {
			return err
		}
	}
	root := opts.Root
	root.DisableAutoGenTag = true
	header := &doc.GenManHeader{Title: "PROXYSCAN", Section: "1", Source: "proxyscan", Manual: "proxyscan manual", Date: &date}
	if err := doc.GenManTree(root, header, manDir); err != nil {
		return fmt.Errorf("writing man pages: %w", err)
	}
	for name, gen := range map[string]func(io.Writer) error{
		"proxyscan.bash": func(w io.Writer) error { return root.GenBashCompletionV2(w, true) },
		"_proxyscan":     root.GenZshCompletion,
		"proxyscan.fish": func(w io.Writer) error { return root.GenFishCompletion(w, true) },
		"proxyscan.ps1":  root.GenPowerShellCompletionWithDesc,
	} {
		if err := writeFile(filepath.Join(complDir, name), gen); err != nil {
			return fmt.Errorf("writing the %s completion: %w", name, err)
		}
	}
	fmt.Fprintf(opts.IO.Out, "wrote %d check pages to %s, man pages to %s, completions to %s\n", len(checks.All), checksDir, manDir, complDir)
	return nil
}

func manDate(flag string) (time.Time, error) {
	if flag != "" {
		t, err := time.Parse("2006-01-02", flag)
		if err != nil {
			return t, flagErrorf("invalid --date %q (want YYYY-MM-DD)", flag)
		}
		return t, nil
	}
	if epoch := os.Getenv("SOURCE_DATE_EPOCH"); epoch != "" {
		var sec int64
		if _, err := fmt.Sscan(epoch, &sec); err != nil {
			return time.Time{}, flagErrorf("invalid SOURCE_DATE_EPOCH %q", epoch)
		}
		return time.Unix(sec, 0).UTC(), nil
	}
	return time.Parse("2006-01-02", docsDate)
}

func writeFile(name string, gen func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := gen(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// needText explains what a check needs, for its page.
var needText = map[checks.Need]string{
	checks.NeedServices:     "the Services (`kubectl get services -A -o yaml`)",
	checks.NeedEndpoints:    "the EndpointSlices (`kubectl get endpointslices -A -o yaml`)",
	checks.NeedDataplane:    "the data plane of the node's proxy mode (`iptables-save`, `ipvsadm -Ln` with `ipset save`, or `nft list ruleset`)",
	checks.NeedIPTables:     "an `iptables-save` dump",
	checks.NeedConfig:       "the kube-proxy configuration (the `kube-system/kube-proxy` ConfigMap or the `--config` file)",
	checks.NeedServiceCIDRs: "the cluster's ServiceCIDR objects (`kubectl get servicecidrs -o yaml`), or, before Kubernetes 1.33, the kube-apiserver Pod (`kubectl -n kube-system get pods -l component=kube-apiserver -o yaml`)",
}

// WriteCheckPage writes the documentation page of one check
// (docs/checks/ID.md).
func WriteCheckPage(w io.Writer, c *checks.Check) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", c.ID)
	b.WriteString("<!-- Generated by `proxyscan docs` (make docs) from the check's definition; do not edit. -->\n\n")
	fmt.Fprintf(&b, "Severity: **%s**. %s.\n\n", c.Severity, upperFirst(c.Title))
	fmt.Fprintf(&b, "## What it means\n\n%s\n\n## Why it matters\n\n%s\n\n## How to fix it\n\n%s\n\n", c.What, c.Why, c.Fix)
	b.WriteString("## Inputs\n\n")
	if c.RunFleet != nil {
		b.WriteString("This check compares nodes: give `proxyscan analyze` one bundle per node. With a single node it is skipped as not applicable.\n\n")
	}
	if len(c.Modes) > 0 {
		fmt.Fprintf(&b, "This check is about %s mode: on a node that runs another mode (and whose configuration names another), it is skipped as not applicable.\n\n", strings.Join(c.Modes, " or "))
	}
	if len(c.Needs) == 0 && c.RunFleet == nil {
		b.WriteString("No particular input: the check runs on whatever the inputs hold.\n\n")
	}
	for _, n := range c.Needs {
		text := needText[n]
		if text == "" {
			text = string(n)
		}
		fmt.Fprintf(&b, "- %s\n", text)
	}
	if len(c.Needs) > 0 {
		b.WriteString("\nWithout them the check is reported as skipped, with the reason.\n\n")
	}
	b.WriteString("## Running it alone\n\n```\n")
	if c.RunFleet != nil {
		fmt.Fprintf(&b, "proxyscan analyze node-1.tgz node-2.tgz node-3.tgz --only %s\n", c.ID)
	} else {
		fmt.Fprintf(&b, "proxyscan analyze bundle.tgz --only %s\n", c.ID)
	}
	fmt.Fprintf(&b, "proxyscan checks %s\n```\n\n", c.ID)
	b.WriteString("In SARIF output the check is the rule `" + c.ID + "`; in JUnit output, the test case `" + c.ID + "` of each node.\n\n")
	b.WriteString("[All checks](../checks.md)\n")
	_, err := io.WriteString(w, b.String())
	return err
}
