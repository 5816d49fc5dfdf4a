package checks

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
)

// missingAnchor returns the evidence of an entry of kind k for ip, proto
// and port that the data plane of v lacks: the anchor of the kind (the
// chain, map or table such entries live in), or, in IPVS mode with the
// ipvsadm listing at hand, the place in that listing where the virtual
// server would be listed, saying it is absent: the line of the virtual
// server it would be listed before (after the last one, the table's last
// line), as iptables evidence cites the chain the rule would be in. A node
// port, whose virtual servers are one per node address, is placed by the
// first address of the other node ports of v; with none known, the
// evidence names the listing and its lines. A virtual server the listing
// holds gets the anchor.
func missingAnchor(p *Pass, v *view.View, k view.Kind, ip netip.Addr, proto string, port int32) model.Evidence {
	a := anchor(v, k)
	if v.Mode != model.ModeIPVS || a.File == "" {
		return a
	}
	d := ipvsDumpOf(p.Snap, a.File)
	if d == nil {
		return a
	}
	pnum := ipvsProto(proto)
	if k == view.NodePort {
		ip = ipvsNodePortAddr(v)
	}
	if !ip.IsValid() || pnum == 0 {
		what := fmt.Sprintf("no virtual server of port %d/%s", port, ipvs.ProtocolName(pnum))
		if k != view.NodePort {
			what = fmt.Sprintf("no virtual server of %s port %d/%s", k, port, ipvs.ProtocolName(pnum))
		}
		return model.Evidence{File: a.File, Path: a.Path, Text: what + " " + listingSpan(d)}
	}
	fam := uint16(ipvs.FamilyIPv4)
	if ip.Is6() {
		fam = ipvs.FamilyIPv6
	}
	if d.Find(net.IP(ip.AsSlice()), uint16(port), pnum) != nil {
		return a // listed: what lacks is not the virtual server
	}
	vs := ipvs.NewVirtualServer(fam, pnum, net.IP(ip.AsSlice()), uint16(port))
	name := "no virtual server " + vs.String()
	if next := d.Before(vs); next != nil {
		return model.Evidence{File: next.Pos.File, Line: next.Pos.Line, Path: next.Pos.Path,
			Text: next.Raw + " (" + name + ": it would be listed before this one)"}
	}
	if len(d.Services) > 0 {
		last := d.Services[len(d.Services)-1]
		pos, raw := last.Pos, last.Raw
		if n := len(last.Destinations); n > 0 {
			pos, raw = last.Destinations[n-1].Pos, last.Destinations[n-1].Raw
		}
		return model.Evidence{File: pos.File, Line: pos.Line, Path: pos.Path,
			Text: raw + " (" + name + ": it would be listed after this line, the table's last)"}
	}
	if d.HeaderPos.IsValid() {
		return model.Evidence{File: d.HeaderPos.File, Line: d.HeaderPos.Line, Path: d.HeaderPos.Path,
			Text: a.Text + " (" + name + ": the table lists none)"}
	}
	return model.Evidence{File: a.File, Path: a.Path, Text: name + ": the table lists none"}
}

// ipvsDumpOf returns the IPVS listing of s read from file, or nil.
func ipvsDumpOf(s *model.Snapshot, file string) *ipvs.Dump {
	for _, d := range s.IPVS {
		if d.HeaderPos.File == file || len(d.Services) > 0 && d.Services[0].Pos.File == file {
			return d
		}
	}
	return nil
}

// ipvsProto returns the IP protocol number of a protocol's lower-case
// name, 0 for none IPVS serves.
func ipvsProto(proto string) uint16 {
	switch proto {
	case "tcp":
		return ipvs.ProtoTCP
	case "udp":
		return ipvs.ProtoUDP
	case "sctp":
		return ipvs.ProtoSCTP
	}
	return 0
}

// ipvsNodePortAddr returns the first node address of the first node port of
// v that has a virtual server, the invalid address when none has.
func ipvsNodePortAddr(v *view.View) netip.Addr {
	for _, e := range v.Entries {
		if e.Kind == view.NodePort && len(e.NodeIPs) > 0 {
			return e.NodeIPs[0]
		}
	}
	return netip.Addr{}
}

// listingSpan says where the virtual servers of d are: "among the 12
// virtual servers of lines 4-431", "in a table that lists none".
func listingSpan(d *ipvs.Dump) string {
	n := len(d.Services)
	if n == 0 {
		return "in a table that lists none"
	}
	first := d.Services[0].Pos.Line
	last := d.Services[n-1]
	end := last.Pos.Line
	if m := len(last.Destinations); m > 0 {
		end = last.Destinations[m-1].Pos.Line
	}
	return "among the " + strconv.Itoa(n) + " virtual servers of lines " + strconv.Itoa(first) + "-" + strconv.Itoa(end)
}
