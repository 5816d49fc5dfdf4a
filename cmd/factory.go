package cmd

import (
	"runtime/debug"
	"time"
)

// Factory holds what commands depend on, so that tests can replace it.
type Factory struct {
	IO  *IOStreams
	Now func() time.Time
	// Version and Commit identify the build.
	Version, Commit string
	// Strict is the global --strict flag: every input is read strictly.
	Strict bool
}

// Build information, set with -ldflags "-X github.com/proxyscan/proxyscan/cmd.version=v0.1.0".
var (
	version = ""
	commit  = ""
)

// NewFactory returns the factory of a real run.
func NewFactory(io *IOStreams) *Factory {
	f := &Factory{IO: io, Now: time.Now, Version: version, Commit: commit}
	if f.Version == "" || f.Commit == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			if f.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
				f.Version = bi.Main.Version
			}
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" && f.Commit == "" {
					f.Commit = s.Value
				}
			}
		}
	}
	if f.Version == "" {
		f.Version = "v0.1.0-dev"
	}
	return f
}
