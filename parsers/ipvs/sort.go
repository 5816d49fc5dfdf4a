package ipvs

import (
	"encoding/binary"
	"net"
)

// Sort puts the services of d, and the real servers of each, into the
// order ipvsadm prints them (without --nosort). Use it on a table read over
// netlink, which comes in the kernel's hash order; a parsed listing is
// already in this order.
//
// ipvsadm sorts with libipvs' ipvs_cmp_services (fire-wall mark, address
// family, protocol, address, port) and ipvs_cmp_dests (address, port)
// through glibc's qsort, a merge sort. The comparisons subtract 32-bit
// words and read the difference as a signed int, so addresses that differ
// by 2^31 or more compare "backwards" (198.18.0.1 sorts before 10.0.0.1)
// and the order is not transitive. Sort runs the same comparisons through
// the same merge, so it reproduces ipvsadm's order exactly, given the
// kernel's order as input.
func Sort(d *Dump) {
	msort(d.Services, cmpServices)
	for _, s := range d.Services {
		msort(s.Destinations, cmpDests)
	}
}

// msort is glibc's msort_with_tmp: a top-down merge sort that splits n
// into n/2 and n-n/2 and takes from the left run while cmp(left, right) <= 0.
func msort[T any](a []T, cmp func(x, y T) int32) {
	if len(a) < 2 {
		return
	}
	tmp := make([]T, len(a))
	msortRec(a, tmp, cmp)
}

func msortRec[T any](a, tmp []T, cmp func(x, y T) int32) {
	n := len(a)
	if n <= 1 {
		return
	}
	n1 := n / 2
	b1, b2 := a[:n1], a[n1:]
	msortRec(b1, tmp, cmp)
	msortRec(b2, tmp, cmp)
	t := tmp[:0]
	i, j := 0, 0
	for i < len(b1) && j < len(b2) {
		if cmp(b1[i], b2[j]) <= 0 {
			t = append(t, b1[i])
			i++
		} else {
			t = append(t, b2[j])
			j++
		}
	}
	t = append(t, b1[i:]...)
	// The rest of b2 is already in place.
	copy(a, t)
}

// words returns an address as the kernel's union nf_inet_addr holds it,
// as host-order 32-bit words (ntohl of each): an IPv4 address in the first
// word and zeros after it, an IPv6 address in all four.
func words(family uint16, ip net.IP) (w [4]uint32) {
	if family == FamilyIPv6 {
		if ip16 := ip.To16(); ip16 != nil {
			for i := range 4 {
				w[i] = binary.BigEndian.Uint32(ip16[4*i:])
			}
		}
		return w
	}
	if ip4 := ip.To4(); ip4 != nil {
		w[0] = binary.BigEndian.Uint32(ip4)
	}
	return w
}

// cmpServices is libipvs' ipvs_cmp_services, with C's int arithmetic.
func cmpServices(s1, s2 *Service) int32 {
	if r := int32(s1.FWMark - s2.FWMark); r != 0 {
		return r
	}
	if r := int32(s1.AddressFamily) - int32(s2.AddressFamily); r != 0 {
		return r
	}
	if r := int32(s1.Protocol) - int32(s2.Protocol); r != 0 {
		return r
	}
	if r := cmpAddr(s1.AddressFamily, s1.Address, s2.AddressFamily, s2.Address); r != 0 {
		return r
	}
	return int32(s1.Port) - int32(s2.Port)
}

// cmpDests is libipvs' ipvs_cmp_dests.
func cmpDests(d1, d2 *Destination) int32 {
	if r := cmpAddr(d1.AddressFamily, d1.Address, d2.AddressFamily, d2.Address); r != 0 {
		return r
	}
	return int32(d1.Port) - int32(d2.Port)
}

// cmpAddr compares like libipvs: the family of the first operand decides
// how many words are compared (one for IPv4, four for IPv6), and each word
// difference is read as a signed int.
func cmpAddr(fam1 uint16, a net.IP, fam2 uint16, b net.IP) int32 {
	wa, wb := words(fam1, a), words(fam2, b)
	n := 1
	if fam1 == FamilyIPv6 {
		n = 4
	}
	for i := range n {
		if r := int32(wa[i] - wb[i]); r != 0 {
			return r
		}
	}
	return 0
}

// NewVirtualServer returns the service of a virtual server by address
// (not a firewall mark), without real servers: one to look for in a table
// (see Dump.Before), as ipvsadm -A would add it.
func NewVirtualServer(family, proto uint16, ip net.IP, port uint16) *Service {
	return newServiceFromSpec(proto, family, ip, port)
}

// Before returns the first service of d, in the order listed, that the
// service s sorts before with ipvsadm's comparison (ipvs_cmp_services),
// or nil when s sorts after every one: where a listing of d would have
// printed s, had the kernel held it. s need not be in d. The comparison is
// not transitive (see Sort), so for addresses that compare "backwards"
// this is where the first such comparison would put it.
func (d *Dump) Before(s *Service) *Service {
	for _, o := range d.Services {
		if cmpServices(s, o) < 0 {
			return o
		}
	}
	return nil
}
