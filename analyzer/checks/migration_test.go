package checks_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/checktest"
	"github.com/proxyscan/proxyscan/analyzer/load"
)

// migrationOf analyses a scenario and returns its migration section.
func migrationOf(t *testing.T, scenario string) *checks.Migration {
	t.Helper()
	return migrationAt(t, "scenarios/"+scenario)
}

// migrationAt analyses the case testdata/NAME.txtar and returns its
// migration section.
func migrationAt(t *testing.T, name string) *checks.Migration {
	t.Helper()
	s := checktest.Load(t, checktest.Files(t, name+".txtar")[0])
	snaps, err := load.Load([]string{s.Dir}, s.Options)
	if err != nil {
		t.Fatal(err)
	}
	return checks.Run(snaps[0], checks.All).Migration
}

func topics(m *checks.Migration) []string {
	var out []string
	for _, it := range m.Items {
		out = append(out, it.Impact+" "+it.Topic+" "+strings.Join(it.Services, ","))
	}
	return out
}

func TestMigration(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		ready    bool
		want     []string
	}{
		{"ipvs/healthy", true, []string{
			"change session-affinity shop/sessions",
			"change source-ranges shop/front:web",
			"change kube-ipvs0 ",
			"change local-fallback shop/ledger:grpc",
			"info ipvs-settings ",
			"info metrics ",
		}},
		{"config/ipvs-scheduler-sh-draining", true, []string{
			"change scheduler ",
			"change session-affinity shop/sessions",
			"change source-ranges shop/front:web",
			"change kube-ipvs0 ",
			"change local-fallback shop/ledger:grpc",
			"info graceful-termination shop/web:http",
			"info ipvs-settings ",
			"info metrics ",
		}},
		{"ipvs/load-balance-skew", true, []string{
			"change weights shop/web:http",
			"change session-affinity shop/sessions",
			"change source-ranges shop/front:web",
			"change kube-ipvs0 ",
			"change local-fallback shop/ledger:grpc",
			"info ipvs-settings ",
			"info metrics ",
		}},
		{"config/config-invalid-1.26", false, []string{
			"blocker version ",
			"change session-affinity shop/sessions",
			"change source-ranges shop/front:web",
			"change kube-ipvs0 ",
			"change local-fallback shop/ledger:grpc",
			"info ipvs-settings ",
			"info metrics ",
		}},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			m := migrationOf(t, tc.scenario)
			if m == nil {
				t.Fatal("no migration section for an IPVS-mode node")
			}
			if m.Ready != tc.ready {
				t.Errorf("ready = %v, want %v", m.Ready, tc.ready)
			}
			if diff := cmp.Diff(tc.want, topics(m)); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
			for _, it := range m.Items {
				if it.Summary == "" || strings.HasSuffix(it.Summary, ".") {
					t.Errorf("%s: summary must be lower case without a final period: %q", it.Topic, it.Summary)
				}
			}
		})
	}
	// What could block the move but is not in the inputs: the version,
	// the kernel, and the IPVS table when it is not given, given in part
	// or in a listing that hides the virtual servers' settings.
	for scenario, want := range map[string][]string{
		"scenarios/ipvs/healthy":                    nil,
		"scenarios/ipvs/healthy-no-version-no-node": {"kube-proxy's version", "the node's kernel version"},
		"scenarios/ipvs/healthy-without-ipvs-table": {"the node's IPVS table"},
		"partial/ipvsadm-head":                      {"the whole IPVS table (node/ipvsadm.txt holds part of it)"},
		"scenarios/ipvs/healthy-ipvsadm-stats": {"a listing with the virtual servers' schedulers, persistence and weights " +
			"(node/ipvsadm.txt is an ipvsadm -Ln --stats listing)"},
	} {
		if m := migrationAt(t, scenario); !m.Ready || !cmp.Equal(m.Unknown, want) {
			t.Errorf("%s: ready %v, unknown %q; want ready, unknown %q", scenario, m.Ready, m.Unknown, want)
		}
	}
	if m := migrationOf(t, "iptables/healthy"); m != nil {
		t.Errorf("iptables-mode node has a migration section: %+v", m)
	}
}
