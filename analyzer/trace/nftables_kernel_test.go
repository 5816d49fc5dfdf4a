//go:build linux

package trace_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/trace"
	"github.com/proxyscan/proxyscan/internal/netnstest"
)

// The namespaces of the kernel test: a "node" holding the example
// ruleset and a "pod" joined to it by a veth pair. The pod also holds two
// outside addresses, one inside the storefront's source ranges and one
// outside them, to send packets "from outside".
const (
	kNodeIP  = "172.20.8.12"
	kNodeGW  = "10.88.2.1"
	kPodIP   = "10.88.2.250"
	kExtOK   = "192.0.2.7"
	kExtDeny = "198.51.100.77"
)

// kernelTraceTable marks the test packets for tracing and drops them after
// every NAT hook ran, so that nothing leaves the namespaces.
const kernelTraceTable = `table ip proxyscan-trace {
	chain pre { type filter hook prerouting priority -300; meta l4proto { tcp, udp } meta nftrace set 1; }
	chain out { type filter hook output priority -300; meta l4proto { tcp, udp } meta nftrace set 1; }
	chain post { type filter hook postrouting priority 300; meta l4proto { tcp, udp } drop; }
}
`

// probe is a packet sent count times (from consecutive source ports).
type probe struct {
	from  model.Origin
	proto string
	src   string
	dst   string
	count int
}

// kernelPath is what nft monitor trace showed of one packet.
type kernelPath struct {
	steps []string // "chain: rule" of table ip kube-proxy
	dest  string   // destination as it left (last packet line)
	drop  bool     // a kube-proxy rule dropped or rejected it
}

