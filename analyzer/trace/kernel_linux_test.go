package trace_test

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/trace"
	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// The kernel agreement test loads the iptables-healthy example bundle into
// a scratch "node" namespace, sends packets to its Services from a "pod"
// namespace and from the node itself, and checks that the rules the
// kernel reports matching (TRACE, read with xtables-monitor) are the
// steps of one of the tracer's paths, and that over many connections the
// endpoints are chosen as often as the tracer's probabilities say.
//
// Topology (no link to the host): pod --veth-- node --veth(eth0)-- sink.
// The node routes everything that is not the pod out of eth0 into the
// sink namespace, which has no address and drops it, so every packet
// crosses the whole of the node's netfilter path, POSTROUTING included,
// and goes nowhere.

const (
	kPodAddr  = "10.88.2.1"   // first host of the node's pod CIDR, as the tracer picks
	kNodeAddr = "172.20.8.12" // the node's address in the bundle
)

type kernelLab struct {
	node, pod, sink *netnstest.NS
	podIface        string
	dp              *trace.Dataplane

	mu      sync.Mutex
	traces  map[string][]kernelStep // packet -> matched rules
	current map[string]string       // trace id -> the packet it now marks
	order   []string
	dport   map[string]string // trace id -> destination port of its last packet line
	probes  int               // packets to probePort traced
	mon     *exec.Cmd
	monErr  bytes.Buffer // xtables-monitor's stderr, read after it ends
	lines   int
}

// probePort is the destination port of the packets that tell that the
// monitor is ready; the kernel's traces of those are not recorded.
const probePort = "7"

type kernelStep struct{ table, chain, rule string }

func newKernelLab(t *testing.T) *kernelLab {
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "ip", "iptables-restore", "iptables-save", "xtables-monitor", "nfacct", "stdbuf")
	if out, err := exec.Command("iptables", "-V").CombinedOutput(); err != nil || !strings.Contains(string(out), "nf_tables") {
		t.Skipf("skipping: xtables-monitor --trace needs iptables-nft (iptables -V: %s)", strings.TrimSpace(string(out)))
	}
	lab := &kernelLab{node: netnstest.New(t), pod: netnstest.New(t), sink: netnstest.New(t), traces: map[string][]kernelStep{}, current: map[string]string{}, dport: map[string]string{}}
	suffix := strings.TrimPrefix(lab.node.Name, "proxyscan-test-")
	lab.podIface = "kpn" + suffix
	if len(lab.podIface) > 15 {
		lab.podIface = lab.podIface[:15]
	}
	podPeer := "kpp" + suffix
	if len(podPeer) > 15 {
		podPeer = podPeer[:15]
	}
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	// Both ends are created inside the namespaces: the host's network is
	// never touched.
	run("link", "add", lab.podIface, "netns", lab.node.Name, "type", "veth", "peer", "name", podPeer, "netns", lab.pod.Name)
	run("link", "add", "eth0", "netns", lab.node.Name, "type", "veth", "peer", "name", "sink0", "netns", lab.sink.Name)
	lab.node.Shell(fmt.Sprintf(`
		ip link set %[1]s up
		ip link set eth0 up
		ip addr add %[2]s/24 dev eth0
		ip route add %[3]s/32 dev %[1]s
		ip route add default dev eth0
		sysctl -qw net.ipv4.ip_forward=1
		sysctl -qw net.ipv4.conf.%[1]s.proxy_arp=1
		sysctl -qw net.ipv4.conf.all.rp_filter=0
		sysctl -qw net.ipv4.conf.%[1]s.rp_filter=0
	`, lab.podIface, kNodeAddr, kPodAddr))
	lab.pod.Shell(fmt.Sprintf(`
		ip link set %[1]s up
		ip addr add %[2]s/32 dev %[1]s
		ip route add 169.254.1.1 dev %[1]s
		ip route add default via 169.254.1.1 dev %[1]s onlink
	`, podPeer, kPodAddr))
	lab.sink.Shell("ip link set sink0 up")

	rules, err := os.ReadFile(filepath.Join("..", "..", "testdata", "bundles", "iptables-healthy", "node", "iptables-save.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// kube-proxy creates its nfacct counters before it writes rules that
	// use them; iptables-restore fails on a missing one.
	for _, name := range nfacctNames(rules) {
		lab.node.Run(nil, "nfacct", "add", name)
	}
	if _, err := lab.node.Try(rules, "iptables-restore"); err != nil {
		t.Fatalf("iptables-restore of the example dump: %v", err)
	}
	lab.node.Shell(fmt.Sprintf(`
		iptables -t raw -A PREROUTING -s %[1]s/32 -p udp -j TRACE
		iptables -t raw -A PREROUTING -s %[1]s/32 -p tcp -j TRACE
		iptables -t raw -A OUTPUT -s %[2]s/32 -p udp -j TRACE
		iptables -t raw -A OUTPUT -s %[2]s/32 -p tcp -j TRACE
	`, kPodAddr, kNodeAddr))
	// Trace what the kernel holds, as iptables-save prints it back: the
	// kernel's TRACE lines print the rules in that same form.
	saved := lab.node.Run(nil, "iptables-save")
	d, err := iptables.Parse("node/iptables-save.txt", saved)
	if err != nil {
		t.Fatalf("parsing iptables-save of the loaded rules: %v", err)
	}
	lab.dp = trace.FromSnapshot(resolve.Resolve(loadBundle(t, "iptables-healthy"), resolve.Options{}))
	lab.dp.IPTables = []*iptables.Dump{d}
	lab.startMonitor(t)
	return lab
}

// nfacctNames returns the nfacct counters a dump matches on.
func nfacctNames(rules []byte) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range strings.Split(string(rules), "--nfacct-name")[1:] {
		name := strings.Fields(f)[0]
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out
}

func (lab *kernelLab) startMonitor(t *testing.T) {
	// xtables-monitor writes through stdio: line-buffer it, or the lines
	// of the last packets wait in its buffer.
	args := []string{"netns", "exec", lab.node.Name, "stdbuf", "-oL", "xtables-monitor", "--trace"}
	cmd := exec.Command("ip", args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &lab.monErr
	if err := cmd.Start(); err != nil {
		t.Fatalf("xtables-monitor --trace: %v", err)
	}
	lab.mon = cmd
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			lab.parseLine(sc.Text())
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		_ = cmd.Wait()
	})
	// The monitor is ready once a first packet shows up in it.
	probe := netip.MustParseAddrPort("10.112.1.1:" + probePort) // no Service's
	for end := time.Now().Add(time.Minute); ; {
		if err := send(lab.pod.Name, "udp", probe); err != nil {
			t.Fatal(err)
		}
		for next := time.Now().Add(time.Second); lab.probed() == 0 && time.Now().Before(next); {
			time.Sleep(time.Millisecond)
		}
		if lab.probed() > 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("xtables-monitor --trace showed none of the packets sent for a minute; %d lines read from it", lab.lineCount())
		}
	}
}

