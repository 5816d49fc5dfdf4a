package checks_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestUpstreamGoldensAreClean analyses what the real kube-proxy v1.37.2
// programmed for each conformance scenario of testdata/upstream (its
// iptables-restore input, in kube-proxy's own spelling) together with the
// scenario's Services, EndpointSlices, Node and configuration: kube-proxy
// is right by definition, so every finding is a false positive.
func TestUpstreamGoldensAreClean(t *testing.T) {
	root := filepath.Join(parsetest.Root(t), "testdata", "upstream")
	scenarios, err := filepath.Glob(filepath.Join(root, "scenarios", "*"))
	if err != nil || len(scenarios) == 0 {
		t.Fatalf("no scenarios under %s: %v", root, err)
	}
	for _, dir := range scenarios {
		name := filepath.Base(dir)
		golden := filepath.Join(root, "golden", "iptables", name)
		dumps, _ := filepath.Glob(filepath.Join(golden, "iptables-restore.v*"))
		if len(dumps) == 0 {
			continue
		}
		t.Run(name, func(t *testing.T) {
			paths := append([]string{filepath.Join(dir, "cluster"), filepath.Join(dir, "kube-proxy")}, dumps...)
			if _, err := os.Stat(filepath.Join(dir, "iptables")); err == nil {
				paths = append(paths, filepath.Join(dir, "iptables"))
			}
			snaps, err := load.Load(paths, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range snaps {
				res := checks.Run(s, checks.All)
				for _, f := range res.Findings {
					t.Errorf("%s: %s: %s (%v)", f.Check, f.Service, f.Message, f.Evidence)
				}
				for _, st := range res.Statuses {
					// The goldens are rules, Services and configuration: the
					// checks of the rules must run; those of node state
					// (metrics, logs, sysctls, ...) skip for want of inputs.
					if c := checks.ByID(st.ID); st.State == "skipped" && c != nil && c.RunFleet == nil && readsRules(c) {
						t.Errorf("%s skipped: %s", st.ID, st.Reason)
					}
				}
			}
		})
	}
}

// readsRules reports whether a check judges the data plane's rules.
func readsRules(c *checks.Check) bool {
	for _, n := range c.Needs {
		if n == checks.NeedDataplane || n == checks.NeedIPTables {
			return true
		}
	}
	return false
}
