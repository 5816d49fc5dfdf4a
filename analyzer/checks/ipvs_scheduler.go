package checks

import (
	"fmt"
	"sort"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
	"github.com/proxyscan/proxyscan/parsers/kpconfig"
)

// kernelSchedulers are the schedulers of the Linux IPVS code
// (net/netfilter/ipvs/ip_vs_*.c, "twos" since Linux 6.3), each its own
// module ip_vs_<name>.
var kernelSchedulers = []string{"rr", "wrr", "lc", "wlc", "lblc", "lblcr", "dh", "sh", "sed", "nq", "fo", "ovf", "mh", "twos"}

// configuredScheduler returns the scheduler kube-proxy's ipvs proxier uses:
// ipvs.scheduler, or rr when it is empty.
func configuredScheduler(c *model.Config) string {
	if c == nil || c.IPVS.Scheduler == "" {
		return "rr"
	}
	return c.IPVS.Scheduler
}

// ipvsConfigured reports whether the snapshot's configuration selects IPVS
// mode.
func ipvsConfigured(s *model.Snapshot) bool {
	return s.Config != nil && s.Config.EffectiveMode() == model.ModeIPVS
}

var ipvsSchedulerInvalid = &Check{
	ID:       "ipvs-scheduler-invalid",
	Severity: Error,
	Title:    "the configured IPVS scheduler is not one kube-proxy can use",
	What: "`ipvs.scheduler` names the IPVS scheduling method of every virtual server. kube-proxy 1.20–1.26 only " +
		"accepts rr, wrr, lc, wlc, lblc, lblcr, sh, dh, sed and nq (and empty, meaning rr): `mh` and any other name " +
		"fail validation. From 1.27 any name passes validation, and kube-proxy's start-up probe creates a dummy " +
		"virtual server with it, which the kernel refuses when it has no such scheduler. With a Warning severity " +
		"the check also reports the source-hashing schedulers `sh` and `mh` where the IPVS table shows why they " +
		"hurt: kube-proxy sets no fallback flag (`sh-fallback`, `mh-fallback`), so clients that hash to a real " +
		"server at weight 0 (being drained) get no destination at all.",
	Why: "kube-proxy exits at start-up with an unusable scheduler (before 1.26 it fell back to iptables mode), so " +
		"the node's Service rules stop being maintained. A source-hashing scheduler without fallback turns every " +
		"endpoint termination into connection failures for the clients hashed to it.",
	Fix: "Set `ipvs.scheduler` to a scheduler of the running release and kernel (rr unless there is a reason), make " +
		"sure its module `ip_vs_<name>` is available on every node, and restart kube-proxy. Prefer rr over sh/mh: " +
		"kube-proxy gives every real server weight 1 and uses persistence for session affinity anyway.",
	Needs: []Need{NeedConfig},
	Modes: []string{model.ModeIPVS},
	Run:   runIPVSSchedulerInvalid,
}

