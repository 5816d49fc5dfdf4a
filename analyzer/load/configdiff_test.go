package load

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers/kpconfig"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
)

// TestConfigDiffNote: two configurations of kube-proxy given are noted
// with the settings they set otherwise once defaulted, and not noted when
// they set the same (a default written out is no difference).
func TestConfigDiffNote(t *testing.T) {
	const base = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n"
	v, err := kpversion.ParseString("v1.37.0")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, a, b string
		want       string // substring of the note; "" for none
	}{
		{name: "alike", a: "clusterCIDR: 10.244.0.0/16\n", b: "clusterCIDR: 10.244.0.0/16\n"},
		{name: "a default written out", a: "iptables:\n  masqueradeBit: 14\n", b: ""},
		{name: "another mode's section", a: "ipvs:\n  scheduler: lc\nnftables:\n  masqueradeBit: 13\n", b: ""},
		{name: "an empty scheduler is rr", a: "mode: ipvs\nipvs:\n  scheduler: rr\n", b: "mode: ipvs\nipvs:\n  scheduler: \"\"\n"},
		{name: "the scheduler of IPVS mode", a: "mode: ipvs\nipvs:\n  scheduler: lc\n", b: "mode: ipvs\n", want: "set ipvs.scheduler otherwise"},
		{name: "clusterCIDR", a: "clusterCIDR: 10.244.0.0/16\n", b: "clusterCIDR: 10.32.0.0/16\ndetectLocalMode: NodeCIDR\n",
			want: "a.yaml (a.yaml:1) and b.yaml (b.yaml:1) set clusterCIDR, detectLocalMode otherwise; the checks read a.yaml (a.yaml:1)"},
		{name: "more than shown", a: "",
			b:    "clusterCIDR: 10.1.0.0/16\nbindAddress: 1.2.3.4\nhealthzBindAddress: 1.2.3.4:1\nmetricsBindAddress: 1.2.3.4:2\noomScoreAdj: 5\nportRange: 1-2\nconfigSyncPeriod: 1m0s\n",
			want: "set bindAddress, clusterCIDR, configSyncPeriod, healthzBindAddress, metricsBindAddress, oomScoreAdj and 1 more otherwise"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := kpconfig.Decode("a.yaml", []byte(base+tc.a), kpconfig.Options{Lenient: true})
			if err != nil {
				t.Fatal(err)
			}
			b, err := kpconfig.Decode("b.yaml", []byte(base+tc.b), kpconfig.Options{Lenient: true})
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if diff := configDiff(a, b, v); len(diff) > 0 {
				got = configDiffNote(diff, a, b, "a.yaml", "b.yaml")
			}
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("note %q, want %q", got, tc.want)
			}
		})
	}
}

// TestConfigMapsGivenTwice: two kube-proxy ConfigMaps of other settings
// given together get the note that names both and the one the checks read.
func TestConfigMapsGivenTwice(t *testing.T) {
	dir := t.TempDir()
	cm := func(cidr string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kube-proxy\n  namespace: kube-system\ndata:\n  config.conf: |\n" +
			"    apiVersion: kubeproxy.config.k8s.io/v1alpha1\n    kind: KubeProxyConfiguration\n    mode: iptables\n    clusterCIDR: " + cidr + "\n"
	}
	for name, cidr := range map[string]string{"a-cm.yaml": "10.244.0.0/16", "b-cm.yaml": "10.32.0.0/16"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(cm(cidr)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snaps, err := Load([]string{filepath.Join(dir, "a-cm.yaml"), filepath.Join(dir, "b-cm.yaml")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range snaps[0].Notes {
		if strings.Contains(n, "set clusterCIDR otherwise; the checks read ConfigMap kube-system/kube-proxy") {
			return
		}
	}
	t.Errorf("no note of the two ConfigMaps in %q", snaps[0].Notes)
}
