package checks

import (
	"fmt"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/kpconfig"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
)

// configEvidence returns the evidence of a configuration field: the line
// that sets it (in the file, the ConfigMap or on the command line) with its
// value, or the start of the configuration when kube-proxy defaults it.
func configEvidence(c *model.Config, path string) model.Evidence {
	pos := c.FieldPos(path)
	for _, k := range []*kpconfig.Config{c.Read, c.Effective} {
		if k == nil {
			continue
		}
		if f := k.Field(path); f != nil && f.Origin != kpconfig.OriginDefault && f.Origin != kpconfig.OriginRuntime {
			text := path + ": " + f.Raw
			if f.Flag != "" {
				text = f.Flag + "=" + f.Raw
			}
			return model.EvidenceAt(pos, text)
		}
	}
	return model.EvidenceAt(pos, fmt.Sprintf("%s not set (kube-proxy's default applies)", path))
}

// minorOf returns "1.N" of the snapshot's version.
func minorOf(p *Pass) string { return p.Snap.Version.MinorString() }

// versionAssumed reports whether no input gives kube-proxy's version: the
// snapshot's is assumed (the newest release, or the newest that writes
// the rules' layout).
func versionAssumed(s *model.Snapshot) bool { return strings.HasPrefix(s.Version.Source, "assumed") }

// versionUnchecked starts the notes of what a check did not report because
// it depends on the kube-proxy release, which no input gives; coverage
// makes them a gap.
const versionUnchecked = "not checked, as no input gives kube-proxy's version (use --version): "

// versionNeed is how to get kube-proxy's version.
var versionNeed = InputNeed{"kube-proxy's version", "kubectl -n kube-system exec ds/kube-proxy -- kube-proxy --version > version.txt"}

// ownedElsewhere lists the configuration fields whose rejection another
// check reports with more to say: the scheduler (ipvs-scheduler-invalid)
// and the mode (mode-unsupported).
var ownedElsewhere = map[string]bool{"ipvs.scheduler": true, "mode": true}

var configInvalid = &Check{
	ID:       "config-invalid",
	Severity: Error,
	Title:    "a kube-proxy configuration value kube-proxy rejects",
	What: "kube-proxy validates its KubeProxyConfiguration at start-up with the rules of its release " +
		"(pkg/proxy/apis/config/validation): ranges (masqueradeBit 0–31, oomScoreAdj -1000–1000), sync periods " +
		"(positive, minSyncPeriod not above syncPeriod), addresses (bindAddress, healthzBindAddress, " +
		"metricsBindAddress as IP:port), CIDRs (clusterCIDR, nodePortAddresses, ipvs.excludeCIDRs), " +
		"detectLocalMode and its interface, feature gates and logging. The finding names the field, its line and " +
		"kube-proxy's own error text for the snapshot's version. Unknown and duplicate fields, and fields of " +
		"another release, are warnings: kube-proxy falls back to lenient decoding and ignores them. The scheduler " +
		"and the mode are reported by `ipvs-scheduler-invalid` and `mode-unsupported`. With a Warning severity it " +
		"also reports `detectLocalMode: ClusterCIDR` without a `clusterCIDR` when externalTrafficPolicy Local " +
		"Services make the missing local-traffic detector matter.",
	Why: "kube-proxy exits when its configuration is invalid, so its pod restarts in CrashLoopBackOff and the " +
		"node's Service rules stop being updated (they stay as the last kube-proxy left them, or are missing on a " +
		"new node). An ignored field silently does not do what it says, which is how a misspelt `strictARP` or a " +
		"field of a newer release goes unnoticed.",
	Fix: "Correct the named field in the kube-proxy ConfigMap (`kubectl -n kube-system edit configmap kube-proxy`) " +
		"or the flag on the command line, then restart the kube-proxy pods (`kubectl -n kube-system rollout restart " +
		"daemonset kube-proxy`). Check field names against the KubeProxyConfiguration reference of the running " +
		"release.",
	Needs: []Need{NeedConfig},
	Run:   runConfigInvalid,
}

