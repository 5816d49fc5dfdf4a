// Package cmd is proxyscan's command line: one file per command, each with
// an Options struct, a NewCmdX constructor and an xRun function that calls
// into the analyzer, collect and report packages. Commands parse flags and
// map errors to exit codes; they hold no analysis logic.
package cmd
