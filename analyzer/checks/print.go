package checks

import (
	"encoding/binary"
	"errors"
	"hash/maphash"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/proxier"
	"github.com/proxyscan/proxyscan/analyzer/view"
	"github.com/proxyscan/proxyscan/internal/intern"
	"github.com/proxyscan/proxyscan/parsers"
)

// A nodePrint is what cross-node checks compare of a node: per service
// port, what its data plane programs and what its own objects expect; per
// node, its mode, version and configuration. Its strings are copies: it
// keeps none of the node's dumps alive.
type nodePrint struct {
	mode, modeSource string
	// views holds, per view of the node's mode, where its entries live.
	views []viewPrint
	// partial holds, by family, why the data plane read for the node's
	// mode may not hold all kube-proxy programs there ("FILE is partial:
	// REASON", see [Prepared.PartialFamilies]): what the node lacks of
	// such a family is not a difference node-drift reports.
	partial map[model.Family]string
	// cluster identifies the cluster of the node's exports: the UID of its
	// default/kubernetes Service, which the API server creates with the
	// cluster, and again only if it is deleted ("" when the exports do not
	// hold it); clusterEv is where it is written.
	cluster   string
	clusterEv model.Evidence
	// version is the kube-proxy version the inputs show ("" when only
	// assumed or given), versionEv its evidence.
	version   string
	versionEv model.Evidence
	// modeValue is the mode when established (not assumed), modeEv its
	// evidence.
	modeValue string
	modeEv    []model.Evidence
	// config is set when the inputs hold the node's configuration:
	// configValues are its fields (see [ConfigValues]), configPos where
	// each is written, configAt where the configuration is.
	config       bool
	configValues map[string]string
	configPos    map[string]parsers.Pos
	configAt     parsers.Pos
	// configOwn, when set, holds the values that differ from
	// configValues, then shared with other nodes (see [Prints.add]): read
	// them with configValue.
	configOwn map[string]string
	// ports are the service ports the data plane programs or the node's
	// objects hold, sorted by name, with the lines of their evidence left
	// out (zero), so that nodes that program a port alike share its print
	// even when their dumps order it differently; lines holds, per port,
	// the lines of its evidence (see lineSlots).
	ports []*portPrint
	lines [][]int32
	// linesFrom, when set, reads lines, which were not read with the
	// print (see [nodePrint.ensureLines]).
	linesFrom func(ports int) ([][]int32, error)
}

// ensureLines reads the lines of a print that were left in its node
// report. When they cannot be read (the report is gone or changed), the
// evidence is given without lines.
func (np *nodePrint) ensureLines() {
	if np.linesFrom == nil {
		return
	}
	lines, err := np.linesFrom(len(np.ports))
	np.linesFrom = nil
	for i := 0; err == nil && i < len(lines); i++ {
		if len(lines[i]) != np.ports[i].slotCount() {
			err = errors.New("lines do not match")
		}
	}
	if err != nil || len(lines) != len(np.ports) {
		lines = make([][]int32, len(np.ports))
	}
	np.lines = lines
}

// viewPrint is where a view's entries live.
type viewPrint struct {
	family  model.Family
	source  string
	anchors map[view.Kind]model.Evidence
}

// portPrint is one service port on one node.
type portPrint struct {
	service string
	// programmed is set when the node's data plane has entries for the
	// port; protocol is then the protocol of its first entry (the
	// Service's when the node knows it), topology whether its endpoints
	// are chosen by topology hints.
	programmed bool
	protocol   string
	topology   bool
	// elems are the entries and Cluster-policy endpoints programmed,
	// sorted by key; dispatch is the evidence of its first Cluster
	// dispatch.
	elems    []printElem
	dispatch []model.Evidence
	// known is set when the node's objects hold the port: service is then
	// the evidence of its Service, endpoints that of each endpoint of
	// its EndpointSlices that is not programmed, expected the endpoints
	// kube-proxy would use under the Cluster policy that are not
	// programmed, and unexpected those programmed that it would not use.
	known      bool
	serviceEv  model.Evidence
	endpoints  []labelled
	expected   []famLabel
	unexpected []famLabel
}

// printElem is an entry or endpoint a node programs for a service port.
type printElem struct {
	key      string // "entry <key>" or "backend <endpoint>"
	label    string // "ClusterIP 10.96.0.10 udp/53" or "10.244.1.5:8080"
	backend  bool
	family   model.Family
	kind     view.Kind
	evidence []model.Evidence
	// b, when set, is the backend whose evidence is not read yet: a
	// node's print reads it as it is added to a fleet's prints (see
	// [Prints.readEvidence]), into a buffer, and copies it only when the
	// print is stored.
	b *view.Backend
}

