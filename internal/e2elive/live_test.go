//go:build e2elive && linux

package e2elive

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/proxyscan/proxyscan/parsers/manifest"
)

// manifestOf reads the bundle's manifest.
func manifestOf(t *testing.T, bundle string) *manifest.Manifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(bundle, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse("manifest.json", data)
	if err != nil {
		t.Fatalf("the bundle's manifest: %v", err)
	}
	return m
}

// healthy checks what every clean node must show: no finding, verdict
// ok, exit 0, the release resolved past the development version string,
// and the conntrack listing taken even though it is empty.
func healthy(t *testing.T, l *lab, r *report, bundle string) {
	t.Helper()
	l.expect(r, map[string]int{}, 0)
	if want := "ok"; r.Verdict != want && !(l.loaded(r) && r.Verdict == "findings") {
		t.Errorf("verdict %q, want ok\n%s", r.Verdict, r.raw)
	}
	if r.Mode != l.mode {
		t.Errorf("mode %q, want %s", r.Mode, l.mode)
	}
	version, err := os.ReadFile(filepath.Join(bundle, "kube-proxy", "version.txt"))
	if err != nil || !strings.Contains(string(version), "v0.0.0-master+") {
		t.Errorf("kube-proxy/version.txt: %q, %v: want the development version string the binary was built with", version, err)
	}
	if r.KubeProxyVersion != "v1.37.2" || r.VersionSource != "image of DaemonSet kube-system/kube-proxy" {
		t.Errorf("kube-proxy version %q from %q: want v1.37.2 from the DaemonSet's image, not the development version string", r.KubeProxyVersion, r.VersionSource)
	}
	m := manifestOf(t, bundle)
	for _, name := range []string{"conntrack-dnat", "conntrack6-dnat"} {
		if src := m.Source(name); src == nil || src.Status != manifest.StatusOK {
			t.Errorf("manifest source %s: %+v, want ok", name, src)
		}
	}
	if state, reason := r.check("conntrack-stale"); state != "ran" {
		t.Errorf("conntrack-stale %s (%s): want it run on the empty conntrack listing", state, reason)
	}
	if state, reason := r.check("sysctl-unsafe"); state != "ran" {
		t.Errorf("sysctl-unsafe %s (%s): want it run", state, reason)
	}
}

// TestIPTablesHealthy: kubeadm's configuration of iptables mode on a
// dual-stack node. kube-proxy sets route_localnet=1 (localhostNodePorts)
// and writes its own DROP of outside packets to 127.0.0.0/8 in
// KUBE-FIREWALL: sysctl-unsafe must stay silent.
func TestIPTablesHealthy(t *testing.T) {
	l := newLab(t, "iptables", fixture(t, "iptables"))
	l.startKubeProxy(l.config())
	if v := strings.TrimSpace(string(l.ns.Run(nil, "sysctl", "-n", "net.ipv4.conf.all.route_localnet"))); v != "1" {
		t.Fatalf("route_localnet %s after kube-proxy's start, want 1", v)
	}
	l.natRule("KUBE-SVC-") // the rules are there
	bundle := l.collect()
	r := l.analyze(bundle)
	healthy(t, l, r, bundle)
}

// TestDevelopmentVersionAlone: no DaemonSet image and no kubelet version
// say which release the development build is: the version is reported as
// assumed, never taken to be 0.0.
func TestDevelopmentVersionAlone(t *testing.T) {
	var objs []any
	for _, o := range fixture(t, "iptables") {
		switch o := o.(type) {
		case *appsv1.DaemonSet:
			continue
		case *corev1.Node:
			o.Status.NodeInfo.KubeletVersion = ""
		}
		objs = append(objs, o)
	}
	l := newLab(t, "iptables", objs)
	l.startKubeProxy(l.config())
	r := l.analyze(l.collect())
	l.expect(r, map[string]int{}, 0)
	if !strings.HasPrefix(r.KubeProxyVersion, "v1.") || !strings.HasPrefix(r.VersionSource, "assumed") {
		t.Errorf("kube-proxy version %q from %q: want a 1.x release marked as assumed", r.KubeProxyVersion, r.VersionSource)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "v0.0.0-master+4b7e2a1c9d3f, which is not a release") {
		t.Errorf("notes %q: want one saying the version file's development version is not a release", r.Notes)
	}
}