func (lab *kernelLab) probed() int {
	lab.mu.Lock()
	defer lab.mu.Unlock()
	return lab.probes
}

func (lab *kernelLab) lineCount() int {
	lab.mu.Lock()
	defer lab.mu.Unlock()
	return lab.lines
}

// parseLine reads one xtables-monitor line: the packet a trace id marks,
// as it enters a hook,
//
//	PACKET: 2 90ce05a5 IN=kpn... SRC=10.88.2.1 DST=10.112.1.1 ... SPORT=20001 DPORT=7
//
// or a rule it matched:
//
//	TRACE: 2 90ce05a5 nat:KUBE-SERVICES:rule:0xcc:JUMP:KUBE-SVC-X  -4 -t nat -A KUBE-SERVICES ...
func (lab *kernelLab) parseLine(line string) {
	lab.mu.Lock()
	lab.lines++
	lab.mu.Unlock()
	if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "PACKET: "); ok {
		f := strings.Fields(rest)
		for _, kv := range f[min(len(f), 2):] {
			if port, ok := strings.CutPrefix(kv, "DPORT="); ok {
				lab.mu.Lock()
				lab.dport[f[1]] = port
				lab.mu.Unlock()
			}
		}
		return
	}
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "TRACE: ")
	if !ok {
		return
	}
	f := strings.SplitN(rest, " ", 4)
	if len(f) < 4 {
		return
	}
	id, where, ruleText := f[1], f[2], strings.TrimSpace(f[3])
	parts := strings.Split(where, ":")
	if len(parts) < 3 || parts[2] != "rule" {
		return // policy and return lines
	}
	table, chain := parts[0], parts[1]
	for _, pre := range []string{"-4 ", "-6 "} {
		ruleText = strings.TrimPrefix(ruleText, pre)
	}
	ruleText = strings.TrimPrefix(ruleText, "-t "+table+" ")
	lab.mu.Lock()
	defer lab.mu.Unlock()
	// The kernel's trace id comes from the packet buffer's address, which
	// later packets reuse: a packet starts at the TRACE rule that marks it.
	if table == "raw" && strings.HasSuffix(ruleText, "-j TRACE") {
		if lab.dport[id] == probePort {
			lab.probes++
			delete(lab.current, id)
			return
		}
		lab.current[id] = fmt.Sprintf("%s#%d", id, len(lab.order))
		lab.order = append(lab.order, lab.current[id])
	}
	key, ok := lab.current[id]
	if !ok {
		return
	}
	lab.traces[key] = append(lab.traces[key], kernelStep{table, chain, ruleText})
}

