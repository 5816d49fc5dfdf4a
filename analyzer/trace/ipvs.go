package trace

import (
	"fmt"
	"net/netip"
	"strconv"

	"github.com/proxyscan/proxyscan/parsers/ipvs"
)

// traceIPVS walks an IPVS-mode data plane: the iptables rules kube-proxy
// writes for it (with their ipset matches) and, where the packet reaches
// a virtual server, the IPVS scheduler's choice of real server.
func traceIPVS(dp *Dataplane, pkt Packet, opts Options) (*Result, error) {
	if len(dp.IPVS) == 0 {
		res, err := walk(dp, pkt, opts, true)
		if err == nil {
			res.Warnings = append(res.Warnings, "no IPVS table was captured: no virtual server was looked up")
		}
		return res, err
	}
	return walk(dp, pkt, opts, true)
}

// Schedulers that pick by weight alone, in turn.
var weightedSchedulers = map[string]bool{"rr": true, "wrr": true}

// Schedulers whose choice depends on the source (or destination) address.
var hashSchedulers = map[string]bool{"sh": true, "mh": true, "dh": true}

// findVirtual returns the virtual server that takes the packet of s: one
// with the packet's destination, port and protocol, or a firewall-mark
// service with the packet's mark. Listings (-Ln) are preferred to the
// save form, which lacks nothing for the lookup but prints less.
func (w *walker) findVirtual(s *state) *ipvs.Service {
	var best *ipvs.Service
	for _, d := range w.dp.IPVS {
		for _, svc := range d.Services {
			if svc.FWMark != 0 {
				if s.mark != 0 && svc.FWMark == s.mark && (svc.AddressFamily == ipvs.FamilyIPv6) == s.dst.Is6() {
					if best == nil {
						best = svc
					}
				}
				continue
			}
			if svc.Port != s.dport || uint8(svc.Protocol) != s.proto {
				continue
			}
			a, ok := netip.AddrFromSlice(svc.Address)
			if !ok || a.Unmap() != s.dst {
				continue
			}
			if d.Form == ipvs.FormList {
				return svc
			}
			if best == nil {
				best = svc
			}
		}
	}
	return best
}

// ipvs looks the packet up in the IPVS table at LOCAL_IN (in) or
// LOCAL_OUT and forks it over the real servers the scheduler may pick.
func (w *walker) ipvs(s *state, in bool) {
	if in && !w.isLocal(s.dst) {
		return
	}
	svc := w.findVirtual(s)
	if svc == nil {
		return
	}
	sched := svc.SchedName
	if !s.summary {
		s.why = fmt.Sprintf("%s is the IPVS virtual server %s", netip.AddrPortFrom(s.dst, s.dport), svc.String())
		w.enter(s, hookIPVS)
	}
	vsStep := Step{Table: "ipvs", Rule: svc.Raw, File: svc.Pos.File, Line: svc.Pos.Line,
		Note: fmt.Sprintf("virtual server %s, scheduler %s", svc.String(), sched)}
	if !svc.SchedulerKnown() {
		vsStep.Note = fmt.Sprintf("virtual server %s, scheduler not in the listing", svc.String())
	}
	var live []*ipvs.Destination
	total := 0
	weights := svc.WeightsKnown()
	for _, d := range svc.Destinations {
		if d.Weight > 0 || !weights {
			live = append(live, d)
			total += d.Weight
		}
	}
	if len(live) == 0 {
		if len(svc.Destinations) == 0 {
			vsStep.Note += "; no real server"
		} else {
			vsStep.Note += "; every real server has weight 0 (terminating)"
		}
		vsStep.Note += ": IPVS answers ICMP port unreachable and drops the packet"
		s.add(vsStep)
		s.ipvsVS = svc
		s.verdict, s.done = VerdictReject, true
		return
	}
	var conds []string
	if svc.IsPersistent() {
		conds = append(conds, fmt.Sprintf("IPVS persistence (%d s): a client with a connection template from an earlier connection keeps its real server", svc.Timeout))
	}
	if hidden := svc.Listed.Hidden(); hidden != "" {
		conds = append(conds, fmt.Sprintf("ipvsadm -Ln %s prints %s: every real server is counted as live and equally likely", svc.Listed.Option(), hidden))
	}
	switch {
	case !svc.SchedulerKnown():
	case weightedSchedulers[sched]:
	case hashSchedulers[sched]:
		conds = append(conds, "scheduler "+sched+": the real server depends on the packet's addresses (hash)")
	default:
		conds = append(conds, "scheduler "+sched+": the real server depends on the connection counts; any live real server can be chosen")
	}
	s.add(vsStep)
	s.conds = append(s.conds, conds...)
	s.ipvsVS = svc
	probs := make([]float64, len(live))
	for i, d := range live {
		switch {
		case sched == "wrr" && weights:
			probs[i] = float64(d.Weight) / float64(total)
		default:
			probs[i] = 1 / float64(len(live))
		}
	}
	base := s.prob
	for i := len(live) - 1; i >= 1; i-- {
		if len(w.paths)+len(w.work)+1 >= w.opts.maxPaths() {
			w.cut = true
			break
		}
		c := w.clone(s)
		c.prob = base * probs[i]
		w.toReal(c, live[i], probs[i], in)
		w.work = append(w.work, c)
	}
	s.prob = base * probs[0]
	w.toReal(s, live[0], probs[0], in)
}

// toReal sends s to real server d.
func (w *walker) toReal(s *state, d *ipvs.Destination, p float64, in bool) {
	weight := "weight " + strconv.Itoa(d.Weight)
	if !s.ipvsVS.WeightsKnown() {
		weight = "weight not in the listing"
	}
	st := Step{Table: "ipvs", Rule: d.Raw, File: d.Pos.File, Line: d.Pos.Line,
		Note: "real server " + d.String() + ", " + weight + ", probability " + formatProb(p)}
	a, _ := netip.AddrFromSlice(d.Address)
	switch d.ConnectionFlags & ipvs.FwdMask {
	case ipvs.FwdMasq:
		st.Note += "; masquerading (NAT) forwarding: the destination is rewritten"
		s.dst, s.dport = a.Unmap(), d.Port
		s.dnatTo = netip.AddrPortFrom(s.dst, s.dport)
	case ipvs.FwdLocalNode:
		st.Note += "; local forwarding: delivered to the node"
		s.add(st)
		s.local, s.done = true, true
		return
	default:
		st.Warning = "real server with direct-routing or tunnel forwarding: the destination address is kept and the packet is sent to the real server unchanged"
		s.warn(st.Warning)
		s.dst, s.dport = a.Unmap(), d.Port
	}
	s.add(st)
	if !s.summary {
		s.why = "IPVS sends the packet on to the real server " + d.String()
	}
	if in {
		s.out = w.outIface(s.dst)
		s.stages = stagesIPVSXmit
	}
}
