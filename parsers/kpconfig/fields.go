package kpconfig

import (
	"sort"
	"strconv"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
)

// fieldSpan is the minors (inclusive; Until 0 = still in 1.37) that know a
// field of the v1alpha1 type.
type fieldSpan struct{ Since, Until int }

// fieldSpans lists the fields of k8s.io/kube-proxy/config/v1alpha1 that not
// every release 1.20–1.37 has (types.go at v0.20.0 ... v0.37.2); every
// other field is in all of them.
var fieldSpans = map[string]fieldSpan{
	"udpIdleTimeout":                  {20, 25},
	"detectLocal":                     {24, 0},
	"winkernel.forwardHealthCheckVip": {24, 0},
	"winkernel.rootHnsEndpointName":   {24, 0},
	"iptables.localhostNodePorts":     {26, 0},
	"logging":                         {28, 0},
	"nftables":                        {29, 0},
	"conntrack.tcpBeLiberal":          {29, 0},
	"conntrack.udpTimeout":            {29, 0},
	"conntrack.udpStreamTimeout":      {29, 0},
	"windowsRunAsService":             {31, 0},
}

// UnknownIn returns the fields written in c that kube-proxy of version v
// does not have (a newer release's field, or one removed since): its strict
// decoding reports each as an unknown field and its lenient decoding then
// ignores it, so the value has no effect.
func UnknownIn(c *Config, v kpversion.Version) parsers.ErrorList {
	m := v.Minor
	if v.Major > 1 {
		m = kpversion.NewestMinor
	}
	var out parsers.ErrorList
	paths := make([]string, 0, len(c.Fields))
	for p, fi := range c.Fields {
		if fi.Origin == OriginFile {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		span, ok := fieldSpans[p]
		if !ok || (m >= span.Since && (span.Until == 0 || m <= span.Until)) {
			continue
		}
		if parent := parentPath(p); parent != "" {
			if ps, ok := fieldSpans[parent]; ok && !(m >= ps.Since && (ps.Until == 0 || m <= ps.Until)) {
				continue // reported on the parent
			}
		}
		what := "added in 1." + itoa(span.Since)
		if span.Until != 0 && m > span.Until {
			what = "removed in 1." + itoa(span.Until+1)
		}
		out.Add(c.Fields[p].Pos, "unknown field %q for kube-proxy %s (%s): kube-proxy ignores it", p, v.MinorString(), what)
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }
