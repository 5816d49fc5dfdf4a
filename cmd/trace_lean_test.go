package cmd

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/trace"
	"github.com/proxyscan/proxyscan/internal/benchgen"
)

// traceBoth runs `proxyscan trace` of pkt on paths with the exports read
// lean (only the objects of the packet's Service) and the dumps'
// per-Service chains lazily, and with both read whole, and fails unless the exit code, the output and the warnings are the same;
// flags are given before the paths (--strict).
func traceBoth(t *testing.T, name string, paths []string, pkt trace.Packet, flags ...string) {
	t.Helper()
	args := append(append([]string{"trace"}, flags...), paths...)
	args = append(args, "--dst", pkt.Dst.String(), "--proto", pkt.Proto, "--from", pkt.From.String(), "-o", "json")
	run := func(lean bool) string {
		defer func(was, lazy bool) { leanTrace, lazyTrace = was, lazy }(leanTrace, lazyTrace)
		leanTrace, lazyTrace = lean, lean
		f, outputs := testFactory()
		code := Run(f, args)
		stdout, stderr := outputs()
		return fmt.Sprintf("exit %d\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	lean, whole := run(true), run(false)
	if lean != whole {
		t.Errorf("%s: %s: the trace differs when the exports are read lean:\nlean:  %s\nwhole: %s", name, pkt, lean, whole)
	}
}

// leanPackets returns the packets traceBoth traces on the inputs at paths:
// one to every address and port of every service port (see portPackets),
// a node port on an address of no Service, one to a port a Service's
// address lacks, and one to an address of no Service.
func leanPackets(t *testing.T, paths []string) []trace.Packet {
	t.Helper()
	snaps, err := load.Load(paths, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var pkts []trace.Packet
	for _, s := range snaps {
		pkts = append(pkts, portPackets(s)...)
		for _, sp := range s.ActivePorts() {
			if sp.NodePort != 0 {
				pkts = append(pkts, trace.Packet{Dst: netip.AddrPortFrom(netip.MustParseAddr("192.0.2.10"), uint16(sp.NodePort)),
					Proto: sp.ProtoLower(), From: model.FromExternal})
				break
			}
		}
	}
	if len(pkts) > 0 {
		p := pkts[0]
		p.Dst = netip.AddrPortFrom(p.Dst.Addr(), p.Dst.Port()+1)
		pkts = append(pkts, p)
	}
	return append(pkts, trace.Packet{Dst: netip.MustParseAddrPort("192.0.2.1:9"), Proto: "tcp", From: model.FromPod})
}

// TestTraceLeanSame checks that a trace whose exports are read lean
// (TraceOptions.load: only the Services and EndpointSlices that may
// concern the packet's destination are decoded) prints what a trace of the
// whole exports prints, exit code and warnings included: on every bundle
// of testdata (iptables, IPVS and nftables modes), on the dumps pasted
// into tickets, and on a generated node for a cluster IP, a node port, an
// unknown address and a packet that a rule of no Service rewrites, its
// export written in every spelling and order.
func TestTraceLeanSame(t *testing.T) {
	fallbacks := leanFallbacks.Load()
	bundles, err := os.ReadDir(testdata(t, "bundles"))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bundles {
		if !b.IsDir() {
			continue
		}
		paths := []string{testdata(t, "bundles", b.Name())}
		for _, p := range leanPackets(t, paths) {
			traceBoth(t, b.Name(), paths, p)
		}
	}
	pastes, err := filepath.Glob(testdata(t, "paste", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	mini := testdata(t, "bundles", "iptables-mini")
	for i, p := range pastes {
		if testing.Short() && i%4 != 0 {
			continue
		}
		paths := []string{p, filepath.Join(mini, "cluster"), filepath.Join(mini, "kube-proxy")}
		pkts := leanPackets(t, paths)
		if testing.Short() && len(pkts) > 4 {
			pkts = append(pkts[:2], pkts[len(pkts)-2:]...)
		}
		for _, pkt := range pkts {
			traceBoth(t, filepath.Base(p), paths, pkt)
		}
	}
	if n := leanFallbacks.Load() - fallbacks; n != 0 {
		t.Errorf("%d traces of testdata read the exports whole after all", n)
	}

	dir, spec := traceNode(t, 200)
	// A rule of no Service before kube-proxy's: a DNAT of 203.0.113.7:8443.
	dump := filepath.Join(dir, "node", "iptables-save.txt")
	text, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	nat := strings.Index(string(text), "*nat\n")
	pre := strings.Index(string(text)[max(nat, 0):], "\n-A PREROUTING ")
	if nat < 0 || pre < 0 {
		t.Fatal("no nat PREROUTING rule in the generated dump")
	}
	at := nat + pre + 1
	custom := "-A PREROUTING -d 203.0.113.7/32 -p tcp -m tcp --dport 8443 -j DNAT --to-destination 10.128.0.5:443\n"
	if err := os.WriteFile(dump, []byte(string(text[:at])+custom+string(text[at:])), 0o644); err != nil {
		t.Fatal(err)
	}
	pkts := []trace.Packet{
		{Dst: netip.MustParseAddrPort("10.96.0.135:80"), Proto: "tcp", From: model.FromPod},          // a cluster IP
		{Dst: netip.MustParseAddrPort("10.96.0.0:80"), Proto: "tcp", From: model.FromPod},            // the first Service's
		{Dst: netip.MustParseAddrPort("10.96.0.199:80"), Proto: "tcp", From: model.FromNode},         // the last Service's
		{Dst: netip.MustParseAddrPort("10.96.0.136:81"), Proto: "tcp", From: model.FromPod},          // a port it lacks
		{Dst: netip.MustParseAddrPort("192.0.2.10:30003"), Proto: "tcp", From: model.FromExternal},   // a node port
		{Dst: netip.MustParseAddrPort("10.99.0.1:80"), Proto: "tcp", From: model.FromPod},            // no Service's
		{Dst: netip.MustParseAddrPort("203.0.113.7:8443"), Proto: "tcp", From: model.FromExternal},   // a rule of no Service
		{Dst: netip.MustParseAddrPort("10.96.0.135:80"), Proto: "udp", From: model.FromPod},          // another protocol
		{Dst: netip.MustParseAddrPort("[fd00::1]:80"), Proto: "tcp", From: model.FromPod},            // IPv6: every Service
		{Dst: netip.MustParseAddrPort("10.96.0.4:80"), Proto: "tcp", From: model.FromPod},            // a NodePort Service
		{Dst: netip.MustParseAddrPort("10.96.0.13:80"), Proto: "tcp", From: model.FromPod},           // a prefix of others
		{Dst: netip.MustParseAddrPort("10.96.0.13:30000"), Proto: "tcp", From: model.FromExternal},   // a node port on it
		{Dst: netip.MustParseAddrPort("10.128.0.5:443"), Proto: "tcp", From: model.FromPod},          // an endpoint
		{Dst: netip.MustParseAddrPort("192.0.2.10:30049"), Proto: "udp", From: model.FromExternal},   // no such node port
		{Dst: netip.MustParseAddrPort("10.96.0.200:80"), Proto: "tcp", From: model.FromPod},          // past the last
		{Dst: netip.MustParseAddrPort("127.0.0.1:30010"), Proto: "tcp", From: model.FromNode},        // a node port on lo
		{Dst: netip.MustParseAddrPort("10.96.0.100:80"), Proto: "sctp", From: model.FromPod},         // sctp
		{Dst: netip.MustParseAddrPort("10.96.0.64:80"), Proto: "tcp", From: model.FromExternal},      // from outside
		{Dst: netip.MustParseAddrPort("10.96.0.8:80"), Proto: "tcp", From: model.FromNode},           // from the node
		{Dst: netip.MustParseAddrPort("10.96.0.12:8080"), Proto: "tcp", From: model.FromPod},         // the target port
		{Dst: netip.MustParseAddrPort("0.0.0.0:80"), Proto: "tcp", From: model.FromPod},              // no address
		{Dst: netip.MustParseAddrPort("10.96.0.1:80"), Proto: "tcp", From: model.FromPod},            // a prefix of 100 others
		{Dst: netip.MustParseAddrPort("192.0.2.10:30000"), Proto: "tcp", From: model.FromExternal},   // the first node port
		{Dst: netip.MustParseAddrPort("[::ffff:10.96.0.135]:80"), Proto: "tcp", From: model.FromPod}, // IPv4-mapped
	}
	cluster := filepath.Join(dir, "cluster")
	objects := spec.Objects()
	var services, slices []any
	for _, o := range objects {
		if _, ok := o.(*corev1.Service); ok {
			services = append(services, o)
		} else {
			slices = append(slices, o)
		}
	}
	for _, tc := range []struct {
		name     string
		files    map[string]func() ([]byte, error)
		fallback bool
	}{
		{"indented JSON", nil, false},
		{"compact JSON", map[string]func() ([]byte, error){"cluster.json": func() ([]byte, error) { return listJSON(objects, "") }}, false},
		{"YAML", map[string]func() ([]byte, error){"cluster.json": nil, "cluster.yaml": func() ([]byte, error) {
			var b strings.Builder
			err := spec.WriteYAML(&b)
			return []byte(b.String()), err
		}}, false},
		{"two files", map[string]func() ([]byte, error){"cluster.yaml": nil,
			"endpointslices.json": func() ([]byte, error) { return listJSON(slices, " ") },
			"services.json":       func() ([]byte, error) { return listJSON(services, " ") }}, false},
		// The rules of svc-00135 send to endpoints the export no longer
		// has: stale, as other slices of its namespace are exported.
		{"a Service without slices", map[string]func() ([]byte, error){"endpointslices.json": nil, "services.json": nil,
			"cluster.json": func() ([]byte, error) {
				return listJSON(append(append(append([]any{}, services...), slices[:135]...), slices[136:]...), " ")
			}}, false},
		{"slices first", map[string]func() ([]byte, error){"cluster.json": func() ([]byte, error) {
			return listJSON(append(append([]any{}, slices...), services...), " ")
		}}, true},
		// Two exports of the Services: a copy left out of one may be
		// the newer (svc-00135 moved to another cluster IP).
		{"copies", map[string]func() ([]byte, error){"cluster.json": func() ([]byte, error) { return listJSON(objects, " ") },
			"later.json": func() ([]byte, error) {
				svc := services[135].(*corev1.Service).DeepCopy()
				svc.ResourceVersion = "999999999"
				svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "10.99.9.9", []string{"10.99.9.9"}
				return listJSON([]any{svc}, "")
			}}, true},
	} {
		for name, write := range tc.files {
			p := filepath.Join(cluster, name)
			if write == nil {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				continue
			}
			data, err := write()
			if err == nil {
				err = os.WriteFile(p, data, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		before := leanFallbacks.Load()
		for i, p := range pkts {
			traceBoth(t, tc.name, []string{dir}, p)
			if i%4 == 0 {
				traceBoth(t, tc.name+", strict", []string{dir}, p, "--strict")
			}
		}
		if fell := leanFallbacks.Load() > before; fell != tc.fallback {
			t.Errorf("%s: read the exports whole after all: %v, want %v", tc.name, fell, tc.fallback)
		}
	}
}

// TestTraceLeanFleet checks that a trace of several nodes' bundles reads
// each node's export lean (each decides its slices from its own
// Services), with the output of a whole reading.
func TestTraceLeanFleet(t *testing.T) {
	dir := t.TempDir()
	spec := benchgen.Spec{Services: 200, Endpoints: 1100, NodePortEvery: 4}
	if err := spec.WriteFleet(dir, 3); err != nil {
		t.Fatal(err)
	}
	before := leanFallbacks.Load()
	for _, dst := range []string{"10.96.0.135:80", "192.0.2.10:30003", "10.99.0.1:80"} {
		pkt := trace.Packet{Dst: netip.MustParseAddrPort(dst), Proto: "tcp", From: model.FromPod}
		traceBoth(t, "fleet", []string{dir}, pkt)
		pkt.From = model.FromExternal
		traceBoth(t, "fleet", []string{filepath.Join(dir, "node-0001"), filepath.Join(dir, "node-0003")}, pkt)
	}
	if n := leanFallbacks.Load() - before; n != 0 {
		t.Errorf("%d traces of the fleet read the exports whole after all", n)
	}
}

// listJSON writes objects as a v1 List, indented by indent.
func listJSON(objects []any, indent string) ([]byte, error) {
	list := map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]string{"resourceVersion": ""}, "items": objects}
	if indent == "" {
		return json.Marshal(list)
	}
	return json.MarshalIndent(list, "", indent)
}

// TestTraceLeanAllocs guards what a trace of one packet saves by reading
// the exports lean: on a generated node of 2,000 Services it allocates at
// most an eighth of the objects, and at most nine tenths of the bytes, of
// a trace of the whole exports (about 6% and 84%: the dump's parse is the
// most of what is left).
func TestTraceLeanAllocs(t *testing.T) {
	dir, _ := traceNode(t, 2000)
	measure := func(lean bool) (allocs, bytes uint64) { return traceAllocs(t, dir, &leanTrace, lean) }
	measure(true) // the first run sets up what every run shares
	la, lb := measure(true)
	wa, wb := measure(false)
	t.Logf("lean: %d allocations, %d bytes; whole: %d allocations, %d bytes", la, lb, wa, wb)
	if la*8 > wa || lb*10 > wb*9 {
		t.Errorf("a lean trace allocates %d objects and %d bytes, a whole one %d and %d", la, lb, wa, wb)
	}
}

// TestTraceLazySame checks that a trace whose dumps' per-Service chains
// are read lazily (iptables.ParseLenientLazy: only the chains the packet
// reaches are parsed) prints what a trace of a whole parse prints, on a
// generated node's dump as iptables-save writes it and changed in the
// ways a lazy reading must notice: the rules of a chain in two places,
// an -I command, a per-Service chain reached only from a rule of no
// Service, a dump of the nat table alone, and a damaged rule in a chain
// the packet reaches (read again whole). A damaged rule in a chain the
// packet does not reach is not refused: the trace says nothing of it.
func TestTraceLazySame(t *testing.T) {
	dir, _ := traceNode(t, 200)
	dump := filepath.Join(dir, "node", "iptables-save.txt")
	data, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	orig := string(data)
	lines := strings.Split(orig, "\n")
	// target returns the target of the first rule of chain holding text.
	target := func(chain, text string) (int, string) {
		for i, l := range lines {
			if strings.HasPrefix(l, "-A "+chain+" ") && strings.Contains(l, text) {
				f := strings.Fields(l[strings.LastIndex(l, " -j ")+1:])
				return i, f[1]
			}
		}
		t.Fatalf("no rule of %s with %q", chain, text)
		return 0, ""
	}
	_, svc := target("KUBE-SERVICES", "-d 10.96.0.135/32")
	_, sep := target(svc, "KUBE-SEP-")
	_, other := target("KUBE-SERVICES", "-d 10.96.0.17/32")
	_, otherSep := target(other, "KUBE-SEP-")
	dnat, _ := target(sep, "DNAT")
	otherDNAT, _ := target(otherSep, "DNAT")
	edit := func(f func(ls []string) []string) string {
		return strings.Join(f(append([]string{}, lines...)), "\n")
	}
	natCommit := strings.Index(orig, "*nat\n")
	natCommit += strings.Index(orig[natCommit:], "\nCOMMIT\n") + 1
	pkts := []trace.Packet{
		{Dst: netip.MustParseAddrPort("10.96.0.135:80"), Proto: "tcp", From: model.FromPod},
		{Dst: netip.MustParseAddrPort("10.96.0.17:80"), Proto: "tcp", From: model.FromNode},
		{Dst: netip.MustParseAddrPort("192.0.2.10:30003"), Proto: "tcp", From: model.FromExternal},
		{Dst: netip.MustParseAddrPort("203.0.113.9:8443"), Proto: "tcp", From: model.FromExternal},
		{Dst: netip.MustParseAddrPort("10.99.0.1:80"), Proto: "tcp", From: model.FromPod},
		{Dst: netip.MustParseAddrPort("[fd00::1]:80"), Proto: "tcp", From: model.FromPod},
	}
	manifest := filepath.Join(dir, "manifest.json")
	// Read leniently (a plain directory), then strictly (a bundle with
	// its manifest, as collect writes it).
	for _, collected := range []bool{false, true} {
		if collected {
			if err := os.WriteFile(manifest, []byte(`{"schema": 1, "collected_at": "2026-03-02T09:15:00Z", "sources": []}`), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct {
			name string
			text string
			// lazy: the dump is read lazily; fallback: a trace of the first
			// packet is made again on a whole parse. reached: only the first
			// packet is traced (the others do not reach the damage).
			lazy, fallback, reached bool
		}{
			{"as written", orig, true, false, false},
			{"a chain's rules in two places", edit(func(ls []string) []string {
				moved := ls[otherDNAT]
				ls = append(ls[:otherDNAT], ls[otherDNAT+1:]...)
				for i, l := range ls {
					if l == "COMMIT" && i > dnat {
						return append(ls[:i], append([]string{moved}, ls[i:]...)...)
					}
				}
				return ls
			}), false, false, false},
			{"an -I command", edit(func(ls []string) []string {
				return append(ls[:dnat], append([]string{"-I " + svc + " 1 -p tcp -j KUBE-MARK-MASQ"}, ls[dnat:]...)...)
			}), false, false, false},
			{"a per-Service chain reached from a rule of no Service", strings.Replace(orig, "\n-A PREROUTING ",
				"\n-A PREROUTING -d 203.0.113.9/32 -p tcp -m tcp --dport 8443 -j "+svc+"\n-A PREROUTING ", 1), true, false, false},
			{"the nat table alone", "# Generated by iptables-save v1.8.9 (nf_tables) on Sun Mar  1 12:00:00 2026\n" + orig[strings.Index(orig, "*nat\n"):natCommit+len("COMMIT\n")], true, false, false},
			{"a damaged rule the packet reaches", edit(func(ls []string) []string {
				ls[dnat] = strings.Replace(ls[dnat], " -j DNAT", " --dport 99999 -j DNAT", 1)
				return ls
			}), true, true, true},
		} {
			name := tc.name
			if collected {
				name += ", collected"
			}
			if err := os.WriteFile(dump, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			for i, p := range pkts {
				if tc.reached && i > 0 {
					break
				}
				lazy, fallbacks := lazyTraces.Load(), lazyFallbacks.Load()
				traceBoth(t, name, []string{dir}, p)
				if read := lazyTraces.Load() > lazy; read != tc.lazy {
					t.Errorf("%s: %s: read lazily %v, want %v", name, p, read, tc.lazy)
				}
				if fell := lazyFallbacks.Load() > fallbacks; i == 0 && fell != tc.fallback {
					t.Errorf("%s: %s: traced again on a whole parse %v, want %v", name, p, fell, tc.fallback)
				}
			}
		}

		// A damaged rule the packet does not reach: the lazy trace does not
		// see it, the trace of a whole parse warns of it.
		damaged := edit(func(ls []string) []string {
			ls[otherDNAT] = strings.Replace(ls[otherDNAT], " -j DNAT", " --dport 99999 -j DNAT", 1)
			return ls
		})
		if err := os.WriteFile(dump, []byte(damaged), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"trace", dir, "--dst", "10.96.0.135:80", "-o", "json"}
		fallbacks := lazyFallbacks.Load()
		f, outputs := testFactory()
		code := Run(f, args)
		lazyOut, lazyErr := outputs()
		if lazyFallbacks.Load() != fallbacks {
			t.Errorf("a damaged rule the packet does not reach: traced again on a whole parse (collected %v)", collected)
		}
		if err := os.WriteFile(dump, []byte(orig), 0o644); err != nil {
			t.Fatal(err)
		}
		f, outputs = testFactory()
		wantCode := Run(f, args)
		wantOut, wantErr := outputs()
		if code != wantCode || lazyOut != wantOut || lazyErr != wantErr {
			t.Errorf("a damaged rule the packet does not reach (collected %v): the trace differs from that of the dump without it:\nexit %d\n%s\n%s\nwant exit %d\n%s\n%s", collected, code, lazyOut, lazyErr, wantCode, wantOut, wantErr)
		}
	}
}

// TestTraceLazyAllocs guards what a trace of one packet saves by reading
// the dump's per-Service chains lazily: on a generated node of 2,000
// Services it parses the options of a handful of them (the packet's
// Service's and its endpoints'), not every chain's. The bytes it saves
// (about 1 MB of 21, the rules' options; TestParseLenientLazyAllocs
// guards them) are logged: the background work of a run (the kernel's
// checks, the layout) makes a run's total vary as much.
func TestTraceLazyAllocs(t *testing.T) {
	dir, _ := traceNode(t, 2000)
	measure := func(lazy bool) (allocs, bytes uint64) { return traceAllocs(t, dir, &lazyTrace, lazy) }
	measure(true) // the first run sets up what every run shares
	parsedBefore := lazyParsed.Load()
	la, lb := measure(true)
	parsed := lazyParsed.Load() - parsedBefore
	wa, wb := measure(false)
	t.Logf("lazy: %d allocations, %d bytes, %d chains parsed; whole dump: %d allocations, %d bytes", la, lb, parsed, wa, wb)
	if parsed == 0 || parsed > 16 {
		t.Errorf("a lazy trace of one packet parsed %d per-Service chains", parsed)
	}
}

// traceAllocs returns the allocations and bytes a trace of one packet
// into the generated node in dir makes with the switch at on (leanTrace
// or lazyTrace), set back as it was after.
func traceAllocs(t *testing.T, dir string, set *bool, on bool) (allocs, bytes uint64) {
	t.Helper()
	defer func(was bool) { *set = was }(*set)
	*set = on
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	io, _, _ := Test()
	err := traceRun(&TraceOptions{IO: io, Paths: []string{dir}, Dst: "10.96.3.135:80", Proto: "tcp", From: "pod", Output: "json"})
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs, after.TotalAlloc - before.TotalAlloc
}

// traceNode writes the bundle of a generated node of services Services
// (5.5 endpoints each, a NodePort Service in four) into a directory of
// the test, and returns it and the node's spec.
func traceNode(t *testing.T, services int) (string, benchgen.Spec) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "node")
	spec := benchgen.Spec{Services: services, Endpoints: services * 11 / 2, NodePortEvery: 4, Node: "bench-node-1"}
	if err := spec.WriteBundle(dir); err != nil {
		t.Fatal(err)
	}
	return dir, spec
}