// The keys of elements: an entry's is entryPrefix and its
// [view.Entry.Key], an endpoint's backendPrefix and the endpoint.
const (
	entryPrefix   = "entry "
	backendPrefix = "backend "
)

// findBackend returns the endpoint element of that label among elements
// sorted by key (the element of key backendPrefix+label), or nil. It
// makes no key.
func findBackend(elems []printElem, label string) *printElem {
	if i := backendIndex(elems, label); i >= 0 {
		return &elems[i]
	}
	return nil
}

// backendIndex is [findBackend], returning the index of the element
// (-1 when there is none).
func backendIndex(elems []printElem, label string) int {
	if len(elems) <= 8 {
		// Most ports have a few elements: they are read in turn.
		for i := range elems {
			if e := &elems[i]; len(e.key) == len(backendPrefix)+len(label) && compareKey(e.key, backendPrefix, label) == 0 {
				return i
			}
		}
		return -1
	}
	i := sort.Search(len(elems), func(i int) bool { return compareKey(elems[i].key, backendPrefix, label) >= 0 })
	if i < len(elems) && compareKey(elems[i].key, backendPrefix, label) == 0 {
		return i
	}
	return -1
}

// compareKey compares key with prefix+label, as strings.Compare would.
func compareKey(key, prefix, label string) int {
	n := min(len(key), len(prefix))
	if c := strings.Compare(key[:n], prefix[:n]); c != 0 {
		return c
	}
	if len(key) < len(prefix) {
		return -1
	}
	return strings.Compare(key[len(prefix):], label)
}

// uniqueElems sorts elements by key and keeps one of each: the first
// endpoint of a key, and the first entry, or the last with lastEntry (as
// a set filled in order would). The evidence of endpoints is left unread
// (in b).
func uniqueElems(list []printElem, lastEntry bool) []printElem {
	byKey := func(a, b printElem) int { return strings.Compare(a.key, b.key) }
	if !slices.IsSortedFunc(list, byKey) {
		slices.SortStableFunc(list, byKey)
	}
	out := list[:0]
	for i := 0; i < len(list); i++ {
		e := list[i]
		j := i
		for j+1 < len(list) && list[j+1].key == e.key {
			j++
		}
		if !e.backend && lastEntry {
			e = list[j]
		}
		out = append(out, e)
		i = j
	}
	return out
}

type labelled struct {
	label string
	ev    model.Evidence
}

type famLabel struct {
	family model.Family
	label  string
}

// elem returns the element of that key, or nil.
func (pp *portPrint) elem(key string) *printElem { return findElem(pp.elems, key) }

// expects reports whether the node's own objects say it should program an
// element (see [expected]): an entry of a Service they hold, but one the
// node programs that the Service does not define; an endpoint kube-proxy
// would use under the Cluster policy.
func (pp *portPrint) expects(e *printElem) bool {
	if pp == nil || !pp.known {
		return false
	}
	fl := famLabel{e.family, e.label}
	if !e.backend {
		if own := pp.elem(e.key); own != nil {
			return !slices.Contains(pp.unexpected, fl)
		}
		return slices.Contains(pp.expected, fl)
	}
	if own := pp.elem(e.key); own != nil && own.backend && own.family == e.family {
		for _, x := range pp.unexpected {
			if x == fl {
				return false
			}
		}
		return true
	}
	for _, x := range pp.expected {
		if x == fl {
			return true
		}
	}
	return false
}

// clusterEndpoints returns the endpoints kube-proxy would use under the
// Cluster policy for the entries of a port it programs: those of the
// traffic to its cluster IP when that policy is Cluster, else those of
// the traffic to its external destinations (a port without any, of a
// ClusterIP Service, has none whatever its external policy says).
func clusterEndpoints(x *Expect) []*model.Endpoint {
	if x.Internal.Verdict == proxier.Forward && x.InternalPolicy() == view.PolicyCluster {
		return x.Internal.Endpoints
	}
	if x.External.Verdict == proxier.Forward && x.ExternalPolicy() == view.PolicyCluster && len(x.ExternalDests()) > 0 {
		return x.External.Endpoints
	}
	return nil
}

