package checks

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/kube"
	"github.com/proxyscan/proxyscan/parsers/manifest"
)

// crashRestarts is the restart count from which a running kube-proxy pod
// counts as restarting even when its last exit was clean.
const crashRestarts = 3

var kubeProxyUnhealthy = &Check{
	ID:       "kube-proxy-unhealthy",
	Severity: Error,
	Title:    "kube-proxy is unhealthy, not running or restarting",
	What: "kube-proxy's own health says it is not well, or Kubernetes does: its /healthz answers 503 (a queued " +
		"change has waited more than twice the sync period, a proxier family is unhealthy, or the node is being " +
		"deleted), its pod on the node is not Running and ready or keeps restarting (CrashLoopBackOff, non-zero " +
		"exits), or the kube-proxy DaemonSet has fewer ready pods than it should; or, in a collected bundle, the " +
		"manifest records that kube-proxy was not running on the node, or was running but answered neither " +
		"/healthz nor /metrics on loopback (hung).",
	Why: "A kube-proxy that is not running keeps the rules of its last sync, so Services on the node drift out of " +
		"date; one that restarts in a loop (after a switch to IPVS without the kernel modules, an invalid " +
		"configuration, missing RBAC) does the same. Load balancers that probe /healthz take the node out of " +
		"rotation.",
	Fix: "Read the pod's events and previous log (`kubectl -n kube-system describe pod POD`, `kubectl logs --previous`): " +
		"`config-invalid`, `ipvs-module-missing`, `log-errors` usually name the cause. Fix it and let the DaemonSet " +
		"recreate the pod.",
	Run: runKubeProxyUnhealthy,
}

func runKubeProxyUnhealthy(p *Pass) {
	s := p.Snap
	pods, sets := kubeProxyPods(s), kubeProxyDaemonSets(s)
	collected := collectedProcessState(p)
	if s.Healthz == nil && len(pods) == 0 && len(sets) == 0 && !collected {
		p.Skip("no kube-proxy /healthz response, pod, DaemonSet or bundle manifest in the inputs")
		return
	}
	if h := s.Healthz; h != nil && !h.IsHealthy() {
		var why []string
		if h.StatusCode != 0 {
			why = append(why, fmt.Sprintf("HTTP %d", h.StatusCode))
		}
		if fams := h.Unhealthy(); len(fams) > 0 {
			why = append(why, "unhealthy "+strings.Join(fams, " and ")+" proxier")
		}
		if h.NodeEligible != nil && !*h.NodeEligible {
			why = append(why, "the node is not eligible (being deleted or tainted for deletion)")
		}
		switch st := h.Staleness(); {
		case st < 0:
			why = append(why, "no sync ever succeeded")
		case st > 0:
			why = append(why, fmt.Sprintf("last update %s before its currentTime", st.Round(time.Second)))
		}
		ev := []model.Evidence{{File: h.File, Line: h.BodyLine, Text: firstLine(h.Body)}}
		if s.Metrics != nil {
			if c := s.Metrics.KubeProxy().HealthzTotal["503"]; c != nil {
				why = append(why, fmt.Sprintf("%v failed probes counted since kube-proxy started", float64(c.Value)))
				ev = append(ev, scalarEvidence(c))
			}
		}
		p.Report(Finding{
			Message:  healthzFailsPrefix + strings.Join(why, ", "),
			Evidence: ev,
			Advice:   "kube-proxy reports unhealthy when a queued change waits more than twice its sync period: look at sync-stale and sync-failures, and at its log.",
		})
	}
	for _, pod := range pods {
		checkProxyPod(p, pod)
	}
	for _, ds := range sets {
		st := ds.Status
		if st.DesiredNumberScheduled == 0 || st.NumberReady >= st.DesiredNumberScheduled && st.NumberUnavailable == 0 {
			continue
		}
		p.Report(Finding{
			Severity: Warning,
			Message: fmt.Sprintf("DaemonSet %s/%s has %d of %d kube-proxy pods ready (%d unavailable)", ds.Namespace, ds.Name,
				st.NumberReady, st.DesiredNumberScheduled, st.NumberUnavailable),
			Evidence: []model.Evidence{model.EvidenceAt(ds.Pos, "DaemonSet "+ds.Namespace+"/"+ds.Name)},
			Advice:   "Find the nodes whose kube-proxy pod is not ready (kubectl -n kube-system get pods -l k8s-app=kube-proxy -o wide) and analyse their bundles.",
		})
	}
}

