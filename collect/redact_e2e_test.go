package collect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/collect"
	"github.com/proxyscan/proxyscan/collect/redact"
	"github.com/proxyscan/proxyscan/internal/kubeapi/kubeapitest"
	"github.com/proxyscan/proxyscan/parsers/manifest"
)

// clusterObjects returns the Services and EndpointSlices of the e2e
// cluster and this node's Node object, for a fake API server.
func clusterObjects(t *testing.T, node string) []any {
	t.Helper()
	objs := e2eSpec.Objects()
	objs = append(objs, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{corev1.LabelHostname: node}},
		Spec:       corev1.NodeSpec{PodCIDR: "10.128.1.0/24", PodCIDRs: []string{"10.128.1.0/24"}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: "172.18.0.5"}, {Type: corev1.NodeHostName, Address: node},
		}},
	})
	return objs
}

// findings analyzes a bundle in-process and returns its findings.
func findings(t *testing.T, dir string) []checks.Finding {
	t.Helper()
	snaps, err := load.Load([]string{dir}, load.Options{})
	if err != nil {
		t.Fatalf("loading %s: %v", dir, err)
	}
	var out []checks.Finding
	for _, s := range snaps {
		if s.Manifest == nil || len(s.Manifest.Sources) == 0 {
			t.Errorf("%s: the loader did not read manifest.json", dir)
		}
		// The lab runs no kube-proxy, which kube-proxy-unhealthy reports
		// with the time of each collection: left out of the comparison.
		sel, err := checks.Select(checks.All, checks.Options{Skip: []string{"kube-proxy-unhealthy"}})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, checks.Run(s, sel).Findings...)
	}
	return out
}

