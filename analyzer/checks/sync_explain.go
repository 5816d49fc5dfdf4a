package checks

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
)

// The checks whose findings foldSyncFailure makes one.
const (
	idSyncFailures = "sync-failures"
	idSyncStale    = "sync-stale"
)

// healthzFailsPrefix begins the message of kube-proxy-unhealthy for a
// failing /healthz.
const healthzFailsPrefix = "kube-proxy's health check fails: "

// Rule syncs that fail (sync-failures) explain what follows from them:
// the last successful sync grows old (sync-stale), /healthz answers 503
// once a queued change waits (kube-proxy-unhealthy), and the rules stay
// those of the last sync that succeeded, so that they lag the
// EndpointSlices (endpoint-stale, endpoint-missing). The failure, led by
// the cause the log gives, is the one finding: it names each symptom in
// its message, lists them in objects (each lagging endpoint after its
// Service) and holds their evidence (foldSyncFailure).

// A syncLead is the finding of sync-failures that shows a node's rule
// syncs failing at collection time, which explains their symptoms.
type syncLead struct {
	// message is the finding's message as reported; led is that message
	// led by the cause the log gives ("" when it gives none), which the
	// finding takes once it stands for its symptoms too.
	message, led string
	// told are the symptoms folded into it so far, as its message names
	// them, and lagging the Services whose rules lag their slices.
	told    []string
	lagging map[string]bool
	lagBy   []string // the checks of those Services' findings
	// base is how many of the finding's evidence are those of the
	// failures, the overdue sync and /healthz (see foldSyncFailure).
	base int
	// families are the IP families whose syncs fail ("IPv4", "IPv6"),
	// nil for all of them: the symptoms of another family are its own.
	families []string
}

// leadSyncs records c, a finding of sync-failures, as the one that shows
// the node's rule syncs failing; led is its message led by the cause,
// families the IP families whose syncs fail (nil for all).
func (p *Pass) leadSyncs(c Finding, led string, families []string) {
	if p.facts != nil {
		p.facts.sync = &syncLead{message: c.Message, led: led, families: families}
	}
}

// failing reports whether the syncs of the IP family fam fail ("" or
// "all families": the family of every proxier, which fails when any
// does).
func (l *syncLead) failing(fam string) bool {
	return l.families == nil || fam == "" || fam == "all families" || contains(l.families, fam)
}

// isLead reports whether c is the finding of the node's failing syncs.
func (l *syncLead) isLead(c *Finding) bool {
	return c.Check == idSyncFailures && (strings.HasPrefix(c.Message, l.message) || l.led != "" && strings.HasPrefix(c.Message, l.led))
}

// syncFailing reports whether c, a finding of sync-failures, shows the
// node's rule syncs failing, and d is one of their symptoms on the node: a
// sync overdue, a /healthz failing for a sync that waits (not only a node
// being deleted), the rules of a Service lagging its EndpointSlices.
func syncFailing(f *facts, c, d *Finding) bool {
	if f == nil || f.sync == nil || d.Node != c.Node || !f.sync.isLead(c) {
		return false
	}
	l := f.sync
	switch d.Check {
	case idSyncStale:
		return l.failing(staleFamily(d.Message))
	case idKubeProxyUnhealthy:
		if !strings.HasPrefix(d.Message, healthzFailsPrefix) {
			return false
		}
		for _, fam := range []string{"IPv4", "IPv6"} {
			if !l.failing(fam) && strings.Contains(d.Message, fam) {
				// The proxier of a family that syncs fine is unhealthy:
				// its own fault.
				return false
			}
		}
		return strings.Contains(d.Message, " proxier") || strings.Contains(d.Message, "last update ") || strings.Contains(d.Message, "no sync ever succeeded")
	case idEndpointStale, idEndpointMissing:
		if lagOf(f, d) == "" {
			return false
		}
		for _, fam := range lagFamilies(f, d) {
			if !l.failing(fam) {
				return false
			}
		}
		return true
	}
	return false
}