// TestNFTablesHealthy: kubeadm's configuration with mode nftables.
func TestNFTablesHealthy(t *testing.T) {
	l := newLab(t, "nftables", fixture(t, "nftables"))
	l.startKubeProxy(l.config())
	bundle := l.collect()
	r := l.analyze(bundle)
	healthy(t, l, r, bundle)
}

// TestHung: kube-proxy stopped with SIGSTOP answers neither /healthz nor
// /metrics.
func TestHung(t *testing.T) {
	l := newLab(t, "iptables", fixture(t, "iptables"))
	l.startKubeProxy(l.config())
	l.signal(syscall.SIGSTOP)
	bundle := l.collect()
	r := l.analyze(bundle)
	l.expect(r, map[string]int{"kube-proxy-unhealthy": 1}, 1)
	for _, i := range r.findings("kube-proxy-unhealthy") {
		if f := r.Findings[i]; f.Severity != "error" || !strings.Contains(f.Message, "did not answer") {
			t.Errorf("kube-proxy-unhealthy: %s %q, want an error saying it did not answer", f.Severity, f.Message)
		}
	}
}

// TestNotRunning: kube-proxy killed; its rules stay.
func TestNotRunning(t *testing.T) {
	l := newLab(t, "iptables", fixture(t, "iptables"))
	l.startKubeProxy(l.config())
	l.stopKubeProxy()
	bundle := l.collect()
	r := l.analyze(bundle)
	l.expect(r, map[string]int{"kube-proxy-unhealthy": 1}, 1)
	for _, i := range r.findings("kube-proxy-unhealthy") {
		if f := r.Findings[i]; f.Severity != "error" || !strings.Contains(f.Message, "not running") {
			t.Errorf("kube-proxy-unhealthy: %s %q, want an error saying it was not running", f.Severity, f.Message)
		}
	}
}

