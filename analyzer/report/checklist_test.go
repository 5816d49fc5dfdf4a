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

// copyBundle copies the bundle dir into a temporary directory and returns
// the copy's path.
func copyBundle(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(out, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(out, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestChecklistPartial: an item is ok only when the checks it rests on ran
// over whole inputs. A dump cut inside KUBE-SERVICES leaves the service
// rules unknown, naming what was not checked, though nothing was found
// missing; a /metrics page filtered to other series leaves the sync
// unknown though sync-slow found nothing.
func TestChecklistPartial(t *testing.T) {
	mini := filepath.Join(parsetest.Root(t), "testdata", "bundles", "iptables-mini")
	for _, tc := range []struct {
		name   string
		edit   func(t *testing.T, dir string)
		id     string
		detail []string
	}{
		{"dump cut in KUBE-SERVICES", func(t *testing.T, dir string) {
			name := filepath.Join(dir, "node", "iptables-save.txt")
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.SplitAfter(string(data), "\n")
			// Up to the cluster IP rule of kube-system/dns:dns (line 140).
			if err := os.WriteFile(name, []byte(strings.Join(lines[:140], "")), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "service-rules", []string{"not all checked: service-missing: not checked for ", "node/iptables-save.txt is partial"}},
		{"metrics filtered to other series", func(t *testing.T, dir string) {
			page := "$ curl -s localhost:10249/metrics | grep kubeproxy_sync_proxy_rules_last_timestamp\n" +
				"# HELP kubeproxy_sync_proxy_rules_last_timestamp_seconds [ALPHA] The last time proxy rules were successfully synced\n" +
				"# TYPE kubeproxy_sync_proxy_rules_last_timestamp_seconds gauge\n" +
				"kubeproxy_sync_proxy_rules_last_timestamp_seconds 1.7e+09\n"
			if err := os.WriteFile(filepath.Join(dir, "kube-proxy", "metrics.txt"), []byte(page), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "sync", []string{"not all checked: sync-slow: not checked, as the /metrics page is filtered"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyBundle(t, mini)
			tc.edit(t, dir)
			it := checklistOf(t, dir)[tc.id]
			if it.State != StateUnknown {
				t.Errorf("%s is %s (%q: %s), want unknown", tc.id, it.State, it.Value, it.Detail)
			}
			for _, s := range tc.detail {
				if !strings.Contains(it.Detail, s) {
					t.Errorf("%s: detail %q does not say %q", tc.id, it.Detail, s)
				}
			}
		})
	}
}