// staleFamily returns the IP family a message of sync-stale ends with
// ("... (IPv6)"), "" when it names none.
func staleFamily(msg string) string {
	i := strings.LastIndex(msg, " (")
	if i < 0 || !strings.HasSuffix(msg, ")") {
		return ""
	}
	return msg[i+2 : len(msg)-1]
}

// lagFamilies returns the IP families of the endpoints out of step that
// d, a finding of endpoint-stale or endpoint-missing about the rules of a
// Service lagging its slices, lists ("" for an endpoint of no address
// read).
func lagFamilies(f *facts, d *Finding) []string {
	svc := lagOf(f, d)
	var fams []string
	for _, id := range []string{idEndpointMissing, idEndpointStale} {
		r := f.lag[svc][id]
		if r == nil || id != d.Check && !contains(d.Checks, id) {
			continue
		}
		for _, it := range r.items {
			fam := ""
			if ap, err := netip.ParseAddrPort(it.endpoint); err == nil {
				fam = "IPv4"
				if ap.Addr().Unmap().Is6() {
					fam = "IPv6"
				}
			} else if a, err := netip.ParseAddr(it.endpoint); err == nil {
				fam = "IPv4"
				if a.Unmap().Is6() {
					fam = "IPv6"
				}
			}
			if !contains(fams, fam) {
				fams = append(fams, fam)
			}
		}
	}
	return fams
}

// foldSyncFailure makes the symptoms ds of the node's failing syncs part
// of c, the finding of sync-failures that shows them failing: its message,
// led by the cause, then names each kind of symptom; objects lists the
// messages of ds, evidence holds theirs.
func foldSyncFailure(f *facts, c *Finding, ds []Finding) {
	l := f.sync
	if l.base == 0 {
		l.base = len(c.Evidence)
	}
	n := 0
	for i := range ds {
		n += len(ds[i].Evidence)
	}
	c.Evidence = slices.Grow(c.Evidence, n)
	for i := range ds {
		d := &ds[i]
		c.Objects = append(c.Objects, symptomObjects(f, d)...)
		// The symptoms share evidence with the failures (the samples of
		// the /metrics page), the rules of one Service none with
		// another's: only the first few are compared, in time linear in
		// the evidence of thousands of lagging Services.
		if d.Check == idSyncStale || d.Check == idKubeProxyUnhealthy {
			// Each line once: the collection time of sync-stale and the
			// body of /healthz are one line of healthz.json, cited as the
			// body (which holds the collection time too).
			for _, e := range d.Evidence {
				i := slices.IndexFunc(c.Evidence, func(x model.Evidence) bool {
					return x == e || e.Line > 0 && x.File == e.File && x.Line == e.Line
				})
				switch {
				case i < 0:
					c.Evidence = append(c.Evidence, e)
				case d.Check == idKubeProxyUnhealthy && c.Evidence[i].Path == "$.currentTime":
					c.Evidence[i] = e
				}
			}
			l.base = len(c.Evidence)
		} else {
			for _, e := range d.Evidence {
				if !slices.Contains(c.Evidence[:l.base], e) {
					c.Evidence = append(c.Evidence, e)
				}
			}
		}
		c.Severity = max(c.Severity, d.Severity)
	}
	switch ds[0].Check {
	case idSyncStale:
		l.told = append(l.told, "the last successful sync overdue (sync-stale)")
	case idKubeProxyUnhealthy:
		l.told = append(l.told, "/healthz failing (kube-proxy-unhealthy)")
	default:
		if l.lagging == nil {
			l.lagging = map[string]bool{}
		}
		for i := range ds {
			l.lagging[lagOf(f, &ds[i])] = true
			for _, id := range append([]string{ds[i].Check}, ds[i].Checks...) {
				if !contains(l.lagBy, id) {
					l.lagBy = append(l.lagBy, id)
				}
			}
		}
		lag := fmt.Sprintf("the rules of %d Services behind their EndpointSlices", len(l.lagging))
		if len(l.lagging) == 1 {
			lag = "the rules of 1 Service behind its EndpointSlices"
		}
		lag += " (" + joinNames(sortedCopy(l.lagBy)) + ")"
		if n := len(l.told); n > 0 && strings.HasPrefix(l.told[n-1], "the rules of ") {
			l.told[n-1] = lag
		} else {
			l.told = append(l.told, lag)
		}
	}
	msg := l.message
	if l.led != "" {
		msg = l.led
	}
	c.Message = msg + "; this leaves " + joinNames(l.told)
}