func runIPVSSchedulerInvalid(p *Pass) {
	c := p.Snap.Config
	if !ipvsConfigured(p.Snap) {
		p.Skip("kube-proxy is not configured for ipvs mode")
		return
	}
	sched := configuredScheduler(c)
	ev := configEvidence(c, "ipvs.scheduler")
	for _, fe := range kpconfig.Validate(c.Effective, p.Snap.Version.Version) {
		if fe.Field != "ipvs.scheduler" {
			continue
		}
		msg := fmt.Sprintf("kube-proxy %s rejects ipvs.scheduler %q: %s", minorOf(p), sched, fe.KubeProxyError())
		if sched == "mh" {
			msg += " (mh is accepted from 1.27)"
		}
		p.Report(Finding{Message: msg, Evidence: []model.Evidence{fieldErrorEvidence(c, fe)},
			Advice: "Use one of the schedulers the release accepts (rr when in doubt) and restart kube-proxy."})
		return
	}
	if p.Resolution().Has(resolve.IPVSSchedulerProbe) && !contains(kernelSchedulers, sched) {
		p.Report(Finding{
			Message: fmt.Sprintf("ipvs.scheduler %q is no IPVS scheduler of the Linux kernel (%s): kube-proxy %s's start-up probe cannot create a virtual server with it and kube-proxy exits",
				sched, strings.Join(kernelSchedulers, ", "), minorOf(p)),
			Evidence: []model.Evidence{ev},
			Advice:   "Correct the scheduler name (kernel names are lower case, e.g. rr, wrr, lc, mh) and restart kube-proxy.",
		})
		return
	}
	if sched != "sh" && sched != "mh" {
		return
	}
	t := p.Resolution().IPVSTable()
	if t == nil {
		return
	}
	for _, s := range t.Services {
		if s.SchedName != sched || s.Flags&ipvs.FlagSched1 != 0 {
			continue
		}
		for _, d := range s.Destinations {
			if d.Weight != 0 {
				continue
			}
			p.Report(Finding{
				Severity: Warning,
				Message: fmt.Sprintf("virtual server %s uses scheduler %s without %s-fallback while real server %s is at weight 0: clients that hash to it get no destination until it is deleted",
					s.String(), sched, sched, ipvsDestString(d)),
				Evidence: []model.Evidence{ev, model.EvidenceAt(s.Pos, s.Raw), model.EvidenceAt(d.Pos, d.Raw)},
				Advice:   "kube-proxy never sets the fallback flag; use rr (Services that need stickiness have sessionAffinity ClientIP, which IPVS mode implements with persistence).",
			})
			break
		}
	}
}

func ipvsDestString(d *ipvs.Destination) string { return d.String() }

var ipvsSchedulerMismatch = &Check{
	ID:       "ipvs-scheduler-mismatch",
	Severity: Warning,
	Title:    "virtual servers use another scheduler than configured",
	What: "Every virtual server kube-proxy creates gets the scheduler of `ipvs.scheduler` (rr when empty). Here " +
		"virtual servers of the IPVS table use another one.",
	Why: "The table was programmed by a kube-proxy with another configuration (the ConfigMap was edited but the " +
		"pods not restarted, or the captured configuration is not the one the node runs), or something else edits " +
		"the IPVS table. Either way the balancing is not what the configuration says, and the configuration in " +
		"hand is not a reliable description of the node.",
	Fix: "Compare the ConfigMap with the configuration the running pod loaded (`kubectl -n kube-system logs` of the " +
		"pod, or `curl localhost:10249/configz` on the node) and restart kube-proxy so that it rewrites the virtual " +
		"servers; look for other tools running `ipvsadm` on the node.",
	Needs: []Need{NeedConfig},
	Modes: []string{model.ModeIPVS},
	Run:   runIPVSSchedulerMismatch,
}

func runIPVSSchedulerMismatch(p *Pass) {
	if !ipvsConfigured(p.Snap) {
		p.Skip("kube-proxy is not configured for ipvs mode")
		return
	}
	t := p.Resolution().IPVSTable()
	if t == nil {
		p.Skip("no ipvsadm output in the inputs")
		return
	}
	want := configuredScheduler(p.Snap.Config)
	by := map[string][]*ipvs.Service{}
	var unknown []*ipvs.Service
	for _, s := range t.Services {
		switch {
		case !s.SchedulerKnown():
			unknown = append(unknown, s)
		case s.FWMark == 0 && s.SchedName != want:
			by[s.SchedName] = append(by[s.SchedName], s)
		}
	}
	if len(unknown) > 0 {
		p.Note("scheduler of %s not checked: ipvsadm -Ln %s prints %s", plural(len(unknown), "virtual server"), unknown[0].Listed.Option(), unknown[0].Listed.Hidden())
	}
	// The Service port each virtual server belongs to, from the views
	// (their dispatches are the virtual servers).
	owner := map[string]string{}
	for _, v := range p.Views() {
		for _, e := range v.Entries {
			for _, d := range e.Dispatch {
				if d != nil && e.Service != "" {
					owner[d.ID] = e.Service
				}
			}
		}
	}
	var names []string
	for n := range by {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ss := by[n]
		ev := []model.Evidence{configEvidence(p.Snap.Config, "ipvs.scheduler")}
		var list []string
		services := map[string]bool{}
		for i, s := range ss {
			name := owner["virtual server "+s.String()]
			if name != "" {
				services[name] = true
			}
			if i < 5 {
				ev = append(ev, model.EvidenceAt(s.Pos, s.Raw))
				switch {
				case name != "":
					list = append(list, s.String()+" ("+name+")")
				case len(p.Snap.Objects.Services) > 0:
					list = append(list, s.String()+" (no Service)")
				default:
					// Without the Services, whose a virtual server is
					// is not known, not that it has none.
					list = append(list, s.String())
				}
			}
		}
		more := ""
		if len(ss) > 5 {
			more = fmt.Sprintf(" and %d more", len(ss)-5)
		}
		f := Finding{
			Message:  fmt.Sprintf("%d of %d virtual servers use scheduler %s but ipvs.scheduler is %s: %s%s", len(ss), len(t.Services), n, want, strings.Join(list, ", "), more),
			Evidence: ev,
			Advice:   "Restart kube-proxy on the node so that it updates the virtual servers to the configured scheduler; if they change back, find what else programs the IPVS table.",
		}
		if len(services) == 1 {
			for name := range services {
				f.Service = name
			}
		}
		p.Report(f)
	}
}

