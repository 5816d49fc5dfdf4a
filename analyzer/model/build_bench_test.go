package model_test

import (
	"bytes"
	"math"
	"reflect"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/parsers/kube"
)

// objects decodes the export of spec as analyze does (lean).
func objects(tb testing.TB, spec benchgen.Spec) *kube.Objects {
	tb.Helper()
	var buf bytes.Buffer
	if err := spec.WriteCompactJSON(&buf); err != nil {
		tb.Fatal(err)
	}
	objs, err := kube.ParseWith("cluster.json", buf.Bytes(), kube.Options{Lean: true})
	if err != nil {
		tb.Fatal(err)
	}
	return objs
}

// TestBuildServicePortsInParts checks that the service ports built on
// every core, from parts of the Services, are those built on one, in the
// same order.
func TestBuildServicePortsInParts(t *testing.T) {
	spec := benchgen.Spec{Services: 1500, Endpoints: 4000, NodePortEvery: 3, Node: "bench-node-1"}
	opts := model.BuildOptions{NodeName: spec.Node}
	restore := model.SetParallelServices(math.MaxInt)
	want := model.BuildServicePorts(objects(t, spec), opts)
	restore()
	defer model.SetParallelServices(1)()
	got := model.BuildServicePorts(objects(t, spec), opts)
	if len(got) != len(want) || len(want) < spec.Services {
		t.Fatalf("%d service ports built in parts, %d on one core (want at least %d)", len(got), len(want), spec.Services)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("service port %d: %s built in parts, %s on one core", i, got[i], want[i])
		}
	}
}

// TestDraftClaim checks that a draft is not taken for objects other than
// those it was drafted from: one more Service, one EndpointSlice less.
func TestDraftClaim(t *testing.T) {
	objs := objects(t, benchgen.Spec{Services: 20, Endpoints: 40, Node: "n"})
	more := &kube.Objects{}
	more.Merge(objs)
	more.Services = append(more.Services, objs.Services[0])
	fewer := &kube.Objects{}
	fewer.Merge(objs)
	fewer.EndpointSlices = fewer.EndpointSlices[1:]
	for name, other := range map[string]*kube.Objects{"more": more, "fewer": fewer} {
		if model.DraftPortsAhead(objs).Claim(other) {
			t.Errorf("%s: a draft taken for other objects", name)
		}
	}
	var none *model.PortsDraft
	if none.Claim(objs) {
		t.Error("no draft taken")
	}
}

// BenchmarkBuildServicePorts builds the service ports and endpoints of
// the 10,000-Service export, as the assembly of a node does.
func BenchmarkBuildServicePorts(b *testing.B) {
	objs := objects(b, benchgen.Default)
	opts := model.BuildOptions{NodeName: benchgen.Default.Node}
	b.ReportAllocs()
	for b.Loop() {
		if ports := model.BuildServicePorts(objs, opts); len(ports) < benchgen.Default.Services {
			b.Fatalf("%d service ports, want at least %d", len(ports), benchgen.Default.Services)
		}
	}
}

// BenchmarkSharedPorts gives a node the service ports of the
// 10,000-Service export from a draft that several nodes share (units of a
// fleet whose exports are alike): copies of the drafted ports, with those
// of the endpoints local to the node.
func BenchmarkSharedPorts(b *testing.B) {
	objs := objects(b, benchgen.Default)
	opts := model.BuildOptions{NodeName: benchgen.Default.Node}
	base := model.DraftPortsAhead(objs)
	base.Wait()
	b.ReportAllocs()
	for b.Loop() {
		if ports := base.Share().Ports(opts); len(ports) < benchgen.Default.Services {
			b.Fatalf("%d service ports, want at least %d", len(ports), benchgen.Default.Services)
		}
	}
}

