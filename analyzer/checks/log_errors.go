package checks

import (
	"fmt"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/klog"
)

// logMatches returns the log entries of a snapshot that match the known
// patterns with the given IDs, in file order.
func logMatches(s *model.Snapshot, ids ...string) []klog.Finding {
	var out []klog.Finding
	for _, l := range s.Logs {
		for _, m := range l.Matches() {
			if contains(ids, m.Pattern.ID) {
				out = append(out, m)
			}
		}
	}
	return out
}

// logEvidence returns the evidence of up to n log entries: the first ones
// and the last.
func logEvidence(ms []klog.Finding, n int) []model.Evidence {
	var out []model.Evidence
	for i, m := range ms {
		if i < n-1 || i == len(ms)-1 {
			out = append(out, model.EvidenceAt(m.Entry.Pos, firstLine(m.Entry.Raw)))
		}
	}
	return out
}

// firstLine returns the first line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// syncFailurePatterns are the log patterns of failed rule syncs, which
// sync-failures reports.
var syncFailurePatterns = []string{
	"iptables-xtables-lock", "iptables-option-unknown", "iptables-extension-missing", "nftables-feature-missing",
	"iptables-restore-missing-chain", "iptables-restore-line-failed", "iptables-restore-failed",
	"nftables-sync-failed", "nft-command-failed", "nftables-cleanup-failed", "sync-failed",
}

var logErrors = &Check{
	ID:       "log-errors",
	Severity: Error,
	Title:    "known error lines in kube-proxy's logs",
	What: "kube-proxy's logs contain lines of a known failure: its informers cannot list or watch Services, " +
		"EndpointSlices or its Node (RBAC denials, an unreachable API server, TLS errors), it cannot read its Node " +
		"or set a sysctl, its health or metrics server cannot bind, conntrack cleanup fails, it panicked or failed " +
		"to start. Each pattern is reported once per log file with how often it occurs and its first and last " +
		"lines. Failed rule syncs are reported by `sync-failures`, IPVS start-up errors (in ipvs mode) by `ipvs-module-missing`, " +
		"the ipvs deprecation notice by `mode-unsupported`; the start-up advice kube-proxy logs about an unset " +
		"nodePortAddresses is not reported.",
	Why: "Most of these failures leave kube-proxy running with stale rules: an informer that cannot watch stops " +
		"delivering Service and EndpointSlice changes, which is the usual cause of \"endpoints not updated\".",
	Fix: "Follow the advice of each finding; the error text after the message (err=...) names the cause.",
	Run: runLogErrors,
}

func runLogErrors(p *Pass) {
	s := p.Snap
	if len(s.Logs) == 0 {
		p.Skip("no kube-proxy log in the inputs (add kubectl -n kube-system logs POD, or the /var/log/pods file)")
		return
	}
	skip := append([]string{"ipvs-deprecated"}, syncFailurePatterns...)
	if ipvsConfigured(s) {
		skip = append(skip, "ipvs-modules-missing", "ipvs-unusable")
	}
	for _, l := range s.Logs {
		var order []string
		by := map[string][]klog.Finding{}
		for _, m := range l.Matches() {
			id := m.Pattern.ID
			if contains(skip, id) || id == "config-incomplete" && strings.Contains(m.Entry.Text, "nodePortAddresses is unset") {
				continue
			}
			if by[id] == nil {
				order = append(order, id)
			}
			by[id] = append(by[id], m)
		}
		for _, id := range order {
			ms := by[id]
			pat := ms[0].Pattern
			times := "once"
			if len(ms) > 1 {
				times = fmt.Sprintf("%d times", len(ms))
			}
			p.Report(Finding{
				Severity: logSeverity(pat.Severity),
				Message:  fmt.Sprintf("%s logged %s (%s): %s", l.File, times, id, strings.TrimSuffix(pat.Meaning, ".")),
				Evidence: logEvidence(ms, 3),
				Advice:   pat.Advice,
			})
		}
	}
}

func logSeverity(s string) Severity {
	switch s {
	case "error":
		return Error
	case "warning":
		return Warning
	}
	return Info
}
