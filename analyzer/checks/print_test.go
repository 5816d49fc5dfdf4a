package checks

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestPrintsShared: nodes that program their service ports alike share the
// prints of those ports, whatever the lines of the rules in their dumps
// (node-c's rules are at other lines than node-a's), so a fleet of like
// nodes keeps one copy; a port that a node programs differently has its own
// print there; the lines of each node's evidence are its own.
func TestPrintsShared(t *testing.T) {
	root := filepath.Join(parsetest.Root(t), "testdata", "fleet", "nodes")
	ps := NewPrints()
	var nodes []*FleetNode
	for _, n := range []string{"node-a", "node-a", "node-c"} {
		snaps, err := load.Load([]string{filepath.Join(root, n)}, load.Options{Compact: true})
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, AnalyzeNode(snaps[0], All, ps))
	}
	a, a2, c := nodes[0].print, nodes[1].print, nodes[2].print
	// The evidence of endpoints is read as the print is added: no print
	// keeps a backend of a node's view.
	for _, n := range nodes {
		for _, pp := range n.print.ports {
			for _, e := range pp.elems {
				if e.b != nil || e.backend && len(e.evidence) == 0 {
					t.Fatalf("%s: %s keeps its backend (%v) or has no evidence", pp.service, e.key, e.b != nil)
				}
			}
		}
	}
	if len(a.ports) == 0 || len(a.ports) != len(a2.ports) {
		t.Fatalf("%d and %d ports", len(a.ports), len(a2.ports))
	}
	for i := range a.ports {
		if a.ports[i] != a2.ports[i] {
			t.Errorf("%s: two copies of one node hold two prints", a.ports[i].service)
		}
	}
	stored := 0
	for _, list := range ps.ports {
		stored += len(list)
	}
	shared, own := 0, 0
	for _, pp := range c.ports {
		if x := a.port(pp.service); x == pp {
			shared++
		} else {
			own++
			if pp.service == "shop/web:http" && x != nil && pp.elem("backend 10.244.3.4:8080") == nil {
				t.Errorf("node-c's print of shop/web:http lacks its stale endpoint")
			}
			// Its own print keeps the texts it has alike with the
			// port's first print once.
			if x != nil && len(x.elems) > 0 {
				e := x.elems[0]
				if own := pp.elem(e.key); own != nil && own.label == e.label && unsafe.StringData(own.label) != unsafe.StringData(e.label) {
					t.Errorf("%s: the label %s is kept twice", pp.service, e.label)
				}
			}
		}
	}
	if shared == 0 || own == 0 || stored != len(a.ports)+own {
		t.Errorf("node-c shares %d prints and has %d of its own; %d stored for %d ports of node-a", shared, own, stored, len(a.ports))
	}
	// The evidence of a shared print is at each node's own lines.
	for _, pp := range c.ports {
		if a.port(pp.service) != pp || len(pp.elems) == 0 {
			continue
		}
		la, lc := a.full(pp.service).elems[0].evidence[0].Line, c.full(pp.service).elems[0].evidence[0].Line
		if la == 0 || lc == 0 || la == lc {
			t.Errorf("%s: lines %d on node-a and %d on node-c", pp.service, la, lc)
		}
		break
	}
}

