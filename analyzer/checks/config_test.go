package checks

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/kpconfig"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
	"github.com/proxyscan/proxyscan/parsers/kube"
)

const configHeader = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n"

// configSnapshot returns a snapshot holding only a configuration (file
// kube-proxy/config.yaml, the header on lines 1-2), read and defaulted
// the way the loader does for the given minor.
func configSnapshot(t *testing.T, minor int, body string) *model.Snapshot {
	t.Helper()
	v := kpversion.V(minor)
	read, err := kpconfig.Decode("kube-proxy/config.yaml", []byte(configHeader+body), kpconfig.Options{Lenient: true})
	if err != nil {
		t.Fatalf("1.%d: %v", minor, err)
	}
	eff := read.Clone()
	kpconfig.Defaults(eff, v)
	return &model.Snapshot{
		Objects: &kube.Objects{},
		Version: model.Version{Version: v},
		Config: &model.Config{KubeProxyConfiguration: &eff.Config, Effective: eff, Read: read, Pos: read.Pos,
			Source: "kube-proxy/config.yaml"},
	}
}

func minorRange(from, to int) []int {
	var out []int
	for m := from; m <= to; m++ {
		out = append(out, m)
	}
	return out
}

// TestConfigChecks runs the configuration checks on a table of bad
// configurations per kube-proxy version: every rule of kpconfig.Validate
// as config-invalid, ipvs-scheduler-invalid or mode-unsupported reports it,
// with the line of the offending field. A want is "check line text", the
// text a substring of the message.
func TestConfigChecks(t *testing.T) {
	list := []*Check{configInvalid, ipvsSchedulerInvalid, modeUnsupported}
	for _, tc := range []struct {
		name   string
		minors []int
		body   string
		want   []string
	}{
		{"defaults", minorRange(20, 37), "", nil},
		{"typical ipvs", minorRange(20, 37), "mode: ipvs\nipvs:\n  scheduler: rr\n  strictARP: true\n", nil},
		{"masqueradeBit", minorRange(20, 37), "iptables:\n  masqueradeBit: 32\n",
			[]string{"config-invalid 4 KubeProxyIPTablesConfiguration.MasqueradeBit: Invalid value: 32: must be within the range [0, 31]"}},
		{"iptables syncPeriod negative", minorRange(20, 30), "iptables:\n  syncPeriod: -1s\n",
			[]string{
				"config-invalid 4 KubeProxyIPTablesConfiguration.SyncPeriod: Invalid value: \"-1s\": must be greater than 0",
				// kube-proxy also compares it with the defaulted minSyncPeriod.
				"config-invalid 4 KubeProxyIPTablesConfiguration.SyncPeriod: Invalid value: \"1s\": must be greater than or equal to",
			}},
		{"syncPeriod negative 1.31+", minorRange(31, 37), "iptables:\n  syncPeriod: -1s\n",
			[]string{
				"config-invalid 4 rejects iptables.syncPeriod: KubeProxyConfiguration.SyncPeriod: Invalid value: \"-1s\": must be greater than 0",
				"config-invalid 4 rejects iptables.syncPeriod: KubeProxyConfiguration.SyncPeriod: Invalid value: \"1s\": must be greater than or equal to KubeProxyConfiguration.MinSyncPeriod",
			}},
		{"minSyncPeriod above syncPeriod", minorRange(20, 30), "iptables:\n  minSyncPeriod: 40s\n  syncPeriod: 30s\n",
			[]string{"config-invalid 5 KubeProxyIPTablesConfiguration.SyncPeriod: Invalid value: \"40s\": must be greater than or equal to KubeProxyConfiguration.KubeProxyIPTablesConfiguration.MinSyncPeriod"}},
		{"minSyncPeriod above syncPeriod 1.31+", minorRange(31, 37), "iptables:\n  minSyncPeriod: 40s\n  syncPeriod: 30s\n",
			[]string{"config-invalid 5 KubeProxyConfiguration.SyncPeriod: Invalid value: \"40s\": must be greater than or equal to KubeProxyConfiguration.MinSyncPeriod"}},
		{"iptables section checked in ipvs mode before 1.31", minorRange(20, 30), "mode: ipvs\niptables:\n  minSyncPeriod: 40s\n  syncPeriod: 30s\n",
			[]string{"config-invalid 6 KubeProxyIPTablesConfiguration.SyncPeriod"}},
		{"iptables section not checked in ipvs mode from 1.31", minorRange(31, 37), "mode: ipvs\niptables:\n  minSyncPeriod: 40s\n  syncPeriod: 30s\n", nil},
		{"ipvs sync periods", minorRange(20, 30), "mode: ipvs\nipvs:\n  minSyncPeriod: 40s\n  syncPeriod: 30s\n",
			[]string{"config-invalid 6 KubeProxyIPVSConfiguration.SyncPeriod: Invalid value: \"40s\""}},
		{"ipvs sync periods 1.31+", minorRange(31, 37), "mode: ipvs\nipvs:\n  minSyncPeriod: 40s\n  syncPeriod: 30s\n",
			[]string{"config-invalid 6 rejects ipvs.syncPeriod: KubeProxyConfiguration.SyncPeriod: Invalid value: \"40s\""}},
		{"ipvs timeouts", minorRange(20, 37), "mode: ipvs\nipvs:\n  tcpTimeout: -1s\n  tcpFinTimeout: -2s\n  udpTimeout: -3s\n",
			[]string{
				"config-invalid 5 KubeProxyIPVSConfiguration.TCPTimeout: Invalid value: \"-1s\": must be greater than or equal to 0",
				"config-invalid 6 KubeProxyIPVSConfiguration.TCPFinTimeout: Invalid value: \"-2s\"",
				"config-invalid 7 KubeProxyIPVSConfiguration.UDPTimeout: Invalid value: \"-3s\"",
			}},
		{"ipvs section ignored in iptables mode", minorRange(20, 37), "ipvs:\n  tcpTimeout: -1s\n  excludeCIDRs: [bad]\n", nil},
		{"excludeCIDRs", minorRange(20, 37), "mode: ipvs\nipvs:\n  excludeCIDRs:\n  - 10.0.0.0/8\n  - 10.0.0.0/33\n",
			[]string{"config-invalid 7 KubeProxyIPVSConfiguration.ExcludeCidrs[1]: Invalid value: \"10.0.0.0/33\": must be a valid CIDR"}},
		{"scheduler mh before 1.27", minorRange(20, 26), "mode: ipvs\nipvs:\n  scheduler: mh\n",
			[]string{"ipvs-scheduler-invalid 5 rejects ipvs.scheduler \"mh\": KubeProxyConfiguration.KubeProxyIPVSConfiguration.Scheduler.Scheduler: Invalid value: \"mh\""}},
		{"scheduler mh from 1.27", minorRange(27, 37), "mode: ipvs\nipvs:\n  scheduler: mh\n", nil},
		{"scheduler unknown before 1.27", minorRange(20, 26), "mode: ipvs\nipvs:\n  scheduler: RR\n",
			[]string{"ipvs-scheduler-invalid 5 rejects ipvs.scheduler \"RR\""}},
		{"scheduler unknown to the kernel from 1.27", minorRange(27, 37), "mode: ipvs\nipvs:\n  scheduler: RR\n",
			[]string{"ipvs-scheduler-invalid 5 ipvs.scheduler \"RR\" is no IPVS scheduler of the Linux kernel"}},
		{"scheduler of another mode is not judged", minorRange(20, 37), "ipvs:\n  scheduler: bogus\n", nil},
		{"nftables masqueradeBit", minorRange(31, 37), "mode: nftables\nnftables:\n  masqueradeBit: 40\n",
			[]string{"config-invalid 5 KubeProxyNFTablesConfiguration.MasqueradeBit: Invalid value: 40"}},
		{"nftables sync periods 1.29-1.30", []int{29, 30}, "mode: nftables\nfeatureGates:\n  NFTablesProxyMode: true\nnftables:\n  minSyncPeriod: 40s\n  syncPeriod: 30s\n",
			[]string{"config-invalid 8 KubeProxyNFTablesConfiguration.SyncPeriod"}},
		{"conntrack counts and timeouts", minorRange(20, 30), "conntrack:\n  maxPerCore: -1\n  min: -1\n  tcpEstablishedTimeout: -1s\n  tcpCloseWaitTimeout: -1s\n",
			[]string{
				"config-invalid 4 KubeProxyConntrackConfiguration.MaxPerCore: Invalid value: -1",
				"config-invalid 5 KubeProxyConntrackConfiguration.Min: Invalid value: -1",
				"config-invalid 6 KubeProxyConntrackConfiguration.TCPEstablishedTimeout",
				"config-invalid 7 KubeProxyConntrackConfiguration.TCPCloseWaitTimeout",
			}},
		{"conntrack paths of 1.31+", minorRange(31, 37), "conntrack:\n  maxPerCore: -1\n",
			[]string{"config-invalid 4 KubeProxyLinuxConfiguration.KubeProxyConntrackConfiguration.MaxPerCore"}},
		{"conntrack udp timeouts 1.29+", minorRange(29, 37), "conntrack:\n  udpTimeout: -1s\n  udpStreamTimeout: -1s\n",
			[]string{"config-invalid 4 UDPTimeout: Invalid value: \"-1s\"", "config-invalid 5 UDPStreamTimeout: Invalid value: \"-1s\""}},
		{"conntrack udp timeouts before 1.29 are unknown", minorRange(20, 28), "conntrack:\n  udpTimeout: -1s\n",
			[]string{"config-invalid 4 ignores a field: unknown field \"conntrack.udpTimeout\""}},
		{"oomScoreAdj", minorRange(20, 37), "oomScoreAdj: 1001\n",
			[]string{"config-invalid 3 OOMScoreAdj: Invalid value: 1001: must be within the range [-1000, 1000]"}},
		{"configSyncPeriod", minorRange(20, 37), "configSyncPeriod: -1s\n",
			[]string{"config-invalid 3 KubeProxyConfiguration.ConfigSyncPeriod: Invalid value: \"-1s\": must be greater than 0"}},
		{"burst", minorRange(20, 37), "clientConnection:\n  burst: -1\n",
			[]string{"config-invalid 4 KubeProxyConfiguration.ClientConnection.Burst: Invalid value: -1: must be greater than or equal to 0"}},
		{"udpIdleTimeout 1.20-1.25", minorRange(20, 25), "udpIdleTimeout: -1s\n",
			[]string{"config-invalid 3 KubeProxyConfiguration.UDPIdleTimeout: Invalid value: \"-1s\": must be greater than 0"}},
		{"udpIdleTimeout is gone from 1.26", minorRange(26, 37), "udpIdleTimeout: 250ms\n",
			[]string{"config-invalid 3 ignores a field: unknown field \"udpIdleTimeout\""}},
		{"mode userspace until 1.25", minorRange(20, 25), "mode: userspace\n", nil},
		{"mode userspace from 1.26", minorRange(26, 37), "mode: userspace\n",
			[]string{"mode-unsupported 3 does not support mode \"userspace\" (the userspace proxier was removed in 1.26): KubeProxyConfiguration.Mode.ProxyMode: Invalid value: \"userspace\""}},
		{"mode nftables before 1.29", minorRange(20, 28), "mode: nftables\n",
			[]string{"mode-unsupported 3 does not support mode \"nftables\" (nftables mode exists from 1.29)"}},
		{"mode nftables needs its gate in 1.29-1.30", []int{29, 30}, "mode: nftables\n",
			[]string{"mode-unsupported 3 does not support mode \"nftables\" (nftables mode needs the NFTablesProxyMode feature gate before 1.31)"}},
		{"mode nftables with its gate", []int{29, 30}, "mode: nftables\nfeatureGates:\n  NFTablesProxyMode: true\n", nil},
		{"mode nftables from 1.31", minorRange(31, 37), "mode: nftables\n", nil},
		{"mode ipvs without KubeProxyIPVS", []int{37}, "mode: ipvs\nfeatureGates:\n  KubeProxyIPVS: false\n",
			[]string{"mode-unsupported 3 does not support mode \"ipvs\" (ipvs mode needs the KubeProxyIPVS feature gate)"}},
		{"bindAddress", minorRange(20, 37), "bindAddress: node-1\n",
			[]string{"config-invalid 3 KubeProxyConfiguration.BindAddress: Invalid value: \"node-1\": not a valid textual representation of an IP address"}},
		{"healthz and metrics addresses", minorRange(20, 37), "healthzBindAddress: 0.0.0.0:0\nmetricsBindAddress: 127.0.0.1:70000\n",
			[]string{"config-invalid 3 KubeProxyConfiguration.HealthzBindAddress", "config-invalid 4 KubeProxyConfiguration.MetricsBindAddress"}},
		{"clusterCIDR pair without IPv6DualStack", []int{20}, "clusterCIDR: 10.244.0.0/16,fd00::/56\n",
			[]string{"config-invalid 3 KubeProxyConfiguration.ClusterCIDR: Invalid value: \"10.244.0.0/16,fd00::/56\": only one CIDR allowed"}},
		{"clusterCIDR pair of one family", minorRange(23, 30), "clusterCIDR: 10.0.0.0/8,10.1.0.0/16\n",
			[]string{"config-invalid 3 KubeProxyConfiguration.ClusterCIDR: Invalid value: \"10.0.0.0/8,10.1.0.0/16\": must be a valid DualStack CIDR"}},
		{"clusterCIDR pair of one family 1.31+", minorRange(31, 37), "clusterCIDR: 10.0.0.0/8,10.1.0.0/16\n",
			[]string{"config-invalid 3 KubeProxyConfiguration.DetectLocalConfiguration.ClusterCIDRs: Invalid value: [\"10.0.0.0/8\",\"10.1.0.0/16\"]"}},
		{"clusterCIDR ignored with NodeCIDR from 1.31", minorRange(31, 37), "clusterCIDR: 10.0.0.0/8,10.1.0.0/16\ndetectLocalMode: NodeCIDR\n", nil},
		{"portRange", minorRange(20, 30), "portRange: 30000-\n",
			[]string{"config-invalid 3 KubeProxyConfiguration.PortRange: Invalid value: \"30000-\": must be a valid port range (e.g. 300-2000)"}},
		{"nodePortAddresses not a CIDR", minorRange(20, 37), "nodePortAddresses:\n- 10.0.0.1\n",
			[]string{"config-invalid 4 KubeProxyConfiguration.NodePortAddresses[0]: Invalid value: \"10.0.0.1\""}},
		{"nodePortAddresses primary before 1.31", minorRange(20, 30), "nodePortAddresses: [primary]\n",
			[]string{"config-invalid 3 KubeProxyConfiguration.NodePortAddresses[0]: Invalid value: \"primary\": must be a valid CIDR"}},
		{"nodePortAddresses primary from 1.31", minorRange(31, 37), "nodePortAddresses: [primary]\n", nil},
		{"nodePortAddresses primary and a CIDR 1.31-1.36", minorRange(31, 36), "nodePortAddresses: [primary, 10.0.0.0/8]\n",
			[]string{"config-invalid 3 KubeProxyConfiguration.NodePortAddresses"}},
		{"nodePortAddresses keywords 1.37", []int{37}, "nodePortAddresses: [primary, localhost, 10.0.0.0/8]\n", nil},
		{"showHiddenMetricsForVersion", minorRange(20, 37), "showHiddenMetricsForVersion: \"1.10\"\n",
			[]string{"config-invalid 3 showHiddenMetricsForVersion"}},
		{"detectLocalMode at start-up before 1.28", minorRange(20, 27), "detectLocalMode: Bogus\n",
			[]string{"config-invalid 3 refuses to start with detectLocalMode: KubeProxyConfiguration.DetectLocalMode: Unsupported value: \"Bogus\""}},
		{"detectLocalMode validated from 1.28", minorRange(28, 37), "detectLocalMode: Bogus\n",
			[]string{"config-invalid 3 rejects detectLocalMode: KubeProxyConfiguration.DetectLocalMode: Unsupported value: \"Bogus\": supported values"}},
		{"bridge interface required", minorRange(24, 37), "detectLocalMode: BridgeInterface\n",
			[]string{"config-invalid 3 InterfaceName"}},
		{"locked feature gate", minorRange(33, 37), "featureGates:\n  NFTablesProxyMode: false\n",
			[]string{"config-invalid 4 cannot set feature gate NFTablesProxyMode to false, feature is locked to true"}},
		{"logging format", minorRange(28, 37), "logging:\n  format: xml\n",
			[]string{"config-invalid 4 logging.format"}},
		{"unknown field", minorRange(20, 37), "ipvs:\n  strictArp: true\n",
			[]string{"config-invalid 4 ignores a field: unknown field \"ipvs.strictArp\""}},
		{"field of a newer release", []int{28}, "conntrack:\n  tcpBeLiberal: true\n",
			[]string{"config-invalid 4 ignores a field: unknown field \"conntrack.tcpBeLiberal\" for kube-proxy 1.28 (added in 1.29)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, m := range tc.minors {
				snap := configSnapshot(t, m, tc.body)
				var got []string
				for _, f := range Run(snap, list).Findings {
					if f.Severity == Warning && !strings.Contains(f.Message, "ignores a field") {
						continue
					}
					line := 0
					if len(f.Evidence) > 0 {
						line = f.Evidence[0].Line
					}
					got = append(got, fmt.Sprintf("%s %d %s", f.Check, line, f.Message))
				}
				sort.Strings(got)
				if len(got) != len(tc.want) {
					t.Errorf("1.%d: %d findings, want %d:\n%s", m, len(got), len(tc.want), strings.Join(got, "\n"))
					continue
				}
				want := append([]string{}, tc.want...)
				sort.Strings(want)
				for i, w := range want {
					check, rest, _ := strings.Cut(w, " ")
					line, text, _ := strings.Cut(rest, " ")
					if !strings.HasPrefix(got[i], check+" "+line+" ") || !strings.Contains(got[i], text) {
						t.Errorf("1.%d: finding %q, want %s at line %s containing %q", m, got[i], check, line, text)
					}
				}
			}
		})
	}
}

