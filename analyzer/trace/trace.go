package trace

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/google/nftables"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/proxier"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/parsers/ipset"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// A Packet is the first packet of a connection to trace.
type Packet struct {
	// Src is the source address; the zero value lets the tracer choose one
	// for From (a pod address, a node address, an outside address).
	Src netip.Addr `json:"src"`
	// Dst is the destination address and port.
	Dst netip.AddrPort `json:"dst"`
	// Proto is "tcp", "udp" or "sctp".
	Proto string `json:"proto"`
	// From says where the packet enters (pod when unset).
	From model.Origin `json:"from"`
	// InIface is the interface the packet arrives on ("" for FromNode);
	// the zero value lets the tracer choose one for From.
	InIface string `json:"inIface,omitempty"`
}

// String formats the packet as "proto src -> dst (from)".
func (p Packet) String() string {
	src := "*"
	if p.Src.IsValid() {
		src = p.Src.String()
	}
	return fmt.Sprintf("%s %s -> %s (from %s)", p.Proto, src, p.Dst, p.From)
}

// Verdict is how a path ends.
type Verdict string

// Verdicts of a path (contract "Trace JSON").
const (
	// VerdictDNAT: the destination was rewritten (to an endpoint).
	VerdictDNAT Verdict = "DNAT"
	// VerdictAccept: the packet passed untouched.
	VerdictAccept Verdict = "ACCEPT"
	// VerdictReject: a REJECT rule or reject statement answered it.
	VerdictReject Verdict = "REJECT"
	// VerdictDrop: a DROP rule, drop statement or DROP policy ate it.
	VerdictDrop Verdict = "DROP"
	// VerdictLocal: delivered to the node itself (IPVS, or a local address
	// nothing rewrote).
	VerdictLocal Verdict = "LOCAL"
)

// A Step is one rule (or virtual server, or policy) the packet met, in the
// order the kernel evaluates them.
type Step struct {
	// Table is the iptables table ("nat"), the nft table ("ip kube-proxy")
	// or "ipvs".
	Table string `json:"table"`
	// Chain is the chain holding the rule ("" for IPVS).
	Chain string `json:"chain"`
	// Rule is the rule's text exactly as in the dump (iptables: the "-A"
	// line without counters; nft: the rule as listed; IPVS: the virtual or
	// real server line).
	Rule string `json:"rule"`
	// File, Line and Path locate the rule in its dump (Path is the JSON
	// path for nft -j input).
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Path string `json:"path,omitempty"`
	// Note explains what the step did when the rule alone does not say it
	// ("chain policy ACCEPT", "probability 1/3", "affinity entry present").
	Note string `json:"note,omitempty"`
	// Warning is set when the step holds a match or statement the tracer
	// does not model.
	Warning string `json:"warning,omitempty"`
}

// A Path is one way through the data plane.
type Path struct {
	// Probability of this path among all paths of the packet.
	Probability float64 `json:"probability"`
	// Verdict is how the path ends.
	Verdict Verdict `json:"verdict"`
	// Destination is the address and port the packet leaves with (after
	// DNAT), or its original destination.
	Destination string `json:"destination,omitempty"`
	// Masquerade reports a MASQUERADE (or SNAT) on the way out.
	Masquerade bool `json:"masquerade"`
	// SNAT is the source address of an explicit SNAT, if any.
	SNAT string `json:"snat,omitempty"`
	// Conditions lists what the path depends on beyond chance ("affinity
	// entry for the source", "source hash").
	Conditions []string `json:"conditions,omitempty"`
	// Steps lists every rule that matched, in evaluation order.
	Steps []Step `json:"steps"`
	// Warnings collects the steps' warnings and other doubts about the path.
	Warnings []string `json:"warnings,omitempty"`
	// Hops are the hooks the packet enters on the path, in order, each
	// with why it goes there (the routing decision, a loop back in on lo,
	// IPVS); empty for a summary trace.
	Hops []Hop `json:"hops,omitempty"`
	// Endpoint is what the Services of the inputs say of the endpoint the
	// path ends at (see [Annotate]); nil when the path reaches none or the
	// inputs hold no Service.
	Endpoint *Endpoint `json:"endpoint,omitempty"`
	// Merged reports a path that stands for several ways through the
	// rules that end alike (the trace merged paths that reached the same
	// state, see [Options.MaxWork]): Probability is theirs together,
	// Steps and Hops are those of the most probable.
	Merged bool `json:"merged,omitempty"`
}

