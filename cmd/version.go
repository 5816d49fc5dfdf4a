package cmd

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

// NewCmdVersion builds `proxyscan version`.
func NewCmdVersion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			commit := f.Commit
			if commit == "" {
				commit = "unknown"
			}
			_, err := fmt.Fprintf(f.IO.Out, "proxyscan %s\ncommit: %s\ngo: %s %s/%s\n", f.Version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