var ipvsModuleMissing = &Check{
	ID:       "ipvs-module-missing",
	Severity: Error,
	Title:    "ipvs mode without its kernel modules",
	What: "IPVS mode needs the kernel modules `ip_vs`, the scheduler's `ip_vs_<scheduler>` (ip_vs_rr by default) " +
		"and `nf_conntrack` (nf_conntrack_ipv4 on kernels before 4.19), loaded or built into the kernel; kube-proxy " +
		"1.20–1.26 also insists on ip_vs_rr, ip_vs_wrr and ip_vs_sh. The module listing of the node lacks one of " +
		"them, a collected bundle records that the net.ipv4.vs sysctls the ip_vs module creates were absent, or " +
		"kube-proxy's log says the IPVS proxier cannot be used.",
	Why: "Since 1.26 kube-proxy exits when it cannot use IPVS: after switching a cluster to IPVS mode without the " +
		"modules, the kube-proxy pods go into CrashLoopBackOff and no Service rule is maintained. Before 1.26 it " +
		"silently fell back to iptables mode, which leaves a configuration that says ipvs on a node that runs iptables.",
	Fix: "Load the modules on the node (`modprobe -a ip_vs ip_vs_rr nf_conntrack`, plus the configured scheduler's " +
		"module) and make them persistent (`/etc/modules-load.d/ipvs.conf`), or choose another proxy mode; then " +
		"restart kube-proxy. Nodes built from one image need the change in the image.",
	Needs: []Need{NeedConfig},
	Modes: []string{model.ModeIPVS},
	Run:   runIPVSModuleMissing,
}

// ipvsSysctlsAbsent reports a bundle whose manifest records that the
// net.ipv4.vs sysctls were absent when it was collected (with /proc/sys
// readable): the ip_vs module, which creates them, was not loaded.
func ipvsSysctlsAbsent(s *model.Snapshot) (model.Evidence, bool) {
	if s.Manifest == nil {
		return model.Evidence{}, false
	}
	src := s.Manifest.Source("sysctl")
	if src == nil || src.Status != "ok" && src.Status != "partial" {
		return model.Evidence{}, false
	}
	for _, n := range src.Notes {
		if strings.HasPrefix(n, "absent") && strings.Contains(n, "net.ipv4.vs.conntrack") {
			return model.EvidenceAt(src.Pos, "sysctl: "+n), true
		}
	}
	return model.Evidence{}, false
}

