package checks_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/checktest"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestClusterIPOutsideServiceCIDRRuns checks that the silence of
// clusterip-outside-servicecidr on the healthy bundles is a run that found
// nothing when their exports hold ServiceCIDRs, and a skip naming the
// missing input when they do not.
func TestClusterIPOutsideServiceCIDRRuns(t *testing.T) {
	c := checks.ByID("clusterip-outside-servicecidr")
	status := func(t *testing.T, dir string) checks.Status {
		t.Helper()
		snaps, err := load.Load([]string{dir}, load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		res := checks.Run(snaps[0], []*checks.Check{c})
		if len(res.Statuses) != 1 {
			t.Fatalf("%d statuses", len(res.Statuses))
		}
		return res.Statuses[0]
	}
	for _, mode := range []string{"iptables", "ipvs", "nftables"} {
		t.Run(mode+"-healthy", func(t *testing.T) {
			st := status(t, filepath.Join(parsetest.Root(t), "testdata", "bundles", mode+"-healthy"))
			if st.State != "skipped" || !strings.Contains(st.Reason, "kubectl get servicecidrs -o yaml") {
				t.Errorf("without ServiceCIDRs: %+v, want skipped for want of them", st)
			}
		})
		t.Run(mode+"/healthy-servicecidrs", func(t *testing.T) {
			s := checktest.Load(t, filepath.Join(parsetest.Root(t), "testdata", "scenarios", mode, "healthy-servicecidrs.txtar"))
			if st := status(t, s.Dir); st.State != "ran" || st.Findings != 0 {
				t.Errorf("with ServiceCIDRs: %+v, want ran without findings", st)
			}
		})
	}
}

// TestClusterIPOutsideServiceCIDRSeverity checks the severity of the
// scenarios' findings: a warning while nothing else in the inputs uses the
// addresses, an error when a Node's pod range holds one.
func TestClusterIPOutsideServiceCIDRSeverity(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		want     checks.Severity
	}{
		{"iptables/clusterip-outside-servicecidr", checks.Warning},
		{"nftables/clusterip-outside-servicecidr", checks.Warning},
		{"ipvs/clusterip-outside-servicecidr-reused", checks.Error},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			s := checktest.Load(t, filepath.Join(parsetest.Root(t), "testdata", "scenarios", tc.scenario+".txtar"))
			snaps, err := load.Load([]string{s.Dir}, s.Options)
			if err != nil {
				t.Fatal(err)
			}
			res := checks.Run(snaps[0], []*checks.Check{checks.ByID("clusterip-outside-servicecidr")})
			if len(res.Findings) != 1 {
				t.Fatalf("%d findings, want one for every Service", len(res.Findings))
			}
			if f := res.Findings[0]; f.Severity != tc.want {
				t.Errorf("severity %s, want %s: %s", f.Severity, tc.want, f.Message)
			}
		})
	}
}