// TestConfigVersionAssumed: with no kube-proxy version in the inputs (the
// version assumed), config-invalid reports only what every release
// modelled rejects or ignores: a field only some releases know, or a value
// only some reject, is noted as not checked and the run's coverage asks
// for the version; with the version given, the same configuration is
// judged by it.
func TestConfigVersionAssumed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		minor    int
		assumed  bool
		body     string
		findings int
		note     string
	}{
		{"field removed in 1.26, version assumed", 37, true, "udpIdleTimeout: 250ms\n", 0,
			`unknown field "udpIdleTimeout" for kube-proxy 1.37 (removed in 1.26)`},
		{"field removed in 1.26, on 1.30", 30, false, "udpIdleTimeout: 250ms\n", 1, ""},
		{"field removed in 1.26, on 1.22", 22, false, "udpIdleTimeout: 250ms\n", 0, ""},
		{"field no release knows, version assumed", 37, true, "udpIdleTimout: 250ms\n", 1, ""},
		{"value every release rejects, version assumed", 37, true, "iptables:\n  masqueradeBit: 32\n", 1, ""},
		{"value every release rejects (two rules), version assumed", 37, true, "iptables:\n  syncPeriod: -1s\n", 2, ""},
		{"value only newer releases reject, version assumed", 37, true, "conntrack:\n  udpTimeout: -1s\n", 0, "kube-proxy 1.37 rejects conntrack.udpTimeout ("},
		{"value only newer releases reject, on 1.37", 37, false, "conntrack:\n  udpTimeout: -1s\n", 1, ""},
		// A gate no release modelled knows was one of an older release:
		// refused when the version is known, noted when it is assumed.
		{"gate removed in 1.20, on 1.37", 37, false, "featureGates:\n  SupportIPVSProxyMode: true\n", 1, ""},
		{"gate removed in 1.20, version assumed", 37, true, "featureGates:\n  SupportIPVSProxyMode: true\n", 0,
			"kube-proxy 1.20 and 1.37 refuse to start with featureGates.SupportIPVSProxyMode ("},
		{"gate added in 1.37, version assumed", 36, true, "featureGates:\n  KubeProxyIPVS: true\n", 0,
			"kube-proxy 1.20 and 1.36 refuse to start with featureGates.KubeProxyIPVS ("},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := configSnapshot(t, tc.minor, tc.body)
			if tc.assumed {
				s.Version.Source = "assumed: newest supported"
			}
			res := Run(s, []*Check{configInvalid})
			if len(res.Findings) != tc.findings {
				t.Errorf("%d findings, want %d: %v", len(res.Findings), tc.findings, res.Findings)
			}
			gaps := strings.Join(res.Coverage.Gaps, "\n")
			if tc.note != "" && !strings.Contains(gaps, "config-invalid: "+versionUnchecked+tc.note) || tc.note == "" && strings.Contains(gaps, versionUnchecked) {
				t.Errorf("gaps %q, want the note %q", res.Coverage.Gaps, tc.note)
			}
			asked := false
			for _, n := range res.Coverage.Needs {
				asked = asked || n == versionNeed
			}
			if asked != (tc.note != "") {
				t.Errorf("needs %v: asks for the version %t, want %t", res.Coverage.Needs, asked, tc.note != "")
			}
		})
	}
}
