package checks

import (
	"fmt"
	"slices"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
)

// settingReaders names, for the settings of kube-proxy's configuration
// (a path, or the prefix of a section's paths), the checks whose answer
// depends on them: the checks that compare them with the rules or the
// node, and those whose expected rules they shape.
var settingReaders = []struct {
	path   string
	checks []string
}{
	{"mode", []string{"mode-mismatch", "mode-unsupported", "service-missing", "endpoint-missing", "endpoint-stale", "nodeport-missing", "external-missing"}},
	{"clusterCIDR", []string{"config-not-applied", "cluster-cidr-uncovered", "config-invalid", "service-missing"}},
	{"detectLocalMode", []string{"config-not-applied", "cluster-cidr-uncovered", "config-invalid", "service-missing"}},
	{"detectLocal", []string{"config-not-applied", "config-invalid", "service-missing"}},
	{"iptables.masqueradeAll", []string{"config-not-applied", "cluster-cidr-uncovered", "masquerade-missing", "service-missing"}},
	{"iptables.masqueradeBit", []string{"config-not-applied", "masquerade-missing", "service-missing"}},
	{"nftables.masqueradeAll", []string{"config-not-applied", "cluster-cidr-uncovered", "masquerade-missing", "service-missing"}},
	{"nftables.masqueradeBit", []string{"config-not-applied", "masquerade-missing", "service-missing"}},
	{"iptables.localhostNodePorts", []string{"nodeport-missing", "sysctl-unsafe", "service-missing"}},
	{"nodePortAddresses", []string{"nodeport-missing", "sysctl-unsafe", "service-missing"}},
	{"ipvs.scheduler", []string{"ipvs-scheduler-invalid", "ipvs-scheduler-mismatch"}},
	{"ipvs.strictARP", []string{"sysctl-unsafe"}},
	{"ipvs.excludeCIDRs", []string{"service-missing", "orphan-rules"}},
	{"conntrack", []string{"conntrack-stale", "sysctl-unsafe"}},
	{"iptables.syncPeriod", []string{"sync-stale", "sync-slow", "ruleset-scale"}},
	{"iptables.minSyncPeriod", []string{"sync-stale", "sync-slow", "ruleset-scale"}},
	{"ipvs.syncPeriod", []string{"sync-stale", "sync-slow", "ruleset-scale"}},
	{"ipvs.minSyncPeriod", []string{"sync-stale", "sync-slow", "ruleset-scale"}},
	{"nftables.syncPeriod", []string{"sync-stale", "sync-slow", "ruleset-scale"}},
	{"nftables.minSyncPeriod", []string{"sync-stale", "sync-slow", "ruleset-scale"}},
	{"featureGates", []string{"mode-unsupported", "config-invalid", "service-missing"}},
}

// readersOf returns the checks whose answer depends on the setting path.
func readersOf(path string) []string {
	var out []string
	for _, r := range settingReaders {
		if path == r.path || strings.HasPrefix(path, r.path+".") {
			out = append(out, r.checks...)
		}
	}
	return out
}

// aloneConfigNeed is how to give the checks one configuration.
var aloneConfigNeed = InputNeed{"the configuration kube-proxy runs with, alone (its ConfigMap, or its --config file, not both when they differ)",
	"kubectl -n kube-system get configmap kube-proxy -o yaml > kube-proxy-configmap.yaml"}

// otherConfigGaps are the coverage gaps of the other configurations given
// (model.Config.Others) that set otherwise settings checks of the run
// read: those checks answered for the configuration read only, and the
// other one may be what kube-proxy runs with. Settings no check reads
// (oomScoreAdj, metricsBindAddress) leave the snapshot's note alone.
func otherConfigGaps(f *facts, res *Result, chosen map[string]bool) []string {
	c := f.snap.Config
	if c == nil || len(c.Others) == 0 {
		return nil
	}
	ran := map[string]bool{}
	for _, st := range res.Statuses {
		ran[st.ID] = st.State == "ran" && chosen[st.ID]
	}
	var out []string
	for _, o := range c.Others {
		var settings, ids []string
		for _, path := range o.Differ {
			read := false
			for _, id := range readersOf(path) {
				if ran[id] {
					read = true
					if !slices.Contains(ids, id) {
						ids = append(ids, id)
					}
				}
			}
			if read {
				settings = append(settings, path)
			}
		}
		if len(ids) == 0 {
			continue
		}
		slices.Sort(ids)
		out = append(out, fmt.Sprintf("%s: checked against %s only: %s sets %s otherwise, and kube-proxy may run with it",
			strings.Join(ids, ", "), configWhere(c), configWhere(&model.Config{Source: o.Source, Pos: o.Pos}), strings.Join(settings, ", ")))
	}
	return out
}