// TestDNATDeleted: the DNAT rule of one endpoint's KUBE-SEP chain is
// deleted after kube-proxy synced. kube-proxy's periodic syncs are partial
// (a full one comes hourly), so it leaves the chain as it is; the bundle
// is checked to hold the fault.
func TestDNATDeleted(t *testing.T) {
	l := newLab(t, "iptables", fixture(t, "iptables"))
	l.startKubeProxy(l.config())
	rule := l.natRule("-A KUBE-SEP-", `"shop/checkout:http"`, "-j DNAT --to-destination 10.88.2.14:8080")
	l.deleteNATRule(rule)
	bundle := l.collect()
	dump, err := os.ReadFile(filepath.Join(bundle, "node", "iptables-save.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(dump), rule) {
		t.Fatalf("kube-proxy put the deleted rule back before the collection: %s", rule)
	}
	r := l.analyze(bundle)
	t.Logf("%s", r.summary())
	// One finding for the chain, which both of the ETP Local Service's
	// chains jump to: no stale endpoint, no skew blamed on a foreign rule.
	l.expect(r, map[string]int{"endpoint-missing": 1}, 1)
	for _, i := range r.findings("endpoint-missing") {
		if f := r.Findings[i]; f.Severity != "error" || f.Endpoint != "10.88.2.14:8080" || !strings.Contains(f.Message, "has no DNAT rule") {
			t.Errorf("endpoint-missing: %s %s %q, want an error on 10.88.2.14:8080 saying its chain has no DNAT rule", f.Severity, f.Endpoint, f.Message)
		}
	}
}

// TestEndpointJumpDeleted: the last KUBE-SVC rule of a two-endpoint
// Service, the jump to one endpoint, is deleted: that endpoint is missing,
// and the half of the new connections the first rule leaves match no
// endpoint rule.
func TestEndpointJumpDeleted(t *testing.T) {
	l := newLab(t, "iptables", fixture(t, "iptables"))
	l.startKubeProxy(l.config())
	rule := l.natRule("-A KUBE-SVC-", `"ops/status:http -> 10.88.2.90:8000"`)
	l.deleteNATRule(rule)
	bundle := l.collect()
	r := l.analyze(bundle)
	t.Logf("%s", r.summary())
	l.expect(r, map[string]int{"endpoint-missing": 1, "load-balance-skew": 1}, 1)
	for _, f := range r.Findings {
		if loadDependent[f.Check] {
			continue
		}
		if f.Service != "ops/status:http" {
			t.Errorf("%s of %q, want ops/status:http", f.Check, f.Service)
		}
		if f.Check == "endpoint-missing" && f.Endpoint != "10.88.2.90:8000" {
			t.Errorf("endpoint-missing of %q, want 10.88.2.90:8000", f.Endpoint)
		}
		if f.Check == "load-balance-skew" && !strings.Contains(f.Message, "50.0% of new connections") {
			t.Errorf("load-balance-skew %q, want the half of the connections matching no endpoint rule", f.Message)
		}
	}
}

// TestServiceDeletedWhileStopped: a Service (and its EndpointSlices) is
// deleted from the API while kube-proxy is not running: its rules are
// left over.
func TestServiceDeletedWhileStopped(t *testing.T) {
	objs := fixture(t, "iptables")
	l := newLab(t, "iptables", objs)
	l.startKubeProxy(l.config())
	l.stopKubeProxy()
	gone := 0
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Service:
			if o.Namespace == "media" && o.Name == "stream" {
				must(t, l.api.Delete(o))
				gone++
			}
		case *discoveryv1.EndpointSlice:
			if o.Namespace == "media" && o.Labels[discoveryv1.LabelServiceName] == "stream" {
				must(t, l.api.Delete(o))
				gone++
			}
		}
	}
	if gone < 2 {
		t.Fatalf("media/stream: %d objects deleted, want the Service and its slices", gone)
	}
	bundle := l.collect()
	r := l.analyze(bundle)
	t.Logf("%s", r.summary())
	// One finding for the deleted Service, its objects the leftovers of
	// each of its ports.
	l.expect(r, map[string]int{"kube-proxy-unhealthy": 1, "orphan-rules": 1}, 1)
	for _, i := range r.findings("orphan-rules") {
		f := r.Findings[i]
		objects := strings.Join(f.Objects, "\n")
		if f.Service != "media/stream" || f.Severity != "warning" || len(f.Objects) < 8 || !strings.Contains(f.Message, "does not exist, but") ||
			!strings.Contains(objects, "10.112.88.5:554/tcp") || !strings.Contains(objects, "10.112.88.5:5004/udp") {
			t.Errorf("orphan-rules of %s: %s %q with objects %q: want the leftovers of media/stream's ports 554/tcp and 5004/udp (forward entries and chains) in one warning", f.Service, f.Severity, f.Message, f.Objects)
		}
	}
}

// TestNFTablesElementDeleted: the service-ips element of one Service port
// is deleted from kube-proxy's nftables table.
func TestNFTablesElementDeleted(t *testing.T) {
	l := newLab(t, "nftables", fixture(t, "nftables"))
	l.startKubeProxy(l.config())
	out := l.ns.Run(nil, "nft", "-j", "list", "map", "ip", "kube-proxy", "service-ips")
	elem := serviceIPsElement(t, out, "10.112.44.7")
	l.ns.Run(nil, "nft", "delete", "element", "ip", "kube-proxy", "service-ips", "{ "+elem+" }")
	bundle := l.collect()
	r := l.analyze(bundle)
	t.Logf("%s", r.summary())
	l.expect(r, map[string]int{"service-missing": 1}, 1)
	for _, i := range r.findings("service-missing") {
		if f := r.Findings[i]; f.Service != "shop/checkout:http" {
			t.Errorf("service-missing of %q, want shop/checkout:http", f.Service)
		}
	}
}

