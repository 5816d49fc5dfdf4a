package load

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/netip"
	"path/filepath"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/parsers/kube"
)

// TestOnlySamePort checks that a node loaded with Options.Only holds the
// service ports of the destination as a whole loading does (the same
// values, endpoints and whether its endpoints are known: the slices of
// its namespace are read even when none is its own), far fewer of the
// others, and that an export listing its slices before their Services
// fails with ErrNotLean.
func TestOnlySamePort(t *testing.T) {
	spec := benchgen.Spec{Services: 600, Endpoints: 2000, NodePortEvery: 4, Node: "n1"}
	var services, slices []any
	for _, o := range spec.Objects() {
		if _, ok := o.(*corev1.Service); ok {
			services = append(services, o)
		} else {
			slices = append(slices, o)
		}
	}
	// svc-00135 without its slice; ns-135 holds the slices of svc-00335
	// and svc-00535. svc-00136 alone in the export with no slice of its
	// namespace (ns-136).
	var kept []any
	for i, s := range slices {
		if i != 135 && i%200 != 136 {
			kept = append(kept, s)
		}
	}
	dir := t.TempDir()
	list := func(items []any) []byte {
		b, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var dump bytes.Buffer
	if err := spec.IPTablesSave(&dump); err != nil {
		t.Fatal(err)
	}
	ipt := writeFile(t, dir, "iptables-save.txt", dump.Bytes())
	export := writeFile(t, dir, "cluster.json", list(append(append([]any{}, services...), kept...)))
	paths := []string{ipt, export}
	whole, err := Load(paths, Options{Compact: true})
	if err != nil {
		t.Fatal(err)
	}
	portOf := func(s *model.Snapshot, dst netip.AddrPort) *model.ServicePort {
		for _, sp := range s.Ports {
			for _, ip := range sp.ClusterIPs {
				if ip == dst.Addr() && sp.Port == int32(dst.Port()) {
					return sp
				}
			}
		}
		return nil
	}
	for _, dst := range []string{"10.96.0.135:80", "10.96.0.136:80", "10.96.1.79:80", "10.96.0.0:80", "10.96.2.87:80"} {
		d := netip.MustParseAddrPort(dst)
		lean, err := Load(paths, Options{Compact: true, Only: &kube.Only{Addr: d.Addr(), Port: d.Port()}})
		if err != nil {
			t.Fatal(err)
		}
		a, b := portOf(whole[0], d), portOf(lean[0], d)
		if a == nil || b == nil {
			t.Fatalf("%s: no service port (whole %v, lean %v)", dst, a != nil, b != nil)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: the service port differs when read lean:\nwhole: %+v\nlean:  %+v", dst, a, b)
		}
		if o := lean[0].Objects; len(lean[0].Ports) > 3 || o.SkippedServices < 500 || o.SkippedSlices < 400 {
			t.Errorf("%s: %d service ports read lean, %d Services and %d slices left out", dst, len(lean[0].Ports), o.SkippedServices, o.SkippedSlices)
		}
	}
	first := writeFile(t, filepath.Join(dir, "first"), "cluster.json", list(append(append([]any{}, slices...), services...)))
	d := netip.MustParseAddrPort("10.96.0.135:80")
	if _, err := Load([]string{ipt, first}, Options{Only: &kube.Only{Addr: d.Addr(), Port: d.Port()}}); !errors.Is(err, ErrNotLean) {
		t.Errorf("slices before their Services: got %v, want ErrNotLean", err)
	}
}