// TestNFTKernelAgreement loads the nftables-healthy ruleset with the real
// nft into a scratch namespace, sends packets from a pod namespace, from
// the node itself and from outside addresses, and checks that the rules
// the kernel's trace shows are one of the tracer's paths, and that the
// endpoints chosen over repeated sends follow the tracer's probabilities.
func TestNFTKernelAgreement(t *testing.T) {
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "ip", "nft")
	ruleset, err := os.ReadFile(filepath.Join("..", "..", "testdata", "bundles", "nftables-healthy", "node", "nft-ruleset.txt"))
	if err != nil {
		t.Fatal(err)
	}
	node, pod := netnstest.New(t), netnstest.New(t)
	node.Run(nil, "ip", "link", "add", "vn", "type", "veth", "peer", "name", "vp", "netns", pod.Name)
	node.Shell(`
		ip addr add ` + kNodeIP + `/24 dev vn
		ip addr add ` + kNodeGW + `/24 dev vn
		ip link set vn up
		ip route add 10.88.0.0/16 via ` + kPodIP + ` dev vn
		ip route add 192.0.2.0/24 via ` + kPodIP + ` dev vn
		ip route add 198.51.100.0/24 via ` + kPodIP + ` dev vn
		ip route add default via ` + kPodIP + ` dev vn
		sysctl -qw net.ipv4.ip_forward=1
		sysctl -qw net.ipv4.conf.all.rp_filter=0
		sysctl -qw net.ipv4.conf.vn.rp_filter=0
	`)
	pod.Shell(`
		ip addr add ` + kPodIP + `/24 dev vp
		ip addr add ` + kExtOK + `/32 dev vp
		ip addr add ` + kExtDeny + `/32 dev vp
		ip link set vp up
		ip route add default via ` + kNodeGW + ` src ` + kPodIP + `
	`)
	node.Run(ruleset, "nft", "-f", "-")
	node.Run([]byte(kernelTraceTable), "nft", "-f", "-")

	probes := []probe{
		{model.FromPod, "tcp", kPodIP, "10.112.31.40:80", 150},
		{model.FromNode, "udp", kNodeIP, "10.112.0.10:53", 100},
		{model.FromPod, "udp", kPodIP, "10.112.0.10:53", 4},
		{model.FromPod, "tcp", kPodIP, "10.112.0.1:443", 1},
		{model.FromNode, "tcp", kNodeIP, "10.112.0.1:443", 1},
		{model.FromPod, "tcp", kPodIP, "10.112.70.2:80", 1},
		{model.FromPod, "tcp", kPodIP, "10.112.70.9:80", 1},
		{model.FromPod, "tcp", kPodIP, "10.112.100.20:6379", 1},
		{model.FromPod, "tcp", kPodIP, "10.112.0.10:8080", 1},
		{model.FromPod, "tcp", kPodIP, "10.112.200.1:80", 1},
		{model.FromPod, "tcp", kPodIP, "10.112.60.61:80", 3},
		{model.FromNode, "tcp", kNodeIP, "172.20.8.12:30943", 4},
		{model.FromPod, "tcp", kPodIP, "172.20.8.12:31080", 2},
		{model.FromPod, "udp", kPodIP, "172.20.8.12:30504", 4},
		{model.FromExternal, "udp", kExtDeny, "172.20.8.12:30504", 4},
		{model.FromExternal, "tcp", kExtOK, "203.0.113.10:80", 6},
		{model.FromExternal, "tcp", kExtDeny, "203.0.113.10:80", 1},
		{model.FromExternal, "tcp", kExtDeny, "203.0.113.11:80", 2},
		{model.FromExternal, "tcp", kExtDeny, "172.20.8.12:30943", 1},
		{model.FromExternal, "tcp", kExtDeny, "172.20.8.200:80", 4},
		{model.FromNode, "tcp", kNodeIP, "172.20.8.200:80", 2},
	}

	mon := exec.Command("ip", "netns", "exec", node.Name, "nft", "monitor", "trace")
	var mu sync.Mutex
	var out strings.Builder
	seen := map[string]bool{} // the source address:port of every packet traced
	ids := map[string]bool{}  // the trace ids whose packet is known
	var monErr syncBuffer     // "We lost some netlink events!" when it falls behind
	mon.Stderr = &monErr
	pipe, err := mon.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := mon.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			out.WriteString(line + "\n")
			if id, key, ok := tracedPacket(line); ok && !ids[id] {
				ids[id], seen[key] = true, true
			}
			mu.Unlock()
		}
	}()
	defer func() {
		_ = mon.Process.Kill()
		<-done
		_ = mon.Wait()
	}()
	traced := func() map[string]kernelPath {
		mu.Lock()
		defer mu.Unlock()
		return parseKernelTrace(out.String())
	}
	// waitSeen polls the monitor's output until the packet from key
	// (address:port) shows up in it, or for d.
	waitSeen := func(key string, d time.Duration) bool {
		for end := time.Now().Add(d); ; time.Sleep(time.Millisecond) {
			mu.Lock()
			ok := seen[key]
			mu.Unlock()
			if ok || time.Now().After(end) {
				return ok
			}
		}
	}
	// The monitor is ready once a first packet shows up in it.
	ready := false
	for port, end := 19000, time.Now().Add(time.Minute); !ready && time.Now().Before(end); port++ {
		if err := nftSendIn(pod.Name, "udp", kPodIP, port, "10.112.0.10:53"); err != nil {
			t.Fatal(err)
		}
		ready = waitSeen(fmt.Sprintf("%s:%d", kPodIP, port), time.Second)
	}
	if !ready {
		t.Fatalf("nft monitor trace showed none of the packets sent for a minute%s", lost(&monErr))
	}

	type sent struct {
		p     probe
		sport int
	}
	var sends []sent
	sport := 20000
	for _, p := range probes {
		ns := pod.Name
		if p.from == model.FromNode {
			ns = node.Name
		}
		for i := 0; i < p.count; i++ {
			sport++
			if err := nftSendIn(ns, p.proto, p.src, sport, p.dst); err != nil {
				t.Fatalf("send %s %s:%d -> %s: %v", p.proto, p.src, sport, p.dst, err)
			}
			sends = append(sends, sent{p, sport})
			// Paced by the monitor: the next packet goes once this one
			// shows up, as a burst of trace events overflows nft
			// monitor's netlink socket (and it loses events) when it
			// falls behind, on a loaded machine or under -race.
			waitSeen(fmt.Sprintf("%s:%d", p.src, sport), 10*time.Second)
		}
	}

	s := bundle(t, "nftables-healthy")
	dp := trace.FromSnapshot(resolve.Resolve(onlyForm(s, false), resolve.Options{Mode: model.ModeNFTables}))
	dp.Local = []netip.Addr{netip.MustParseAddr(kNodeIP), netip.MustParseAddr(kNodeGW), netip.MustParseAddr("127.0.0.1")}

	results := map[string]*trace.Result{}
	probeKey := func(sd sent) string {
		return fmt.Sprintf("%s %s %s %s", sd.p.from, sd.p.proto, sd.p.src, sd.p.dst)
	}
	for _, sd := range sends {
		key := probeKey(sd)
		if results[key] != nil {
			continue
		}
		dst := netip.MustParseAddrPort(sd.p.dst)
		pkt := trace.Packet{Src: netip.MustParseAddr(sd.p.src), Dst: dst, Proto: sd.p.proto, From: sd.p.from}
		if sd.p.from != model.FromNode {
			pkt.InIface = "vn"
		}
		if results[key], err = trace.Trace(dp, pkt, trace.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	// matchOf returns the tracer's path the kernel's trace of sd followed.
	matchOf := func(kpaths map[string]kernelPath, sd sent) (kernelPath, *trace.Path, bool) {
		kp, ok := kpaths[fmt.Sprintf("%s:%d", sd.p.src, sd.sport)]
		if !ok {
			return kp, nil, false
		}
		res := results[probeKey(sd)]
		for i := range res.Paths {
			if sameSteps(&res.Paths[i], kp) {
				return kp, &res.Paths[i], true
			}
		}
		return kp, nil, true
	}
	// The last lines of a packet may come after its first ones showed
	// up: poll until every packet's trace is one of the tracer's paths,
	// or for a minute (what still differs is then reported).
	var kpaths map[string]kernelPath
	for end := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		kpaths = traced()
		all := true
		for _, sd := range sends {
			if _, match, _ := matchOf(kpaths, sd); match == nil {
				all = false
				break
			}
		}
		if all || time.Now().After(end) {
			break
		}
	}

	counts := map[string]map[string]int{}
	for _, sd := range sends {
		key := probeKey(sd)
		if counts[key] == nil {
			counts[key] = map[string]int{}
		}
		kp, match, ok := matchOf(kpaths, sd)
		if !ok {
			t.Errorf("%s (source port %d): no kernel trace%s", key, sd.sport, lost(&monErr))
			continue
		}
		if match == nil {
			t.Errorf("%s: the kernel's path is none of the tracer's:\nkernel (to %s):\n  %s\ntracer:\n%s", key, kp.dest,
				strings.Join(kp.steps, "\n  "), render(results[key], false))
			continue
		}
		counts[key][kp.dest]++
	}
	// Frequencies: each endpoint within a tolerant bound of its
	// probability (4 standard deviations, plus one packet).
	for key, res := range results {
		n := 0
		for _, c := range counts[key] {
			n += c
		}
		if n < 50 {
			continue
		}
		want := map[string]float64{}
		for _, p := range res.Paths {
			if p.Verdict == trace.VerdictDNAT && len(p.Conditions) == 0 {
				want[p.Destination] += p.Probability
			}
		}
		for dest, c := range counts[key] {
			if _, ok := want[dest]; !ok {
				t.Errorf("%s: kernel chose %s %d times, the tracer never does", key, dest, c)
			}
		}
		for dest, p := range want {
			c := counts[key][dest]
			exp := float64(n) * p
			tol := 4*math.Sqrt(exp*(1-p)) + 1
			if math.Abs(float64(c)-exp) > tol {
				t.Errorf("%s: %s chosen %d times of %d, tracer says %.3f (expected %.0f ± %.0f)", key, dest, c, n, p, exp, tol)
			}
			t.Logf("%s: %s %d of %d (tracer %.3f)", key, dest, c, n, p)
		}
	}
}