func runConfigInvalid(p *Pass) {
	c := p.Snap.Config
	ver := p.Snap.Version.Version
	// With no version in the inputs, what depends on the release is not
	// reported: a value is rejected only when the oldest release modelled
	// rejects it too, and a field only some releases know is noted.
	assumed := versionAssumed(p.Snap)
	var oldest map[string]bool
	if assumed {
		oldest = map[string]bool{}
		for _, fe := range kpconfig.Validate(c.Effective, kpversion.Oldest) {
			oldest[fe.Field] = true
		}
	}
	for _, fe := range kpconfig.Validate(c.Effective, ver) {
		if ownedElsewhere[fe.Field] {
			continue
		}
		if assumed && !oldest[fe.Field] {
			p.Note(versionUnchecked+"kube-proxy %s rejects %s (%s), kube-proxy %s does not", minorOf(p), fe.Field, fe.KubeProxyError(), kpversion.Oldest.MinorString())
			continue
		}
		if assumed && kpconfig.UnrecognizedGate(fe) {
			// A gate that the oldest release modelled refuses too may
			// be one of a release before it (SupportIPVSProxyMode until
			// 1.19), or after the one assumed: which gates a release
			// knows depends on it.
			p.Note(versionUnchecked+"kube-proxy %s and %s refuse to start with %s (%s), a gate another release may know", kpversion.Oldest.MinorString(), minorOf(p), fe.Field, fe.KubeProxyError())
			continue
		}
		what := "rejects"
		if fe.Startup {
			what = "refuses to start with"
		}
		p.Report(Finding{
			Message:  fmt.Sprintf("kube-proxy %s %s %s: %s", minorOf(p), what, fe.Field, fe.KubeProxyError()),
			Evidence: []model.Evidence{fieldErrorEvidence(c, fe)},
			Advice:   fmt.Sprintf("Fix %s in %s; kube-proxy exits when its configuration is invalid, so its pod stays in CrashLoopBackOff until then.", fe.Field, c.Source),
		})
	}
	var ignored parsers.ErrorList
	if c.Read != nil {
		ignored = append(ignored, c.Read.Warnings...)
		unknown := kpconfig.UnknownIn(c.Read, ver)
		if assumed {
			for _, w := range unknown {
				_, msg := errorPos(w)
				p.Note(versionUnchecked+"%s", strings.TrimSuffix(msg, ": kube-proxy ignores it"))
			}
			unknown = nil
		}
		ignored = append(ignored, unknown...)
	}
	for _, w := range ignored {
		pos, msg := errorPos(w)
		p.Report(Finding{
			Severity: Warning,
			Message:  fmt.Sprintf("kube-proxy %s ignores a field: %s", minorOf(p), strings.TrimSuffix(msg, ": kube-proxy ignores it")),
			Evidence: []model.Evidence{model.EvidenceAt(pos, msg)},
			Advice:   "kube-proxy decodes its configuration strictly first and, when only unknown or duplicate fields fail, again leniently without them: the value has no effect. Fix the spelling, or remove the field, in " + c.Source + ".",
		})
	}
	checkLocalDetector(p, c)
}

// fieldErrorEvidence returns the evidence of a validation error: its line
// and the value written there.
func fieldErrorEvidence(c *model.Config, fe kpconfig.FieldError) model.Evidence {
	text := fmt.Sprintf("%s: %v", fe.Field, fe.Value)
	for _, k := range []*kpconfig.Config{c.Read, c.Effective} {
		if k == nil {
			continue
		}
		if f := k.Field(fe.Field); f != nil && f.Raw != "" && f.Origin != kpconfig.OriginDefault {
			text = fe.Field + ": " + f.Raw
			if f.Flag != "" {
				text = f.Flag + "=" + f.Raw
			}
			break
		}
	}
	pos := fe.Pos
	if !pos.IsValid() {
		pos = c.Pos
	}
	return model.EvidenceAt(pos, text)
}

// errorPos splits a positioned parser error.
func errorPos(err error) (parsers.Pos, string) {
	if pe, ok := err.(*parsers.Error); ok {
		return pe.Pos, pe.Msg
	}
	return parsers.Pos{}, err.Error()
}

