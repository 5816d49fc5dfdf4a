package metrics

import (
	"sort"

	"github.com/proxyscan/proxyscan/parsers"
)

// Names of the kube-proxy metrics the view reads (pkg/proxy/metrics,
// Kubernetes 1.20–1.37). All are ALPHA.
const (
	SyncProxyRulesDuration        = "kubeproxy_sync_proxy_rules_duration_seconds"
	SyncProxyRulesLatencyMicros   = "kubeproxy_sync_proxy_rules_latency_microseconds"     // before 1.14, in microseconds
	SyncFullProxyRulesDuration    = "kubeproxy_sync_full_proxy_rules_duration_seconds"    // 1.28+
	SyncPartialProxyRulesDuration = "kubeproxy_sync_partial_proxy_rules_duration_seconds" // 1.28+
	SyncProxyRulesLastTimestamp   = "kubeproxy_sync_proxy_rules_last_timestamp_seconds"
	SyncProxyRulesLastQueued      = "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds"
	NetworkProgrammingDuration    = "kubeproxy_network_programming_duration_seconds"
	EndpointChangesPending        = "kubeproxy_sync_proxy_rules_endpoint_changes_pending"
	EndpointChangesTotal          = "kubeproxy_sync_proxy_rules_endpoint_changes_total"
	ServiceChangesPending         = "kubeproxy_sync_proxy_rules_service_changes_pending"
	ServiceChangesTotal           = "kubeproxy_sync_proxy_rules_service_changes_total"
	IPTablesRestoreFailures       = "kubeproxy_sync_proxy_rules_iptables_restore_failures_total"
	IPTablesPartialRestoreFails   = "kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total" // 1.26+
	IPTablesRulesTotal            = "kubeproxy_sync_proxy_rules_iptables_total"                          // 1.21+, label table
	IPTablesRulesLast             = "kubeproxy_sync_proxy_rules_iptables_last"                           // 1.28+, label table
	NFTablesSyncFailures          = "kubeproxy_sync_proxy_rules_nftables_sync_failures_total"
	NFTablesCleanupFailures       = "kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total"
	NoLocalEndpointsTotal         = "kubeproxy_sync_proxy_rules_no_local_endpoints_total" // label traffic_policy
	ProxyHealthzTotal             = "kubeproxy_proxy_healthz_total"                       // label code
	ProxyLivezTotal               = "kubeproxy_proxy_livez_total"                         // label code
	CTStateInvalidDropped         = "kubeproxy_iptables_ct_state_invalid_dropped_packets_total"
	LocalhostNodePortsAccepted    = "kubeproxy_iptables_localhost_nodeports_accepted_packets_total"
	ConntrackReconcilerDuration   = "kubeproxy_conntrack_reconciler_sync_duration_seconds"
	ConntrackReconcilerDeleted    = "kubeproxy_conntrack_reconciler_deleted_entries_total"
	ProcessStartTime              = "process_start_time_seconds"
	BuildInfo                     = "kubernetes_build_info"
)

// IPFamilyLabel is the label Kubernetes 1.33+ puts on per-family metrics.
const IPFamilyLabel = "ip_family"

// View is the kube-proxy reading of a metrics page.
type View struct {
	// Families holds the per-IP-family metrics, sorted by family. A page
	// without ip_family labels (before 1.33) has one entry with IPFamily "".
	Families []*FamilyView `json:"families"`

	// EndpointChangesPending .. ServiceChangesTotal are the change-tracker
	// metrics (no ip_family label in any version).
	EndpointChangesPending *Scalar `json:"endpointChangesPending,omitempty"`
	EndpointChangesTotal   *Scalar `json:"endpointChangesTotal,omitempty"`
	ServiceChangesPending  *Scalar `json:"serviceChangesPending,omitempty"`
	ServiceChangesTotal    *Scalar `json:"serviceChangesTotal,omitempty"`

	// HealthzTotal and LivezTotal count health-probe answers by HTTP code
	// (1.28+); nil when absent.
	HealthzTotal map[string]*Scalar `json:"healthzTotal,omitempty"`
	LivezTotal   map[string]*Scalar `json:"livezTotal,omitempty"`

	// CTStateInvalidDropped and LocalhostNodePortsAccepted are the nfacct
	// counters of iptables mode (1.31+).
	CTStateInvalidDropped      *Scalar `json:"ctStateInvalidDropped,omitempty"`
	LocalhostNodePortsAccepted *Scalar `json:"localhostNodePortsAccepted,omitempty"`

	// ProcessStartTime is process_start_time_seconds (Unix seconds).
	ProcessStartTime *Scalar `json:"processStartTime,omitempty"`
	// GitVersion is the git_version label of kubernetes_build_info, e.g.
	// "v1.37.2"; empty when absent.
	GitVersion string `json:"gitVersion,omitempty"`
}