// collect waits for the kernel's trace of n more packets and returns them
// in arrival order. The later hooks of a packet may come after its first
// ones: it waits until each trace is one of the paths of res, or for a
// minute (the caller then reports what differs).
func (lab *kernelLab) collect(t *testing.T, from, n int, res *trace.Result) [][]kernelStep {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		lab.mu.Lock()
		done := len(lab.order)-from >= n
		for _, id := range lab.order[from:] {
			done = done && matchPath(res, lab.traces[id]) != nil
		}
		lab.mu.Unlock()
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	lab.mu.Lock()
	defer lab.mu.Unlock()
	var out [][]kernelStep
	for _, id := range lab.order[from:] {
		out = append(out, lab.traces[id])
	}
	if len(out) < n {
		exited := ""
		if lab.mon.ProcessState != nil || lab.mon.Process.Signal(syscall.Signal(0)) != nil {
			exited = " (xtables-monitor has exited)"
		}
		t.Fatalf("the kernel traced %d packets, want %d; %d lines read from xtables-monitor%s", len(out), n, lab.lines, exited)
	}
	return out
}

// waitSeen waits until the kernel has traced n packets in all, or for
// timeout (collect reports a shortfall).
func (lab *kernelLab) waitSeen(n int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for lab.seen() < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}

func (lab *kernelLab) seen() int {
	lab.mu.Lock()
	defer lab.mu.Unlock()
	return len(lab.order)
}

// inNetns runs fn on an OS thread that has entered namespace ns; sockets
// fn opens belong to that namespace.
func inNetns(ns string, fn func() error) error {
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	target, err := os.Open(filepath.Join("/var/run/netns", ns))
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer target.Close()
	if err := setns(target.Fd()); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("setns %s: %w", ns, err)
	}
	ferr := fn()
	if err := setns(orig.Fd()); err != nil {
		// The thread stays locked and dies with the goroutine.
		return fmt.Errorf("setns back: %w", err)
	}
	runtime.UnlockOSThread()
	return ferr
}

func setns(fd uintptr) error {
	if _, _, e := syscall.RawSyscall(sysSetns, fd, syscall.CLONE_NEWNET, 0); e != 0 {
		return e
	}
	return nil
}

// sourcePorts numbers the packets send sends.
var sourcePorts atomic.Uint32

// send sends the first packet of a new connection to dst from inside ns:
// a UDP datagram, or a TCP SYN (a non-blocking connect, closed at once, so
// that no retransmission follows).
func send(ns, proto string, dst netip.AddrPort) error {
	return inNetns(ns, func() error {
		typ := syscall.SOCK_DGRAM
		if proto == "tcp" {
			typ = syscall.SOCK_STREAM
		}
		fd, err := syscall.Socket(syscall.AF_INET, typ|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer syscall.Close(fd)
		// A source port of its own: a packet whose ports an earlier one
		// used would belong to that one's connection, which conntrack
		// keeps, and skip the nat table.
		if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: int(20000 + sourcePorts.Add(1)%40000)}); err != nil {
			return fmt.Errorf("bind: %w", err)
		}
		sa := &syscall.SockaddrInet4{Port: int(dst.Port()), Addr: dst.Addr().As4()}
		if proto == "tcp" {
			if err := syscall.Connect(fd, sa); err != nil && err != syscall.EINPROGRESS {
				return fmt.Errorf("connect %s: %w", dst, err)
			}
			return nil
		}
		return syscall.Sendto(fd, []byte("proxyscan"), 0, sa)
	})
}

// matchPath returns the tracer's path whose steps are the kernel's
// matched rules, or nil.
func matchPath(res *trace.Result, ks []kernelStep) *trace.Path {
	for i := range res.Paths {
		p := &res.Paths[i]
		var steps []trace.Step
		for _, s := range p.Steps {
			if s.Table != "ipvs" && !strings.HasPrefix(s.Rule, "-P ") {
				steps = append(steps, s)
			}
		}
		if len(steps) != len(ks) {
			continue
		}
		same := true
		for j, s := range steps {
			if s.Table != ks[j].table || s.Chain != ks[j].chain || s.Rule != ks[j].rule {
				same = false
				break
			}
		}
		if same {
			return p
		}
	}
	return nil
}

func formatKernel(ks []kernelStep) string {
	var b strings.Builder
	for _, s := range ks {
		fmt.Fprintf(&b, "  %s %s: %s\n", s.table, s.chain, s.rule)
	}
	return b.String()
}