// serviceIPsElement returns the key of the service-ips element of ip
// ("10.112.44.7 . tcp . 80") from nft -j list map.
func serviceIPsElement(t *testing.T, listing []byte, ip string) string {
	t.Helper()
	var doc struct {
		Nftables []struct {
			Map *struct {
				Elem []json.RawMessage `json:"elem"`
			} `json:"map"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(listing, &doc); err != nil {
		t.Fatalf("nft -j list map: %v", err)
	}
	for _, it := range doc.Nftables {
		if it.Map == nil {
			continue
		}
		for _, e := range it.Map.Elem {
			// [{"concat": ["10.112.44.7", "tcp", 80]}, {"goto": ...}]
			var pair []struct {
				Concat []any `json:"concat"`
			}
			if json.Unmarshal(e, &pair) != nil || len(pair) != 2 || len(pair[0].Concat) != 3 {
				continue
			}
			c := pair[0].Concat
			if c[0] == ip {
				return strings.Join([]string{c[0].(string), c[1].(string), jsonNumber(c[2])}, " . ")
			}
		}
	}
	t.Fatalf("no service-ips element of %s in:\n%s", ip, listing)
	return ""
}

func jsonNumber(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// TestIPVSSchedulerChanged: IPVS mode, one virtual server's scheduler
// changed to wrr while the configuration says rr.
func TestIPVSSchedulerChanged(t *testing.T) {
	binaries(t)
	if _, err := os.Stat("/proc/net/ip_vs"); err != nil {
		t.Skip("skipping: the kernel has no IPVS (no /proc/net/ip_vs: ip_vs is neither built in nor loaded, and modprobe ip_vs is not possible here), so kube-proxy's ipvs mode cannot run")
	}
	l := newLab(t, "ipvs", fixture(t, "ipvs"))
	l.startKubeProxy(l.config())
	l.ns.Run(nil, "ipvsadm", "-E", "-t", "10.112.44.7:80", "-s", "wrr")
	bundle := l.collect()
	r := l.analyze(bundle)
	t.Logf("%s", r.summary())
	l.expect(r, map[string]int{"ipvs-scheduler-mismatch": 1}, 0)
	for _, i := range r.findings("ipvs-scheduler-mismatch") {
		if f := r.Findings[i]; f.Service != "shop/checkout:http" {
			t.Errorf("ipvs-scheduler-mismatch of %q, want shop/checkout:http", f.Service)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestIPVSWithoutKernelSupport: kube-proxy configured for IPVS on a kernel
// without ip_vs. kube-proxy refuses the mode and exits; the bundle records
// no /proc/net/ip_vs and no kube-proxy process, and analyze must say both
// in one finding, the kernel's missing IPVS as the cause.
func TestIPVSWithoutKernelSupport(t *testing.T) {
	binaries(t)
	if _, err := os.Stat("/proc/net/ip_vs"); err == nil {
		t.Skip("skipping: the kernel has IPVS (/proc/net/ip_vs exists), so kube-proxy's ipvs mode runs; this case needs a kernel without it")
	}
	l := newLab(t, "ipvs", fixture(t, "ipvs"))
	l.launchKubeProxy(l.config())
	select {
	case <-l.kpDone:
	case <-time.After(syncWait):
		t.Fatalf("kube-proxy in ipvs mode still running after %s on a kernel without IPVS; its log:\n%s", syncWait, tail(l.kpLog, 40))
	}
	if log := tail(l.kpLog, 40); !strings.Contains(log, "IPVS") {
		t.Fatalf("kube-proxy exited without naming IPVS; its log:\n%s", log)
	}
	bundle := l.collect()
	r := l.analyze(bundle)
	t.Logf("%s", r.summary())
	// One cause, one finding: the missing IPVS, then the stopped kube-proxy.
	l.expect(r, map[string]int{"ipvs-module-missing": 1}, 1)
	for _, i := range r.findings("ipvs-module-missing") {
		f := r.Findings[i]
		if f.Severity != "error" || !strings.Contains(f.Message, "was not running") || strings.Join(f.Checks, ",") != "ipvs-module-missing,kube-proxy-unhealthy" {
			t.Errorf("ipvs-module-missing: %s %q (checks %v), want one error naming the stopped kube-proxy, of both checks", f.Severity, f.Message, f.Checks)
		}
	}
}