// TestSamePort: two port prints are the same exactly when their encodings,
// the lines of their evidence left out, are: a print added to a fleet's is
// compared with the stored ones rather than encoded again.
func TestSamePort(t *testing.T) {
	base := func() *portPrint {
		ev := func(text string, line int) model.Evidence {
			return model.Evidence{File: "node/iptables-save.txt", Line: line, Text: text}
		}
		return &portPrint{service: "default/web:http", programmed: true, protocol: "TCP", known: true,
			elems: []printElem{
				{key: "backend 10.0.0.1:80", label: "10.0.0.1:80", backend: true, family: model.IPv4, evidence: []model.Evidence{ev("-A SEP", 10), ev("-A SEP -j DNAT", 11)}},
				{key: "entry ClusterIP 10.96.0.1 tcp/80", label: "ClusterIP 10.96.0.1 tcp/80", family: model.IPv4, kind: view.ClusterIP, evidence: []model.Evidence{ev("-A SVC", 3)}},
			},
			dispatch:   []model.Evidence{ev("-A SVC -j SEP", 4)},
			serviceEv:  model.Evidence{File: "cluster/cluster.json", Line: 7, Text: "Service default/web"},
			endpoints:  []labelled{{"10.0.0.2:80", model.Evidence{File: "cluster/cluster.json", Line: 9}}},
			expected:   []famLabel{{model.IPv4, "10.0.0.2:80"}},
			unexpected: []famLabel{{model.IPv4, "10.0.0.3:80"}},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(pp *portPrint)
		same   bool
	}{
		{"alike", func(*portPrint) {}, true},
		{"other lines", func(pp *portPrint) {
			pp.elems[0].evidence[1].Line, pp.dispatch[0].Line, pp.serviceEv.Line, pp.endpoints[0].ev.Line = 1, 2, 3, 4
		}, true},
		{"expected dropped", func(pp *portPrint) { pp.expected = pp.expected[:0] }, false},
		{"service", func(pp *portPrint) { pp.service += "s" }, false},
		{"programmed", func(pp *portPrint) { pp.programmed = false }, false},
		{"protocol", func(pp *portPrint) { pp.protocol = "UDP" }, false},
		{"topology", func(pp *portPrint) { pp.topology = true }, false},
		{"known", func(pp *portPrint) { pp.known = false }, false},
		{"elem key", func(pp *portPrint) { pp.elems[1].key += " " }, false},
		{"elem label", func(pp *portPrint) { pp.elems[0].label = "x" }, false},
		{"elem backend", func(pp *portPrint) { pp.elems[1].backend = true }, false},
		{"elem family", func(pp *portPrint) { pp.elems[0].family = model.IPv6 }, false},
		{"elem kind", func(pp *portPrint) { pp.elems[1].kind = view.NodePort }, false},
		{"elem evidence text", func(pp *portPrint) { pp.elems[0].evidence[1].Text += " " }, false},
		{"elem evidence file", func(pp *portPrint) { pp.elems[0].evidence[0].File = "x" }, false},
		{"elem evidence path", func(pp *portPrint) { pp.elems[0].evidence[0].Path = "x" }, false},
		{"elem evidence dropped", func(pp *portPrint) { pp.elems[0].evidence = pp.elems[0].evidence[:1] }, false},
		{"elem dropped", func(pp *portPrint) { pp.elems = pp.elems[:1] }, false},
		{"dispatch", func(pp *portPrint) { pp.dispatch = nil }, false},
		{"service evidence", func(pp *portPrint) { pp.serviceEv.Text = "" }, false},
		{"endpoint label", func(pp *portPrint) { pp.endpoints[0].label = "x" }, false},
		{"endpoint evidence", func(pp *portPrint) { pp.endpoints[0].ev.File = "x" }, false},
		{"expected", func(pp *portPrint) { pp.expected[0].family = model.IPv6 }, false},
		{"unexpected", func(pp *portPrint) { pp.unexpected = nil }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := base(), base()
			tc.change(b)
			ps := &Prints{}
			enc := string(ps.encodePort(nil, a, false)) == string(ps.encodePort(nil, b, false))
			if got := samePort(a, b); got != tc.same || enc != tc.same {
				t.Errorf("samePort %t, encodings alike %t, want %t", got, enc, tc.same)
			}
		})
	}
}

// TestFindBackend: findBackend, which makes no key, finds what findElem
// finds with the key made, among few elements and many.
func TestFindBackend(t *testing.T) {
	for _, n := range []int{0, 1, 3, 8, 9, 40} {
		var elems []printElem
		for i := 0; i < n; i++ {
			l := "10.0.0." + string(rune('a'+i%26)) + string(rune('0'+i/26)) + ":80"
			elems = append(elems, printElem{key: backendPrefix + l, label: l, backend: true})
		}
		elems = append(elems, printElem{key: entryPrefix + "ClusterIP 10.96.0.1 tcp/80", label: "ClusterIP 10.96.0.1 tcp/80"})
		elems = uniqueElems(elems, true)
		var probes []string
		for _, e := range elems {
			probes = append(probes, e.label, e.label+"0", e.label[:len(e.label)-1])
		}
		probes = append(probes, "", "10.0.0.", "zzz")
		for _, l := range probes {
			if got, want := findBackend(elems, l), findElem(elems, backendPrefix+l); got != want {
				t.Errorf("%d elements: findBackend(%q) = %v, want %v", len(elems), l, got, want)
			}
		}
	}
	for _, c := range []struct {
		key, prefix, label string
	}{{"backend a", "backend ", "a"}, {"backend", "backend ", ""}, {"backend b", "backend ", "a"}, {"entry x", "backend ", "x"}, {"a", "backend ", "x"}} {
		if got, want := compareKey(c.key, c.prefix, c.label), strings.Compare(c.key, c.prefix+c.label); got != want {
			t.Errorf("compareKey(%q, %q, %q) = %d, want %d", c.key, c.prefix, c.label, got, want)
		}
	}
}