// A Hop is the packet entering a netfilter hook (or IPVS) on a path.
type Hop struct {
	// Step is the number of the path's steps met before the hook: the
	// hook's first step, if any, is Steps[Step].
	Step int `json:"step"`
	// Hook is "PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"
	// or "IPVS".
	Hook string `json:"hook"`
	// Why says why the packet goes there ("routing decision: 10.96.0.10
	// is bound to kube-ipvs0 (assumed: no ip addr in the inputs)").
	Why string `json:"why,omitempty"`
}

// A Result is every path of one packet through one data plane.
type Result struct {
	// Packet is the traced packet, with the source and interface chosen.
	Packet Packet `json:"packet"`
	// Mode is the proxy mode of the data plane traced.
	Mode string `json:"mode"`
	// Node names the node whose data plane was traced.
	Node string `json:"node,omitempty"`
	// Expected reports a trace through the reference proxier's data plane.
	Expected bool `json:"expected,omitempty"`
	// Paths, most probable first; their probabilities sum to 1.
	Paths []Path `json:"paths"`
	// Warnings are doubts about the trace as a whole (no dump of the
	// packet's family, a mode without captured rules, ...).
	Warnings []string `json:"warnings,omitempty"`
	// Assumed says what the trace took for granted that no input shows
	// (addresses assumed bound to kube-ipvs0 without ip addr, ...).
	Assumed []string `json:"assumed,omitempty"`
	// Target says what the destination is to kube-proxy ("10.96.0.10:53 is
	// the cluster IP of kube-system/kube-dns:dns, port 53/UDP", an address
	// of no Service, a port the Service does not have); see [Target].
	Target string `json:"target,omitempty"`
	// TargetKind classifies Target: [TargetService], [TargetNodePort],
	// [TargetNoSuchPort] or [TargetNoService] ("" when Target is).
	TargetKind string `json:"targetKind,omitempty"`
	// IncompleteInputs, when not empty, says that the trace is based on
	// incomplete inputs: each input of the node that was not read, or was
	// read only in part, and why.
	IncompleteInputs []string `json:"incompleteInputs,omitempty"`
	// Undetermined, when set, says why no path's end is a verdict: no
	// path reached an endpoint through the rules the inputs show, and the
	// data plane of the packet's family is partial (a dump cut short or
	// filtered), so that the rules the walk would meet may lie outside it.
	Undetermined string `json:"undetermined,omitempty"`
}