// definesEntry reports whether a Service port defines an entry of that
// label ("ClusterIP 10.96.0.10 udp/53", "NodePort tcp/30080", "NodePort
// 192.168.1.10 tcp/30080"): its protocol, and the cluster IP, external IP
// or load balancer IP and port, or node port, of the Service. A label of
// another kind or form is taken as defined.
func definesEntry(sp *model.ServicePort, label string) bool {
	f := strings.Fields(label)
	if len(f) < 2 || len(f) > 3 {
		return true
	}
	proto, portText, ok := strings.Cut(f[len(f)-1], "/")
	port, err := strconv.Atoi(portText)
	if !ok || err != nil {
		return true
	}
	if sp.Skip != "" || proto != sp.ProtoLower() {
		return false
	}
	if view.Kind(f[0]) == view.NodePort {
		return int32(port) == sp.NodePort
	}
	var ips []netip.Addr
	switch view.Kind(f[0]) {
	case view.ClusterIP:
		ips = sp.ClusterIPs
	case view.ExternalIP:
		ips = sp.ExternalIPs
	case view.LoadBalancerIP:
		ips = sp.LoadBalancerVIPs
	default:
		return true
	}
	if len(f) != 3 {
		return true
	}
	ip, err := netip.ParseAddr(f[1])
	return err != nil || int32(port) == sp.Port && slices.Contains(ips, ip)
}

// appendEntriesOf appends to list the entries of a family that a Service
// port defines (see [definesEntry]) and elems, sorted by key, do not hold,
// as labels of that family; buf is room to build their keys in.
func appendEntriesOf(list []famLabel, sp *model.ServicePort, fam model.Family, elems []printElem, buf *[]byte) []famLabel {
	if sp.Skip != "" {
		return list
	}
	proto := sp.ProtoLower()
	add := func(kind view.Kind, ip netip.Addr, port int32) {
		b := append(append((*buf)[:0], entryPrefix...), kind...)
		b = append(b, ' ')
		if ip.IsValid() {
			b = append(ip.AppendTo(b), ' ')
		}
		b = strconv.AppendInt(append(append(b, proto...), '/'), int64(port), 10)
		*buf = b
		if findElem(elems, string(b)) != nil {
			return
		}
		fl := famLabel{fam, string(b[len(entryPrefix):])}
		if !slices.Contains(list, fl) {
			list = append(list, fl)
		}
	}
	if ip, ok := sp.ClusterIP(fam); ok {
		add(view.ClusterIP, ip, sp.Port)
	}
	for _, ip := range sp.ExternalIPsOf(fam) {
		add(view.ExternalIP, ip, sp.Port)
	}
	for _, ip := range sp.LoadBalancerVIPsOf(fam) {
		add(view.LoadBalancerIP, ip, sp.Port)
	}
	if sp.NodePort != 0 {
		add(view.NodePort, netip.Addr{}, sp.NodePort)
	}
	return list
}

// endpoint returns the evidence of the node's endpoint of that label.
func (pp *portPrint) endpoint(label string) (model.Evidence, bool) {
	if pp == nil {
		return model.Evidence{}, false
	}
	for _, x := range pp.endpoints {
		if x.label == label {
			return x.ev, true
		}
	}
	return model.Evidence{}, false
}

// port returns the node's print of a service port, its evidence without
// lines, or nil.
func (np *nodePrint) port(name string) *portPrint {
	if i, ok := np.find(name); ok {
		return np.ports[i]
	}
	return nil
}

// full returns the node's print of a service port with the lines of its
// evidence (a copy), or nil.
func (np *nodePrint) full(name string) *portPrint {
	np.ensureLines()
	i, ok := np.find(name)
	if !ok {
		return nil
	}
	c := *np.ports[i]
	c.elems = append([]printElem(nil), c.elems...)
	for j := range c.elems {
		c.elems[j].evidence = append([]model.Evidence(nil), c.elems[j].evidence...)
	}
	c.dispatch = append([]model.Evidence(nil), c.dispatch...)
	c.endpoints = append([]labelled(nil), c.endpoints...)
	for j, l := range c.lineSlots() {
		if j < len(np.lines[i]) {
			*l = int(np.lines[i][j])
		}
	}
	return &c
}

func (np *nodePrint) find(name string) (int, bool) {
	i := sort.Search(len(np.ports), func(i int) bool { return np.ports[i].service >= name })
	return i, i < len(np.ports) && np.ports[i].service == name
}

