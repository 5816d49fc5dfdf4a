package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
)

// Shell completion: every flag whose values are enumerated offers them
// (output formats, severities, modes, check IDs...), flags that take a
// directory offer directories, and flags whose value is free text offer
// nothing rather than file names.

// failOnValues are the values of --fail-on, with what each fails on.
var failOnValues = []string{
	"error\tfail on errors (the default)",
	"warning\tfail on warnings and errors",
	"info\tfail on any finding",
	"inconclusive\tfail on errors and on an inconclusive verdict",
	"never\tnever fail on findings",
}

// completeValues offers fixed values (each may carry a description after
// a tab) and no file names.
func completeValues(values ...string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeNothing offers nothing: the flag takes free text (an address, a
// name), not a file.
func completeNothing(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// completeDirs offers directories.
func completeDirs(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveFilterDirs
}

// checkCompletions are the check IDs, each with its severity and title.
func checkCompletions() []cobra.Completion {
	out := make([]cobra.Completion, 0, len(checks.All))
	for _, c := range checks.All {
		out = append(out, cobra.CompletionWithDesc(c.ID, fmt.Sprintf("%s: %s", c.Severity, c.Title)))
	}
	return out
}

// completeCheckList offers check IDs for a comma-separated list (--only,
// --skip): the IDs not in the list yet, after what is typed up to the
// last comma.
func completeCheckList(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	done, prefix := "", toComplete
	if i := strings.LastIndex(toComplete, ","); i >= 0 {
		done, prefix = toComplete[:i+1], toComplete[i+1:]
	}
	chosen := map[string]bool{}
	for _, id := range strings.Split(done, ",") {
		chosen[id] = true
	}
	var out []cobra.Completion
	for _, c := range checkCompletions() {
		id, _, _ := strings.Cut(c, "\t")
		if !chosen[id] && strings.HasPrefix(id, prefix) {
			out = append(out, done+c)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeCheckArg offers a check ID as the argument of `proxyscan checks`.
func completeCheckArg(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, c := range checkCompletions() {
		if strings.HasPrefix(c, toComplete) {
			out = append(out, c)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// versionValues are the kube-proxy releases proxyscan mirrors, newest
// first.
func versionValues() []string {
	var out []string
	for m := kpversion.Newest.Minor; m >= kpversion.Oldest.Minor; m-- {
		out = append(out, fmt.Sprintf("%d.%d", kpversion.Newest.Major, m))
	}
	return out
}

// registerCompletions registers the completion of c's flags that are
// defined, by name; a name c does not have is a bug.
func registerCompletions(c *cobra.Command, fns map[string]cobra.CompletionFunc) {
	for name, fn := range fns {
		if err := c.RegisterFlagCompletionFunc(name, fn); err != nil {
			panic(fmt.Sprintf("%s: completion of --%s: %v", c.Name(), name, err))
		}
	}
}