func runIPVSModuleMissing(p *Pass) {
	s := p.Snap
	if !ipvsConfigured(s) {
		p.Skip("kube-proxy is not configured for ipvs mode")
		return
	}
	c := s.Config
	logged := logMatches(s, "ipvs-modules-missing", "ipvs-unusable")
	if s.Modules == nil {
		if ev, ok := ipvsSysctlsAbsent(s); ok {
			p.Report(Finding{
				Message:  "the node has no net.ipv4.vs sysctls, which the ip_vs module creates when it is loaded: IPVS is not available on the node",
				Evidence: append([]model.Evidence{configEvidence(c, "mode"), ev}, logEvidence(logged, 3)...),
				Advice:   ipvsModuleAdvice(p),
			})
			return
		}
		if len(logged) == 0 {
			p.Skip("no module listing (/proc/modules or lsmod) in the inputs, and no IPVS start-up error in the logs")
			return
		}
		p.Report(Finding{
			Message:  fmt.Sprintf("kube-proxy's log says it cannot use IPVS: %s", firstLine(logged[0].Entry.Message)),
			Evidence: append([]model.Evidence{configEvidence(c, "mode")}, logEvidence(logged, 3)...),
			Advice:   ipvsModuleAdvice(p),
		})
		return
	}
	type need struct{ module, why string }
	sched := configuredScheduler(c)
	needs := []need{{"ip_vs", "IPVS itself"}, {"ip_vs_" + sched, "scheduler " + sched}}
	seen := map[string]bool{sched: true}
	if !p.Resolution().Has(resolve.IPVSSchedulerProbe) {
		// kube-proxy checks the modules list of GetRequiredIPVSModules.
		for _, n := range []string{"rr", "wrr", "sh"} {
			if !seen[n] {
				seen[n] = true
				needs = append(needs, need{"ip_vs_" + n, "required by kube-proxy " + minorOf(p) + "'s start-up check"})
			}
		}
	}
	if t := p.Resolution().IPVSTable(); t != nil {
		for _, svc := range t.Services {
			if n := svc.SchedName; n != "" && !seen[n] {
				seen[n] = true
				needs = append(needs, need{"ip_vs_" + n, "scheduler " + n + " of the virtual servers"})
			}
		}
	}
	var missing []string
	for _, n := range needs {
		if !s.Modules.Has(n.module) {
			missing = append(missing, fmt.Sprintf("%s (%s)", n.module, n.why))
		}
	}
	if !s.Modules.Has("nf_conntrack") && !s.Modules.Has("nf_conntrack_ipv4") {
		missing = append(missing, "nf_conntrack (connection tracking of IPVS connections)")
	}
	if len(missing) == 0 {
		return
	}
	if s.Modules.Partial != "" {
		// A filtered listing (lsmod | grep ip_vs) proves nothing by what
		// it leaves out.
		p.Note(modulesUnchecked+"%s: %s is partial (%s); modules it does not list may be loaded", strings.Join(missing, ", "), s.Modules.File, s.Modules.Partial)
		return
	}
	ev := []model.Evidence{configEvidence(c, "mode")}
	if c.IsSet("ipvs.scheduler") {
		ev = append(ev, configEvidence(c, "ipvs.scheduler"))
	}
	ev = append(ev, model.Evidence{File: s.Modules.File, Text: "module listing"})
	ev = append(ev, logEvidence(logged, 3)...)
	p.Report(Finding{
		Message:  fmt.Sprintf("ipvs mode needs kernel module %s, which the module listing shows neither loaded nor built in", strings.Join(missing, ", ")),
		Evidence: ev,
		Advice:   ipvsModuleAdvice(p),
	})
}

// modulesUnchecked starts the note of ipvs-module-missing on modules a
// partial listing does not show; coverage makes it a gap (uncheckedNotes).
const modulesUnchecked = "kernel modules not checked: "

// wholeModulesNeed is how to get every module of the node.
var wholeModulesNeed = InputNeed{"the node's whole module listing", "cat /proc/modules > modules.txt (on the node)"}

func ipvsModuleAdvice(p *Pass) string {
	then := "kube-proxy " + minorOf(p) + " exits at start-up without them, so its pod restarts in CrashLoopBackOff"
	if !p.Resolution().Has(resolve.IPVSFallbackRemoved) {
		then = "kube-proxy " + minorOf(p) + " falls back to iptables mode without them"
	}
	return "Load the modules (modprobe -a ip_vs ip_vs_" + configuredScheduler(p.Snap.Config) + " nf_conntrack) and list them in /etc/modules-load.d so that they load at boot, then restart kube-proxy; " + then + "."
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
