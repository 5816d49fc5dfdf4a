package cmd

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/trace"
)

// portPackets returns a packet to every address and port of every service
// port the snapshot programs: its cluster IPs from a pod, its external and
// load balancer IPs from outside, and its node port on each node address
// from outside.
func portPackets(s *model.Snapshot) []trace.Packet {
	var out []trace.Packet
	for _, sp := range s.ActivePorts() {
		proto := sp.ProtoLower()
		add := func(ips []netip.Addr, port int32, from model.Origin) {
			for _, ip := range ips {
				out = append(out, trace.Packet{Dst: netip.AddrPortFrom(ip, uint16(port)), Proto: proto, From: from})
			}
		}
		add(sp.ClusterIPs, sp.Port, model.FromPod)
		add(sp.ExternalIPs, sp.Port, model.FromExternal)
		add(sp.LoadBalancerVIPs, sp.Port, model.FromExternal)
		if sp.NodePort != 0 {
			add(s.Node.Addresses, sp.NodePort, model.FromExternal)
		}
	}
	return out
}

// traceJSON traces pkt through the captured rules of s as traceRun does
// and returns the result as JSON.
func traceJSON(t *testing.T, s *model.Snapshot, pkt trace.Packet) string {
	t.Helper()
	res, err := trace.Trace(trace.FromSnapshot(resolve.Resolve(s, resolve.Options{})), pkt, trace.Options{})
	if err != nil {
		return "error: " + err.Error()
	}
	res.Target = trace.Target(s.Ports, res.Packet)
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sameTraces loads paths whole and as trace loads them, and fails unless
// the traces of a packet to every service port are the same.
func sameTraces(t *testing.T, name string, paths []string) {
	t.Helper()
	whole, err := load.Load(paths, load.Options{})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	lean, err := load.Load(paths, (&TraceOptions{}).loadOptions())
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(whole) != len(lean) {
		t.Fatalf("%s: %d snapshots whole, %d as traced", name, len(whole), len(lean))
	}
	n := 0
	for i := range whole {
		pkts := portPackets(whole[i])
		// A packet to no Service, and one to a port its address lacks.
		pkts = append(pkts, trace.Packet{Dst: netip.MustParseAddrPort("192.0.2.1:9"), Proto: "tcp"})
		if len(pkts) > 1 {
			p := pkts[0]
			p.Dst = netip.AddrPortFrom(p.Dst.Addr(), p.Dst.Port()+1)
			pkts = append(pkts, p)
		}
		for _, p := range pkts {
			a, b := traceJSON(t, whole[i], p), traceJSON(t, lean[i], p)
			if strings.Contains(name, "refused") && (!strings.Contains(b, "the kernel refuses this ruleset") || !strings.Contains(b, "BROKEN-GONE")) {
				t.Errorf("%s: %s: no warning of the rules the kernel refuses: %s", name, p, b)
			}
			if a != b {
				t.Errorf("%s: %s: the trace differs when the inputs are loaded as trace loads them:\nwhole: %s\ntrace: %s", name, p, a, b)
			}
			n++
		}
	}
	if n < 3 {
		t.Errorf("%s: %d packets traced, want one per service port", name, n)
	}
}

// TestTraceLoadSameTraces checks that the inputs as trace loads them (the
// exports lean, trimmed once the ports are built) give the traces the
// whole inputs give, for a packet to every service port of every bundle of
// testdata and of a generated node.
func TestTraceLoadSameTraces(t *testing.T) {
	bundles, err := os.ReadDir(testdata(t, "bundles"))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bundles {
		if b.IsDir() {
			sameTraces(t, b.Name(), []string{testdata(t, "bundles", b.Name())})
		}
	}
	dir, _ := traceNode(t, 200)
	sameTraces(t, "generated", []string{dir})

	// A node whose rules the kernel refuses: every trace warns of it, with
	// the problems found while the snapshot was assembled.
	dump := filepath.Join(dir, "node", "iptables-save.txt")
	text, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	// Two chains of the nat table (the last) jumping to chains it lacks.
	nat := string(text)
	decl := strings.LastIndex(nat, ":KUBE-SERVICES - [0:0]\n")
	commit := strings.LastIndex(nat, "\nCOMMIT\n")
	if decl < 0 || commit < decl {
		t.Fatal("no nat table in the generated dump")
	}
	broken := nat[:decl] + ":BROKEN-A - [0:0]\n:BROKEN-B - [0:0]\n" + nat[decl:commit] +
		"\n-A BROKEN-A -j BROKEN-NOPE\n-A BROKEN-B -j BROKEN-GONE" + nat[commit:]
	if err := os.WriteFile(dump, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	sameTraces(t, "generated, refused by the kernel", []string{dir})
}