// FamilyView is the set of per-IP-family kube-proxy metrics.
type FamilyView struct {
	// IPFamily is the ip_family label ("IPv4", "IPv6"), or "" for metrics
	// without the label.
	IPFamily string `json:"ipFamily"`
	// syncMicros is set when SyncDuration was read from the histogram in
	// microseconds of kube-proxy before 1.14.
	syncMicros bool

	// SyncDuration is sync_proxy_rules_duration_seconds (before 1.14,
	// sync_proxy_rules_latency_microseconds, read in seconds); SyncFullDuration
	// and SyncPartialDuration split it by full and partial syncs (1.28+,
	// iptables and nftables modes).
	SyncDuration        *HistogramStats `json:"syncDuration,omitempty"`
	SyncFullDuration    *HistogramStats `json:"syncFullDuration,omitempty"`
	SyncPartialDuration *HistogramStats `json:"syncPartialDuration,omitempty"`
	// NetworkProgramming is network_programming_duration_seconds.
	NetworkProgramming *HistogramStats `json:"networkProgramming,omitempty"`
	// ConntrackReconcile is conntrack_reconciler_sync_duration_seconds.
	ConntrackReconcile *HistogramStats `json:"conntrackReconcile,omitempty"`

	// LastSync is the time of the last successful sync; LastQueued the
	// time a sync was last requested (Unix seconds).
	LastSync   *Scalar `json:"lastSync,omitempty"`
	LastQueued *Scalar `json:"lastQueued,omitempty"`

	// IPTablesRestoreFailures .. ConntrackDeletedEntries are the failure
	// and conntrack counters: iptables-restore failures (iptables and
	// ipvs modes), partial-restore failures that fell back to a full sync
	// (1.26+), nftables sync and cleanup failures, and conntrack entries
	// deleted by the reconciler (1.33+).
	IPTablesRestoreFailures        *Scalar `json:"iptablesRestoreFailures,omitempty"`
	IPTablesPartialRestoreFailures *Scalar `json:"iptablesPartialRestoreFailures,omitempty"`
	NFTablesSyncFailures           *Scalar `json:"nftablesSyncFailures,omitempty"`
	NFTablesCleanupFailures        *Scalar `json:"nftablesCleanupFailures,omitempty"`
	ConntrackDeletedEntries        *Scalar `json:"conntrackDeletedEntries,omitempty"`

	// IPTablesTotal and IPTablesLast are rule counts by table (filter,
	// nat): rules owned, and rules written in the last sync.
	IPTablesTotal map[string]*Scalar `json:"iptablesTotal,omitempty"`
	IPTablesLast  map[string]*Scalar `json:"iptablesLast,omitempty"`
	// NoLocalEndpoints counts Local-policy services without local
	// endpoints, by traffic_policy (internal, external).
	NoLocalEndpoints map[string]*Scalar `json:"noLocalEndpoints,omitempty"`
}

// Scalar is one counter or gauge sample.
type Scalar struct {
	// Value is the sample value.
	Value Float `json:"value"`
	// Pos is the sample's line; Raw its text.
	Pos parsers.Pos `json:"pos"`
	Raw string      `json:"raw"`
}

// HistogramStats summarises one histogram series.
type HistogramStats struct {
	// Count and Sum are the _count and _sum samples.
	Count Float `json:"count"`
	Sum   Float `json:"sum"`
	// Mean is Sum/Count, nil without observations.
	Mean *Float `json:"mean,omitempty"`
	// P50, P90 and P99 are [Quantile] estimates, nil when undefined.
	P50 *Float `json:"p50,omitempty"`
	P90 *Float `json:"p90,omitempty"`
	P99 *Float `json:"p99,omitempty"`
	// Buckets are the histogram's buckets, for other quantiles.
	Buckets []Bucket `json:"-"`
	// Partial says that the histogram was cut short before its _sum or
	// _count: Count is the +Inf bucket's, Sum (without _sum) 0 and Mean
	// nil.
	Partial bool `json:"partial,omitempty"`
	// Pos is the line of the series' first sample; Raw its text.
	Pos parsers.Pos `json:"pos"`
	Raw string      `json:"raw"`
}