// lineSlots returns the lines of the print's evidence, in a fixed order.
func (pp *portPrint) lineSlots() []*int {
	var out []*int
	for i := range pp.elems {
		for j := range pp.elems[i].evidence {
			out = append(out, &pp.elems[i].evidence[j].Line)
		}
	}
	for j := range pp.dispatch {
		out = append(out, &pp.dispatch[j].Line)
	}
	out = append(out, &pp.serviceEv.Line)
	for j := range pp.endpoints {
		out = append(out, &pp.endpoints[j].ev.Line)
	}
	return out
}

// newNodePrint reduces a node to its print. The traces of the checks are
// dropped first: the print does not read them. The evidence of the
// endpoints programmed is left unread (see [printElem]) and the print's
// strings may be the node's: the print is for [Prints.add] alone, which
// reads and copies them.
func newNodePrint(s *model.Snapshot, f *facts) *nodePrint {
	f.tracer = nil
	np := &nodePrint{mode: f.res.Mode, modeSource: f.res.ModeSource}
	sps := servicePortByName(s)
	for _, v := range f.views {
		np.views = append(np.views, viewPrint{family: v.Family, source: v.Source, anchors: v.Anchors})
	}
	np.partial = partialFamilies(f)
	// The service ports the data plane programs or the node's objects
	// hold, sorted by name once.
	planes := planePorts(f.views, true, nil)
	type source struct {
		name string
		pl   *planePort
		sp   *model.ServicePort
	}
	srcs := make([]source, 0, max(len(planes), len(sps)))
	for name, pl := range planes {
		srcs = append(srcs, source{name, pl, sps[name]})
	}
	for name, sp := range sps {
		if planes[name] == nil {
			srcs = append(srcs, source{name: name, sp: sp})
		}
	}
	slices.SortFunc(srcs, func(a, b source) int { return strings.Compare(a.name, b.name) })
	// The prints are made together: Prints.add keeps a copy of those it
	// stores, and the others are dropped at once.
	prints := make([]portPrint, len(srcs))
	np.ports = make([]*portPrint, len(srcs))
	// The texts of the Services' evidence are built in buf and copied
	// into texts, as planePorts does the elements' keys.
	var texts intern.Arena
	var buf []byte
	// The checks' expectations of a port (see Pass.Expect) hold the
	// endpoints' selection of each family: its topology is read there,
	// not selected again.
	p := &Pass{Snap: s, facts: f}
	for i, src := range srcs {
		pp := &prints[i]
		np.ports[i] = pp
		pp.service = src.name
		sp := src.sp
		// The expectations of each family, read once.
		var exp [2]*Expect
		expect := func(fam model.Family) *Expect {
			i := 0
			if fam == model.IPv6 {
				i = 1
			} else if fam != model.IPv4 {
				return p.Expect(sp, fam)
			}
			if exp[i] == nil {
				exp[i] = p.Expect(sp, fam)
			}
			return exp[i]
		}
		if pl := src.pl; pl != nil {
			pp.programmed, pp.protocol, pp.elems, pp.dispatch = true, pl.protocol, uniqueElems(pl.elems, true), pl.dispatch
			if sp != nil {
				pp.protocol = string(sp.Protocol)
				for _, fam := range pl.families {
					pp.topology = pp.topology || expect(fam).Topology != ""
				}
			}
		}
		if sp == nil {
			continue
		}
		pp.known, pp.serviceEv = true, serviceEvidenceIn(sp, &texts, &buf)
		var seen map[string]bool
		// The families of the port's endpoints: the expectations of a
		// family select among its endpoints, and are not read (nor made)
		// for a family of none.
		var fams [2]bool
		for _, ep := range sp.Endpoints {
			if ep.Family() == model.IPv6 {
				fams[1] = true
			} else {
				fams[0] = true
			}
			l := ep.String()
			if findBackend(pp.elems, l) != nil || seen[l] {
				continue
			}
			if seen == nil {
				seen = map[string]bool{}
			}
			seen[l] = true
			pp.endpoints = append(pp.endpoints, labelled{l, EndpointEvidence(sp, ep)})
		}
		// The elements that an endpoint kube-proxy would use names are
		// marked as they are found: those of the family left unmarked
		// are unexpected.
		var markBuf [32]bool
		marks := markBuf[:0]
		if len(pp.elems) > len(markBuf) {
			marks = make([]bool, len(pp.elems))
		}
		for i, fam := range []model.Family{model.IPv4, model.IPv6} {
			var eps []*model.Endpoint
			if fams[i] {
				eps = clusterEndpoints(expect(fam))
			}
			marks = marks[:len(pp.elems)]
			clear(marks)
			for _, ep := range eps {
				l := ep.String()
				j := backendIndex(pp.elems, l)
				if j >= 0 {
					marks[j] = true
				}
				if j < 0 || pp.elems[j].family != fam {
					pp.expected = append(pp.expected, famLabel{fam, l})
				}
			}
			for j, e := range pp.elems {
				if e.backend && e.family == fam && !marks[j] {
					pp.unexpected = append(pp.unexpected, famLabel{fam, e.label})
				}
			}
		}
		// The entries programmed that the Service does not define (a
		// cluster IP or node port it no longer has) are unexpected too,
		// and those it defines that are not programmed expected.
		for _, e := range pp.elems {
			if !e.backend && !definesEntry(sp, e.label) {
				pp.unexpected = append(pp.unexpected, famLabel{e.family, e.label})
			}
		}
		for _, v := range np.views {
			pp.expected = appendEntriesOf(pp.expected, sp, v.family, pp.elems, &buf)
		}
	}

	np.cluster, np.clusterEv = clusterOf(s)
	if v := s.Version; v.Known() && !strings.HasPrefix(v.Source, "assumed") && v.Source != "--version flag" {
		np.version = v.String()
		np.versionEv = model.Evidence{File: v.Source, Line: lineIfFile(s, v.Source), Text: "kube-proxy " + v.String()}
	}
	if mode, src := np.mode, np.modeSource; !strings.HasPrefix(src, "assumed") {
		np.modeValue = mode
	}
	if c := s.Config; c != nil {
		np.modeEv = []model.Evidence{model.EvidenceAt(c.FieldPos("mode"), "mode: "+np.mode)}
		np.config, np.configAt = true, c.Pos
		np.configValues = ConfigValues(c)
		np.configPos = map[string]parsers.Pos{}
		for k := range np.configValues {
			if pos := c.FieldPos(k); pos != c.Pos {
				np.configPos[k] = pos
			}
		}
	} else {
		for _, v := range f.views {
			np.modeEv = append(np.modeEv, model.Evidence{File: v.Source, Text: np.mode + " rules (" + np.modeSource + ")"})
		}
	}
	return np
}