// A Dataplane is everything the tracer reads for one node.
type Dataplane struct {
	// Mode is the proxy mode whose rules are walked: "iptables", "ipvs" or
	// "nftables".
	Mode string
	// Node names the node.
	Node string
	// IPTables are the iptables dumps (iptables mode, and the iptables side
	// of IPVS mode), one per family and backend.
	IPTables []*iptables.Dump
	// NFT are the nftables rulesets.
	NFT []*nft.Ruleset
	// IPVS are the IPVS tables.
	IPVS []*ipvs.Dump
	// IPSets are the ipsets the iptables rules of IPVS mode match.
	IPSets []*ipset.Dump
	// Local are the node's local addresses (addrtype LOCAL, fib daddr type
	// local, IPVS virtual servers bound on kube-ipvs0).
	Local []netip.Addr
	// AssumedLocal are the addresses of Local that no input shows bound
	// (IPVS virtual servers taken as bound to kube-ipvs0), and Bound those
	// the expected rules bind to kube-ipvs0; both only explain the hops.
	AssumedLocal, Bound []netip.Addr
	// AssumedLocalWhy says in a few words why AssumedLocal are assumed
	// ("ip addr does not show kube-ipvs0"); "" for want of ip addr.
	AssumedLocalWhy string
	// NodeAddrs are the node's own addresses (its Node object's and those
	// of ip addr but kube-ipvs0's): a packet from the node leaves from one
	// of them, and an IPVS virtual server on one (a node port) is not
	// bound to kube-ipvs0.
	NodeAddrs []netip.Addr
	// PodCIDRs are the node's pod ranges (to choose a pod source address).
	PodCIDRs []netip.Prefix
	// Expected reports a data plane generated by the reference proxier.
	Expected bool
	// Assumed lists what the data plane takes for granted without an input
	// showing it (addresses assumed local, a mode the rules do not show);
	// every trace through it notes them.
	Assumed []string

	// nftIdx caches the nftables engine's index of NFT, by family (IPv4:
	// true).
	nftIdx map[bool]*nftIndex

	// cache holds the iptables chains compiled for walking, built on the
	// first trace.
	cache *compiled

	// problems caches Validate's answer for the rulesets of validFor.
	problems []Problem
	validFor []any
	// nrules caches numRules, plus one (0: not counted yet).
	nrules atomic.Int64
}

// IsLocal reports whether a is one of the node's local addresses.
func (dp *Dataplane) IsLocal(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLoopback() {
		return true
	}
	for _, l := range dp.Local {
		if l == a {
			return true
		}
	}
	return false
}

// FromSnapshot returns the captured data plane of a resolved snapshot,
// to be walked in the resolved mode, with the node's local addresses (those
// assumed are noted on every trace).
func FromSnapshot(r *resolve.Resolution) *Dataplane {
	snap := r.Snap
	dp := &Dataplane{
		Mode:     r.Mode,
		Node:     snap.Node.Name,
		IPTables: snap.IPTables,
		NFT:      snap.NFT,
		IPVS:     snap.IPVS,
		IPSets:   snap.IPSets,
		PodCIDRs: snap.Node.PodCIDRs,
		Local:    r.Local,

		NodeAddrs: r.NodeAddrs,

		AssumedLocal:    r.AssumedLocal,
		AssumedLocalWhy: r.AssumedBrief,
	}
	if len(r.AssumedLocal) > 0 {
		dp.Assumed = append(dp.Assumed, fmt.Sprintf("%s (%d addresses)", r.AssumedWhy, len(r.AssumedLocal)))
	}
	if len(r.Programmed) == 1 && r.Programmed[0] != r.Mode {
		dp.Assumed = append(dp.Assumed, fmt.Sprintf("kube-proxy runs in %s mode (%s) but the data plane holds %s-mode rules: the %s mode's rules are walked (--mode %s walks the others)",
			r.Mode, r.ModeSource, r.Programmed[0], r.Mode, r.Programmed[0]))
	}
	return dp
}

// Options tune a trace.
type Options struct {
	// MaxPaths bounds the number of paths kept (0: 4096); a trace that
	// would fork further says so in its warnings.
	MaxPaths int
	// MaxSteps bounds the rules one path may meet before it is cut as a
	// loop (0: 10000).
	MaxSteps int
	// Summary asks for paths without their steps (probability, verdict,
	// destination, conditions and warnings only), which is cheaper when
	// only where packets end matters; engines may still fill the steps.
	Summary bool
	// MaxWork bounds the rules evaluated for one packet over all its
	// paths (0: DefaultMaxWork, or four times the rules of the data plane
	// when that is more); a trace that would evaluate more fails with a
	// [WorkError] naming the chain it was in.
	MaxWork int
}

// DefaultMaxWork is the least number of rule evaluations a trace may make
// for one packet, over all its paths, when Options.MaxWork is 0.
const DefaultMaxWork = 1 << 18

