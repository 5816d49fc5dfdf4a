package load

import (
	"fmt"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/klog"
)

// splitLogHosts reads, of a kube-proxy log whose journal prefixes name
// several hosts (an excerpt of a log aggregator, journalctl of several
// machines), the lines of the node's own host: when the node's name is one
// of them (or that host's with a domain, bash and journald show the name
// up to its first dot), the entries of the other hosts are set aside and
// a note says so; otherwise every entry stays, and a note says the log's
// lines may not all be this node's. Entries without a host (lines that
// are not the journal's) stay.
func splitLogHosts(s *model.Snapshot) {
	for _, l := range s.Logs {
		hosts, lines := l.Hosts()
		if len(hosts) < 2 {
			continue
		}
		where := make([]string, len(hosts))
		for i, h := range hosts {
			where[i] = fmt.Sprintf("%s from line %d", h, lines[i])
		}
		listed := listFiles(where)
		own := ownHost(hosts, s.Node.Name)
		if own == "" {
			why := "the node's name is not known"
			if s.Node.Name != "" {
				why = "none of them is this node (" + s.Node.Name + ")"
			}
			s.Notes = append(s.Notes, fmt.Sprintf("%s holds kube-proxy's log of %d hosts (%s) and %s: its lines are all read as this node's, which they may not be; give each host's log with its node's files, or name the node (--node NAME)",
				l.File, len(hosts), listed, why))
			continue
		}
		kept := make([]*klog.Entry, 0, len(l.Entries))
		others := 0
		for _, e := range l.Entries {
			if e.Host == "" || e.Host == own {
				kept = append(kept, e)
			} else {
				others++
			}
		}
		l.Entries = kept
		s.Notes = append(s.Notes, fmt.Sprintf("%s holds kube-proxy's log of %d hosts (%s): only the lines of %s, this node's, are read; the %d entries of the others are set aside",
			l.File, len(hosts), listed, own, others))
	}
}

// ownHost returns the one host of hosts that names the node (the node's
// name, or that name up to its first dot), "" when none or several do.
func ownHost(hosts []string, node string) string {
	if node == "" {
		return ""
	}
	name := strings.ToLower(node)
	own := ""
	for _, h := range hosts {
		lh := strings.ToLower(h)
		if name != lh && !strings.HasPrefix(name, lh+".") {
			continue
		}
		if own != "" {
			return ""
		}
		own = h
	}
	return own
}