// clusterOf returns the UID of the default/kubernetes Service of a node's
// exports, which names the cluster they come from, and where it is
// written; "" when the exports do not hold that Service or its UID.
func clusterOf(s *model.Snapshot) (string, model.Evidence) {
	for _, sp := range s.Ports {
		if sp.Name.Namespace != "default" || sp.Name.Name != "kubernetes" || sp.Service == nil || sp.Service.Service == nil {
			continue
		}
		if uid := string(sp.Service.UID); uid != "" {
			return strings.Clone(uid), model.EvidenceAt(sp.Service.Pos, "Service default/kubernetes: uid "+uid)
		}
	}
	return "", model.Evidence{}
}

// configValue returns the value of a configuration field ("" when unset).
func (np *nodePrint) configValue(field string) string {
	if v, ok := np.configOwn[field]; ok {
		return v
	}
	return np.configValues[field]
}

// configMap returns the values of the node's configuration, by field.
func (np *nodePrint) configMap() map[string]string {
	if np.configOwn == nil {
		return np.configValues
	}
	out := make(map[string]string, len(np.configValues))
	for k := range np.configValues {
		out[k] = np.configValue(k)
	}
	return out
}

// fieldPos returns where a configuration field is written (see
// [model.Config.FieldPos]).
func (np *nodePrint) fieldPos(field string) parsers.Pos {
	if pos, ok := np.configPos[field]; ok {
		return pos
	}
	return np.configAt
}

// Prints holds the prints of a fleet's nodes. Nodes that agree share them:
// the print of a service port is kept once for every node that programs it
// alike, with the same evidence, and strings are kept once. Its methods
// are safe for concurrent use.
type Prints struct {
	mu    sync.Mutex
	seed  maphash.Seed
	ports map[uint64][]*portPrint
	// strs holds the strings many ports and nodes repeat (files, paths,
	// services, configuration); texts the keys, labels and texts of the
	// ports, which only the prints of the same service port repeat (see
	// [Prints.port]), byService the first print of each service port.
	strs      intern.Strings
	texts     intern.Arena
	byService map[string]*portPrint
	// byPorts and byLines hold the service ports and lines of the prints
	// read from node reports, by fingerprint (see [Prints.ReadPrint]).
	byPorts map[string][]*portPrint
	byLines map[string][][]int32
	// buf is the encoding of the print being added (see encode),
	// lineBuf the lines of one of its ports, evBuf the evidence of its
	// endpoints and evEnds where each element's ends in evBuf (see
	// readEvidence).
	buf     []byte
	lineBuf []int32
	evBuf   []model.Evidence
	evEnds  []int
	// shared is what nodes alike share beyond their service ports,
	// statuses the lists of check statuses of their results.
	shared   shared
	statuses statusLists
}

