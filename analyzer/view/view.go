// Package view reduces a captured data plane — iptables, IPVS or nftables —
// to a mode-neutral description of what it programs for Service traffic:
// entries (a cluster IP, external IP, load balancer IP or node port with
// what happens to packets sent to it), the dispatch each entry leads to
// (the endpoints, with their share of the traffic, and session affinity),
// and the per-service objects (chains, virtual servers, map elements) with
// the Service they belong to.
//
// A view says what is there, not whether it is right: the checks compare it
// with what kube-proxy would program. Every element carries evidence (file
// and line, or JSON path) of the rules it was read from.
package view

import (
	"bytes"
	"net/netip"
	"sort"
	"strconv"
	"unsafe"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// Kind is the kind of destination an entry programs.
type Kind string

// Entry kinds.
const (
	ClusterIP      Kind = "ClusterIP"
	ExternalIP     Kind = "ExternalIP"
	LoadBalancerIP Kind = "LoadBalancerIP"
	NodePort       Kind = "NodePort"
	// HealthCheckPort is the anchor kind of health-check node ports (no entry
	// has it: health checks are listed in View.HealthChecks).
	HealthCheckPort Kind = "HealthCheck"
)

// Action is what an entry does with new connections.
type Action string

// Entry actions.
const (
	Forward Action = "forward" // load-balanced to endpoints
	Reject  Action = "reject"  // no endpoints: rejected
	Drop    Action = "drop"    // no local endpoints for a Local policy: dropped
)

// Past returns the action's past participle ("forwarded", "rejected",
// "dropped"), for messages.
func (a Action) Past() string {
	if a == Drop {
		return "dropped"
	}
	return string(a) + "ed"
}

// PerOrigin holds a value for each origin, indexed by it.
type PerOrigin[T any] [model.NumOrigins]T

// Policy is the traffic policy of a dispatch.
type Policy string

// Dispatch policies.
const (
	PolicyCluster Policy = "Cluster"
	PolicyLocal   Policy = "Local"
)

// A View is what one data plane (one mode, one IP family) programs.
type View struct {
	Mode   string
	Family model.Family
	// Source is the file the view was read from.
	Source string
	// Entries in the order they were found.
	Entries []*Entry
	// HealthChecks are the health-check node ports accepted.
	HealthChecks []*HealthCheck
	// Objects are the per-service objects (chains, virtual servers, map
	// elements) with their attribution.
	Objects []*Object
	// NodePorts reports whether node ports are reachable at all (the
	// KUBE-SERVICES tail rule, the nft nodeport map lookup); its evidence.
	NodePorts         bool
	NodePortsEvidence []model.Evidence
	// NodePortsWhy says, when NodePorts is false, why node ports are not
	// reachable ("" when the mode does not say).
	NodePortsWhy string
	// Unrecognised lists rules in kube-proxy's chains that the view could
	// not interpret.
	Unrecognised []model.Evidence
	// Anchors point at where entries of each kind live (the chain, map or
	// table), so that a finding about a missing entry can say where it
	// should have been.
	Anchors map[Kind]model.Evidence
	// Where names, for messages, where entries of each kind live ("nat
	// KUBE-SERVICES", "the service-ips map", "the IPVS table").
	Where map[Kind]string
	// BlockAnchors point at where the reject and drop entries of each kind
	// live (the filter chain, the no-endpoint map), so that a finding about
	// a missing one can say where it should have been; BlockWhere names
	// them for messages. A kind without one (IPVS mode) has only its
	// Anchors and Where.
	BlockAnchors map[Kind]model.Evidence
	BlockWhere   map[Kind]string
	// IPVS holds what an IPVS-mode data plane programs besides its virtual
	// servers (kube-ipvs0 addresses, ipsets, the filter rules); nil in the
	// other modes.
	IPVS *IPVSState

	// byKey and byService index Entries; built by Index.
	byKey     map[entryKey][]*Entry
	byService map[string][]*Entry
}

type entryKey struct {
	kind  Kind
	ip    netip.Addr
	proto string
	port  int32
}

// Index (re)builds the lookup indexes after Entries changed. Extractors
// call it once they are done.
func (v *View) Index() {
	v.byKey = make(map[entryKey][]*Entry, len(v.Entries))
	v.byService = map[string][]*Entry{}
	for _, e := range v.Entries {
		k := entryKey{e.Kind, e.IP, e.Protocol, e.Port}
		v.byKey[k] = append(v.byKey[k], e)
		v.byService[e.Service] = append(v.byService[e.Service], e)
	}
}

// ServiceEntries returns the entries attributed to a service port name.
func (v *View) ServiceEntries(name string) []*Entry {
	if v.byService == nil {
		v.Index()
	}
	return v.byService[name]
}

// An Entry is one programmed destination. Its fields are ordered so that
// the struct has no padding to speak of.
type Entry struct {
	Kind     Kind
	IP       netip.Addr // invalid for NodePort entries
	Protocol string     // lower case: tcp, udp, sctp
	Port     int32
	// Routed reports whether the entry's rule (or element) was followed to
	// the dispatches of Dispatch; a routed entry may still have no
	// dispatch for an origin, or none at all when its rule leads nowhere.
	Routed bool
	// Localhost reports a node port also accepted on 127.0.0.1.
	Localhost bool
	// NoRealServers reports, in IPVS mode, that the entry's virtual servers
	// are listed without any real server (every one of a node port's): what
	// kube-proxy programs for a service port without endpoints, and IPVS
	// rejects the traffic. The entry's Action is Reject, and it is not
	// Routed. A virtual server whose real servers are all at weight 0
	// rejects too, but has them.
	NoRealServers bool
	// Service is the service port name the entry is attributed to ("" when
	// it could not be attributed), and How says how ("comment", "hash",
	// "element", "address").
	Service, How string
	Action       Action
	// Dispatch gives, for routed entries, where each origin's traffic is
	// sent (nil: the origin's traffic is not forwarded by this entry).
	Dispatch PerOrigin[*Dispatch]
	// via holds, per origin, the rules between the entry and its dispatch
	// (see Via); nil when there are none, as for most entries.
	via *PerOrigin[[]model.Evidence]
	// Firewall holds the source-range filter of a load balancer entry.
	Firewall *Firewall
	// NodeIPs lists, for an IPVS node port, the node addresses that have a
	// virtual server for it; Also holds the dispatches of those after the
	// first (one virtual server per node address).
	NodeIPs  []netip.Addr
	Also     []*Dispatch
	Evidence []model.Evidence
}

// Via returns the rules between the entry and its dispatch for traffic
// from origin (external and firewall chains) that decided where the
// traffic goes.
func (e *Entry) Via(origin model.Origin) []model.Evidence {
	if e.via == nil {
		return nil
	}
	return e.via[origin]
}

// addVia appends ev to the entry's rules for traffic from origin.
func (e *Entry) addVia(origin model.Origin, ev model.Evidence) {
	if e.via == nil {
		e.via = new(PerOrigin[[]model.Evidence])
	}
	e.via[origin] = append(e.via[origin], ev)
}

// Key returns "Kind IP proto/port" (no IP for node ports).
func (e *Entry) Key() string { return string(e.AppendKey(nil)) }

// AppendKey appends the entry's [Entry.Key] to b and returns the extended
// slice.
func (e *Entry) AppendKey(b []byte) []byte {
	b = append(append(b, e.Kind...), ' ')
	if e.IP.IsValid() {
		b = append(e.IP.AppendTo(b), ' ')
	}
	b = append(append(b, e.Protocol...), '/')
	return strconv.AppendInt(b, int64(e.Port), 10)
}

// Dest returns "IP:port" (or ":port" for a node port), as users write it.
func (e *Entry) Dest() string {
	if !e.IP.IsValid() {
		return "node port " + strconv.Itoa(int(e.Port)) + "/" + e.Protocol
	}
	return model.JoinHostPort(e.IP, e.Port) + "/" + e.Protocol
}

// A Dispatch is a load-balancing decision: a service or local chain, an
// IPVS virtual server, an nft service chain.
type Dispatch struct {
	// ID names it in the data plane (chain name, virtual server).
	ID string
	// Service is the service port name it is attributed to.
	Service string
	Policy  Policy
	// Backends in the order the data plane tries them.
	Backends []*Backend
	// Affinity is set when the dispatch pins clients to endpoints.
	Affinity *Affinity
	// Drops reports that traffic reaching the dispatch is dropped (no
	// local endpoints, kube-proxy before 1.25).
	Drops bool
	// AffinityUnknown is set when the data plane does not say whether the
	// dispatch pins clients (an IPVS listing that prints no persistence):
	// Affinity is then nil and says nothing.
	AffinityUnknown bool
	// Scheduler is the IPVS scheduler, "random" for iptables and nftables;
	// "" when the IPVS listing does not print it (ipvsadm -Ln --stats).
	Scheduler string
	// Hidden says what of the dispatch the listing it was read from does
	// not print ("ipvsadm -Ln --stats prints no scheduler, persistence or
	// weights"); "" when the data plane shows it all.
	Hidden   string
	Evidence []model.Evidence
}

// Endpoints returns the backend endpoint strings.
func (d *Dispatch) Endpoints() []string {
	out := make([]string, 0, len(d.Backends))
	for _, b := range d.Backends {
		out = append(out, b.Endpoint)
	}
	return out
}

// Backend returns the backend for an endpoint string, or nil.
func (d *Dispatch) Backend(ep string) *Backend {
	for _, b := range d.Backends {
		if b.Endpoint == ep {
			return b
		}
	}
	return nil
}

// WeightUnknown is the Weight of an IPVS real server read from a listing
// that prints no weights (ipvsadm -Ln --stats, --rate, --thresholds).
const WeightUnknown = -1

// A Backend is one destination of a dispatch.
//
// A large node has one per endpoint of every Service: the fields are
// ordered so that the struct has no padding to speak of.
type Backend struct {
	// Endpoint is "IP:port" ("[IP]:port" for IPv6).
	Endpoint string
	IP       netip.Addr
	Port     int32
	// Weight is the IPVS weight (1 elsewhere), WeightUnknown when the IPVS
	// listing does not print it: the real server is then counted as live.
	Weight int32
	// Connections is, for an IPVS real server, its active plus inactive
	// connections (-1 when the listing does not show them); 0 elsewhere.
	Connections int32
	// Graceful marks an IPVS real server at weight 0 (terminating).
	Graceful bool
	// Unreachable marks a backend that no packet can reach (a rule after an
	// unconditional one).
	Unreachable bool
	// jumps tells what ev points to: an iptables rule jumping to the
	// endpoint chain when set, a list of evidence otherwise.
	jumps bool
	// Share is the fraction of new connections the backend receives (its
	// probability), or -1 when the data plane does not say (IPVS lc).
	Share float64
	// ID names the backend's own object (KUBE-SEP chain, endpoint chain).
	ID string

	// ev is the IPVS and nftables views' evidence (a *[]model.Evidence).
	// The iptables view keeps the rule jumping to the endpoint chain
	// instead (an *iptables.Rule, with jumps set; a large node has one
	// backend per endpoint of every Service), and Evidence builds it from
	// that rule. One pointer serves both, the kinds never being mixed
	// in a backend: see evidence, setEvidence, jump and setJump.
	ev unsafe.Pointer
	// dnat is the endpoint chain's DNAT rule (nil: the chain has none, or
	// is missing), found as the view reads the chain.
	dnat *iptables.Rule
}

// evidence returns the backend's list of evidence (nil for an iptables
// backend, or when it has none).
func (b *Backend) evidence() *[]model.Evidence {
	if b.jumps {
		return nil
	}
	return (*[]model.Evidence)(b.ev)
}

// setEvidence makes ev the backend's list of evidence.
func (b *Backend) setEvidence(ev *[]model.Evidence) {
	b.ev, b.jumps = unsafe.Pointer(ev), false
}

// jump returns the iptables rule jumping to the backend's endpoint chain
// (nil for the other views' backends).
func (b *Backend) jump() *iptables.Rule {
	if !b.jumps {
		return nil
	}
	return (*iptables.Rule)(b.ev)
}

// setJump makes r the rule jumping to the backend's endpoint chain.
func (b *Backend) setJump(r *iptables.Rule) {
	b.ev, b.jumps = unsafe.Pointer(r), r != nil
}

// Evidence returns where the backend is programmed. The slice is the
// caller's to keep but not to append to. For an iptables backend it is
// the jump to the endpoint chain, then the chain's DNAT rule, or the
// chain when it has none (nothing when it is missing).
func (b *Backend) Evidence() []model.Evidence {
	if b.jump() == nil {
		ev := b.evidence()
		if ev == nil {
			return nil
		}
		return *ev
	}
	return b.AppendEvidence(make([]model.Evidence, 0, 2))
}

// AppendEvidence appends the evidence of [Backend.Evidence] to out and
// returns the extended slice: a caller that reads the evidence of many
// backends in turn keeps one buffer instead of a slice per backend.
func (b *Backend) AppendEvidence(out []model.Evidence) []model.Evidence {
	jump := b.jump()
	if jump == nil {
		ev := b.evidence()
		if ev == nil {
			return out
		}
		return append(out, *ev...)
	}
	out = append(out, model.RuleEvidence(jump))
	if b.dnat != nil {
		// The endpoint chain is in the jump's table: its file is the
		// jump's, not read again through the chain.
		return append(out, model.Evidence{File: out[len(out)-1].File, Line: b.dnat.Line, Text: b.dnat.Raw})
	}
	if sep := jump.Chain.Table.Dump.Chain("nat", jump.Target()); sep != nil {
		if r := dnatRule(sep); r != nil {
			out = append(out, model.RuleEvidence(r))
		} else {
			out = append(out, model.ChainEvidence(sep))
		}
	}
	return out
}

// oneEvidence returns a pointer to a list of ev alone (a backend's
// evidence), made in one allocation.
func oneEvidence(ev model.Evidence) *[]model.Evidence {
	x := &struct {
		list []model.Evidence
		arr  [1]model.Evidence
	}{arr: [1]model.Evidence{ev}}
	x.list = x.arr[:]
	return &x.list
}

// joinEvidence returns a pointer to a new list of the evidence of a then
// b, made in one allocation when it is short (a backend's).
func joinEvidence(a, b []model.Evidence) *[]model.Evidence {
	n := len(a) + len(b)
	if n > 2 {
		list := append(append(make([]model.Evidence, 0, n), a...), b...)
		return &list
	}
	x := &struct {
		list []model.Evidence
		arr  [2]model.Evidence
	}{}
	x.list = append(append(x.arr[:0], a...), b...)
	x.list = x.list[:n:n]
	return &x.list
}

// Affinity is ClientIP session affinity as programmed.
type Affinity struct {
	// Timeout in seconds.
	Timeout int
	// Complete reports whether every backend takes part (iptables: a
	// --rcheck rule and a --set on its DNAT rule).
	Complete bool
	Evidence []model.Evidence
}

// A Firewall is the loadBalancerSourceRanges filter of an entry.
type Firewall struct {
	Ranges []netip.Prefix
	// DefaultDrop reports that sources outside the ranges are dropped.
	DefaultDrop bool
	Evidence    []model.Evidence
}

// A HealthCheck is an accepted health-check node port.
type HealthCheck struct {
	Port     int32
	Service  string
	Evidence []model.Evidence
}

// ObjectKind names a kind of per-service data-plane object. It is a
// small number (its String is its name): a large node has an object per
// chain.
type ObjectKind uint8

// Object kinds.
const (
	ObjChain         ObjectKind = iota + 1 // an iptables or nftables chain
	ObjVirtualServer                       // an IPVS virtual server
	ObjBoundAddress                        // an address on kube-ipvs0
	ObjSetEntry                            // an ipset entry
	ObjSet                                 // an nftables affinity set
	ObjElement                             // an element of an nftables map or set that holds no entries
)

var objectKindNames = [...]string{
	ObjChain:         "chain",
	ObjVirtualServer: "virtual server",
	ObjBoundAddress:  "kube-ipvs0 address",
	ObjSetEntry:      "ipset entry",
	ObjSet:           "set",
	ObjElement:       "map element",
}

// String returns the kind's name ("chain", "map element"...).
func (k ObjectKind) String() string {
	if int(k) < len(objectKindNames) && objectKindNames[k] != "" {
		return objectKindNames[k]
	}
	return "object kind " + strconv.Itoa(int(k))
}

// An Object is a per-service object of the data plane: a chain, a virtual
// server, a map element, an ipset member, an address on kube-ipvs0.
//
// A large node has one per chain: the fields are ordered so that the
// struct has no padding to speak of.
type Object struct {
	Name string
	// Service is the service port name it belongs to by its name, comment
	// or contents ("" when nothing says).
	Service string
	Kind    ObjectKind
	// Hashed reports a name kube-proxy derives from the service port
	// (KUBE-SVC-<hash>, the nft chains' <hash>-<name> prefix).
	Hashed bool
	// Referenced reports whether anything in the data plane leads to it.
	Referenced bool
	// Flushed marks an empty nftables chain: kube-proxy flushes the chains
	// it no longer uses in one sync and deletes them in a later one.
	Flushed bool

	// Where the object is (see Evidence): an iptables chain, or the
	// evidence of any other object. A large node has several objects per
	// Service; a chain's evidence is built when asked.
	chain *iptables.Chain
	ev    *[1]model.Evidence
}

// evidenceOf returns a pointer to a copy of e, which is also a list of
// one evidence that others may share (the nft view's dispatch of a chain
// has the chain's evidence).
func evidenceOf(e model.Evidence) *[1]model.Evidence { return &[1]model.Evidence{e} }

// Evidence returns where the object is: a chain header, a virtual
// server, an element...
func (o *Object) Evidence() model.Evidence {
	switch {
	case o.chain != nil:
		return model.ChainEvidence(o.chain)
	case o.ev != nil:
		return o.ev[0]
	}
	return model.Evidence{}
}

// Lookup returns the entries of a kind for an address (invalid for node
// ports), protocol and port.
func (v *View) Lookup(kind Kind, ip netip.Addr, proto string, port int32) []*Entry {
	if v.byKey == nil {
		v.Index()
	}
	return v.byKey[entryKey{kind, ip, proto, port}]
}

// Find returns the first entry matching, preferring forward entries.
func (v *View) Find(kind Kind, ip netip.Addr, proto string, port int32) *Entry {
	var best *Entry
	for _, e := range v.Lookup(kind, ip, proto, port) {
		if best == nil || e.Action == Forward && best.Action != Forward {
			best = e
		}
	}
	return best
}

// SortEntries orders entries by kind, address, protocol and port (the
// order of their keys).
func (v *View) SortEntries() {
	// The keys are written one after the other in one buffer, made for
	// keys of about 32 bytes ("ClusterIP 10.96.0.10 tcp/80"): a large node
	// has tens of thousands of entries.
	buf := make([]byte, 0, 32*len(v.Entries))
	ends := make([]int, len(v.Entries))
	for i, e := range v.Entries {
		buf = e.AppendKey(buf)
		ends[i] = len(buf)
	}
	key := func(i int) []byte {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		return buf[start:ends[i]]
	}
	order := make([]int, len(v.Entries))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return bytes.Compare(key(order[a]), key(order[b])) < 0 })
	sorted := make([]*Entry, len(v.Entries))
	for i, j := range order {
		sorted[i] = v.Entries[j]
	}
	copy(v.Entries, sorted)
	v.Index()
}
