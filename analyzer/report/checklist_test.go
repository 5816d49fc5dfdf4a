package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

const unhealthyPods = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata:
    name: kube-proxy-7xk2p
    namespace: kube-system
    labels:
      k8s-app: kube-proxy
  spec:
    nodeName: node-a
  status:
    phase: Running
    containerStatuses:
    - name: kube-proxy
      ready: false
      restartCount: 7
      state:
        waiting:
          reason: CrashLoopBackOff
- apiVersion: apps/v1
  kind: DaemonSet
  metadata:
    name: kube-proxy
    namespace: kube-system
  status:
    desiredNumberScheduled: 3
    numberReady: 2
`

// slowMetrics has every sync taking between 1 and 2.5 seconds.
const slowMetrics = `# HELP kubeproxy_sync_proxy_rules_duration_seconds [ALPHA] SyncProxyRules latency in seconds
# TYPE kubeproxy_sync_proxy_rules_duration_seconds histogram
kubeproxy_sync_proxy_rules_duration_seconds_bucket{le="0.5"} 0
kubeproxy_sync_proxy_rules_duration_seconds_bucket{le="1"} 0
kubeproxy_sync_proxy_rules_duration_seconds_bucket{le="2.5"} 40
kubeproxy_sync_proxy_rules_duration_seconds_bucket{le="+Inf"} 40
kubeproxy_sync_proxy_rules_duration_seconds_sum 62
kubeproxy_sync_proxy_rules_duration_seconds_count 40
`

func checklistOf(t *testing.T, dir string) map[string]ChecklistItem {
	t.Helper()
	snaps, err := load.Load([]string{dir}, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := Build(Tool{}, []NodeResult{{Snap: snaps[0], Result: checks.Run(snaps[0], checks.All)}})
	out := map[string]ChecklistItem{}
	for _, it := range r.Checklist {
		out[it.ID] = it
	}
	if len(out) != 8 {
		t.Fatalf("%d checklist items, want 8", len(out))
	}
	return out
}

// TestChecklist fills the checklist from the mini bundle, then from a copy
// with an unhealthy kube-proxy pod, a DaemonSet not fully ready and slow
// syncs in the metrics.
func TestChecklist(t *testing.T) {
	mini := filepath.Join(parsetest.Root(t), "testdata", "bundles", "iptables-mini")
	got := checklistOf(t, mini)
	for id, state := range map[string]string{"version": StateOK, "pods": StateUnknown, "mode": StateOK, "service-rules": StateOK,
		"sync": StateUnknown, "configmap-backup": StateOK, "connectivity": StateUnknown, "recovery": StateUnknown} {
		if got[id].State != state {
			t.Errorf("mini: %s is %s (%s), want %s", id, got[id].State, got[id].Detail, state)
		}
	}
	if got["version"].Value != "v1.37.2" || got["mode"].Value != "iptables" {
		t.Errorf("mini: version %q mode %q", got["version"].Value, got["mode"].Value)
	}

	dir := t.TempDir()
	filepath.WalkDir(mini, func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(mini, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		data, _ := os.ReadFile(p)
		return os.WriteFile(filepath.Join(dir, rel), data, 0o644)
	})
	os.WriteFile(filepath.Join(dir, "cluster", "kube-proxy-pods.yaml"), []byte(unhealthyPods), 0o644)
	os.WriteFile(filepath.Join(dir, "kube-proxy", "metrics.txt"), []byte(slowMetrics), 0o644)
	os.Remove(filepath.Join(dir, "cluster", "kube-proxy-configmap.yaml"))
	got = checklistOf(t, dir)
	if it := got["pods"]; it.State != StateProblem || it.Value != "0/1 pods running and ready, 7 restarts; DaemonSet kube-proxy 2/3 ready" ||
		it.Detail != "pod kube-proxy-7xk2p is CrashLoopBackOff; DaemonSet kube-proxy has 2 of 3 pods ready; 2 kube-proxy-unhealthy findings" || len(it.Evidence) != 2 {
		t.Errorf("pods: %+v", it)
	}
	if it := got["sync"]; it.State != StateProblem || it.Value != "p99 2.48 s" || len(it.Evidence) != 1 || it.Evidence[0].File != "kube-proxy/metrics.txt" {
		t.Errorf("sync: %+v", it)
	}
	if it := got["configmap-backup"]; it.State != StateUnknown {
		t.Errorf("configmap-backup without the ConfigMap: %+v", it)
	}
	// kubectl describe shows the ConfigMap's data, but is no backup.
	described, err := os.ReadFile(filepath.Join(parsetest.Root(t), "testdata", "paste", "forms", "configmap-describe.txt"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cluster", "kube-proxy-describe.txt"), described, 0o644)
	if it := checklistOf(t, dir)["configmap-backup"]; it.State != StateUnknown || !strings.Contains(it.Detail, "kubectl apply cannot restore") || len(it.Evidence) != 1 {
		t.Errorf("configmap-backup from kubectl describe: %+v", it)
	}
	if it := got["recovery"]; it.State != StateUnknown || it.Detail == "" {
		t.Errorf("recovery: %+v", it)
	}
}
