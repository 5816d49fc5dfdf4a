package checks_test

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/checktest"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/internal/pastetest"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// runScenario loads a scenario of testdata/scenarios and runs the checks
// with these IDs (all when none) on its one node.
func runScenario(t *testing.T, name string, only ...string) *checks.Result {
	t.Helper()
	s := checktest.Load(t, filepath.Join(parsetest.Root(t), "testdata", "scenarios", name+".txtar"))
	return runDir(t, s.Dir, s.Options, only...)
}

func runDir(t *testing.T, dir string, opts load.Options, only ...string) *checks.Result {
	t.Helper()
	snaps, err := load.Load([]string{dir}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 1 {
		t.Fatalf("%d nodes, want 1", len(snaps))
	}
	sel, err := checks.Select(checks.All, checks.Options{Only: only})
	if err != nil {
		t.Fatal(err)
	}
	return checks.Run(snaps[0], sel)
}

func status(res *checks.Result, id string) checks.Status {
	for _, st := range res.Statuses {
		if st.ID == id {
			return st
		}
	}
	return checks.Status{}
}

// TestEndpointsLag: a Service whose rules lag its EndpointSlices (endpoints
// added and not programmed, endpoints removed and still programmed, on
// several ports) is one endpoint-stale finding in every mode, which lists
// every endpoint of every port with its evidence and stands for both
// checks.
func TestEndpointsLag(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		message  string
		// objects: endpoint of each object, in order; the first ones not
		// programmed, the others gone.
		objects []string
		missing int
	}{
		{"iptables/endpoints-lag",
			"the rules of kube-system/dns lag its EndpointSlices: 2 usable endpoints not programmed (10.244.1.3, 10.244.3.2), " +
				"1 endpoint programmed but gone from the EndpointSlices (10.244.2.2), on ports dns and dns-tcp",
			[]string{"10.244.1.3:53", "10.244.3.2:53", "10.244.1.3:53", "10.244.3.2:53", "10.244.2.2:53", "10.244.2.2:53"}, 4},
		{"ipvs/endpoints-lag",
			"the rules of kube-system/dns lag its EndpointSlices: 2 usable endpoints not programmed (10.244.1.3, 10.244.3.2), " +
				"1 endpoint programmed but gone from the EndpointSlices (10.244.2.2), on ports dns and dns-tcp",
			[]string{"10.244.1.3:53", "10.244.3.2:53", "10.244.1.3:53", "10.244.3.2:53", "10.244.2.2:53", "10.244.2.2:53"}, 4},
		{"nftables/endpoints-lag",
			"the rules of kube-system/kube-dns lag its EndpointSlices: 2 usable endpoints not programmed (10.88.1.5, 10.88.3.4), " +
				"1 endpoint programmed but gone from the EndpointSlices (10.88.1.4), on ports dns, dns-tcp and metrics",
			[]string{"10.88.1.5:53", "10.88.3.4:53", "10.88.1.5:53", "10.88.3.4:53", "10.88.1.5:9153", "10.88.3.4:9153",
				"10.88.1.4:53", "10.88.1.4:53", "10.88.1.4:9153"}, 6},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			res := runScenario(t, tc.scenario)
			if len(res.Findings) != 1 {
				t.Fatalf("%d findings, want 1: %+v", len(res.Findings), res.Findings)
			}
			f := res.Findings[0]
			if f.Check != "endpoint-stale" || f.Severity != checks.Error || f.Message != tc.message {
				t.Errorf("%s %s: %q\nwant endpoint-stale error: %q", f.Check, f.Severity, f.Message, tc.message)
			}
			if want := []string{"endpoint-missing", "endpoint-stale"}; !slices.Equal(f.Checks, want) {
				t.Errorf("checks %q, want %q", f.Checks, want)
			}
			if f.Endpoint != "" || strings.Contains(f.Service, ":") {
				t.Errorf("service %q endpoint %q, want the Service and no endpoint", f.Service, f.Endpoint)
			}
			if len(f.Objects) != len(tc.objects) {
				t.Fatalf("objects %q, want %d", f.Objects, len(tc.objects))
			}
			for i, o := range f.Objects {
				ep := tc.objects[i]
				wantWhat := " not programmed in "
				if i >= tc.missing {
					wantWhat = ") programmed in "
				}
				if !strings.HasPrefix(o, ep+" of port ") || !strings.Contains(o, wantWhat) {
					t.Errorf("object %d %q, want %s ...%s", i, o, ep, wantWhat)
				}
				// Its evidence: the EndpointSlice line of an endpoint not
				// programmed, the rule of one programmed.
				ap := netip.MustParseAddrPort(ep)
				found := false
				for _, e := range f.Evidence {
					found = found || strings.Contains(e.Text, ep) || strings.Contains(e.Text, ap.Addr().String()+" . ")
				}
				if !found {
					t.Errorf("no evidence of object %q in %+v", o, f.Evidence)
				}
			}
			if f.Advice == "" || strings.Count(f.Advice, "restart kube-proxy") != 1 || strings.Contains(f.Message, "restart") {
				t.Errorf("advice %q, want it once, apart from the message", f.Advice)
			}
			miss := status(res, "endpoint-missing")
			if miss.State != "ran" || miss.Findings != 1 || len(miss.Notes) != 1 || !strings.Contains(miss.Notes[0], "reported in the endpoint-stale finding") {
				t.Errorf("endpoint-missing status %+v, want it to count and note the grouped finding", miss)
			}
		})
	}
}