// maxWork returns the bound of rule evaluations of a trace through dp.
func (o Options) maxWork(dp *Dataplane) int {
	if o.MaxWork > 0 {
		return o.MaxWork
	}
	return max(DefaultMaxWork, 4*dp.numRules())
}

// numRules returns the number of rules of dp's iptables dumps and nft
// rulesets.
func (dp *Dataplane) numRules() int {
	if n := dp.nrules.Load(); n > 0 {
		return int(n - 1)
	}
	n := 0
	for _, d := range dp.IPTables {
		n += d.NumRules()
	}
	for _, rs := range dp.NFT {
		for _, t := range rs.Tables {
			for _, c := range t.Chains {
				n += len(c.Rules)
			}
		}
	}
	dp.nrules.Store(int64(n) + 1)
	return n
}

// A WorkError reports a trace stopped because its paths multiplied
// beyond Options.MaxWork rule evaluations.
type WorkError struct {
	// Limit is the bound reached.
	Limit int
	// Table and Chain name the chain of the last fork before the walk
	// stopped (or the chain it was in, when it never forked).
	Table, Chain string
}

func (e *WorkError) Error() string {
	return fmt.Sprintf("trace: more than %d rule evaluations for one packet: its paths multiply at random or "+
		"state-dependent rules, the last one met in chain %s (table %s); the trace stops (a documented limit)",
		e.Limit, e.Chain, e.Table)
}

func (o Options) maxPaths() int {
	if o.MaxPaths > 0 {
		return o.MaxPaths
	}
	return 4096
}

func (o Options) maxSteps() int {
	if o.MaxSteps > 0 {
		return o.MaxSteps
	}
	return 10000
}

// engine walks one mode's data plane; the paths it returns are merged
// (see [Merge]).
type engine func(dp *Dataplane, pkt Packet, opts Options) (*Result, error)

// engines lists the modes the tracer walks.
var engines = map[string]engine{
	model.ModeIPTables: traceIPTables,
	model.ModeIPVS:     traceIPVS,
	model.ModeNFTables: traceNFT,
}

// Trace replays pkt through dp and returns every path it can take.
func Trace(dp *Dataplane, pkt Packet, opts Options) (*Result, error) {
	pkt, e, err := prepare(dp, pkt)
	if err != nil {
		return nil, err
	}
	res, err := e(dp, pkt, opts)
	if err != nil {
		return nil, err
	}
	for _, p := range dp.validate() {
		res.Warnings = append(res.Warnings, "the kernel refuses this ruleset, the paths are not what it would do: "+p.String())
	}
	res.Mode = dp.Mode
	res.Node = dp.Node
	res.Expected = dp.Expected
	res.Assumed = dp.Assumed
	if len(res.Paths) == 0 {
		res.Paths = nil
	}
	return res, nil
}

// prepare checks pkt, fills in its defaults and returns the engine of
// dp's mode.
func prepare(dp *Dataplane, pkt Packet) (Packet, engine, error) {
	if !pkt.Dst.IsValid() {
		return pkt, nil, fmt.Errorf("trace: destination address and port are required")
	}
	switch pkt.Proto {
	case "tcp", "udp", "sctp":
	case "":
		pkt.Proto = "tcp"
	default:
		return pkt, nil, fmt.Errorf("trace: unknown protocol %q (want tcp, udp or sctp)", pkt.Proto)
	}
	e, ok := engines[dp.Mode]
	if !ok {
		return pkt, nil, fmt.Errorf("trace: proxy mode %q is not traced (want iptables, ipvs or nftables)", dp.Mode)
	}
	return pkt, e, nil
}

// Merge folds paths that took the same steps to the same end into one,
// adding their probabilities, and sorts them most probable first (then by
// destination, for a stable order).
func Merge(paths []Path) []Path {
	if len(paths) == 0 {
		return nil
	}
	return merge(paths, make([]Path, 0, len(paths)))
}