// sameSteps reports whether the kube-proxy rules of path p are those the
// kernel traced, and whether p ends where the kernel's packet went.
func sameSteps(p *trace.Path, kp kernelPath) bool {
	var steps []string
	for _, s := range p.Steps {
		if s.Table == "ip kube-proxy" {
			steps = append(steps, s.Chain+": "+s.Rule)
		}
	}
	if strings.Join(steps, "\n") != strings.Join(kp.steps, "\n") {
		return false
	}
	switch p.Verdict {
	case trace.VerdictDrop, trace.VerdictReject:
		return kp.drop
	case trace.VerdictDNAT:
		return !kp.drop && p.Destination == kp.dest
	}
	return !kp.drop
}

var (
	traceLine = regexp.MustCompile(`^trace id ([0-9a-f]+) (\S+) (\S+) (\S+) (packet|rule|policy|verdict)\b ?(.*)$`)
	ipField   = regexp.MustCompile(`ip (saddr|daddr) (\S+)`)
	portField = regexp.MustCompile(`(?:tcp|udp) (sport|dport) (\d+)`)
	verdictAt = regexp.MustCompile(` \(verdict ([^)]*)\)$`)
)

// tracedPacket returns the trace id of a packet line of nft monitor trace
// output, and the packet's source address and port.
func tracedPacket(line string) (id, key string, ok bool) {
	m := traceLine.FindStringSubmatch(line)
	if m == nil || m[5] != "packet" {
		return "", "", false
	}
	f := packetFields(m[6])
	return m[1], f["saddr"] + ":" + f["sport"], true
}

