package report

import (
	"bytes"
	"fmt"
	"net/netip"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/proxier"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/analyzer/trace"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// walkCase is a trace of an example bundle to render as a packet walk.
type walkCase struct {
	name, bundle, dst, proto string
	from                     model.Origin
	expected                 bool
	// edit changes the loaded node before it is resolved.
	edit func(t *testing.T, s *model.Snapshot)
}

// endpointOf returns the endpoint addr of the Service port named sp.
func endpointOf(t *testing.T, s *model.Snapshot, sp, addr string) *model.Endpoint {
	t.Helper()
	for _, p := range s.Ports {
		if p.String() != sp {
			continue
		}
		for _, e := range p.Endpoints {
			if e.String() == addr {
				return e
			}
		}
	}
	t.Fatalf("no endpoint %s of %s", addr, sp)
	return nil
}

var walkCases = []walkCase{
	{name: "iptables", bundle: "iptables-healthy", dst: "10.112.0.10:53", proto: "udp"},
	{name: "iptables-expected", bundle: "iptables-healthy", dst: "10.112.31.40:80", expected: true},
	{name: "iptables-node", bundle: "iptables-healthy", dst: "10.112.0.10:53", proto: "udp", from: model.FromNode},
	{name: "ipvs", bundle: "ipvs-healthy", dst: "10.112.0.10:53", proto: "udp"},
	{name: "ipvs-assumed", bundle: "ipvs-healthy-mini", dst: "10.96.0.10:53", proto: "udp",
		// Without ip addr, the virtual servers are taken as bound.
		edit: func(t *testing.T, s *model.Snapshot) { s.Addrs, s.Node.Local = nil, nil }},
	{name: "nftables", bundle: "nftables-healthy", dst: "10.112.0.10:53", proto: "udp"},
	{name: "nftables-expected", bundle: "nftables-healthy", dst: "10.112.0.10:53", proto: "udp", expected: true},
	// The EndpointSlice no longer lists 10.88.1.4: the rules that still
	// send there are stale.
	{name: "stale", bundle: "iptables-healthy", dst: "10.112.0.10:53", proto: "udp",
		edit: func(t *testing.T, s *model.Snapshot) {
			gone := endpointOf(t, s, "kube-system/kube-dns:dns", "10.88.1.4:53")
			for _, p := range s.Ports {
				var keep []*model.Endpoint
				for _, e := range p.Endpoints {
					if e != gone {
						keep = append(keep, e)
					}
				}
				p.Endpoints = keep
			}
		}},
	{name: "not-ready", bundle: "iptables-healthy", dst: "10.112.0.10:53", proto: "udp",
		edit: func(t *testing.T, s *model.Snapshot) {
			e := endpointOf(t, s, "kube-system/kube-dns:dns", "10.88.2.3:53")
			e.Ready, e.Serving, e.Terminating = false, true, true
			endpointOf(t, s, "kube-system/kube-dns:dns", "10.88.1.4:53").Ready = false
		}},
	{name: "no-service", bundle: "iptables-healthy", dst: "10.0.0.1:80"},
	{name: "wrong-port", bundle: "iptables-healthy", dst: "10.112.0.10:80"},
	{name: "reject", bundle: "iptables-healthy", dst: "10.112.100.20:6379"},
}

// loadNode loads an example bundle's node.
func loadNode(t *testing.T, bundle string) *model.Snapshot {
	t.Helper()
	snaps, err := load.Load([]string{filepath.Join(parsetest.Root(t), "testdata", "bundles", bundle)}, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 1 {
		t.Fatalf("%s: %d nodes", bundle, len(snaps))
	}
	return snaps[0]
}

// traceCase traces c as `proxyscan trace` does, on its side (captured, or
// expected when expected).
func traceCase(t *testing.T, c walkCase, expected bool) *trace.Result {
	t.Helper()
	s := loadNode(t, c.bundle)
	if c.edit != nil {
		c.edit(t, s)
	}
	r := resolve.Resolve(s, resolve.Options{})
	dp := trace.FromSnapshot(r)
	if expected {
		exp, err := proxier.Expect(r, proxier.Options{})
		if err != nil {
			t.Fatal(err)
		}
		dp = trace.FromExpected(r, exp)
	}
	pkt := trace.Packet{Dst: netip.MustParseAddrPort(c.dst), Proto: c.proto, From: c.from}
	if pkt.Proto == "" {
		pkt.Proto = "tcp"
	}
	res, err := trace.Trace(dp, pkt, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	trace.Annotate(s.Ports, res)
	return res
}

// TestTraceWalkGoldens renders traces of the example bundles (iptables,
// IPVS with and without ip addr, nftables, expected rules, a stale
// endpoint, endpoints not ready and terminating, a destination that is no
// Service, a port the Service does not have) as packet walks at 80 and
// 160 columns, and in full (-v) at 80.
func TestTraceWalkGoldens(t *testing.T) {
	for _, c := range walkCases {
		res := traceCase(t, c, c.expected)
		for _, v := range []struct {
			width   int
			verbose bool
		}{{80, false}, {160, false}, {80, true}} {
			name := fmt.Sprintf("%s.%d.table", c.name, v.width)
			if v.verbose {
				name = fmt.Sprintf("%s.verbose.%d.table", c.name, v.width)
			}
			t.Run(name, func(t *testing.T) {
				var buf bytes.Buffer
				if err := RenderTrace(&buf, "table", []*trace.Result{res}, Options{Width: v.width, Verbose: v.verbose}); err != nil {
					t.Fatal(err)
				}
				checkGolden(t, filepath.Join("walk", name), buf.Bytes())
			})
		}
	}
}

// TestTraceWalkShape checks what the walks must say: a stale endpoint is
// flagged (never a plain DNAT), a destination kube-proxy does not handle
// is named so with the Service's ports (never a bare ACCEPT), the routing
// decision of an IPVS virtual address says it is assumed bound, and the
// shared steps are printed once.
func TestTraceWalkShape(t *testing.T) {
	for _, tc := range []struct {
		name       string
		want, deny []string
	}{
		{"stale", []string{"✗ path 1 (1/2 (50.0%)) ends at 10.88.1.4:53, a stale endpoint: not an endpoint of the Service port",
			"DNAT → 10.88.1.4:53 (STALE endpoint)"}, nil},
		{"not-ready", []string{"terminating (still serving)", "not ready"}, []string{"stale"}},
		{"no-service", []string{"10.0.0.1 is no Service's address", "ACCEPT untouched → 10.0.0.1:80: no Service has this address"}, nil},
		{"wrong-port", []string{"which has no port 80/TCP: its ports are 53/TCP", "the Service has no such port"}, nil},
		{"ipvs-assumed", []string{"▸ INPUT  routing decision: 10.96.0.10 is bound to kube-ipvs0 (assumed: no ip addr in the inputs)", "▸ IPVS"}, nil},
		{"iptables", []string{"▸ PREROUTING", "▸ FORWARD  routing decision: 10.88.1.4 (after DNAT)", "on node east-w1", "on this node"}, []string{"stale"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c walkCase
			for _, x := range walkCases {
				if x.name == tc.name {
					c = x
				}
			}
			var buf bytes.Buffer
			if err := RenderTrace(&buf, "table", []*trace.Result{traceCase(t, c, c.expected)}, Options{Width: 160}); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the walk lacks %q:\n%s", w, out)
				}
			}
			for _, d := range tc.deny {
				if strings.Contains(out, d) {
					t.Errorf("the walk holds %q:\n%s", d, out)
				}
			}
			if n := strings.Count(out, "nat PREROUTING  -j KUBE-SERVICES"); n > 1 {
				t.Errorf("the shared first step is printed %d times:\n%s", n, out)
			}
		})
	}
}

// TestTraceWalkFits checks that no line of a fitted walk or comparison
// (without -v) is wider than the terminal, at widths from 70 to 200
// columns.
func TestTraceWalkFits(t *testing.T) {
	var results []*trace.Result
	for _, c := range walkCases {
		results = append(results, traceCase(t, c, c.expected))
	}
	var cmp trace.Comparison
	readJSON(t, "compare.in.json", &cmp)
	for _, width := range []int{70, 80, 100, 120, 160, 200} {
		var buf bytes.Buffer
		if err := RenderTrace(&buf, "table", results, Options{Width: width}); err != nil {
			t.Fatal(err)
		}
		if err := RenderCompare(&buf, "table", []*trace.Comparison{&cmp}, Options{Width: width}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(buf.String(), "\n")
		if len(lines) < 300 {
			t.Fatalf("width %d: only %d lines", width, len(lines))
		}
		for i, l := range lines {
			if w := textWidth(l); w > width {
				t.Errorf("width %d: line %d is %d columns wide: %q", width, i+1, w, l)
			}
		}
	}
}

// sgrParams matches an SGR escape sequence, capturing its parameters.
var sgrParams = regexp.MustCompile(`\x1b\[([0-9;]*)m`)

// TestTraceWalkColour checks that the coloured walk (and analyze's table,
// which shares its styles) neither underlines nor strikes through text
// (lipgloss writes those one sequence per character) and stays a few
// sequences a line.
func TestTraceWalkColour(t *testing.T) {
	res := traceCase(t, walkCases[0], false)
	var buf bytes.Buffer
	if err := RenderTrace(&buf, "table", []*trace.Result{res}, Options{Width: 120, Color: true}); err != nil {
		t.Fatal(err)
	}
	var r Report
	readJSON(t, "single-node.in.json", &r)
	if err := RenderTable(&buf, &r, Options{Width: 120, Color: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "\x1b[") {
		t.Fatal("no colour at all")
	}
	for i, l := range strings.Split(buf.String(), "\n") {
		seqs := sgrParams.FindAllStringSubmatch(l, -1)
		if len(seqs) > 16 {
			t.Errorf("line %d holds %d escape sequences: %q", i+1, len(seqs), l)
		}
		for _, m := range seqs {
			for _, p := range strings.Split(m[1], ";") {
				if p == "4" || p == "9" {
					t.Errorf("line %d underlines or strikes through: %q", i+1, l)
				}
			}
		}
	}
}

// TestCompareWalk renders a comparison of the example bundle (the sides
// agree) and the diverging one of compare.in.json, with and without -v:
// the summary alone, then with both walks.
func TestCompareWalk(t *testing.T) {
	c := walkCase{bundle: "iptables-healthy", dst: "10.112.31.40:80"}
	agree := trace.Compare(traceCase(t, c, false), traceCase(t, c, true))
	var diverge trace.Comparison
	readJSON(t, "compare.in.json", &diverge)
	for _, tc := range []struct {
		name string
		cmp  *trace.Comparison
	}{{"compare-agree", agree}, {"compare-diverge", &diverge}} {
		for _, width := range []int{80, 160} {
			for _, verbose := range []bool{false, true} {
				name := fmt.Sprintf("%s.%d.table", tc.name, width)
				if verbose {
					name = fmt.Sprintf("%s.verbose.%d.table", tc.name, width)
				}
				t.Run(name, func(t *testing.T) {
					var buf bytes.Buffer
					if err := RenderCompare(&buf, "table", []*trace.Comparison{tc.cmp}, Options{Width: width, Verbose: verbose}); err != nil {
						t.Fatal(err)
					}
					out := buf.String()
					if walks := strings.Contains(out, "── captured rules"); walks != verbose {
						t.Errorf("verbose %v, the walks printed: %v", verbose, walks)
					}
					checkGolden(t, filepath.Join("walk", name), buf.Bytes())
				})
			}
		}
	}
}
