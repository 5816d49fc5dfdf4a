package load

import (
	"fmt"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/klog"
	"github.com/proxyscan/proxyscan/parsers/kpcmdline"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
)

// loggedVersion returns the version kube-proxy logged as it started, of
// the last start the logs show: "Version info" version="v1.31.4"
// (structured logging, 1.21+) or "Version: v1.20.4" (before), with the
// entry's position.
func loggedVersion(logs []*klog.Log) (kpversion.Version, parsers.Pos, bool) {
	var v kpversion.Version
	var at parsers.Pos
	found := false
	for _, l := range logs {
		for _, e := range l.Entries {
			raw := ""
			switch {
			case e.Message == "Version info":
				raw, _ = e.Get("version")
			case strings.HasPrefix(e.Message, "Version: v"):
				raw = strings.TrimPrefix(e.Message, "Version: ")
			default:
				continue
			}
			if x, err := kpversion.ParseString(raw); err == nil && x.Major == 1 {
				v, at, found = x, e.Pos, true
			}
		}
	}
	return v, at, found
}

// runningMarker begins the command line k3s logs as it starts its
// embedded kube-proxy: msg="Running kube-proxy --flag=value ...".
const runningMarker = `msg="Running kube-proxy `

// loggedCmdline returns kube-proxy's command line as k3s logs it (its
// kube-proxy has no process of its own, so this is where its flags are),
// of the last start the logs show, its flags at the entry's line.
func loggedCmdline(logs []*klog.Log) (*kpcmdline.Cmdline, bool) {
	var out *kpcmdline.Cmdline
	for _, l := range logs {
		for _, e := range l.Entries {
			i := strings.Index(e.Raw, runningMarker)
			if i < 0 {
				continue
			}
			rest := e.Raw[i+len(runningMarker)-len("kube-proxy "):]
			end := strings.IndexByte(rest, '"')
			if end < 0 || strings.ContainsRune(rest[:end], '\n') {
				continue
			}
			c, err := kpcmdline.Parse(e.Pos.File, []byte(rest[:end]))
			if err != nil || len(c.Flags) == 0 {
				continue
			}
			c.Pos = e.Pos
			for k := range c.Flags {
				c.Flags[k].Pos = e.Pos
			}
			for k := range c.Args {
				c.Args[k].Pos = e.Pos
			}
			out = c
		}
	}
	return out, out != nil
}

// useLogs takes from kube-proxy's logs what no other input gives: its
// version, when no version file was read, and its command line as k3s logs
// it, when no command line was read; the snapshot's notes say so.
func (b *builder) useLogs() {
	s := b.snap
	if b.version == nil {
		if v, at, ok := loggedVersion(s.Logs); ok {
			b.version, b.vpos = &v, at
			s.Notes = append(s.Notes, fmt.Sprintf("kube-proxy version %s read from its log (%s)", v, at))
		}
	}
	if b.cmdline == nil {
		if c, ok := loggedCmdline(s.Logs); ok {
			b.cmdline = c
			s.Notes = append(s.Notes, fmt.Sprintf("kube-proxy's flags read from the command line k3s logged (%s)", c.Pos))
		}
	}
}