// collectedProcessState reports what the bundle's manifest recorded of the
// kube-proxy process when the bundle was collected: not running on the
// node, or not answering on its health and metrics ports (hung). It
// returns whether the manifest says anything about it.
func collectedProcessState(p *Pass) bool {
	m := p.Snap.Manifest
	if m == nil {
		return false
	}
	healthz, metrics := m.Source("kube-proxy-healthz"), m.Source("kube-proxy-metrics")
	if healthz == nil && metrics == nil {
		return false
	}
	var ev []model.Evidence
	var notRunning, hung []string
	for _, src := range []*manifest.Source{healthz, metrics} {
		if src == nil {
			continue
		}
		text := fmt.Sprintf("%s: %s: %s", src.Name, src.Status, src.Error)
		switch {
		case src.Status == manifest.StatusSkipped && strings.Contains(src.Error, "not running"):
			notRunning = append(notRunning, src.Name)
			ev = append(ev, model.EvidenceAt(src.Pos, text))
		case src.Status == manifest.StatusFailed && src.HTTPStatus == 0:
			// No answer at all: a timeout or a refused connection.
			hung = append(hung, fmt.Sprintf("%s (%s)", strings.TrimPrefix(src.Name, "kube-proxy-"), src.Error))
			ev = append(ev, model.EvidenceAt(src.Pos, text))
		}
	}
	when := "when the bundle was collected"
	if !m.CollectedAt.IsZero() {
		when = "when the bundle was collected (" + m.CollectedAt.UTC().Format(time.RFC3339) + ")"
	}
	switch {
	case len(notRunning) > 0:
		p.Report(Finding{
			Message:  notRunningPrefix + when + ": the rules are those of its last sync and no longer follow the cluster",
			Evidence: ev,
			Advice:   "Find why its pod is not running (kubectl -n kube-system get pods -l k8s-app=kube-proxy -o wide --field-selector spec.nodeName=NODE, then describe it) and let the DaemonSet start it again.",
		})
	case len(hung) > 0:
		p.Report(Finding{
			Message:  "kube-proxy was running but did not answer on loopback " + when + ": " + strings.Join(hung, ", ") + "; a hung kube-proxy no longer syncs the rules",
			Evidence: ev,
			Advice:   "Look at its log and CPU (a kube-proxy stuck in an iptables-restore or on the xtables lock, or starved), then restart its pod.",
		})
	}
	return true
}

// checkProxyPod reports a kube-proxy pod that is not running and ready,
// or that restarts.
func checkProxyPod(p *Pass, pod *kube.Pod) {
	name := pod.Namespace + "/" + pod.Name
	ev := []model.Evidence{model.EvidenceAt(pod.Pos, "Pod "+name)}
	if pod.Status.Phase != corev1.PodRunning {
		p.Report(Finding{
			Message:  fmt.Sprintf("kube-proxy pod %s is %s, not Running%s", name, phaseText(pod.Status.Phase), podReason(pod)),
			Evidence: ev,
			Advice:   "Describe the pod for its events and scheduling state; a kube-proxy that does not run leaves the node's rules as they were.",
		})
		return
	}
	for _, cs := range pod.Status.ContainerStatuses {
		last := ""
		if t := cs.LastTerminationState.Terminated; t != nil {
			last = fmt.Sprintf("; last exit %d (%s) at %s", t.ExitCode, t.Reason, t.FinishedAt.UTC().Format(time.RFC3339))
		}
		switch {
		case cs.State.Waiting != nil:
			p.Report(Finding{
				Message:  fmt.Sprintf("container %s of kube-proxy pod %s is waiting (%s) after %d restarts%s", cs.Name, name, cs.State.Waiting.Reason, cs.RestartCount, last),
				Evidence: ev,
				Advice:   "Read the previous container's log (kubectl logs --previous): kube-proxy exits on an invalid configuration, an unusable proxy mode (IPVS without its modules) or a missing Node.",
			})
		case !cs.Ready:
			p.Report(Finding{
				Message:  fmt.Sprintf("container %s of kube-proxy pod %s is running but not ready%s", cs.Name, name, last),
				Evidence: ev,
				Advice:   "A kube-proxy container that is not ready fails its probe (/healthz on port 10256): see the health check findings and its log.",
			})
		case cs.RestartCount > 0 && (cs.LastTerminationState.Terminated != nil && cs.LastTerminationState.Terminated.ExitCode != 0 || cs.RestartCount >= crashRestarts):
			p.Report(Finding{
				Severity: Warning,
				Message:  fmt.Sprintf("container %s of kube-proxy pod %s restarted %d times%s", cs.Name, name, cs.RestartCount, last),
				Evidence: ev,
				Advice:   "Read the previous container's log (kubectl logs --previous) for why it exited; each restart resyncs every rule and drops conntrack-less state.",
			})
		}
	}
}

func phaseText(ph corev1.PodPhase) string {
	if ph == "" {
		return "in no phase"
	}
	return string(ph)
}

func podReason(pod *kube.Pod) string {
	if r := pod.Status.Reason; r != "" {
		return " (" + r + ")"
	}
	return ""
}

// kubeProxyPods returns the kube-proxy pods of the snapshot's node (all of
// them when the node is unknown).
func kubeProxyPods(s *model.Snapshot) []*kube.Pod {
	var out []*kube.Pod
	for _, pod := range s.Objects.Pods {
		if !isKubeProxy(pod.Namespace, pod.Name, pod.Labels) {
			continue
		}
		if s.Node.Name != "" && pod.Spec.NodeName != s.Node.Name {
			continue
		}
		out = append(out, pod)
	}
	return out
}

// kubeProxyDaemonSets returns the DaemonSets that run kube-proxy.
func kubeProxyDaemonSets(s *model.Snapshot) []*kube.DaemonSet {
	var out []*kube.DaemonSet
	for _, ds := range s.Objects.DaemonSets {
		if isKubeProxy(ds.Namespace, ds.Name, ds.Labels) {
			out = append(out, ds)
		}
	}
	return out
}

func isKubeProxy(ns, name string, labels map[string]string) bool {
	return ns == "kube-system" && (labels["k8s-app"] == "kube-proxy" || strings.HasPrefix(name, "kube-proxy"))
}