// TestEndpointsLagOneCheck: a pipeline that runs one of the two checks
// alone still sees its faults: the findings of each check, one per
// Service.
func TestEndpointsLagOneCheck(t *testing.T) {
	for _, tc := range []struct {
		only, message string
		objects       int
	}{
		{"endpoint-missing", "2 usable endpoints of kube-system/dns are not programmed (10.244.1.3, 10.244.3.2), on ports dns and dns-tcp", 4},
		{"endpoint-stale", "the rules of kube-system/dns forward to endpoints that are not usable: 1 endpoint programmed but gone from the EndpointSlices (10.244.2.2), on ports dns and dns-tcp", 2},
	} {
		t.Run(tc.only, func(t *testing.T) {
			res := runScenario(t, "iptables/endpoints-lag", tc.only)
			if len(res.Findings) != 1 {
				t.Fatalf("%d findings, want 1: %+v", len(res.Findings), res.Findings)
			}
			f := res.Findings[0]
			if f.Check != tc.only || f.Message != tc.message || len(f.Objects) != tc.objects || f.Checks != nil || strings.Contains(f.Advice, "this endpoint") {
				t.Errorf("%s: %q, objects %q, checks %q\nwant %s: %q, %d objects, no checks", f.Check, f.Message, f.Objects, f.Checks, tc.only, tc.message, tc.objects)
			}
		})
	}
}

// TestEndpointsLagPartial: in a dump pasted without its headers, what is
// not programmed may be outside the paste: that side is noted as not
// checked, and what is programmed but gone is reported alone.
func TestEndpointsLagPartial(t *testing.T) {
	s := checktest.Load(t, filepath.Join(parsetest.Root(t), "testdata", "scenarios", "iptables", "endpoints-lag.txtar"))
	file := filepath.Join(s.Dir, "node", "iptables-save.txt")
	clean, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(pastetest.Cuts, func(c pastetest.Cut) bool { return c.Name == "no-headers" })
	if err := os.WriteFile(file, []byte(pastetest.Cuts[i].Apply(string(clean))), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runDir(t, s.Dir, s.Options, "endpoint-missing", "endpoint-stale")
	if len(res.Findings) != 1 || res.Findings[0].Check != "endpoint-stale" || res.Findings[0].Checks != nil ||
		!strings.HasPrefix(res.Findings[0].Message, "the rules of kube-system/dns forward to endpoints that are not usable: ") {
		t.Fatalf("findings %+v, want endpoint-stale's alone", res.Findings)
	}
	if st := status(res, "endpoint-missing"); st.Findings != 0 || len(st.Notes) != 1 || !strings.Contains(st.Notes[0], "not checked for 2 service ports (kube-system/dns:dns, kube-system/dns:dns-tcp)") {
		t.Errorf("endpoint-missing status %+v, want the ports noted as not checked", st)
	}
}

// TestEndpointsHealthyBundles: endpoint-missing and endpoint-stale are
// silent on every healthy example bundle.
func TestEndpointsHealthyBundles(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(parsetest.Root(t), "testdata", "bundles", "*"))
	n := 0
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		n++
		t.Run(filepath.Base(dir), func(t *testing.T) {
			res := runDir(t, dir, load.Options{}, "endpoint-missing", "endpoint-stale")
			for _, st := range res.Statuses {
				if st.State != "ran" {
					t.Errorf("%s %s: %s", st.ID, st.State, st.Reason)
				}
			}
			for _, f := range res.Findings {
				t.Errorf("%s: %s", f.Check, f.Message)
			}
		})
	}
	if n < 3 {
		t.Fatalf("%d bundles, want one per mode at least", n)
	}
}