// TestDraftPorts checks that the service ports drafted before the node and
// the version are known are those built knowing them: for no node, a node
// with local endpoints, endpoints of one address in two slices (one of
// them local), and a load balancer of ipMode Proxy with and without
// HonourIPMode; drafted once and shared by several nodes too.
func TestDraftPorts(t *testing.T) {
	const export = `{"apiVersion":"v1","kind":"List","items":[
{"apiVersion":"v1","kind":"Service","metadata":{"name":"lb","namespace":"n"},"spec":{"type":"LoadBalancer","clusterIP":"10.96.0.1","ports":[{"port":80,"nodePort":30080}]},"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.1","ipMode":"Proxy"},{"ip":"192.0.2.2"}]}}},
{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"lb-a","namespace":"n","labels":{"kubernetes.io/service-name":"lb"}},"addressType":"IPv4","ports":[{"name":"","port":8080,"protocol":"TCP"}],"endpoints":[{"addresses":["10.1.0.1"],"nodeName":"node-b"},{"addresses":["10.1.0.2"],"nodeName":"node-a"}]},
{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"lb-b","namespace":"n","labels":{"kubernetes.io/service-name":"lb"}},"addressType":"IPv4","ports":[{"name":"","port":8080,"protocol":"TCP"}],"endpoints":[{"addresses":["10.1.0.1"],"nodeName":"node-a"}]}
]}`
	small, err := kube.Parse("small.json", []byte(export))
	if err != nil {
		t.Fatal(err)
	}
	spec := benchgen.Spec{Services: 1500, Endpoints: 4000, NodePortEvery: 3, Node: "bench-node-1"}
	generated := objects(t, spec)
	// Built whole, and in parts of 512 Services, which the caller that
	// takes a draft made ahead helps build.
	for _, parts := range []int{math.MaxInt, 1} {
		defer model.SetParallelServices(parts)()
		draftsMatch(t, map[string]*kube.Objects{"small": small, "generated": generated}, spec.Node)
	}
}

func draftsMatch(t *testing.T, inputs map[string]*kube.Objects, node string) {
	t.Helper()
	for name, objs := range inputs {
		for _, opts := range []model.BuildOptions{{}, {NodeName: "node-a"}, {NodeName: node}, {HonourIPMode: true}, {NodeName: "node-a", HonourIPMode: true}} {
			want := model.BuildServicePorts(objs, opts)
			got := model.DraftPorts(objs).Ports(opts)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s, %+v: the drafted ports differ from those built", name, opts)
			}
			// Drafted ahead, of the objects of a node that are the same.
			merged := &kube.Objects{}
			merged.Merge(objs)
			d := model.DraftPortsAhead(objs)
			if !d.Claim(merged) {
				t.Fatalf("%s: the draft of an export not taken for the same objects", name)
			}
			if got := d.Ports(opts); !reflect.DeepEqual(got, want) {
				t.Errorf("%s, %+v: the ports drafted ahead differ from those built", name, opts)
			}
			if d.Claim(merged) {
				t.Errorf("%s: a draft taken twice", name)
			}
		}
		sharedDraftsMatch(t, name, objs, node)
	}
}

// sharedDraftsMatch checks that the drafts sharing one draft of objs, for
// nodes of other names and options, each give the ports built for them,
// copies that no other draft gives (their endpoints local to the node too),
// and leave the shared draft as built.
func sharedDraftsMatch(t *testing.T, name string, objs *kube.Objects, node string) {
	t.Helper()
	base := model.DraftPortsAhead(objs)
	seen, local := map[any]bool{}, map[*model.Endpoint]bool{}
	for _, opts := range []model.BuildOptions{{NodeName: "node-a"}, {NodeName: node}, {}, {NodeName: "node-b"}, {HonourIPMode: true}, {NodeName: node, HonourIPMode: true}, {NodeName: "node-a"}} {
		merged := &kube.Objects{}
		merged.Merge(objs)
		d := base.Share()
		if !d.Claim(merged) {
			t.Fatalf("%s: a shared draft not taken for the same objects", name)
		}
		got := d.Ports(opts)
		if want := model.BuildServicePorts(objs, opts); !reflect.DeepEqual(got, want) {
			t.Errorf("%s, %+v: the ports of a shared draft differ from those built", name, opts)
		}
		for _, sp := range got {
			if seen[sp] {
				t.Fatalf("%s, %+v: service port %s given twice", name, opts, sp)
			}
			seen[sp] = true
			for _, e := range sp.Endpoints {
				// Those not local are shared, never marked local.
				if e.Local && seen[e] || !e.Local && local[e] {
					t.Fatalf("%s, %+v: local endpoint %s of %s given twice", name, opts, e, sp)
				}
				seen[e], local[e] = true, local[e] || e.Local
			}
		}
	}
	if !base.Claim(objs) {
		t.Fatalf("%s: the shared draft was taken", name)
	}
	if got, want := base.Ports(model.BuildOptions{}), model.BuildServicePorts(objs, model.BuildOptions{}); !reflect.DeepEqual(got, want) {
		t.Errorf("%s: the shared draft was changed by those sharing it", name)
	}
}
