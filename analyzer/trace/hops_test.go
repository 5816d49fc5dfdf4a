package trace_test

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/trace"
)

// hooksOf writes the hops of a path as "HOOK@step: why" lines.
func hooksOf(p trace.Path) string {
	var b strings.Builder
	for _, h := range p.Hops {
		b.WriteString(h.Hook + "@" + strconv.Itoa(h.Step) + ": " + h.Why + "\n")
	}
	return b.String()
}

// TestHops checks the hooks every engine says a packet enters, with the
// routing decision's reason, for packets from a pod and from the node,
// and that a summary trace records none.
func TestHops(t *testing.T) {
	for _, tc := range []struct {
		name, bundle, dst, proto string
		from                     model.Origin
		noAddrs                  bool
		want                     []string // in every path's hops, in order
		deny                     string   // in no path's hops
	}{
		{name: "iptables pod", bundle: "iptables-healthy", dst: "10.112.0.10:53", proto: "udp",
			want: []string{"PREROUTING@0: arrives from a pod of the node on vethpod0",
				"FORWARD@4: routing decision: 10.88.", " (after DNAT) is not an address of the node: forwarded ",
				"POSTROUTING@8: the packet leaves "}},
		{name: "iptables node", bundle: "iptables-healthy", dst: "10.112.0.10:53", proto: "udp", from: model.FromNode,
			want: []string{"OUTPUT@0: sent by the node itself", "POSTROUTING@"}},
		{name: "ipvs", bundle: "ipvs-healthy", dst: "10.112.0.10:53", proto: "udp",
			want: []string{"PREROUTING@0: ", "INPUT@3: routing decision: 10.112.0.10 is bound to kube-ipvs0\n",
				"IPVS@7: 10.112.0.10:53 is the IPVS virtual server 10.112.0.10:53/UDP",
				"OUTPUT@9: IPVS sends the packet on to the real server ", "POSTROUTING@10: "}},
		// IPVS at LOCAL_OUT rewrites the destination: the packet leaves
		// for the real server, not on lo.
		{name: "ipvs node", bundle: "ipvs-healthy", dst: "10.112.0.10:53", proto: "udp", from: model.FromNode,
			want: []string{"OUTPUT@0: sent by the node itself", "IPVS@5: ", "OUTPUT@7: IPVS sends the packet on", "POSTROUTING@8: the packet leaves "},
			deny: "leaves on lo"},
		// A node port's virtual servers are on the node's own addresses,
		// which are not kube-ipvs0's.
		{name: "ipvs node port", bundle: "ipvs-healthy", dst: "172.20.8.12:30943", from: model.FromExternal,
			want: []string{"INPUT@", ": routing decision: 172.20.8.12 is an address of the node\n"},
			deny: "bound to kube-ipvs0"},
		{name: "ipvs assumed", bundle: "ipvs-healthy-mini", dst: "10.96.0.10:53", proto: "udp", noAddrs: true,
			want: []string{"INPUT@3: routing decision: 10.96.0.10 is bound to kube-ipvs0 (assumed: no ip addr in the inputs)\n"}},
		{name: "nftables", bundle: "nftables-healthy", dst: "10.112.0.10:53", proto: "udp",
			want: []string{"PREROUTING@0: arrives from a pod", "FORWARD@4: routing decision: 10.88.", "POSTROUTING@6: "}},
		{name: "nftables node local", bundle: "nftables-healthy", dst: "127.0.0.1:10249", from: model.FromNode,
			want: []string{"OUTPUT@0: sent by the node itself", "POSTROUTING@", "PREROUTING@",
				": 127.0.0.1 is a loopback address: the packet loops back in on lo", "INPUT@"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := loadBundle(t, tc.bundle)
			if tc.noAddrs {
				s.Addrs, s.Node.Local = nil, nil
			}
			dp := trace.FromSnapshot(resolve.Resolve(s, resolve.Options{}))
			pkt := trace.Packet{Dst: netip.MustParseAddrPort(tc.dst), Proto: tc.proto, From: tc.from}
			res := traceOne(t, dp, pkt)
			if len(res.Paths) == 0 {
				t.Fatal("no path")
			}
			for i, p := range res.Paths {
				got := hooksOf(p)
				if tc.deny != "" && strings.Contains(got, tc.deny) {
					t.Errorf("path %d: hops hold %q:\n%s", i+1, tc.deny, got)
				}
				at := 0
				for _, w := range tc.want {
					j := strings.Index(got[at:], w)
					if j < 0 {
						t.Errorf("path %d: hops lack %q after %d:\n%s", i+1, w, at, got)
						break
					}
					at += j + len(w)
				}
				for _, h := range p.Hops {
					if h.Step > len(p.Steps) {
						t.Errorf("path %d: hop %s at step %d of %d", i+1, h.Hook, h.Step, len(p.Steps))
					}
				}
			}
			sum, err := trace.Trace(dp, pkt, trace.Options{Summary: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range sum.Paths {
				if len(p.Hops) > 0 {
					t.Errorf("a summary path has hops: %v", p.Hops)
				}
			}
		})
	}
}

// TestAnnotate checks what Annotate says of the endpoints a trace ends
// at: ready and where, not ready, terminating, stale (the rules send to
// an address the EndpointSlices no longer list), and of a destination
// that is no Service (the DNAT of left-behind rules is stale).
func TestAnnotate(t *testing.T) {
	s := loadBundle(t, "iptables-healthy")
	dp := trace.FromSnapshot(resolve.Resolve(s, resolve.Options{}))
	pkt := trace.Packet{Dst: netip.MustParseAddrPort("10.112.0.10:53"), Proto: "udp"}
	notes := func(res *trace.Result) map[string]string {
		out := map[string]string{}
		for _, p := range res.Paths {
			if p.Endpoint == nil {
				out[p.Destination] = "-"
				continue
			}
			n := strings.Join(p.Endpoint.Notes, ", ")
			if p.Endpoint.Stale {
				n = "STALE " + n
			}
			out[p.Destination] = p.Endpoint.Service + ": " + n
		}
		return out
	}
	res := traceOne(t, dp, pkt)
	trace.Annotate(s.Ports, res)
	if res.TargetKind != trace.TargetService {
		t.Errorf("target kind %q", res.TargetKind)
	}
	want := map[string]string{
		"10.88.1.4:53": "kube-system/kube-dns:dns: ready, on node east-w1",
		"10.88.2.3:53": "kube-system/kube-dns:dns: ready, on this node",
	}
	if got := notes(res); !equalMaps(got, want) {
		t.Errorf("healthy: %v, want %v", got, want)
	}

	var dns *model.ServicePort
	for _, sp := range s.Ports {
		if sp.String() == "kube-system/kube-dns:dns" {
			dns = sp
		}
	}
	var keep []*model.Endpoint
	for _, e := range dns.Endpoints {
		switch e.String() {
		case "10.88.2.3:53":
			e.Ready, e.Serving, e.Terminating = false, true, true
			keep = append(keep, e)
		case "10.88.1.4:53":
		default:
			keep = append(keep, e)
		}
	}
	dns.Endpoints = keep
	res = traceOne(t, dp, pkt)
	trace.Annotate(s.Ports, res)
	want = map[string]string{
		"10.88.1.4:53": "kube-system/kube-dns:dns: STALE stale: not an endpoint of the Service port in the inputs; connections sent there fail",
		"10.88.2.3:53": "kube-system/kube-dns:dns: terminating (still serving), on this node",
	}
	if got := notes(res); !equalMaps(got, want) {
		t.Errorf("edited: %v, want %v", got, want)
	}

	for _, tc := range []struct{ dst, kind string }{
		{"10.0.0.1:80", trace.TargetNoService},
		{"10.112.0.10:80", trace.TargetNoSuchPort},
		{"172.20.8.12:30180", trace.TargetNodePort},
	} {
		res := traceOne(t, dp, trace.Packet{Dst: netip.MustParseAddrPort(tc.dst), Proto: "tcp"})
		trace.Annotate(s.Ports, res)
		if res.TargetKind != tc.kind || res.Target == "" {
			t.Errorf("%s: kind %q (%q), want %q", tc.dst, res.TargetKind, res.Target, tc.kind)
		}
	}
	// Rules left for a Service the inputs no longer hold.
	s.Ports = nil
	res = traceOne(t, dp, pkt)
	trace.Annotate(s.Ports, res)
	if res.Target != "" || res.TargetKind != "" || res.Paths[0].Endpoint != nil {
		t.Errorf("without Services: %q %q %v", res.Target, res.TargetKind, res.Paths[0].Endpoint)
	}
	s = loadBundle(t, "iptables-healthy")
	var kept []*model.ServicePort
	for _, sp := range s.Ports {
		if sp.Name.Name != "kube-dns" {
			kept = append(kept, sp)
		}
	}
	res = traceOne(t, dp, pkt)
	trace.Annotate(kept, res)
	if res.TargetKind != trace.TargetNoService {
		t.Fatalf("kind %q", res.TargetKind)
	}
	for _, p := range res.Paths {
		if p.Endpoint == nil || !p.Endpoint.Stale || !strings.Contains(p.Endpoint.Notes[0], "no Service of the inputs has 10.112.0.10:53") {
			t.Errorf("a DNAT of a deleted Service's rules: %+v", p.Endpoint)
		}
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