// NewPrints returns an empty store of prints.
func NewPrints() *Prints {
	return &Prints{seed: maphash.MakeSeed(), ports: map[uint64][]*portPrint{}, strs: intern.New(), byService: map[string]*portPrint{},
		byPorts: map[string][]*portPrint{}, byLines: map[string][][]int32{},
		shared: shared{lines: map[uint64][][]int32{}, lineLists: map[uint64][][][]int32{}, portLists: map[uint64][][]*portPrint{},
			fields: map[string]map[string]string{}, positions: map[string]map[string]parsers.Pos{}, anchors: map[string]map[view.Kind]model.Evidence{}}}
}

// add interns a node's print: its strings are copied (or shared with other
// nodes'), its service ports shared with the equal ones of other nodes.
func (ps *Prints) add(np *nodePrint) *nodePrint {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	np.mode, np.modeSource, np.modeValue = ps.str(np.mode), ps.str(np.modeSource), ps.str(np.modeValue)
	np.version, np.cluster = ps.str(np.version), ps.str(np.cluster)
	ps.ev(&np.versionEv)
	ps.ev(&np.clusterEv)
	ps.evs(np.modeEv)
	np.configAt = ps.pos(np.configAt)
	np.partial = ps.partial(np.partial)
	if np.configValues != nil {
		vals := make(map[string]string, len(np.configValues))
		for k, v := range np.configValues {
			vals[ps.str(k)] = ps.str(v)
		}
		np.configValues = vals
		pos := make(map[string]parsers.Pos, len(np.configPos))
		for k, v := range np.configPos {
			pos[ps.str(k)] = ps.pos(v)
		}
		np.configPos = pos
	}
	np.configValues, np.configOwn = ps.configValues(np.configValues)
	np.configPos = internMap(ps, ps.shared.positions, np.configPos, encodePos)
	for i := range np.views {
		v := &np.views[i]
		v.source = ps.str(v.source)
		anchors := make(map[view.Kind]model.Evidence, len(v.anchors))
		for k, e := range v.anchors {
			ps.ev(&e)
			anchors[k] = e
		}
		v.anchors = internMap(ps, ps.shared.anchors, anchors, encodeEvidence)
	}
	np.lines = make([][]int32, len(np.ports))
	hashes := make([]uint64, len(np.ports))
	for i, pp := range np.ports {
		ps.readEvidence(pp)
		ps.lineBuf = pp.appendLines(ps.lineBuf[:0])
		np.lines[i], hashes[i] = ps.lines(ps.lineBuf)
		np.ports[i] = ps.port(pp)
	}
	np.lines = ps.lineList(np.lines, hashes)
	np.ports = ps.portList(np.ports)
	// The buffer of evidence holds parts of the node's dumps: it is
	// cleared, whole, so that it keeps none of them alive.
	clear(ps.evBuf[:cap(ps.evBuf)])
	ps.evBuf = ps.evBuf[:0]
	return np
}

// partial interns the strings of a print's partial families.
func (ps *Prints) partial(m map[model.Family]string) map[model.Family]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[model.Family]string, len(m))
	for fam, why := range m {
		out[fam] = ps.str(why)
	}
	return out
}

// readEvidence reads the evidence of the endpoints of a print that is
// not read yet (see [printElem]) into a buffer of ps, which the next
// print read reuses: [Prints.port] copies it when it stores the print.
func (ps *Prints) readEvidence(pp *portPrint) {
	buf, ends := ps.evBuf[:0], ps.evEnds[:0]
	for i := range pp.elems {
		if b := pp.elems[i].b; b != nil {
			buf = b.AppendEvidence(buf)
		}
		ends = append(ends, len(buf))
	}
	if len(buf) > 0 {
		from := 0
		for i := range pp.elems {
			if e := &pp.elems[i]; e.b != nil {
				if to := ends[i]; to > from {
					e.evidence = buf[from:to:to]
				} else {
					e.evidence = nil
				}
				e.b = nil
			}
			from = ends[i]
		}
	} else {
		for i := range pp.elems {
			pp.elems[i].b = nil
		}
	}
	ps.evBuf, ps.evEnds = buf, ends
}

