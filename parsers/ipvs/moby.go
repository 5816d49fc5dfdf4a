package ipvs

import "net"

// Source is what FromIPVS reads a table from: a moby/ipvs *ipvs.Handle
// (ipvs.New("")) has these methods.
type Source interface {
	GetServices() ([]*VirtualServer, error)
	GetDestinations(*VirtualServer) ([]*RealServer, error)
}

// FromIPVS reads the whole table from src and returns it as a listing dump
// in ipvsadm's order (see [Sort]). Positions are empty: nothing was read
// from a file. Version and Size stay empty; set them from
// /proc/net/ip_vs if the listing header is wanted.
//
// moby/ipvs reads the kernel's 32-bit statistics attributes, so connection
// and packet counts and the rates wrap at 2^32 where ipvsadm (which reads
// the 64-bit ones) prints them in full; byte counts are 64-bit in both. It
// does not read the persistence engine name back either.
func FromIPVS(src Source) (*Dump, error) {
	svcs, err := src.GetServices()
	if err != nil {
		return nil, err
	}
	d := &Dump{Form: FormList, Columns: ColumnsPlain, Services: make([]*Service, 0, len(svcs))}
	for _, vs := range svcs {
		rs, err := src.GetDestinations(vs)
		if err != nil {
			return nil, err
		}
		d.Services = append(d.Services, NewService(vs, rs))
	}
	Sort(d)
	return d, nil
}

// NewService builds a Service from moby/ipvs values as GetServices and
// GetDestinations return them. Addresses are normalised (4 bytes for IPv4,
// 16 for IPv6) and the counters are filled from the statistics.
func NewService(vs *VirtualServer, dests []*RealServer) *Service {
	s := &Service{VirtualServer: *vs, Destinations: make([]*Destination, 0, len(dests))}
	s.Address = normIP(s.AddressFamily, s.Address)
	s.Counters = countersFrom(SvcStats(vs.Stats))
	for _, rs := range dests {
		s.Destinations = append(s.Destinations, NewDestination(rs))
	}
	return s
}

// NewDestination builds a Destination from a moby/ipvs value.
func NewDestination(rs *RealServer) *Destination {
	d := &Destination{RealServer: *rs}
	if d.AddressFamily == 0 {
		if d.Address.To4() != nil {
			d.AddressFamily = FamilyIPv4
		} else {
			d.AddressFamily = FamilyIPv6
		}
	}
	d.Address = normIP(d.AddressFamily, d.Address)
	d.Counters = countersFrom(SvcStats(rs.Stats))
	return d
}

func normIP(family uint16, ip net.IP) net.IP {
	if ip == nil {
		return nil
	}
	if family == FamilyIPv4 {
		if v4 := ip.To4(); v4 != nil {
			return append(net.IP(nil), v4...)
		}
	}
	return append(net.IP(nil), ip.To16()...)
}

func countersFrom(st SvcStats) *Stats {
	c := func(v uint64) Counter { return Counter{Value: v} }
	return &Stats{
		Conns: c(uint64(st.Connections)), InPkts: c(uint64(st.PacketsIn)), OutPkts: c(uint64(st.PacketsOut)),
		InBytes: c(st.BytesIn), OutBytes: c(st.BytesOut),
		CPS: c(uint64(st.CPS)), InPPS: c(uint64(st.PPSIn)), OutPPS: c(uint64(st.PPSOut)),
		InBPS: c(uint64(st.BPSIn)), OutBPS: c(uint64(st.BPSOut)),
	}
}