// checkLocalDetector reports detectLocalMode ClusterCIDR without a
// clusterCIDR (kube-proxy logs "Defaulting to no-op detect-local" and runs
// without a local-traffic detector) when Services rely on the detector: in
// iptables and nftables mode, traffic from pods to the external and load
// balancer IPs of an externalTrafficPolicy Local Service is short-circuited
// to the cluster endpoints only when kube-proxy can tell pod traffic apart;
// otherwise it takes the Local path and is dropped where no endpoint runs.
func checkLocalDetector(p *Pass, c *model.Config) {
	if mode, _ := p.Mode(); mode == model.ModeIPVS || string(c.DetectLocalMode) != "ClusterCIDR" || strings.TrimSpace(c.ClusterCIDR) != "" {
		return // IPVS mode uses the detector for masquerading only
	}
	var users []string
	for _, sp := range p.Snap.ActivePorts() {
		if sp.ExternalPolicyLocal && (len(sp.ExternalIPs) > 0 || len(sp.LoadBalancerVIPs) > 0) {
			users = append(users, sp.String())
		}
	}
	if len(users) == 0 {
		return
	}
	p.Report(Finding{
		Severity: Warning,
		Message: fmt.Sprintf("detectLocalMode is ClusterCIDR but clusterCIDR is empty: kube-proxy runs without a local-traffic detector, "+
			"so pods reaching the external or load balancer IPs of %s are not short-circuited to the cluster endpoints and are dropped on nodes without a local endpoint", strings.Join(users, ", ")),
		Evidence: []model.Evidence{configEvidence(c, "detectLocalMode"), configEvidence(c, "clusterCIDR")},
		Advice:   "Set clusterCIDR to the cluster's pod CIDR(s), or use detectLocalMode NodeCIDR (the node's podCIDR) or an interface-based mode, and restart kube-proxy.",
	})
}

// The checks whose findings foldStartupFailure makes one.
const (
	idConfigInvalid = "config-invalid"
	idLogErrors     = "log-errors"
)

// startupFailed marks the log-errors findings of kube-proxy's start-up
// failure (the klog pattern startup-failed).
const startupFailed = " (startup-failed): "

// A configuration kube-proxy rejects (config-invalid) explains the
// start-up failure kube-proxy logs about it (log-errors, startup-failed):
// kube-proxy exits at start when its configuration is invalid. The
// rejection is the cause: its finding stays and states the logged failure
// after it (foldStartupFailure).

// rejectedField returns the field a config-invalid finding says kube-proxy
// rejects ("featureGates.EndpointSliceProxying"), or "" for another
// finding of it (an ignored field).
func rejectedField(c *Finding) string {
	for _, verb := range []string{" rejects ", " refuses to start with "} {
		if _, rest, ok := strings.Cut(c.Message, verb); ok {
			field, _, _ := strings.Cut(rest, ": ")
			return field
		}
	}
	return ""
}

// startupFailure reports whether d, a finding of log-errors, is kube-proxy's
// logged start-up failure on c's node naming the field c says kube-proxy
// rejects (its last part: the logged error spells the field as Go does,
// KubeProxyConfiguration.IPTables.MasqueradeBit, and a feature gate by its
// name).
func startupFailure(_ *facts, c, d *Finding) bool {
	field := rejectedField(c)
	if d.Node != c.Node || field == "" || !strings.Contains(d.Message, startupFailed) {
		return false
	}
	last := strings.ToLower(field[strings.LastIndexByte(field, '.')+1:])
	for _, e := range d.Evidence {
		if strings.Contains(strings.ToLower(e.Text), last) {
			return true
		}
	}
	return false
}

// foldStartupFailure states, after the message of config-invalid, that
// kube-proxy logged its failure to start (ds, the findings of log-errors),
// with their evidence.
func foldStartupFailure(_ *facts, c *Finding, ds []Finding) {
	for _, d := range ds {
		c.Evidence = appendEvidence(c.Evidence, d.Evidence...)
		c.Severity = max(c.Severity, d.Severity)
	}
	c.Message += "; kube-proxy logged it as it failed to start, and exits until it is fixed"
}

// noteStartupFailure tells, in the status of log-errors, that its
// start-up failure is in the config-invalid finding.
func noteStartupFailure([]Finding) string {
	return "the start-up failure logged is explained by the configuration kube-proxy rejects: reported in the config-invalid finding"
}