// port returns the stored print equal to pp but for the lines of its
// evidence, storing a copy of pp, its lines left out (zero), when there is
// none. pp is compared as it is, first with the port's first print (nodes
// alike program a port alike), then by its encoding: only a print stored
// is copied.
func (ps *Prints) port(pp *portPrint) *portPrint {
	ps.readEvidence(pp)
	first := ps.byService[pp.service]
	if first != nil && samePort(first, pp) {
		return first
	}
	b := ps.encodePort(ps.buf[:0], pp, false)
	ps.buf = b
	h := maphash.Bytes(ps.seed, b)
	for _, x := range ps.ports[h] {
		if x != first && samePort(x, pp) {
			return x
		}
	}
	c := *pp
	pp = &c
	// The evidence slices are the views' or a buffer's (and may be
	// findings'): the lines are left out of copies, which are made in
	// one slice.
	n := len(pp.dispatch)
	for j := range pp.elems {
		n += len(pp.elems[j].evidence)
	}
	all := make([]model.Evidence, 0, n)
	copyEv := func(list []model.Evidence) []model.Evidence {
		if len(list) == 0 {
			return nil
		}
		from := len(all)
		for _, e := range list {
			e.Line = 0
			all = append(all, e)
		}
		return all[from:len(all):len(all)]
	}
	for j := range pp.elems {
		pp.elems[j].evidence = copyEv(pp.elems[j].evidence)
	}
	pp.dispatch = copyEv(pp.dispatch)
	pp.serviceEv.Line = 0
	for j := range pp.endpoints {
		pp.endpoints[j].ev.Line = 0
	}
	pp.service = ps.str(pp.service)
	pp.protocol = ps.str(pp.protocol)
	// The keys, labels and texts of a port are its own, but for the
	// other prints of the same port (nodes that program it differently):
	// they are copied into the arena, sharing those of the port's first
	// print.
	text := ps.texts.Str
	if first != nil {
		have := first.texts()
		text = func(s string) string {
			if x, ok := have[s]; ok {
				return x
			}
			return ps.texts.Str(s)
		}
	} else {
		ps.byService[pp.service] = pp
	}
	// The evidence of a port is most often in one file or two: the last
	// file's stored copy is kept at hand.
	var fileIn, fileOut string
	ev := func(e *model.Evidence) {
		if e.File != fileIn {
			fileIn, fileOut = e.File, ps.str(e.File)
		}
		e.File, e.Path, e.Text = fileOut, ps.str(e.Path), text(e.Text)
	}
	evs := func(list []model.Evidence) []model.Evidence {
		for i := range list {
			ev(&list[i])
		}
		return list
	}
	for i := range pp.elems {
		e := &pp.elems[i]
		e.key, e.label = text(e.key), text(e.label)
		e.evidence = evs(e.evidence)
	}
	pp.elems = append([]printElem(nil), pp.elems...)
	pp.dispatch = evs(pp.dispatch)
	ev(&pp.serviceEv)
	for i := range pp.endpoints {
		pp.endpoints[i].label = text(pp.endpoints[i].label)
		ev(&pp.endpoints[i].ev)
	}
	for _, list := range [][]famLabel{pp.expected, pp.unexpected} {
		for i := range list {
			list[i].label = text(list[i].label)
		}
	}
	ps.ports[h] = append(ps.ports[h], pp)
	return pp
}

// texts returns the keys, labels and texts of a port print, by value.
func (pp *portPrint) texts() map[string]string {
	m := map[string]string{}
	add := func(s string) { m[s] = s }
	addEv := func(e model.Evidence) { add(e.Text) }
	for _, e := range pp.elems {
		add(e.key)
		add(e.label)
		for _, x := range e.evidence {
			addEv(x)
		}
	}
	for _, x := range pp.dispatch {
		addEv(x)
	}
	addEv(pp.serviceEv)
	for _, x := range pp.endpoints {
		add(x.label)
		addEv(x.ev)
	}
	for _, list := range [][]famLabel{pp.expected, pp.unexpected} {
		for _, x := range list {
			add(x.label)
		}
	}
	return m
}