// TestPrintExpectations: the endpoints a print says kube-proxy would use
// and does not find programmed (expected), and those programmed that it
// would not use (unexpected), are those of the checks' expectations of
// each family, read plainly.
func TestPrintExpectations(t *testing.T) {
	root := filepath.Join(parsetest.Root(t), "testdata", "fleet", "nodes")
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, d := range dirs {
		snaps, err := load.Load([]string{filepath.Join(root, d.Name())}, load.Options{Compact: true})
		if err != nil {
			t.Fatal(err)
		}
		s := snaps[0]
		f := newFacts(s, All)
		run(s, f, All)
		np := newNodePrint(s, f)
		sps := servicePortByName(s)
		p := &Pass{Snap: s, facts: f}
		for _, pp := range np.ports {
			sp := sps[pp.service]
			if sp == nil {
				continue
			}
			var expected, unexpected []famLabel
			for _, fam := range []model.Family{model.IPv4, model.IPv6} {
				eps := clusterEndpoints(p.Expect(sp, fam))
				for _, ep := range eps {
					if e := pp.elem(backendPrefix + ep.String()); e == nil || e.family != fam {
						expected = append(expected, famLabel{fam, ep.String()})
					}
				}
				for _, e := range pp.elems {
					if e.backend && e.family == fam && !model.Has(eps, e.label) {
						unexpected = append(unexpected, famLabel{fam, e.label})
					}
				}
			}
			// The entries: those programmed that the Service does not
			// define, and those it defines that are not programmed, in
			// each family of the node's views.
			for _, e := range pp.elems {
				if !e.backend && !definesEntry(sp, e.label) {
					unexpected = append(unexpected, famLabel{e.family, e.label})
				}
			}
			for _, v := range np.views {
				var labels []string
				if ip, ok := sp.ClusterIP(v.family); ok {
					labels = append(labels, fmt.Sprintf("ClusterIP %s %s/%d", ip, strings.ToLower(string(sp.Protocol)), sp.Port))
				}
				for _, ip := range sp.ExternalIPsOf(v.family) {
					labels = append(labels, fmt.Sprintf("ExternalIP %s %s/%d", ip, strings.ToLower(string(sp.Protocol)), sp.Port))
				}
				for _, ip := range sp.LoadBalancerVIPsOf(v.family) {
					labels = append(labels, fmt.Sprintf("LoadBalancerIP %s %s/%d", ip, strings.ToLower(string(sp.Protocol)), sp.Port))
				}
				if sp.NodePort != 0 {
					labels = append(labels, fmt.Sprintf("NodePort %s/%d", strings.ToLower(string(sp.Protocol)), sp.NodePort))
				}
				for _, l := range labels {
					if fl := (famLabel{v.family, l}); pp.elem(entryPrefix+l) == nil && !slices.Contains(expected, fl) && sp.Skip == "" {
						expected = append(expected, fl)
					}
				}
			}
			if !slices.Equal(pp.expected, expected) || !slices.Equal(pp.unexpected, unexpected) {
				t.Errorf("%s %s: expected %v, unexpected %v; want %v and %v", d.Name(), pp.service, pp.expected, pp.unexpected, expected, unexpected)
			}
			checked += len(expected) + len(unexpected)
		}
	}
	if checked == 0 {
		t.Error("no node expects an endpoint it does not program, or programs one it does not expect")
	}
}
