package checks

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/healthz"
	"github.com/proxyscan/proxyscan/parsers/kpconfig"
	"github.com/proxyscan/proxyscan/parsers/metrics"
)

// collected is the collection time of the synthetic snapshots.
var collected = time.Date(2026, 4, 14, 9, 30, 0, 0, time.UTC)

// syncMetrics returns a metrics page with the last sync and last queued
// times given as ages at collection time (a negative queued age leaves the
// metric out), plus extra lines.
func syncMetrics(t *testing.T, lastAgo, queuedAgo time.Duration, extra ...string) *metrics.Page {
	t.Helper()
	at := func(ago time.Duration) string {
		return fmt.Sprintf("%.3f", float64(collected.Add(-ago).UnixMilli())/1000)
	}
	lines := []string{
		"# HELP kubeproxy_sync_proxy_rules_last_timestamp_seconds [ALPHA] The last time proxy rules were successfully synced",
		"# TYPE kubeproxy_sync_proxy_rules_last_timestamp_seconds gauge",
		`kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} ` + at(lastAgo),
	}
	if queuedAgo >= 0 {
		lines = append(lines,
			"# HELP kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds [ALPHA] The last time a sync of proxy rules was queued",
			"# TYPE kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds gauge",
			`kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds{ip_family="IPv4"} `+at(queuedAgo))
	}
	p, err := metrics.Parse("kube-proxy/metrics.txt", []byte(strings.Join(append(lines, extra...), "\n")+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func healthAt(t *testing.T) *healthz.Health {
	t.Helper()
	ts := collected.Format(time.RFC3339Nano)
	h, err := healthz.Parse("kube-proxy/healthz.json", []byte(`{"lastUpdated":"`+ts+`","currentTime":"`+ts+`","nodeEligible":true,"healthy":true}`))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func modeSnapshot(t *testing.T, mode string) *model.Snapshot {
	return configSnapshot(t, 37, "mode: "+mode+"\n")
}

// TestSyncStale covers the sync periods of each mode, with and without a
// collection time: the ipvs proxier resyncs every ipvs.syncPeriod (30s),
// the iptables one at least hourly and serves a queued change within
// minSyncPeriod, retrying failures after syncPeriod.
func TestSyncStale(t *testing.T) {
	for _, tc := range []struct {
		name              string
		mode              string
		last, queued      time.Duration
		withNow           bool
		want              string // substring of the finding, "" for none
		wantNoCollectNote bool
	}{
		{"ipvs recent", "ipvs", 20 * time.Second, 10 * time.Minute, true, "", false},
		{"ipvs stopped", "ipvs", 45 * time.Second, 10 * time.Minute, true, "was 45s before collection, but the ipvs proxier resyncs every 30s", false},
		{"iptables idle for 50 minutes", "iptables", 50 * time.Minute, 55 * time.Minute, true, "", false},
		{"iptables beyond its hourly resync", "iptables", 70 * time.Minute, 75 * time.Minute, true, "but the iptables proxier resyncs at least every 1h0m0s", false},
		{"iptables change pending too long", "iptables", 10 * time.Minute, 50 * time.Second, true, "is still not done 50s later", false},
		{"iptables change just queued", "iptables", 10 * time.Minute, 5 * time.Second, true, "", false},
		{"ipvs gap without collection time", "ipvs", 2 * time.Minute, 1 * time.Minute, false, "is 1m0s after the last successful one", true},
		{"iptables gap under an hour without collection time", "iptables", 50 * time.Minute, 1 * time.Minute, false, "", true},
		{"iptables gap over an hour without collection time", "iptables", 2 * time.Hour, 1 * time.Minute, false, "is 1h59m0s after the last successful one", true},
		{"nothing queued", "ipvs", 10 * time.Second, -1, true, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := modeSnapshot(t, tc.mode)
			s.Metrics = syncMetrics(t, tc.last, tc.queued)
			if tc.withNow {
				s.Healthz = healthAt(t)
			}
			res := Run(s, []*Check{syncStale})
			switch {
			case tc.want == "" && len(res.Findings) > 0:
				t.Errorf("unexpected finding: %s", res.Findings[0].Message)
			case tc.want != "" && (len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Message, tc.want)):
				t.Errorf("findings %v, want one containing %q", res.Findings, tc.want)
			}
			if note := len(res.Statuses[0].Notes) > 0; note != tc.wantNoCollectNote {
				t.Errorf("notes %v", res.Statuses[0].Notes)
			}
		})
	}
}

// TestMinSyncPeriodZero: iptables.minSyncPeriod 0 can only come from the
// command line (the file's 0 is defaulted to 1s); with a large rule set it
// is worth a warning.
func TestMinSyncPeriodZero(t *testing.T) {
	for _, rules := range []int{4000, 6000} {
		s := modeSnapshot(t, "iptables")
		s.Config.IPTables.MinSyncPeriod.Duration = 0
		s.Config.Flags = &kpconfig.Flags{Applied: []kpconfig.FlagValue{{Field: "iptables.minSyncPeriod"}}}
		s.Metrics = syncMetrics(t, 10*time.Second, -1,
			"# HELP kubeproxy_sync_proxy_rules_iptables_total [ALPHA] Total number of iptables rules owned by kube-proxy",
			"# TYPE kubeproxy_sync_proxy_rules_iptables_total gauge",
			fmt.Sprintf(`kubeproxy_sync_proxy_rules_iptables_total{ip_family="IPv4",table="nat"} %d`, rules))
		res := Run(s, []*Check{rulesetScale})
		found := false
		for _, f := range res.Findings {
			found = found || strings.HasPrefix(f.Message, "iptables.minSyncPeriod is 0s: kube-proxy runs iptables-restore for every change with")
		}
		if found != (rules > someIPTablesRules) {
			t.Errorf("%d rules: findings %v", rules, res.Findings)
		}
	}
}
