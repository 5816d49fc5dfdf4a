package klog

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
)

// Cause is a cause of failed rule syncs that kube-proxy's log shows in the
// error text it quotes (the output of iptables-restore, nft or modprobe).
type Cause struct {
	// ID is a stable kebab-case identifier.
	ID string `json:"id"`
	// Pattern is the ID of the pattern of [Known] that reports this kind of
	// cause in general terms, empty when none does: a finding of that
	// pattern states the cause read rather than the pattern's meaning.
	Pattern string `json:"pattern,omitempty"`
	// Regexp matches the error text; its first submatch is the subject
	// (the module, extension, option, version or error named).
	Regexp *regexp.Regexp `json:"-"`
	// Format says the cause, %s standing for the subject.
	Format string `json:"format"`
	// Advice says in one or two sentences what to do about it.
	Advice string `json:"advice"`
}

// Causes is the catalogue of causes of failed syncs, most specific first:
// [Log.CauseAt] returns the first that matches.
var Causes = []Cause{
	{ID: "kernel-module-missing", Pattern: "iptables-extension-missing",
		Regexp: regexp.MustCompile(`modprobe: FATAL: Module (\S+) not found`),
		Format: "the kernel module %s is missing",
		Advice: "Install or load the kernel module (modprobe; the node image's kernel modules package), then restart kube-proxy."},
	{ID: "iptables-extension-missing", Pattern: "iptables-extension-missing",
		Regexp: regexp.MustCompile(`(?:Couldn't load (?:match|target)|Extension) [` + "`" + `'"]?([a-zA-Z0-9_-]+)[` + "`" + `'"]?`),
		Format: "the iptables extension or kernel module for %s is missing",
		Advice: "Load the xt_ kernel module of that match or target (modprobe xt_NAME) or use a node image that has it, then restart kube-proxy."},
	{ID: "iptables-option-unknown", Pattern: "iptables-option-unknown",
		Regexp: regexp.MustCompile(`unknown option \\?"?(--[a-z][a-z-]*)`),
		Format: "the iptables binary does not know the option %s: it is older than this kube-proxy needs, or lacks the extension",
		Advice: "Use the iptables of kube-proxy's own image (or iptables 1.8.x on the node for the nft backend) and keep the node's and the image's backends the same (iptables-backend-mixed)."},
	{ID: "iptables-too-old",
		Regexp: regexp.MustCompile(`iptables(?:-restore)? v(1\.[0-6]\.[0-9]+)`),
		Format: "iptables %s is too old for kube-proxy's rules",
		Advice: "Use kube-proxy's image's iptables (1.8.x), or upgrade the node's iptables."},
	{ID: "nftables-feature-missing", Pattern: "nftables-feature-missing",
		Regexp: regexp.MustCompile(`(?:Could not process rule|Error): (Operation not supported|No such file or directory|Not supported)`),
		Format: "the kernel rejected an nftables feature kube-proxy's table uses (%s)",
		Advice: "kube-proxy's nftables mode needs kernel 5.13+ and nft 1.0.1+: upgrade the kernel, or run kube-proxy in iptables mode on this node."},
	{ID: "nft-too-old", Pattern: "nftables-feature-missing",
		Regexp: regexp.MustCompile(`Error: (syntax error|unknown[^,\n]*|Could not parse[^,\n]*)`),
		Format: "nft is too old for kube-proxy's table (%s)",
		Advice: "kube-proxy's nftables mode needs nft 1.0.1+ in its image and kernel 5.13+; upgrade them, or run kube-proxy in iptables mode on this node."},
}

// NamesCause reports whether p reports a kind of cause of [Causes] in
// general terms, so that a cause read for one of its entries says the
// same, in particular.
func (p *Pattern) NamesCause() bool {
	for i := range Causes {
		if Causes[i].Pattern == p.ID {
			return true
		}
	}
	return false
}

// FoundCause is a cause read from a log.
type FoundCause struct {
	// Cause is the kind of cause.
	Cause *Cause
	// Subject is what the error names (the first submatch).
	Subject string
	// Text says the cause, with its subject.
	Text string
	// Pos is the line of the log the cause is read from, and Line its text.
	Pos  parsers.Pos
	Line string
}

// ReadCause returns the first cause of [Causes] that text shows, and the
// index of the line of text it is on. The name of a chain of kube-proxy's
// (KUBE-...) is no cause: a missing chain is a sync's failure, not why it
// failed.
func ReadCause(text string) (FoundCause, int, bool) {
	for i := range Causes {
		c := &Causes[i]
		sub := c.Regexp.FindStringSubmatch(text)
		if sub == nil || strings.HasPrefix(sub[1], "KUBE-") {
			continue
		}
		f := FoundCause{Cause: c, Subject: sub[1], Text: fmt.Sprintf(c.Format, sub[1])}
		for n, ln := range strings.Split(text, "\n") {
			if c.Regexp.MatchString(ln) {
				f.Line = strings.TrimSpace(ln)
				return f, n, true
			}
		}
		first, _, _ := strings.Cut(text, "\n")
		f.Line = strings.TrimSpace(first)
		return f, 0, true
	}
	return FoundCause{}, 0, false
}

// CauseAt reads the cause of a failed sync from entry e of l and the up to
// n entries after it (a restore's output is logged in its own entry at
// times).
func (l *Log) CauseAt(e *Entry, n int) (FoundCause, bool) {
	for _, x := range l.following(e, n) {
		if f, i, ok := ReadCause(x.Raw); ok {
			f.Pos = x.Pos
			f.Pos.Line += i
			if x.Pos.Line == 0 {
				f.Pos.Line = 0
			}
			return f, true
		}
	}
	return FoundCause{}, false
}

// following returns entry e of l and up to n entries after it.
func (l *Log) following(e *Entry, n int) []*Entry {
	for i, x := range l.Entries {
		if x == e {
			return l.Entries[i:min(len(l.Entries), i+1+n)]
		}
	}
	return []*Entry{e}
}