// appendLines appends the lines of the print's evidence to out, in the
// order of lineSlots.
func (pp *portPrint) appendLines(out []int32) []int32 {
	for i := range pp.elems {
		for _, e := range pp.elems[i].evidence {
			out = append(out, int32(e.Line))
		}
	}
	for _, e := range pp.dispatch {
		out = append(out, int32(e.Line))
	}
	out = append(out, int32(pp.serviceEv.Line))
	for _, x := range pp.endpoints {
		out = append(out, int32(x.ev.Line))
	}
	return out
}

// samePort reports whether two port prints encode alike, the lines of
// their evidence left out (see encode).
func samePort(a, b *portPrint) bool {
	if a.service != b.service || a.programmed != b.programmed || a.protocol != b.protocol || a.topology != b.topology ||
		a.known != b.known || !sameEvidence(a.serviceEv, b.serviceEv) ||
		len(a.elems) != len(b.elems) || len(a.dispatch) != len(b.dispatch) || len(a.endpoints) != len(b.endpoints) ||
		len(a.expected) != len(b.expected) || len(a.unexpected) != len(b.unexpected) {
		return false
	}
	for i := range a.elems {
		x, y := &a.elems[i], &b.elems[i]
		if x.key != y.key || x.label != y.label || x.backend != y.backend || x.family != y.family || x.kind != y.kind ||
			!sameEvidenceList(x.evidence, y.evidence) {
			return false
		}
	}
	if !sameEvidenceList(a.dispatch, b.dispatch) {
		return false
	}
	for i := range a.endpoints {
		if a.endpoints[i].label != b.endpoints[i].label || !sameEvidence(a.endpoints[i].ev, b.endpoints[i].ev) {
			return false
		}
	}
	return slices.Equal(a.expected, b.expected) && slices.Equal(a.unexpected, b.unexpected)
}

// sameEvidence reports whether two evidences are alike but for their
// lines.
func sameEvidence(a, b model.Evidence) bool {
	return a.File == b.File && a.Path == b.Path && a.Text == b.Text
}

func sameEvidenceList(a, b []model.Evidence) bool {
	return slices.EqualFunc(a, b, sameEvidence)
}

// encode writes what makes two port prints equal.
func (ps *Prints) encode(b []byte, pp *portPrint) []byte { return ps.encodePort(b, pp, true) }

// encodePort writes what makes two port prints equal; without lines, the
// lines of its evidence are written as zero, as those of a stored print
// are.
func (ps *Prints) encodePort(b []byte, pp *portPrint, lines bool) []byte {
	str := func(s string) { b = binary.AppendUvarint(b, uint64(len(s))); b = append(b, s...) }
	num := func(n int) { b = binary.AppendVarint(b, int64(n)) }
	line := func(n int) {
		if !lines {
			n = 0
		}
		num(n)
	}
	flag := func(f bool) {
		if f {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	ev := func(e model.Evidence) { str(e.File); line(e.Line); str(e.Path); str(e.Text) }
	evs := func(list []model.Evidence) {
		num(len(list))
		for _, e := range list {
			ev(e)
		}
	}
	str(pp.service)
	flag(pp.programmed)
	str(pp.protocol)
	flag(pp.topology)
	num(len(pp.elems))
	for _, e := range pp.elems {
		str(e.key)
		str(e.label)
		flag(e.backend)
		str(string(e.family))
		str(string(e.kind))
		evs(e.evidence)
	}
	evs(pp.dispatch)
	flag(pp.known)
	ev(pp.serviceEv)
	num(len(pp.endpoints))
	for _, x := range pp.endpoints {
		str(x.label)
		ev(x.ev)
	}
	for _, list := range [][]famLabel{pp.expected, pp.unexpected} {
		num(len(list))
		for _, x := range list {
			str(string(x.family))
			str(x.label)
		}
	}
	return b
}

// str returns the stored copy of s.
func (ps *Prints) str(s string) string { return ps.strs.Str(s) }

func (ps *Prints) ev(e *model.Evidence) {
	e.File, e.Path, e.Text = ps.str(e.File), ps.str(e.Path), ps.str(e.Text)
}

func (ps *Prints) evs(list []model.Evidence) []model.Evidence {
	for i := range list {
		ps.ev(&list[i])
	}
	return list
}

func (ps *Prints) pos(p parsers.Pos) parsers.Pos {
	p.File, p.Path = ps.str(p.File), ps.str(p.Path)
	return p
}
