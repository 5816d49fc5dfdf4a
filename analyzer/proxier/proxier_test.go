package proxier

import (
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
)

func TestExpectErrors(t *testing.T) {
	snap := loadScenario(t, miniBundle)
	for _, tc := range []struct {
		opts testOptions
		want string
	}{
		{testOptions{Mode: "userspace"}, `proxy mode "userspace" is not generated`},
		{testOptions{Version: kpversion.V(19)}, "kube-proxy v1.19.0 is not modelled"},
		{testOptions{Version: kpversion.V(38)}, "kube-proxy v1.38.0 is not modelled"},
	} {
		if _, err := expectFor(snap, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Expect(%+v) = %v, want an error containing %q", tc.opts, err, tc.want)
		}
	}
	if _, err := Captured(resolve.Resolve(snap, resolve.Options{Mode: "userspace"})); err == nil {
		t.Error("Captured accepted mode userspace")
	}
}

func TestFamilies(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		want []model.Family
	}{
		{miniBundle, []model.Family{model.IPv4}},
		{"../../testdata/upstream/scenarios/dualstack", []model.Family{model.IPv4, model.IPv6}},
		{"../../testdata/bundles/iptables-healthy", []model.Family{model.IPv4, model.IPv6}},
	} {
		got := resolved(loadScenario(t, tc.dir)).Families
		if len(got) != len(tc.want) || got[0] != tc.want[0] || got[len(got)-1] != tc.want[len(tc.want)-1] {
			t.Errorf("Families(%s) = %v, want %v", tc.dir, got, tc.want)
		}
	}
}

// TestEnv checks the start-up environment's effect on the rules.
func TestEnv(t *testing.T) {
	snap := loadScenario(t, miniBundle)
	text := func(env Env, v int) string {
		dp, err := expectFor(snap, testOptions{Env: env, Version: kpversion.V(v)})
		if err != nil {
			t.Fatal(err)
		}
		return string(dp.Files[0].Data)
	}
	for _, tc := range []struct {
		name       string
		env        Env
		version    int
		has, hasNo string
	}{
		{"default", Env{}, 37, "--nfacct-name  localhost_nps_accepted_pkts", ""},
		{"no nfacct", Env{NoNFAcct: true}, 37, "-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP", "nfacct"},
		{"liberal conntrack", Env{TCPBeLiberal: true}, 37, "", "--ctstate INVALID"},
		{"liberal conntrack before 1.29", Env{TCPBeLiberal: true}, 28, "--ctstate INVALID", ""},
		{"no random-fully", Env{NoRandomFully: true}, 33, `-j MASQUERADE` + "\n", "--random-fully"},
		{"random-fully always in 1.37", Env{NoRandomFully: true}, 37, "--random-fully", ""},
	} {
		got := text(tc.env, tc.version)
		if tc.has != "" && !strings.Contains(got, tc.has) {
			t.Errorf("%s: no %q", tc.name, tc.has)
		}
		if tc.hasNo != "" && strings.Contains(got, tc.hasNo) {
			t.Errorf("%s: has %q", tc.name, tc.hasNo)
		}
	}
}

// TestJumpTargetsExist checks, for every version and scenario, that every
// rule jumps to a chain that exists (kube-proxy's own test helper checks
// the same of its output).
func TestJumpTargetsExist(t *testing.T) {
	for _, tc := range conformanceCases(t) {
		snap := loadScenario(t, tc.inputs)
		for v := kpversion.OldestMinor; v <= kpversion.NewestMinor; v++ {
			dp, err := expectFor(snap, testOptions{Version: kpversion.V(v)})
			if err != nil {
				t.Fatalf("%s 1.%d: %v", tc.name, v, err)
			}
			for _, d := range dp.IPTables {
				for _, tb := range d.Tables {
					for _, c := range tb.Chains {
						for _, r := range c.Rules {
							tgt := r.Target()
							switch tgt {
							case "", "ACCEPT", "DROP", "RETURN", "REJECT", "DNAT", "MARK", "MASQUERADE":
								continue
							}
							if tb.Chain(tgt) == nil {
								t.Errorf("%s 1.%d %s: %s jumps to missing chain %s", tc.name, v, d.Family, r.Raw, tgt)
							}
						}
					}
				}
			}
		}
	}
}

// testOptions are what a test asks [Expect] for: the resolution's overrides
// and the generator's options.
type testOptions struct {
	Mode     string
	Version  kpversion.Version
	Families []model.Family
	Env      Env
}

// expectFor resolves snap with the mode and version of o and generates its
// expected data plane.
func expectFor(snap *model.Snapshot, o testOptions) (*Dataplane, error) {
	return Expect(resolve.Resolve(snap, resolve.Options{Mode: o.Mode, Version: o.Version}), Options{Families: o.Families, Env: o.Env})
}

// resolved resolves snap as the node's inputs say.
func resolved(snap *model.Snapshot) *resolve.Resolution {
	return resolve.Resolve(snap, resolve.Options{})
}