// merge is Merge appending to out, which may be paths[:0] (each path is
// read before its place is written).
func merge(paths, out []Path) []Path {
	if len(paths) <= smallMerge {
		// Few paths: compared pairwise, without building keys.
	next:
		for _, p := range paths {
			for i := range out {
				if samePath(&out[i], &p) {
					out[i].Probability += p.Probability
					continue next
				}
			}
			out = append(out, p)
		}
	} else {
		idx := map[string]int{}
		// Paths can only be the same when their ends are: the full key
		// (every step) is built only for ends that occur more than once.
		ends := make(map[string]int, len(paths))
		for _, p := range paths {
			ends[endKey(p)]++
		}
		for _, p := range paths {
			if ends[endKey(p)] == 1 {
				out = append(out, p)
				continue
			}
			k := pathKey(p)
			if i, ok := idx[k]; ok {
				out[i].Probability += p.Probability
				continue
			}
			idx[k] = len(out)
			out = append(out, p)
		}
	}
	if len(out) < 2 {
		return out
	}
	slices.SortStableFunc(out, func(a, b Path) int {
		// Probabilities that differ by rounding only (1/3 reached as
		// 1/3 or as 2/3 * 1/2) count as equal.
		if d := a.Probability - b.Probability; d > 1e-12 || d < -1e-12 {
			if d > 0 {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Destination, b.Destination)
	})
	return out
}

// mergedWarning is the warning of a trace whose walk merged paths that
// reached the same state (see [Path.Merged]).
const mergedWarning = "the paths multiply at random rules that lead to the same chains: paths that reached the same state were merged, " +
	"their probabilities added, and each path listed is one outcome, shown with the steps of its most probable way"

// mergeOutcomes folds the paths that end alike (see endKey), whatever
// their steps, into the most probable of them, marked Merged, with their
// probabilities added and their warnings joined, most probable first: the
// paths of a walk that merged some.
func mergeOutcomes(paths []Path) []Path {
	idx := map[string]int{}
	var out []Path
	for _, p := range paths {
		k := endKey(p)
		i, ok := idx[k]
		if !ok {
			idx[k] = len(out)
			out = append(out, p)
			continue
		}
		q := &out[i]
		prob, warnings := q.Probability+p.Probability, q.Warnings
		if p.Probability > q.Probability {
			*q = p
		}
		q.Probability, q.Merged = prob, true
		q.Warnings = slices.Clip(q.Warnings)
		for _, wn := range append(warnings, p.Warnings...) {
			if !slices.Contains(q.Warnings, wn) {
				q.Warnings = append(q.Warnings, wn)
			}
		}
	}
	return merge(out, out[:0])
}

// smallMerge is the number of paths up to which Merge compares paths
// pairwise rather than by key.
const smallMerge = 16

// samePath reports whether a and b have the same key (see pathKey): the
// same end and the same steps.
func samePath(a, b *Path) bool {
	if a.Verdict != b.Verdict || a.Destination != b.Destination || a.Masquerade != b.Masquerade || a.SNAT != b.SNAT ||
		strings.Join(a.Conditions, ",") != strings.Join(b.Conditions, ",") || len(a.Steps) != len(b.Steps) {
		return false
	}
	for i := range a.Steps {
		x, y := &a.Steps[i], &b.Steps[i]
		if x.File != y.File || x.Line != y.Line || x.Path != y.Path {
			return false
		}
		if x.Line == 0 && x.Path == "" && x.Rule != y.Rule {
			return false
		}
	}
	return true
}

func endKey(p Path) string {
	return string(p.Verdict) + "|" + p.Destination + "|" + strconv.FormatBool(p.Masquerade) + "|" + p.SNAT + "|" + strings.Join(p.Conditions, ",")
}

func pathKey(p Path) string {
	var b strings.Builder
	b.WriteString(string(p.Verdict))
	b.WriteByte('|')
	b.WriteString(p.Destination)
	b.WriteByte('|')
	b.WriteString(strconv.FormatBool(p.Masquerade))
	b.WriteByte('|')
	b.WriteString(p.SNAT)
	b.WriteByte('|')
	b.WriteString(strings.Join(p.Conditions, ","))
	for _, s := range p.Steps {
		b.WriteByte('|')
		b.WriteString(s.File)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(s.Line))
		b.WriteByte(':')
		b.WriteString(s.Path)
		if s.Line == 0 && s.Path == "" {
			// Without a position the rule text tells the steps apart.
			b.WriteByte(':')
			b.WriteString(s.Rule)
		}
	}
	return b.String()
}