// packetFields returns the addresses and ports of a packet line.
func packetFields(rest string) map[string]string {
	f := map[string]string{}
	for _, x := range ipField.FindAllStringSubmatch(rest, -1) {
		f[x[1]] = x[2]
	}
	for _, x := range portField.FindAllStringSubmatch(rest, -1) {
		f[x[1]] = x[2]
	}
	return f
}

// syncBuffer is a buffer written by one goroutine while another reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lost says what nft monitor reported on its standard error, if anything.
func lost(stderr *syncBuffer) string {
	if msg := strings.TrimSpace(stderr.String()); msg != "" {
		return " (nft monitor: " + msg + ")"
	}
	return ""
}

// parseKernelTrace reads nft monitor trace output into the path of each
// traced packet, keyed by its first source address and port.
func parseKernelTrace(out string) map[string]kernelPath {
	byID := map[string]*kernelPath{}
	keyOf := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		m := traceLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		id, table, chain, kind, rest := m[1], m[2]+" "+m[3], m[4], m[5], m[6]
		kp := byID[id]
		if kp == nil {
			kp = &kernelPath{}
			byID[id] = kp
		}
		switch kind {
		case "packet":
			f := packetFields(rest)
			if _, seen := keyOf[id]; !seen {
				keyOf[id] = f["saddr"] + ":" + f["sport"]
			}
			if d, err := netip.ParseAddr(f["daddr"]); err == nil {
				if p, err := strconv.Atoi(f["dport"]); err == nil {
					kp.dest = netip.AddrPortFrom(d, uint16(p)).String()
				}
			}
		case "rule":
			if table != "ip kube-proxy" {
				continue
			}
			v := verdictAt.FindStringSubmatch(rest)
			rule := verdictAt.ReplaceAllString(rest, "")
			kp.steps = append(kp.steps, chain+": "+rule)
			if v != nil && (v[1] == "drop" || strings.HasPrefix(rule, "reject") || strings.Contains(rule, " reject")) {
				kp.drop = true
			}
		}
	}
	res := map[string]kernelPath{}
	for id, k := range keyOf {
		res[k] = *byID[id]
	}
	return res
}

// sendIn sends one packet from src:sport to dst inside the named network
// namespace: a UDP datagram, or a TCP SYN (a connection attempt cut short).
func nftSendIn(ns, proto, src string, sport int, dst string) error {
	errc := make(chan error, 1)
	go func() {
		// The thread enters the namespace and is never handed back: it
		// ends with the goroutine.
		runtime.LockOSThread()
		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			errc <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		errc <- nftSend(proto, src, sport, dst)
	}()
	return <-errc
}

func nftSend(proto, src string, sport int, dst string) error {
	srcIP := net.ParseIP(src)
	switch proto {
	case "udp":
		raddr, err := net.ResolveUDPAddr("udp", dst)
		if err != nil {
			return err
		}
		c, err := net.DialUDP("udp", &net.UDPAddr{IP: srcIP, Port: sport}, raddr)
		if err != nil {
			return err
		}
		defer c.Close()
		// A datagram sent from the node and dropped at postrouting fails
		// with EPERM: dropped by design.
		if _, err := c.Write([]byte("proxyscan")); err != nil && !errors.Is(err, unix.EPERM) {
			return err
		}
		return nil
	case "tcp":
		// A non-blocking connect, closed at once: the SYN leaves, and no
		// retransmission follows. (A dial with a timeout may give up
		// before it sends anything on a loaded machine.)
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if err := unix.Bind(fd, &unix.SockaddrInet4{Port: sport, Addr: netip.MustParseAddr(src).As4()}); err != nil {
			return fmt.Errorf("bind: %w", err)
		}
		d := netip.MustParseAddrPort(dst)
		if err := unix.Connect(fd, &unix.SockaddrInet4{Port: int(d.Port()), Addr: d.Addr().As4()}); err != nil && err != unix.EINPROGRESS {
			return fmt.Errorf("connect %s: %w", dst, err)
		}
		return nil // the SYN is dropped or rejected: no connection by design
	}
	return fmt.Errorf("protocol %s not sent", proto)
}
