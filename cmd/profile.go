package cmd

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"

	"github.com/spf13/cobra"
)

// profileNames are the profiles --profile captures, as kubectl names them.
var profileNames = []string{"none", "cpu", "heap", "allocs", "goroutine", "threadcreate", "block", "mutex"}

// ProfileOptions are the global --profile and --profile-output flags:
// a Go pprof profile of one run, to attach to a report of a slow or
// memory-hungry analysis.
type ProfileOptions struct {
	Name    string
	Output  string
	cpu     *os.File
	started bool
}

// addFlags defines the flags on c and every command below it, hidden from
// the everyday help (the contract documents them).
func (p *ProfileOptions) addFlags(c *cobra.Command) {
	fl := c.PersistentFlags()
	fl.StringVar(&p.Name, "profile", "none", "name of the profile to capture: "+strings.Join(profileNames, ", "))
	fl.StringVar(&p.Output, "profile-output", "profile.pprof", "file to write the profile to (read it with `go tool pprof`)")
	for _, name := range []string{"profile", "profile-output"} {
		if err := fl.MarkHidden(name); err != nil {
			panic(err)
		}
	}
	registerCompletions(c, map[string]cobra.CompletionFunc{"profile": completeValues(profileNames...)})
}

// start begins a CPU profile; other profiles are written by stop.
func (p *ProfileOptions) start() error {
	known := false
	for _, n := range profileNames {
		known = known || n == p.Name
	}
	if !known {
		return flagErrorf("invalid --profile %q (want one of %s)", p.Name, strings.Join(profileNames, ", "))
	}
	switch p.Name {
	case "none":
		return nil
	case "cpu":
		f, err := os.Create(p.Output)
		if err != nil {
			return fmt.Errorf("creating the profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("starting the CPU profile: %w", err)
		}
		p.cpu = f
	case "block":
		runtime.SetBlockProfileRate(1)
	case "mutex":
		runtime.SetMutexProfileFraction(1)
	}
	p.started = true
	return nil
}

// stop ends the CPU profile or writes the named one; it does nothing
// when start did not run (a usage error) or failed.
func (p *ProfileOptions) stop() error {
	if !p.started {
		return nil
	}
	p.started = false
	switch p.Name {
	case "none":
		return nil
	case "cpu":
		pprof.StopCPUProfile()
		return closeProfile(p.cpu)
	}
	prof := pprof.Lookup(p.Name)
	if prof == nil {
		return nil
	}
	if p.Name == "heap" {
		runtime.GC()
	}
	f, err := os.Create(p.Output)
	if err != nil {
		return fmt.Errorf("creating the profile: %w", err)
	}
	if err := prof.WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("writing the %s profile: %w", p.Name, err)
	}
	return closeProfile(f)
}

func closeProfile(f *os.File) error {
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing the profile: %w", err)
	}
	return nil
}