// FromExpected returns the data plane the reference proxier generated for
// snap (see proxier.Expect), with the node's addresses of snap.
func FromExpected(r *resolve.Resolution, exp *proxier.Dataplane) *Dataplane {
	snap := r.Snap
	dp := &Dataplane{
		Mode:     exp.Mode,
		Node:     snap.Node.Name,
		IPTables: exp.IPTables,
		PodCIDRs: snap.Node.PodCIDRs,
		Expected: true,

		NodeAddrs: r.NodeAddrs,
	}
	if exp.NFT != nil {
		dp.NFT = []*nft.Ruleset{exp.NFT}
	}
	if exp.IPVS != nil {
		dp.IPVS = []*ipvs.Dump{exp.IPVS}
	}
	if exp.IPSets != nil {
		dp.IPSets = []*ipset.Dump{exp.IPSets}
	}
	dp.Local = append([]netip.Addr(nil), r.Local...)
	seen := map[netip.Addr]bool{}
	for _, a := range dp.Local {
		seen[a] = true
	}
	dp.Bound = exp.Bound
	for _, a := range exp.Bound {
		if !seen[a] {
			seen[a] = true
			dp.Local = append(dp.Local, a)
		}
	}
	return dp
}

// lastWork holds the rule evaluations of the last trace that ended (for
// tests measuring the cost of a trace).
var lastWork atomic.Int64

// LastWork returns the number of rules the last trace to end evaluated,
// over all its paths: a measure of its cost that does not depend on the
// machine.
func LastWork() int { return int(lastWork.Load()) }

// Missing says which input of dp's mode a trace of pkt rests on that dp
// does not hold, or "" when it holds it: the packet's family's iptables
// dump in iptables mode, an IPVS table in IPVS mode (its iptables side is
// walked when there, with a warning when not), in nftables mode a ruleset
// holding a table of the packet's family (ip or ip6, or inet): a listing
// of one family's table (nft list table ip kube-proxy) does not show the
// other's. Without it nothing would be walked, and the trace would
// show an untouched packet that no rule says anything of.
func (dp *Dataplane) Missing(pkt Packet) string {
	switch dp.Mode {
	case model.ModeIPTables:
		fam := iptables.IPv4
		if pkt.Dst.Addr().Unmap().Is6() {
			fam = iptables.IPv6
		}
		for _, d := range dp.IPTables {
			if d.Family == fam || d.Family == iptables.FamilyUnknown {
				return ""
			}
		}
		save := "iptables-save"
		if fam == iptables.IPv6 {
			save = "ip6tables-save"
		}
		return fmt.Sprintf("an %s iptables dump (%s)", fam, save)
	case model.ModeIPVS:
		if len(dp.IPVS) == 0 {
			return "an IPVS table (ipvsadm -Ln)"
		}
	case model.ModeNFTables:
		if len(dp.NFT) == 0 {
			return "an nftables ruleset (nft list ruleset)"
		}
		v4 := !pkt.Dst.Addr().Unmap().Is6()
		for _, rs := range dp.NFT {
			for _, t := range rs.Tables {
				if t.Family == nftables.TableFamilyINet || t.Family == nftables.TableFamilyIPv4 && v4 || t.Family == nftables.TableFamilyIPv6 && !v4 {
					return ""
				}
			}
		}
		if v4 {
			return "an nftables table of the IPv4 family (nft list ruleset, or nft list table ip kube-proxy)"
		}
		return "an nftables table of the IPv6 family (nft list ruleset, or nft list table ip6 kube-proxy)"
	}
	return ""
}