// TestRedactedAnalysisMatches collects a node twice — as is and with
// --redact — with its cluster objects from a (fake) API server, and
// checks that analyzing the redacted bundle gives the original's findings
// mapped through the redaction, and that no original address or name is
// left in any file of the redacted bundle.
func TestRedactedAnalysisMatches(t *testing.T) {
	ns := requireE2E(t)
	rules, _ := specFiles(t, e2eSpec)
	// One rule removed, so that there are findings to compare.
	re := regexp.MustCompile(`(?m)^-A KUBE-SERVICES -d 10\.96\.0\.2/32 .*\n`)
	ns.Run(re.ReplaceAll(rules, nil), "iptables-restore")
	const node = "bench-node-1"
	srv := kubeapitest.New(t, clusterObjects(t, node)...)
	base := collect.Options{
		Runner:   collect.ExecRunner{Prefix: []string{"ip", "netns", "exec", ns.Name}},
		Kube:     collect.Kubeconfig(srv.Kubeconfig(t)),
		Hostname: node,
		Tool:     manifest.Tool{Name: "proxyscan", Version: "test"},
	}
	orig := filepath.Join(t.TempDir(), "orig")
	o := base
	o.Dir = orig
	if _, err := collect.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	r, err := redact.New([]byte("a fixed key for a reproducible test run"))
	if err != nil {
		t.Fatal(err)
	}
	red := filepath.Join(t.TempDir(), "redacted")
	o = base
	o.Dir, o.Redact = red, r
	res, err := collect.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Manifest.Redacted || res.Manifest.Host == node {
		t.Errorf("manifest: redacted %v, host %q", res.Manifest.Redacted, res.Manifest.Host)
	}
	for _, f := range []string{"cluster/services.yaml", "cluster/endpointslices.yaml", "cluster/node.yaml", "node/iptables-save.txt"} {
		if _, err := os.Stat(filepath.Join(red, f)); err != nil {
			t.Fatalf("redacted bundle lacks %s", f)
		}
	}

	want := findings(t, orig)
	if len(want) == 0 {
		t.Fatal("the original bundle has no findings to compare")
	}
	for i := range want {
		f := &want[i]
		f.Node, f.Service, f.Endpoint, f.Message, f.Advice = r.Text(f.Node), r.Text(f.Service), r.Text(f.Endpoint), r.Text(f.Message), r.Text(f.Advice)
		for j := range f.Evidence {
			f.Evidence[j].Text = r.Line(f.Evidence[j].File, f.Evidence[j].Text)
		}
	}
	checks.SortFindings(want)
	got := findings(t, red)
	// The redacted manifest says more (redacted: true, the notes of the
	// redaction), so its lines differ; its evidence is compared by JSON
	// path.
	for _, fs := range [][]checks.Finding{want, got} {
		for i := range fs {
			for j := range fs[i].Evidence {
				if fs[i].Evidence[j].File == "manifest.json" {
					fs[i].Evidence[j].Line = 0
				}
			}
		}
	}
	wj, _ := json.MarshalIndent(want, "", " ")
	gj, _ := json.MarshalIndent(got, "", " ")
	if !bytes.Equal(wj, gj) {
		t.Fatalf("findings of the redacted bundle differ from the original's, mapped:\nwant %s\ngot  %s", wj, gj)
	}
	if !strings.Contains(string(gj), r.Name("ns-002")+"/"+r.Name("svc-00002")+":http") {
		t.Errorf("the finding does not name the redacted service:\n%s", gj)
	}

	// Nothing original remains: every address and name of the original
	// bundle is absent from every file of the redacted one.
	addrs, names := originals(t, orig, r)
	if len(addrs) < 20 || len(names) < 20 {
		t.Fatalf("too few originals to check: %d addresses, %d names", len(addrs), len(names))
	}
	checked := 0
	err = filepath.Walk(red, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		checked++
		rel, _ := filepath.Rel(red, p)
		for _, tok := range tokens(string(data)) {
			if addrs[tok] {
				t.Errorf("%s: original address %s remains", rel, tok)
			}
			if names[tok] {
				t.Errorf("%s: original name %s remains", rel, tok)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 8 {
		t.Errorf("only %d files in the redacted bundle", checked)
	}
	// The map translates back.
	back := res.Manifest.Host
	if rev := r.Map().Reverse(); rev[back] != node {
		t.Errorf("the redaction map does not translate %s back to %s", back, node)
	}
}

var reToken = regexp.MustCompile(`[A-Za-z0-9_.:-]+`)

// tokens splits text into name and address tokens: runs of name
// characters, also split at colons, slashes and brackets.
func tokens(s string) []string {
	var out []string
	for _, t := range reToken.FindAllString(s, -1) {
		out = append(out, t)
		if strings.Contains(t, ":") && strings.Count(t, ":") < 2 {
			out = append(out, strings.Split(t, ":")...)
		}
		for _, p := range strings.Split(t, ":") {
			out = append(out, strings.Trim(p, "."))
		}
	}
	return out
}

var reAddr = regexp.MustCompile(`[0-9a-fA-F:.]{3,}`)

// originals returns the addresses (outside the kept ranges) and the
// Kubernetes names of the original bundle.
func originals(t *testing.T, dir string, r *redact.Redactor) (map[string]bool, map[string]bool) {
	addrs := map[string]bool{}
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		data, _ := os.ReadFile(p)
		for _, m := range reAddr.FindAllString(string(data), -1) {
			for _, c := range []string{m, strings.Split(m, ":")[0]} {
				if a, err := netip.ParseAddr(strings.Trim(c, ".:")); err == nil && !redact.Kept(a) && (a.Is4() && strings.Count(c, ".") == 3 || a.Is6()) {
					addrs[a.String()] = true
				}
			}
		}
		return nil
	})
	names := map[string]bool{}
	for _, n := range r.Originals() {
		names[n] = true
	}
	var sample []string
	for n := range names {
		sample = append(sample, n)
	}
	sort.Strings(sample)
	t.Logf("checking %d addresses and %d names (e.g. %v)", len(addrs), len(names), sample[:min(5, len(sample))])
	return addrs, names
}