func formatPaths(res *trace.Result) string {
	var b strings.Builder
	for i, p := range res.Paths {
		fmt.Fprintf(&b, "path %d (p=%.4f %s %s):\n", i+1, p.Probability, p.Verdict, p.Destination)
		for _, s := range p.Steps {
			fmt.Fprintf(&b, "  %s %s: %s\n", s.Table, s.Chain, s.Rule)
		}
	}
	return b.String()
}

func TestKernelAgreesIPTables(t *testing.T) {
	lab := newKernelLab(t)
	cases := []struct {
		name  string
		from  model.Origin
		proto string
		dst   string
		n     int // connections
		// affinity: later connections from the same pod find the
		// affinity entry the first one recorded, so they must take a path
		// with that condition.
		affinity bool
	}{
		{"dns from pod", model.FromPod, "udp", "10.112.0.10:53", 4, false},
		{"clusterip three endpoints from pod", model.FromPod, "tcp", "10.112.31.40:80", 200, false},
		{"session affinity from pod", model.FromPod, "tcp", "10.112.60.61:80", 4, true},
		{"no endpoints from pod", model.FromPod, "tcp", "10.112.100.20:6379", 1, false},
		{"itp local without local endpoints from pod", model.FromPod, "tcp", "10.112.70.9:80", 1, false},
		{"nodeport from pod", model.FromPod, "tcp", kNodeAddr + ":30180", 2, false},
		{"loadbalancer from pod outside the source ranges", model.FromPod, "tcp", "203.0.113.10:443", 1, false},
		{"external ip from pod", model.FromPod, "tcp", "172.20.8.200:80", 2, false},
		{"etp local loadbalancer from pod", model.FromPod, "tcp", "203.0.113.11:80", 2, false},
		{"not a service from pod", model.FromPod, "udp", "10.112.1.1:9", 1, false},
		{"dns from node", model.FromNode, "udp", "10.112.0.10:53", 4, false},
		{"clusterip from node", model.FromNode, "tcp", "10.112.31.40:443", 4, false},
		{"nodeport from node", model.FromNode, "udp", kNodeAddr + ":30504", 2, false},
		{"etp local loadbalancer from node", model.FromNode, "tcp", "203.0.113.11:80", 2, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dst := netip.MustParseAddrPort(c.dst)
			pkt := trace.Packet{Dst: dst, Proto: c.proto, From: c.from}
			ns := lab.node.Name
			if c.from == model.FromPod {
				pkt.Src = netip.MustParseAddr(kPodAddr)
				pkt.InIface = lab.podIface
				ns = lab.pod.Name
			} else {
				pkt.Src = netip.MustParseAddr(kNodeAddr)
			}
			res, err := trace.Trace(lab.dp, pkt, trace.Options{})
			if err != nil {
				t.Fatal(err)
			}
			from := lab.seen()
			for i := 0; i < c.n; i++ {
				if err := send(ns, c.proto, dst); err != nil {
					t.Fatal(err)
				}
				// Paced by the monitor: the next packet goes once this
				// one's trace has started to arrive, as a burst of trace
				// events overflows the monitor's netlink socket (and
				// xtables-monitor stops reading) when it falls behind, on
				// a loaded machine or under -race.
				lab.waitSeen(from+i+1, 10*time.Second)
			}
			got := lab.collect(t, from, c.n, res)
			counts := map[string]int{}
			for i, ks := range got {
				p := matchPath(res, ks)
				if p == nil {
					t.Fatalf("packet %d: the kernel matched rules no path of the tracer has:\n%s\ntracer:\n%s", i+1, formatKernel(ks), formatPaths(res))
				}
				if c.affinity && (i > 0) != (len(p.Conditions) > 0) {
					t.Errorf("packet %d took path with conditions %q; want the first without, the others with an affinity entry", i+1, p.Conditions)
				}
				counts[p.Destination]++
			}
			if c.n < 100 {
				return
			}
			// Endpoint frequencies: within 5 standard deviations of the
			// tracer's probabilities (a false alarm once in millions).
			want := map[string]float64{}
			for _, p := range res.Paths {
				if len(p.Conditions) == 0 {
					want[p.Destination] += p.Probability
				}
			}
			for dest, p := range want {
				mean := p * float64(c.n)
				sd := math.Sqrt(float64(c.n) * p * (1 - p))
				if d := math.Abs(float64(counts[dest]) - mean); d > 5*sd+1 {
					t.Errorf("%s: %d of %d connections, the tracer expects %.1f (probability %.4f)", dest, counts[dest], c.n, mean, p)
				}
			}
			t.Logf("endpoint counts over %d connections: %v", c.n, counts)
		})
	}
}
