package report

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/model"
)

// Checklist item states.
const (
	StateOK      = "ok"      // the inputs show the item is fine
	StateProblem = "problem" // the inputs show something wrong
	StateUnknown = "unknown" // the inputs do not say
)

// A ChecklistItem is one line of the operational checklist of kube-proxy
// work (version, pod health, mode, service rules, sync duration, a backup of
// the ConfigMap, a connectivity test, recovery steps), filled with what the
// inputs of a node show.
type ChecklistItem struct {
	// ID is stable: version, pods, mode, service-rules, sync,
	// configmap-backup, connectivity, recovery.
	ID    string `json:"id"`
	Title string `json:"title"`
	// State is ok, problem or unknown (not in the inputs).
	State string `json:"state"`
	// Value is what the inputs show ("v1.37.2", "iptables"), Detail where
	// it comes from or what is missing.
	Value  string `json:"value,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Command verifies the item on a live cluster.
	Command  string           `json:"command,omitempty"`
	Evidence []model.Evidence `json:"evidence,omitempty"`
}

// BuildChecklist fills the operational checklist from a node's snapshot
// and the result of its checks.
func BuildChecklist(s *model.Snapshot, res *checks.Result) []ChecklistItem {
	st := map[string]checks.Status{}
	for _, x := range res.Statuses {
		st[x.ID] = x
	}
	return []ChecklistItem{
		versionItem(s, st),
		podsItem(s, st),
		modeItem(s, res, st),
		rulesItem(s, res, st),
		syncItem(s, res, st),
		backupItem(s),
		{
			ID: "connectivity", Title: "Test service connectivity after a change", State: StateUnknown,
			Detail:  "not in the inputs: a request from a pod to the Service shows it (an HTTP 200 answer)",
			Command: "kubectl exec -it test-pod -- wget -qO- http://my-service.default.svc.cluster.local",
		},
		recoveryItem(s),
	}
}

// ran reports whether a check ran, and how many findings it had.
func ran(st map[string]checks.Status, id string) (int, bool) {
	x, ok := st[id]
	if !ok || x.State != "ran" {
		return 0, false
	}
	return x.Findings, true
}

func isInput(s *model.Snapshot, name string) bool {
	for _, in := range s.Inputs {
		if in.Path == name {
			return true
		}
	}
	return false
}

func versionItem(s *model.Snapshot, st map[string]checks.Status) ChecklistItem {
	it := ChecklistItem{ID: "version", Title: "Confirm the kube-proxy version", Value: s.Version.String(),
		Command: "kubectl exec -n kube-system kube-proxy-POD -- kube-proxy --version"}
	switch {
	case s.Version.Doubt != "":
		it.State = StateUnknown
		it.Detail = "uncertain: " + s.Version.Doubt + "; " + s.Version.Source + ": add the output of kube-proxy --version"
		return it
	case !s.Version.Known() || strings.HasPrefix(s.Version.Source, "assumed") || s.Version.Source == "--version flag":
		it.State = StateUnknown
		it.Detail = "not in the inputs (" + s.Version.Source + "): add the output of kube-proxy --version"
		return it
	}
	it.State, it.Detail = StateOK, "from "+s.Version.Source
	if isInput(s, s.Version.Source) {
		it.Evidence = []model.Evidence{{File: s.Version.Source, Line: 1, Text: "kube-proxy " + s.Version.String()}}
	}
	if n, ok := ran(st, "mode-unsupported"); ok && n > 0 {
		it.State, it.Detail = StateProblem, "the configured mode is not supported by this version (mode-unsupported)"
	}
	return it
}

// kubeProxyPod reports whether a Pod is one of kube-proxy's.
func kubeProxyPod(p *corev1.Pod) bool {
	return p.Namespace == "kube-system" && (p.Labels["k8s-app"] == "kube-proxy" || strings.HasPrefix(p.Name, "kube-proxy-"))
}

func podsItem(s *model.Snapshot, st map[string]checks.Status) ChecklistItem {
	it := ChecklistItem{ID: "pods", Title: "Check the health of the kube-proxy pods",
		Command: "kubectl get pods -n kube-system -l k8s-app=kube-proxy -o wide"}
	var parts, problems []string
	var ev []model.Evidence
	pods, running, restarts := 0, 0, int32(0)
	for _, p := range s.Objects.Pods {
		if !kubeProxyPod(p.Pod) {
			continue
		}
		pods++
		ready := p.Status.Phase == corev1.PodRunning
		for _, c := range p.Status.ContainerStatuses {
			restarts += c.RestartCount
			ready = ready && c.Ready
		}
		if ready {
			running++
		} else {
			problems = append(problems, fmt.Sprintf("pod %s is %s", p.Name, podState(p.Pod)))
			ev = append(ev, model.EvidenceAt(p.Pos, "Pod "+p.Namespace+"/"+p.Name+": "+podState(p.Pod)))
		}
	}
	if pods > 0 {
		parts = append(parts, fmt.Sprintf("%d/%d pods running and ready, %d restarts", running, pods, restarts))
	}
	for _, ds := range s.Objects.DaemonSets {
		if ds.Namespace != "kube-system" || !strings.Contains(ds.Name, "kube-proxy") {
			continue
		}
		want, ready := ds.Status.DesiredNumberScheduled, ds.Status.NumberReady
		parts = append(parts, fmt.Sprintf("DaemonSet %s %d/%d ready", ds.Name, ready, want))
		text := fmt.Sprintf("DaemonSet %s/%s: %d desired, %d ready", ds.Namespace, ds.Name, want, ready)
		if ready < want {
			problems = append(problems, fmt.Sprintf("DaemonSet %s has %d of %d pods ready", ds.Name, ready, want))
			ev = append(ev, model.EvidenceAt(ds.Pos, text))
		} else if len(ev) == 0 {
			ev = append(ev, model.EvidenceAt(ds.Pos, text))
		}
	}
	if h := s.Healthz; h != nil {
		if h.IsHealthy() {
			parts = append(parts, "healthz ok")
		} else {
			problems = append(problems, "healthz reports unhealthy")
			ev = append(ev, model.Evidence{File: h.File, Line: 1, Text: "healthz: unhealthy"})
		}
	}
	n, checked := ran(st, "kube-proxy-unhealthy")
	switch {
	case checked && n > 0:
		it.State = StateProblem
		problems = append(problems, fmt.Sprintf("%d kube-proxy-unhealthy findings", n))
	case len(problems) > 0:
		it.State = StateProblem
	case len(parts) > 0 || checked:
		it.State = StateOK
	default:
		it.State = StateUnknown
		it.Detail = "not in the inputs: add kubectl get pods,daemonsets -n kube-system -l k8s-app=kube-proxy -o yaml"
		return it
	}
	it.Value = strings.Join(parts, "; ")
	if len(problems) > 0 {
		it.Detail = strings.Join(problems, "; ")
	}
	it.Evidence = ev
	return it
}

func podState(p *corev1.Pod) string {
	for _, c := range p.Status.ContainerStatuses {
		if w := c.State.Waiting; w != nil && w.Reason != "" {
			return w.Reason
		}
	}
	if p.Status.Phase == corev1.PodRunning {
		return "Running, not ready"
	}
	if p.Status.Phase == "" {
		return "of unknown phase"
	}
	return string(p.Status.Phase)
}

func modeItem(s *model.Snapshot, res *checks.Result, st map[string]checks.Status) ChecklistItem {
	it := ChecklistItem{ID: "mode", Title: "Identify the proxy mode", Value: res.Mode, Detail: res.ModeSource,
		Command: "kubectl describe configmap kube-proxy -n kube-system"}
	if s.Config != nil {
		pos := s.Config.FieldPos("mode")
		it.Evidence = []model.Evidence{model.EvidenceAt(pos, "mode: "+res.Mode)}
	}
	programmed := strings.Join(res.Programmed, ", ")
	inData := false
	for _, m := range res.Programmed {
		inData = inData || m == res.Mode
	}
	n, _ := ran(st, "mode-mismatch")
	switch {
	case n > 0 || len(res.Programmed) > 0 && !inData:
		it.State = StateProblem
		it.Detail = res.ModeSource + "; the data plane shows " + orNone(programmed) + " rules"
	case strings.HasPrefix(res.ModeSource, "assumed"):
		it.State = StateUnknown
		it.Detail = "not in the inputs: " + res.ModeSource
	default:
		it.State = StateOK
		if programmed != "" {
			it.Detail += "; the data plane shows " + programmed + " rules"
		}
	}
	return it
}

func orNone(s string) string {
	if s == "" {
		return "no"
	}
	return s
}

func rulesItem(s *model.Snapshot, res *checks.Result, st map[string]checks.Status) ChecklistItem {
	it := ChecklistItem{ID: "service-rules", Title: "Check that the service rules are present",
		Command: "sudo iptables -t nat -L KUBE-SERVICES -n (ipvsadm -Ln, nft list table ip kube-proxy)"}
	ids := []string{"service-missing", "nodeport-missing", "external-missing"}
	total, anyRan := 0, false
	var reasons []string
	for _, id := range ids {
		n, ok := ran(st, id)
		if !ok {
			if x, found := st[id]; found && x.Reason != "" {
				reasons = append(reasons, x.Reason)
			}
			continue
		}
		anyRan = true
		if n > 0 {
			reasons = append(reasons, fmt.Sprintf("%s: %d", id, n))
		}
		total += n
	}
	ports := len(s.ActivePorts())
	gaps := uncheckedBy(res.Coverage.Gaps, st, ids...)
	switch {
	case !anyRan:
		it.State = StateUnknown
		it.Detail = "not in the inputs"
		if len(reasons) > 0 {
			it.Detail += ": " + reasons[0]
		}
	case total > 0:
		it.State = StateProblem
		it.Value = fmt.Sprintf("%d of %d service ports lack rules", total, ports)
		it.Detail = strings.Join(reasons, ", ")
	case len(gaps) > 0:
		// Nothing found missing in what the inputs hold is no proof that
		// the rest is there.
		it.State = StateUnknown
		it.Value = fmt.Sprintf("none found missing, not all of %d service ports checked", ports)
		it.Detail = "not all checked: " + strings.Join(gaps, "; ")
	default:
		it.State = StateOK
		it.Value = fmt.Sprintf("rules present for %d service ports", ports)
		it.Detail = "service-missing, nodeport-missing and external-missing found nothing"
	}
	return it
}

// uncheckedBy returns what the checks ids ran without checking: their
// notes that say what was not checked, and the coverage gaps that name
// them ("service-missing: no ipset listing in the inputs ..."), each once;
// a note several of them carry alike names them all.
func uncheckedBy(gaps []string, st map[string]checks.Status, ids ...string) []string {
	var order []string
	by := map[string][]string{}
	for _, id := range ids {
		for _, text := range uncheckedParts(gaps, st[id]) {
			if by[text] == nil {
				order = append(order, text)
			}
			by[text] = append(by[text], id)
		}
	}
	out := make([]string, len(order))
	for i, text := range order {
		out[i] = strings.Join(by[text], ", ") + ": " + text
	}
	return out
}

// uncheckedParts returns what a check that ran did not check: its notes
// that say so, and the coverage gaps that name it, each once (nothing for
// a check that did not run, which checked nothing).
func uncheckedParts(gaps []string, x checks.Status) []string {
	if x.State != "ran" {
		return nil
	}
	var out []string
	add := func(text string) {
		for _, y := range out {
			if y == text {
				return
			}
		}
		out = append(out, text)
	}
	for _, n := range x.Notes {
		if strings.Contains(n, "not checked") {
			add(n)
		}
	}
	for _, g := range gaps {
		if text, ok := strings.CutPrefix(g, x.ID+": "); ok {
			add(text)
		}
	}
	return out
}

func syncItem(s *model.Snapshot, res *checks.Result, st map[string]checks.Status) ChecklistItem {
	it := ChecklistItem{ID: "sync", Title: "Check the metrics: rule sync under 1 s",
		Command: "curl http://localhost:10249/metrics | grep kubeproxy_sync_proxy_rules_duration_seconds"}
	if n, ok := ran(st, "sync-slow"); ok {
		it.State, it.Detail = StateOK, "sync-slow found nothing"
		if gaps := uncheckedBy(res.Coverage.Gaps, st, "sync-slow"); len(gaps) > 0 {
			it.State, it.Detail = StateUnknown, "not all checked: "+strings.Join(gaps, "; ")
		}
		if n > 0 {
			it.State, it.Detail = StateProblem, fmt.Sprintf("sync-slow: %d findings", n)
		}
	}
	if s.Metrics == nil {
		if it.State == "" {
			it.State, it.Detail = StateUnknown, "not in the inputs: add kube-proxy/metrics.txt (kube-proxy's /metrics)"
		}
		return it
	}
	worst, fam := -1.0, ""
	var ev []model.Evidence
	for _, f := range s.Metrics.KubeProxy().Families {
		h := f.SyncDuration
		if h == nil || h.P99 == nil {
			continue
		}
		ev = append(ev, model.EvidenceAt(h.Pos, h.Raw))
		if v := float64(*h.P99); v > worst {
			worst, fam = v, f.IPFamily
		}
	}
	if worst < 0 {
		if it.State == "" {
			it.State, it.Detail = StateUnknown, "the metrics hold no kubeproxy_sync_proxy_rules_duration_seconds observations"
		}
		return it
	}
	it.Value = fmt.Sprintf("p99 %.3g s", worst)
	if fam != "" {
		it.Value += " (" + fam + ")"
	}
	it.Evidence = ev
	if it.State == "" {
		it.State, it.Detail = StateOK, "estimated from kubeproxy_sync_proxy_rules_duration_seconds"
		if worst >= 1 {
			it.State = StateProblem
		}
	}
	return it
}

func backupItem(s *model.Snapshot) ChecklistItem {
	it := ChecklistItem{ID: "configmap-backup", Title: "Back up the ConfigMap before changes",
		Command: "kubectl get configmap kube-proxy -n kube-system -o yaml > kube-proxy-config-backup.yaml"}
	for _, cm := range s.Objects.ConfigMaps {
		if cm.Namespace == "kube-system" && cm.Name == "kube-proxy" {
			if cm.Described {
				// Its data, but no object kubectl apply takes back.
				it.State = StateUnknown
				it.Value = "ConfigMap kube-system/kube-proxy described in " + cm.Pos.File
				it.Detail = "the inputs show its data (kubectl describe), which kubectl apply cannot restore: save it with kubectl get -o yaml"
				it.Evidence = []model.Evidence{model.EvidenceAt(cm.Pos, "ConfigMap kube-system/kube-proxy")}
				return it
			}
			it.State = StateOK
			it.Value = "ConfigMap kube-system/kube-proxy in " + cm.Pos.File
			it.Detail = "the inputs hold a copy that can be restored with kubectl apply -f"
			it.Evidence = []model.Evidence{model.EvidenceAt(cm.Pos, "ConfigMap kube-system/kube-proxy")}
			return it
		}
	}
	it.State = StateUnknown
	it.Detail = "not in the inputs: no kube-system/kube-proxy ConfigMap"
	if s.Config != nil {
		it.Detail += " (the configuration itself is, from " + s.Config.Source + ")"
	}
	return it
}

func recoveryItem(s *model.Snapshot) ChecklistItem {
	it := ChecklistItem{ID: "recovery", Title: "Document the recovery steps", State: StateUnknown,
		Detail:  "not in the inputs: the plan is to restore the ConfigMap from its backup and restart the DaemonSet",
		Command: "kubectl apply -f kube-proxy-config-backup.yaml && kubectl rollout restart daemonset kube-proxy -n kube-system"}
	var names []string
	for _, ds := range s.Objects.DaemonSets {
		if ds.Namespace == "kube-system" && strings.Contains(ds.Name, "kube-proxy") {
			names = append(names, ds.Name)
		}
	}
	sort.Strings(names)
	if len(names) > 0 {
		it.Detail += " (DaemonSet " + strings.Join(names, ", ") + " is in the inputs)"
	}
	return it
}
