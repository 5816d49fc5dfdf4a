package kpconfig

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/proxyscan/proxyscan/parsers/kpversion"
)

const header = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n"

func mustParse(t *testing.T, body string) *Config {
	t.Helper()
	c, err := Parse("config.yaml", []byte(header+body))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

// errs renders FieldErrors as "line: Path: Message" for comparison.
func errs(list []FieldError) []string {
	var out []string
	for _, e := range list {
		out = append(out, fmt.Sprintf("%d: %s: %s", e.Pos.Line, e.Path, e.Message))
	}
	return out
}

func minors(from, to int) []int {
	var out []int
	for m := from; m <= to; m++ {
		out = append(out, m)
	}
	return out
}

const (
	kp   = "KubeProxyConfiguration"
	ipt  = kp + ".KubeProxyIPTablesConfiguration"
	ipvs = kp + ".KubeProxyIPVSConfiguration"
	nft  = kp + ".KubeProxyNFTablesConfiguration"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		minors []int
		body   string
		want   []string
	}{
		{"defaults are valid", minors(20, 37), "", nil},
		{"typical ipvs config is valid", minors(20, 37), "mode: ipvs\nipvs:\n  scheduler: rr\n  strictARP: true\n", nil},
		{"masqueradeBit above 31", minors(20, 37), "iptables:\n  masqueradeBit: 32\n",
			[]string{"4: " + ipt + ".MasqueradeBit: must be within the range [0, 31]"}},
		{"masqueradeBit negative", minors(20, 37), "iptables:\n  masqueradeBit: -1\n",
			[]string{"4: " + ipt + ".MasqueradeBit: must be within the range [0, 31]"}},
		{"iptables syncPeriod negative 1.20-1.30", minors(20, 30), "iptables:\n  syncPeriod: -1s\n",
			[]string{"4: " + ipt + ".SyncPeriod: must be greater than 0", "4: " + ipt + ".SyncPeriod: must be greater than or equal to " + ipt + ".MinSyncPeriod"}},
		{"iptables syncPeriod negative 1.31+", minors(31, 37), "iptables:\n  syncPeriod: -1s\n",
			[]string{"4: " + kp + ".SyncPeriod: must be greater than 0", "4: " + kp + ".SyncPeriod: must be greater than or equal to " + kp + ".MinSyncPeriod"}},
		{"minSyncPeriod negative 1.20-1.30", minors(20, 30), "iptables:\n  minSyncPeriod: -1s\n",
			[]string{"4: " + ipt + ".MinSyncPeriod: must be greater than or equal to 0"}},
		{"minSyncPeriod negative 1.31+", minors(31, 37), "iptables:\n  minSyncPeriod: -1s\n",
			[]string{"4: " + kp + ".MinSyncPeriod: must be greater than or equal to 0"}},
		{"min above sync reported on SyncPeriod", minors(20, 30), "iptables:\n  syncPeriod: 1s\n  minSyncPeriod: 2s\n",
			[]string{"4: " + ipt + ".SyncPeriod: must be greater than or equal to " + ipt + ".MinSyncPeriod"}},
		{"iptables section checked in ipvs mode until 1.30", minors(20, 30), "mode: ipvs\niptables:\n  syncPeriod: 1s\n  minSyncPeriod: 2s\n",
			[]string{"5: " + ipt + ".SyncPeriod: must be greater than or equal to " + ipt + ".MinSyncPeriod"}},
		{"iptables sync periods ignored in ipvs mode from 1.31", minors(31, 36), "mode: ipvs\niptables:\n  syncPeriod: 1s\n  minSyncPeriod: 2s\n", nil},
		{"ipvs section ignored outside ipvs mode", minors(20, 37), "ipvs:\n  syncPeriod: -1s\n  tcpTimeout: -1s\n  excludeCIDRs: [bogus]\n", nil},
		{"ipvs sync periods in ipvs mode 1.20-1.30", minors(20, 30), "mode: ipvs\nipvs:\n  syncPeriod: 1s\n  minSyncPeriod: 5s\n",
			[]string{"5: " + ipvs + ".SyncPeriod: must be greater than or equal to " + ipvs + ".MinSyncPeriod"}},
		{"ipvs sync periods in ipvs mode 1.31-1.36", minors(31, 36), "mode: ipvs\nipvs:\n  syncPeriod: 1s\n  minSyncPeriod: 5s\n",
			[]string{"5: " + kp + ".SyncPeriod: must be greater than or equal to " + kp + ".MinSyncPeriod"}},
		{"ipvs timeouts and excludeCIDRs", minors(20, 36), "mode: ipvs\nipvs:\n  tcpTimeout: -1s\n  tcpFinTimeout: -1s\n  udpTimeout: -1s\n  excludeCIDRs: [10.0.0.0/8, bogus]\n",
			[]string{"5: " + ipvs + ".TCPTimeout: must be greater than or equal to 0", "6: " + ipvs + ".TCPFinTimeout: must be greater than or equal to 0",
				"7: " + ipvs + ".UDPTimeout: must be greater than or equal to 0", "8: " + ipvs + ".ExcludeCidrs[1]: must be a valid CIDR"}},
		{"scheduler mh invalid 1.20-1.26", minors(20, 26), "mode: ipvs\nipvs:\n  scheduler: mh\n",
			[]string{"5: " + ipvs + ".Scheduler.Scheduler: must be in [rr wrr lc wlc lblc lblcr sh dh sed nq ], blank means the default algorithm method (currently rr)"}},
		{"scheduler mh valid 1.27+", minors(27, 36), "mode: ipvs\nipvs:\n  scheduler: mh\n", nil},
		{"any scheduler 1.27+", minors(27, 36), "mode: ipvs\nipvs:\n  scheduler: no-such\n", nil},
		{"userspace valid until 1.25", minors(20, 25), "mode: userspace\n", nil},
		{"userspace invalid from 1.26", minors(26, 27), "mode: userspace\n",
			[]string{"3: " + kp + ".Mode.ProxyMode: must be iptables,ipvs or blank (blank means the best-available proxy [currently iptables])"}},
		{"nftables invalid before 1.29", []int{28}, "mode: nftables\n",
			[]string{"3: " + kp + ".Mode.ProxyMode: must be iptables, ipvs or blank (blank means the best-available proxy [currently iptables])"}},
		{"nftables needs the gate in 1.29-1.30", minors(29, 30), "mode: nftables\n",
			[]string{"3: " + kp + ".Mode.ProxyMode: must be iptables, ipvs or blank (blank means the best-available proxy [currently iptables])"}},
		{"nftables with the gate in 1.29-1.30", minors(29, 30), "mode: nftables\nfeatureGates:\n  NFTablesProxyMode: true\n", nil},
		{"nftables by default from 1.31", minors(31, 37), "mode: nftables\n", nil},
		{"nftables disabled by gate in 1.31-1.32", minors(31, 32), "mode: nftables\nfeatureGates:\n  NFTablesProxyMode: false\n",
			[]string{"3: " + kp + ".Mode.ProxyMode: must be iptables, ipvs or blank (blank means the best-available proxy [currently iptables])"}},
		{"nftables gate locked from 1.33", minors(33, 37), "featureGates:\n  NFTablesProxyMode: false\n",
			[]string{"4: " + kp + ".featureGates: cannot set feature gate NFTablesProxyMode to false, feature is locked to true"}},
		{"nftables section only in nftables mode", minors(29, 37), "nftables:\n  masqueradeBit: 40\n", nil},
		{"nftables masqueradeBit", minors(31, 37), "mode: nftables\nnftables:\n  masqueradeBit: 40\n",
			[]string{"5: " + nft + ".MasqueradeBit: must be within the range [0, 31]"}},
		{"nftables sync periods 1.29-1.30", minors(29, 30), "mode: nftables\nfeatureGates: {NFTablesProxyMode: true}\nnftables:\n  syncPeriod: 1s\n  minSyncPeriod: 2s\n",
			[]string{"6: " + nft + ".SyncPeriod: must be greater than or equal to " + nft + ".MinSyncPeriod"}},
		{"nftables sync periods 1.31+", minors(31, 37), "mode: nftables\nnftables:\n  syncPeriod: 1s\n  minSyncPeriod: 2s\n",
			[]string{"5: " + kp + ".SyncPeriod: must be greater than or equal to " + kp + ".MinSyncPeriod"}},
		{"ipvs mode needs KubeProxyIPVS in 1.37", []int{37}, "mode: ipvs\nfeatureGates:\n  KubeProxyIPVS: false\n",
			[]string{"3: " + kp + ".Mode.ProxyMode: must be iptables, nftables or blank (blank means the best-available proxy [currently iptables])"}},
		{"KubeProxyIPVS unknown before 1.37", []int{36}, "featureGates:\n  KubeProxyIPVS: true\n",
			[]string{"4: " + kp + ".featureGates: unrecognized feature gate: KubeProxyIPVS"}},
		{"conntrack counts 1.20-1.30", minors(20, 30), "conntrack:\n  maxPerCore: -1\n  min: -1\n  tcpEstablishedTimeout: -1s\n  tcpCloseWaitTimeout: -1s\n",
			[]string{"4: " + kp + ".KubeProxyConntrackConfiguration.MaxPerCore: must be greater than or equal to 0", "5: " + kp + ".KubeProxyConntrackConfiguration.Min: must be greater than or equal to 0",
				"6: " + kp + ".KubeProxyConntrackConfiguration.TCPEstablishedTimeout: must be greater than or equal to 0", "7: " + kp + ".KubeProxyConntrackConfiguration.TCPCloseWaitTimeout: must be greater than or equal to 0"}},
		{"conntrack counts 1.31+", minors(31, 37), "conntrack:\n  maxPerCore: -1\n",
			[]string{"4: " + kp + ".KubeProxyLinuxConfiguration.KubeProxyConntrackConfiguration.MaxPerCore: must be greater than or equal to 0"}},
		{"conntrack udp ignored before 1.29", minors(20, 28), "conntrack:\n  udpTimeout: -1s\n  udpStreamTimeout: -1s\n", nil},
		{"conntrack udp 1.29-1.30", minors(29, 30), "conntrack:\n  udpTimeout: -1s\n  udpStreamTimeout: -1s\n",
			[]string{"4: " + kp + ".KubeProxyConntrackConfiguration.UDPTimeout: must be greater than or equal to 0", "5: " + kp + ".KubeProxyConntrackConfiguration.UDPStreamTimeout: must be greater than or equal to 0"}},
		{"oomScoreAdj 1.20-1.30", minors(20, 30), "oomScoreAdj: -1001\n", []string{"3: " + kp + ".OOMScoreAdj: must be within the range [-1000, 1000]"}},
		{"oomScoreAdj 1.31+", minors(31, 37), "oomScoreAdj: 1001\n", []string{"3: " + kp + ".KubeProxyLinuxConfiguration.OOMScoreAdj: must be within the range [-1000, 1000]"}},
		{"configSyncPeriod negative", minors(20, 37), "configSyncPeriod: -1m\n", []string{"3: " + kp + ".ConfigSyncPeriod: must be greater than 0"}},
		{"burst negative", minors(20, 37), "clientConnection:\n  burst: -1\n", []string{"4: " + kp + ".ClientConnection.Burst: must be greater than or equal to 0"}},
		{"bindAddress not an IP", minors(20, 37), "bindAddress: node-1\n", []string{"3: " + kp + ".BindAddress: not a valid textual representation of an IP address"}},
		{"healthz and metrics host:port", minors(20, 37), "healthzBindAddress: host:10256\nmetricsBindAddress: 127.0.0.1:70000\n",
			[]string{"3: " + kp + ".HealthzBindAddress: must be a valid IP", "4: " + kp + ".MetricsBindAddress: must be a valid port"}},
		{"metrics address without a port gets one", minors(20, 37), "metricsBindAddress: 0.0.0.0\nhealthzBindAddress: \"::\"\n", nil},
		{"metrics port zero", minors(20, 37), "metricsBindAddress: 127.0.0.1:0\n", []string{"3: " + kp + ".MetricsBindAddress: must be a valid port"}},
		{"dual-stack clusterCIDR needs the gate in 1.20", []int{20}, "clusterCIDR: 10.0.0.0/8,fd00::/48\n",
			[]string{"3: " + kp + ".ClusterCIDR: only one CIDR allowed (e.g. 10.100.0.0/16 or fde4:8dba:82e1::/48)"}},
		{"dual-stack clusterCIDR 1.21+", minors(21, 37), "clusterCIDR: 10.0.0.0/8,fd00::/48\n", nil},
		{"two IPv4 clusterCIDRs 1.21-1.30", minors(21, 30), "clusterCIDR: 10.0.0.0/8,11.0.0.0/8\n",
			[]string{"3: " + kp + ".ClusterCIDR: must be a valid DualStack CIDR (e.g. 10.100.0.0/16,fde4:8dba:82e1::/48)"}},
		{"two IPv4 clusterCIDRs 1.31+", minors(31, 37), "clusterCIDR: 10.0.0.0/8,11.0.0.0/8\n",
			[]string{"3: " + kp + ".DetectLocalConfiguration.ClusterCIDRs: must be a either a single CIDR or dual-stack pair of CIDRs (e.g. [10.100.0.0/16, fde4:8dba:82e1::/48]"}},
		{"three clusterCIDRs 1.23-1.30", minors(23, 30), "clusterCIDR: 10.0.0.0/8,fd00::/48,11.0.0.0/8\n",
			[]string{"3: " + kp + ".ClusterCIDR: only one CIDR allowed or a valid DualStack CIDR (e.g. 10.100.0.0/16,fde4:8dba:82e1::/48)"}},
		{"bad clusterCIDR", minors(20, 30), "clusterCIDR: 10.0.0.0/33\n",
			[]string{"3: " + kp + ".ClusterCIDR: must be a valid CIDR block (e.g. 10.100.0.0/16 or fde4:8dba:82e1::/48)"}},
		{"bad clusterCIDR 1.31+", minors(31, 37), "clusterCIDR: 10.0.0.0/33\n",
			[]string{"3: " + kp + ".DetectLocalConfiguration.ClusterCIDRs[0]: must be a valid CIDR block (e.g. 10.100.0.0/16 or fde4:8dba:82e1::/48)"}},
		{"bad clusterCIDR ignored with NodeCIDR from 1.31", minors(31, 37), "clusterCIDR: garbage\ndetectLocalMode: NodeCIDR\n", nil},
		{"portRange 1.20-1.30", minors(20, 30), "portRange: 10-5\n", []string{"3: " + kp + ".PortRange: must be a valid port range (e.g. 300-2000)"}},
		{"portRange unused from 1.31", minors(31, 37), "portRange: 10-5\n", nil},
		{"nodePortAddresses CIDRs", minors(20, 30), "nodePortAddresses: [10.0.0.0/8, 1.2.3.4]\n", []string{"3: " + kp + ".NodePortAddresses[1]: must be a valid CIDR"}},
		{"primary invalid before 1.31", minors(20, 30), "nodePortAddresses: [primary]\n", []string{"3: " + kp + ".NodePortAddresses[0]: must be a valid CIDR"}},
		{"primary alone 1.31+", minors(31, 37), "nodePortAddresses: [primary]\n", nil},
		{"primary with CIDRs 1.31-1.36", minors(31, 36), "nodePortAddresses:\n- 10.0.0.0/8\n- primary\n", []string{"5: " + kp + ".NodePortAddresses[1]: can't use both 'primary' and CIDRs"}},
		{"keywords 1.37", []int{37}, "nodePortAddresses: [primary, localhost, 10.0.0.0/8]\n", nil},
		{"keyword twice 1.37", []int{37}, "nodePortAddresses:\n- all\n- all\n", []string{"5: " + kp + ".NodePortAddresses[1]: "}},
		{"bad keyword 1.37", []int{37}, "nodePortAddresses: [Localhost]\n", []string{"3: " + kp + ".NodePortAddresses[0]: must be a valid CIDR or one of the keywords 'primary', 'localhost', 'all'"}},
		{"detectLocalMode startup error 1.20-1.23", minors(20, 23), "detectLocalMode: BridgeInterface\n", []string{"3: " + kp + ".DetectLocalMode: unknown detect-local-mode: BridgeInterface"}},
		{"detectLocalMode validated 1.28+", minors(28, 37), "detectLocalMode: Bogus\n",
			[]string{"3: " + kp + `.DetectLocalMode: supported values: "ClusterCIDR", "NodeCIDR", "BridgeInterface", "InterfaceNamePrefix", ""`}},
		{"bridge interface required 1.24-1.30", minors(24, 30), "detectLocalMode: BridgeInterface\n", []string{"3: " + kp + ".InterfaceName: must not be empty"}},
		{"prefix required 1.31+", minors(31, 37), "detectLocalMode: InterfaceNamePrefix\n", []string{"3: " + kp + ".DetectLocalConfiguration.InterfacePrefix: must not be empty"}},
		{"udpIdleTimeout 1.20-1.25", minors(20, 25), "udpIdleTimeout: -1s\n", []string{"3: " + kp + ".UDPIdleTimeout: must be greater than 0"}},
		{"showHiddenMetricsForVersion", []int{30}, "showHiddenMetricsForVersion: \"1.28\"\n",
			[]string{"3: " + kp + ".ShowHiddenMetricsForVersion: --show-hidden-metrics-for-version must be omitted or have the value '1.29'. Only the previous minor version is allowed"}},
		{"showHiddenMetricsForVersion previous minor", []int{37}, "showHiddenMetricsForVersion: \"1.36\"\n", nil},
		{"unknown gate in its era", []int{30}, "featureGates:\n  ServiceTopology: true\n", []string{"4: " + kp + ".featureGates: unrecognized feature gate: ServiceTopology"}},
		{"known gate", []int{21}, "featureGates:\n  ServiceTopology: true\n", nil},
		{"gate removed in 1.20", minors(20, 37), "featureGates:\n  SupportIPVSProxyMode: true\n", []string{"4: " + kp + ".featureGates: unrecognized feature gate: SupportIPVSProxyMode"}},
		{"logging format 1.28+", minors(28, 37), "logging:\n  format: xml\n", []string{"4: " + kp + ".logging.format: Unsupported log format"}},
		{"logging split stream needs alpha gate", minors(28, 37), "logging:\n  options:\n    text:\n      splitStream: true\n",
			[]string{"6: " + kp + ".logging.options.text.splitStream: Feature LoggingAlphaOptions is disabled"}},
		{"logging ignored before 1.28", minors(20, 27), "logging:\n  format: xml\n", nil},
	} {
		for _, m := range tc.minors {
			t.Run(fmt.Sprintf("%s/1.%d", tc.name, m), func(t *testing.T) {
				c := mustParse(t, tc.body)
				got := errs(Validate(c, kpversion.V(m)))
				if len(got) != len(tc.want) {
					t.Fatalf("got %d errors, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
				}
				for i := range got {
					if !strings.HasPrefix(got[i], tc.want[i]) {
						t.Errorf("error %d:\n got  %s\n want %s", i, got[i], tc.want[i])
					}
				}
			})
		}
	}
}

func TestKubeProxyErrorText(t *testing.T) {
	c := mustParse(t, "iptables:\n  syncPeriod: 1s\n  minSyncPeriod: 2s\n")
	got := Validate(c, kpversion.V(28))
	want := `config.yaml:4: KubeProxyConfiguration.KubeProxyIPTablesConfiguration.SyncPeriod: Invalid value: "2s": must be greater than or equal to KubeProxyConfiguration.KubeProxyIPTablesConfiguration.MinSyncPeriod`
	if len(got) != 1 || got[0].Error() != want {
		t.Fatalf("got %v\nwant %s", got, want)
	}
	if got[0].Field != "iptables.syncPeriod" {
		t.Errorf("Field = %q", got[0].Field)
	}
}

func TestValidateDoesNotChangeInput(t *testing.T) {
	c := mustParse(t, "mode: \"\"\n")
	before := c.Clone()
	Validate(c, kpversion.Newest)
	if diff := cmp.Diff(before.Config.Mode, c.Config.Mode); diff != "" || len(c.Fields) != len(before.Fields) {
		t.Errorf("Validate changed its input: %s", diff)
	}
}

func TestModes(t *testing.T) {
	for _, tc := range []struct {
		m     int
		gates map[string]bool
		want  []string
	}{
		{20, nil, []string{"iptables", "ipvs", "userspace"}},
		{26, nil, []string{"iptables", "ipvs"}},
		{29, nil, []string{"iptables", "ipvs"}},
		{29, map[string]bool{"NFTablesProxyMode": true}, []string{"iptables", "ipvs", "nftables"}},
		{31, nil, []string{"iptables", "ipvs", "nftables"}},
		{37, nil, []string{"iptables", "ipvs", "nftables"}},
		{37, map[string]bool{"KubeProxyIPVS": false}, []string{"iptables", "nftables"}},
	} {
		if diff := cmp.Diff(tc.want, Modes(tc.m, tc.gates)); diff != "" {
			t.Errorf("Modes(1.%d, %v): %s", tc.m, tc.gates, diff)
		}
	}
}

// TestGatesSorted: LookupGate searches Gates by name.
func TestGatesSorted(t *testing.T) {
	for i := range Gates {
		if i > 0 && Gates[i-1].Name >= Gates[i].Name {
			t.Errorf("Gates: %s before %s", Gates[i-1].Name, Gates[i].Name)
		}
		if LookupGate(Gates[i].Name) != &Gates[i] {
			t.Errorf("LookupGate(%s) does not find it", Gates[i].Name)
		}
	}
}