// Quantile returns the [Quantile] estimate of q for h.
func (h *HistogramStats) Quantile(q float64) (float64, bool) { return Quantile(q, h.Buckets) }

// SyncLag returns LastQueued − LastSync in seconds: how long the newest
// requested sync has been waiting, the symptom of a hung proxier when it is
// much larger than the sync period. ok is false when either is absent.
func (f *FamilyView) SyncLag() (lag float64, ok bool) {
	if f.LastSync == nil || f.LastQueued == nil {
		return 0, false
	}
	return float64(f.LastQueued.Value - f.LastSync.Value), true
}

// Family returns the view of IP family fam ("IPv4", "IPv6", or "" for
// unlabelled metrics), or nil.
func (v *View) Family(fam string) *FamilyView {
	for _, f := range v.Families {
		if f.IPFamily == fam {
			return f
		}
	}
	return nil
}

// KubeProxy reads kube-proxy's metrics off the page. Metrics absent from
// the page stay nil. When a metric has several series for one IP family
// beyond the labels the view splits by, the first in page order is used.
func (p *Page) KubeProxy() *View {
	v := &View{}
	fams := map[string]*FamilyView{}
	fam := func(m *Metric) *FamilyView {
		name := m.Labels[IPFamilyLabel]
		f := fams[name]
		if f == nil {
			f = &FamilyView{IPFamily: name}
			fams[name] = f
		}
		return f
	}
	eachScalar := func(name string, fn func(m *Metric, s *Scalar)) {
		f := p.Family(name)
		if f == nil {
			return
		}
		for _, m := range f.Metrics {
			if m.Value == nil {
				continue
			}
			fn(m, &Scalar{Value: *m.Value, Pos: m.Pos, Raw: m.Raw})
		}
	}
	setFirst := func(dst **Scalar, s *Scalar) {
		if *dst == nil {
			*dst = s
		}
	}
	perFamily := func(name string, field func(*FamilyView) **Scalar) {
		eachScalar(name, func(m *Metric, s *Scalar) { setFirst(field(fam(m)), s) })
	}
	perFamilyBy := func(name, label string, field func(*FamilyView) *map[string]*Scalar) {
		eachScalar(name, func(m *Metric, s *Scalar) {
			mp := field(fam(m))
			if *mp == nil {
				*mp = map[string]*Scalar{}
			}
			k := m.Labels[label]
			if _, ok := (*mp)[k]; !ok {
				(*mp)[k] = s
			}
		})
	}
	global := func(name string, dst **Scalar) {
		eachScalar(name, func(_ *Metric, s *Scalar) { setFirst(dst, s) })
	}
	globalBy := func(name, label string, dst *map[string]*Scalar) {
		eachScalar(name, func(m *Metric, s *Scalar) {
			if *dst == nil {
				*dst = map[string]*Scalar{}
			}
			if _, ok := (*dst)[m.Labels[label]]; !ok {
				(*dst)[m.Labels[label]] = s
			}
		})
	}
	hist := func(name string, field func(*FamilyView) **HistogramStats) {
		f := p.Family(name)
		if f == nil {
			return
		}
		for _, m := range f.Metrics {
			if m.Histogram == nil || m.Histogram.Partial && m.Histogram.Count == 0 {
				continue // cut before its +Inf bucket: not summarised
			}
			dst := field(fam(m))
			if *dst == nil {
				*dst = stats(m, name == SyncProxyRulesLatencyMicros)
			}
		}
	}

	hist(SyncProxyRulesDuration, func(f *FamilyView) **HistogramStats { return &f.SyncDuration })
	// Before 1.14 the same histogram was in microseconds: read in seconds
	// where the page has no duration_seconds.
	hist(SyncProxyRulesLatencyMicros, func(f *FamilyView) **HistogramStats {
		if f.SyncDuration != nil && !f.syncMicros {
			return new(*HistogramStats) // the seconds histogram is read
		}
		f.syncMicros = true
		return &f.SyncDuration
	})
	hist(SyncFullProxyRulesDuration, func(f *FamilyView) **HistogramStats { return &f.SyncFullDuration })
	hist(SyncPartialProxyRulesDuration, func(f *FamilyView) **HistogramStats { return &f.SyncPartialDuration })
	hist(NetworkProgrammingDuration, func(f *FamilyView) **HistogramStats { return &f.NetworkProgramming })
	hist(ConntrackReconcilerDuration, func(f *FamilyView) **HistogramStats { return &f.ConntrackReconcile })
	perFamily(SyncProxyRulesLastTimestamp, func(f *FamilyView) **Scalar { return &f.LastSync })
	perFamily(SyncProxyRulesLastQueued, func(f *FamilyView) **Scalar { return &f.LastQueued })
	perFamily(IPTablesRestoreFailures, func(f *FamilyView) **Scalar { return &f.IPTablesRestoreFailures })
	perFamily(IPTablesPartialRestoreFails, func(f *FamilyView) **Scalar { return &f.IPTablesPartialRestoreFailures })
	perFamily(NFTablesSyncFailures, func(f *FamilyView) **Scalar { return &f.NFTablesSyncFailures })
	perFamily(NFTablesCleanupFailures, func(f *FamilyView) **Scalar { return &f.NFTablesCleanupFailures })
	perFamily(ConntrackReconcilerDeleted, func(f *FamilyView) **Scalar { return &f.ConntrackDeletedEntries })
	perFamilyBy(IPTablesRulesTotal, "table", func(f *FamilyView) *map[string]*Scalar { return &f.IPTablesTotal })
	perFamilyBy(IPTablesRulesLast, "table", func(f *FamilyView) *map[string]*Scalar { return &f.IPTablesLast })
	perFamilyBy(NoLocalEndpointsTotal, "traffic_policy", func(f *FamilyView) *map[string]*Scalar { return &f.NoLocalEndpoints })

	global(EndpointChangesPending, &v.EndpointChangesPending)
	global(EndpointChangesTotal, &v.EndpointChangesTotal)
	global(ServiceChangesPending, &v.ServiceChangesPending)
	global(ServiceChangesTotal, &v.ServiceChangesTotal)
	globalBy(ProxyHealthzTotal, "code", &v.HealthzTotal)
	globalBy(ProxyLivezTotal, "code", &v.LivezTotal)
	global(CTStateInvalidDropped, &v.CTStateInvalidDropped)
	global(LocalhostNodePortsAccepted, &v.LocalhostNodePortsAccepted)
	global(ProcessStartTime, &v.ProcessStartTime)
	if f := p.Family(BuildInfo); f != nil && len(f.Metrics) > 0 {
		v.GitVersion = f.Metrics[0].Labels["git_version"]
	}

	for _, f := range fams {
		v.Families = append(v.Families, f)
	}
	sort.Slice(v.Families, func(i, j int) bool { return v.Families[i].IPFamily < v.Families[j].IPFamily })
	if v.Families == nil {
		v.Families = []*FamilyView{}
	}
	return v
}

// stats summarises a histogram, given in microseconds when micros is set
// (and summarised in seconds).
func stats(m *Metric, micros bool) *HistogramStats {
	h := m.Histogram
	if micros {
		scaled := &Histogram{Count: h.Count, Sum: h.Sum / 1e6, CountPos: h.CountPos, SumPos: h.SumPos, Partial: h.Partial, NoSum: h.NoSum}
		for _, b := range h.Buckets {
			b.UpperBound /= 1e6
			scaled.Buckets = append(scaled.Buckets, b)
		}
		h = scaled
	}
	s := &HistogramStats{Count: h.Count, Sum: h.Sum, Buckets: h.Buckets, Pos: m.Pos, Raw: m.Raw, Partial: h.Partial}
	if h.Count > 0 && !h.NoSum {
		mean := h.Sum / h.Count
		s.Mean = &mean
	}
	q := func(x float64) *Float {
		v, ok := Quantile(x, h.Buckets)
		if !ok {
			return nil
		}
		f := Float(v)
		return &f
	}
	s.P50, s.P90, s.P99 = q(0.5), q(0.9), q(0.99)
	return s
}