// sortedCopy returns the strings of list, sorted.
func sortedCopy(list []string) []string {
	out := append([]string(nil), list...)
	sort.Strings(out)
	return out
}

// lagOf returns the Service whose rules lag its EndpointSlices that d, a
// finding of endpoint-stale or endpoint-missing, reports, "" for another
// finding: one the check reported, or the one finding of both checks
// that foldLag made of them.
func lagOf(f *facts, d *Finding) string {
	if svc := f.lagService(d); svc != "" {
		return svc
	}
	if d.Check == idEndpointStale && contains(d.Checks, idEndpointMissing) {
		svc, _, _ := strings.Cut(d.Service, ":")
		return svc
	}
	return ""
}

// symptomObjects returns the objects a symptom d of failing syncs adds to
// their finding: the message of an overdue sync or a failing /healthz;
// for the rules of a Service lagging its EndpointSlices, each endpoint out
// of step, after its Service port and ": " ("kube-system/dns: 10.244.3.2:53
// of port dns (ready, on node node-b) not programmed in KUBE-SVC-...", or
// the message of the one endpoint of a finding without objects), which
// node-drift reads (see driftSynced).
func symptomObjects(f *facts, d *Finding) []string {
	if lagOf(f, d) == "" {
		return []string{d.Message}
	}
	if len(d.Objects) == 0 {
		return []string{d.Service + ": " + d.Message}
	}
	out := make([]string, 0, len(d.Objects))
	for _, o := range d.Objects {
		out = append(out, d.Service+": "+o)
	}
	return out
}

// driftSynced reports whether c, a finding of sync-failures, holds among
// its objects the endpoint that d, a difference node-drift finds, is
// about: the rules of its Service lag the EndpointSlices because the
// node's syncs fail (see symptomObjects).
func driftSynced(_ *facts, c, d *Finding) bool {
	if d.Endpoint == "" || !slices.ContainsFunc(c.Checks, func(id string) bool { return id == idEndpointStale || id == idEndpointMissing }) {
		return false
	}
	name, port, _ := strings.Cut(d.Service, ":")
	for _, o := range c.Objects {
		svc, rest, ok := strings.Cut(o, ": ")
		if !ok {
			continue
		}
		switch svc {
		case d.Service:
			if strings.HasPrefix(rest, d.Endpoint+" ") || namesAddress(rest, d.Endpoint) {
				return true
			}
		case name:
			if port != "" && strings.HasPrefix(rest, d.Endpoint+" of port "+port+" ") {
				return true
			}
		}
	}
	return false
}

// namesAddress reports whether text names the address addr ("10.244.2.2:53"),
// not one it is the start of ("10.244.2.2:530").
func namesAddress(text, addr string) bool {
	for i := strings.Index(text, addr); i >= 0; {
		end := i + len(addr)
		if end == len(text) || !isAddrByte(text[end]) {
			return true
		}
		j := strings.Index(text[end:], addr)
		if j < 0 {
			break
		}
		i = end + j
	}
	return false
}

// isAddrByte reports whether b may continue an address.
func isAddrByte(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' || b == '.' || b == ':' || b == ']'
}

// noteSyncFailure tells, in the status of a check whose findings
// foldSyncFailure folded, that they are in sync-failures' finding.
func noteSyncFailure([]Finding) string {
	return "explained by kube-proxy's failing rule syncs: reported in the sync-failures finding, which lists them in its objects"
}
