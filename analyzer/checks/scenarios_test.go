package checks_test

import (
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/checktest"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestScenarios runs every check on every scenario of testdata/scenarios
// and compares the findings with the scenarios' "# want" lines.
//
// The scenarios of the checks that read the tracer's sweep
// (service-unreachable, load-balance-skew) and the healthy ones run once
// more on one CPU, where no sweep runs in the background and every packet
// is traced when a check asks for it: the findings must be those of the
// run on every CPU.
func TestScenarios(t *testing.T) {
	traced := 0
	for _, c := range checks.All {
		if c.Traces {
			traced++
		}
	}
	if traced < 2 {
		t.Fatalf("%d checks read the sweep, want service-unreachable and load-balance-skew", traced)
	}
	for _, file := range checktest.Files(t, "scenarios/*/*.txtar") {
		name := filepath.Base(filepath.Dir(file)) + "/" + strings.TrimSuffix(filepath.Base(file), ".txtar")
		t.Run(name, func(t *testing.T) {
			all := checktest.Run(t, file, checks.All)
			// The scenarios that trace, and without -short the healthy ones too.
			if strings.Contains(name, "unreachable") || strings.Contains(name, "skew") || !testing.Short() && strings.Contains(name, "healthy") {
				prev := runtime.GOMAXPROCS(1)
				one := checktest.Run(t, file, checks.All)
				runtime.GOMAXPROCS(prev)
				if !reflect.DeepEqual(all, one) {
					t.Errorf("on one CPU the findings differ:\n%v\nwant\n%v", one, all)
				}
				// service-unreachable looks at the ports that reach
				// their endpoints on every core first, from many ports
				// on: the same findings from the first port on.
				restore := checks.SetReachingParallelFrom(1)
				early := checktest.Run(t, file, checks.All)
				restore()
				if !reflect.DeepEqual(all, early) {
					t.Errorf("with the ports read on every core the findings differ:\n%v\nwant\n%v", early, all)
				}
			}
			for _, f := range all {
				if f.Advice != "" && !strings.HasSuffix(f.Advice, ".") {
					t.Errorf("%s: advice is not a full sentence: %q", f.Check, f.Advice)
				}
				if f.Message == "" || strings.HasSuffix(f.Message, ".") {
					t.Errorf("%s: message must be lower case without a final period: %q", f.Check, f.Message)
				}
				if len(f.Evidence) == 0 {
					t.Errorf("%s: finding without evidence: %s", f.Check, f.Message)
				}
			}
		})
	}
}

// TestEveryCheckFires checks that every check has a scenario where it
// fires.
func TestEveryCheckFires(t *testing.T) {
	wanted := checktest.WantedChecks(t, "scenarios/*/*.txtar")
	for _, c := range checks.All {
		if c.RunFleet != nil {
			continue // cross-node checks fire on testdata/fleet (TestNodeDriftFleet)
		}
		if len(wanted[c.ID]) == 0 {
			t.Errorf("check %s has no scenario in testdata/scenarios that expects it to fire", c.ID)
		}
	}
}

// TestRulesetInvalidAlone: ruleset-invalid finds the same problems on
// its own, when nothing traces, as among every check, where it takes
// those the tracer found for its warnings.
func TestRulesetInvalidAlone(t *testing.T) {
	var invalid *checks.Check
	for _, c := range checks.All {
		if c.ID == "ruleset-invalid" {
			invalid = c
		}
	}
	if invalid == nil {
		t.Fatal("no ruleset-invalid check")
	}
	n := 0
	for _, file := range checktest.Files(t, "scenarios/*/*.txtar") {
		name := filepath.Base(filepath.Dir(file)) + "/" + strings.TrimSuffix(filepath.Base(file), ".txtar")
		// Scenarios whose findings are ruleset-invalid's alone.
		if !strings.Contains(name, "ruleset-invalid") && (!strings.Contains(name, "healthy") || strings.Contains(name, "unhealthy")) {
			continue
		}
		t.Run(name, func(t *testing.T) {
			var among []checks.Finding
			for _, f := range checktest.Run(t, file, checks.All) {
				if f.Check == invalid.ID {
					among = append(among, f)
				}
			}
			alone := checktest.Run(t, file, []*checks.Check{invalid})
			if !reflect.DeepEqual(among, alone) {
				t.Errorf("alone, the findings differ:\n%v\nwant\n%v", alone, among)
			}
			if strings.Contains(name, "ruleset-invalid") && len(alone) == 0 {
				t.Error("no finding")
			}
		})
		n++
	}
	if n < 2 {
		t.Fatalf("%d scenarios, want the ruleset-invalid and healthy ones", n)
	}
}

// TestOrphanXLBAdvice checks the advice about a KUBE-XLB chain nothing
// references: kube-proxy up to 1.27 deletes it when stale (restart it),
// 1.28 and later leave it (delete it by hand).
func TestOrphanXLBAdvice(t *testing.T) {
	file := filepath.Join(parsetest.Root(t), "testdata", "scenarios", "iptables", "orphan-chain-xlb-left.txtar")
	for _, tc := range []struct {
		version, want string
	}{
		{"", "kube-proxy 1.37 (kube-proxy/version.txt) does not: once nothing jumps to it, delete it by hand (iptables -t nat -F KUBE-XLB-3B5O6DIIKSXDYUHS; iptables -t nat -X KUBE-XLB-3B5O6DIIKSXDYUHS)."},
		{"1.26", "kube-proxy deletes unreferenced chains of its own at its next full sync"},
	} {
		s := checktest.Load(t, file)
		s.Options.Version = tc.version
		snaps, err := load.Load([]string{s.Dir}, s.Options)
		if err != nil {
			t.Fatal(err)
		}
		var advice []string
		for _, f := range checks.Run(snaps[0], checks.All).Findings {
			if f.Check == "orphan-rules" && strings.Contains(f.Message, "KUBE-XLB-") {
				advice = append(advice, f.Advice)
			}
		}
		if len(advice) != 1 || !strings.Contains(advice[0], tc.want) {
			t.Errorf("version %q: advice %q, want one with %q", tc.version, advice, tc.want)
		}
	}
}
