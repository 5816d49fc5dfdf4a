package collect

import (
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strings"
)

// A VirtualServer is an IPVS virtual server with its real servers, as
// read over netlink.
type VirtualServer struct {
	// Protocol is the IP protocol number (6, 17, 132); 0 with FWMark.
	Protocol uint16
	Addr     netip.Addr
	Port     uint16
	FWMark   uint32
	Sched    string
	// Flags are IP_VS_SVC_F_* (persistent 0x1, one-packet 0x4, scheduler
	// flags 0x8, 0x10, 0x20).
	Flags   uint32
	Timeout uint32
	// Netmask is the persistence netmask (IPv4 mask bits as a number, or
	// the IPv6 prefix length).
	Netmask uint32
	PE      string
	Dests   []RealServer
}

// A RealServer is a destination of a virtual server.
type RealServer struct {
	Addr netip.Addr
	Port uint16
	// Fwd is the forwarding method: 0 Masq, 1 Local, 2 Tunnel, 3 Route.
	Fwd                     uint32
	Weight                  int
	UpperThreshold          uint32
	LowerThreshold          uint32
	ActiveConns, InactConns int
}

const (
	svcPersistent = 0x0001
	svcOnePacket  = 0x0004
	svcSched1     = 0x0008
	svcSched2     = 0x0010
	svcSched3     = 0x0020
)

// cmpAddr mirrors libipvs's sort comparator (ipvs_cmp_services and
// ipvs_cmp_dests): the difference of the addresses in host order as a
// signed 32-bit number, word by word, then of the ports.
func cmpAddr(a, b netip.Addr) int {
	as, bs := a.As16(), b.As16()
	start := 0
	if a.Is4() && b.Is4() {
		start = 12
	}
	for i := start; i < 16; i += 4 {
		x := uint32(as[i])<<24 | uint32(as[i+1])<<16 | uint32(as[i+2])<<8 | uint32(as[i+3])
		y := uint32(bs[i])<<24 | uint32(bs[i+1])<<16 | uint32(bs[i+2])<<8 | uint32(bs[i+3])
		if d := int32(x - y); d != 0 {
			return int(d)
		}
	}
	return 0
}

// SortIPVS orders virtual and real servers as ipvsadm lists them.
func SortIPVS(vs []VirtualServer) {
	sort.SliceStable(vs, func(i, j int) bool {
		a, b := vs[i], vs[j]
		if a.FWMark != b.FWMark {
			return a.FWMark < b.FWMark
		}
		if a.Addr.Is4() != b.Addr.Is4() {
			return a.Addr.Is4()
		}
		if a.Protocol != b.Protocol {
			return a.Protocol < b.Protocol
		}
		if c := cmpAddr(a.Addr, b.Addr); c != 0 {
			return c < 0
		}
		return a.Port < b.Port
	})
	for k := range vs {
		d := vs[k].Dests
		sort.SliceStable(d, func(i, j int) bool {
			if c := cmpAddr(d[i].Addr, d[j].Addr); c != 0 {
				return c < 0
			}
			return d[i].Port < d[j].Port
		})
	}
}

func protoName(p uint16) string {
	switch p {
	case 6:
		return "TCP"
	case 17:
		return "UDP"
	case 132:
		return "SCTP"
	}
	return fmt.Sprintf("%d", p)
}

func hostPort(a netip.Addr, port uint16) string {
	if a.Is6() && !a.Is4In6() {
		return fmt.Sprintf("[%s]:%d", a, port)
	}
	return fmt.Sprintf("%s:%d", a.Unmap(), port)
}

func fwdName(f uint32) (list, save string) {
	switch f & 0x7 {
	case 1:
		return "Local", "-g"
	case 2:
		return "Tunnel", "-i"
	case 3:
		return "Route", "-g"
	}
	return "Masq", "-m"
}

// schedFlags names a scheduler's flags as ipvsadm prints them.
func schedFlags(sched string, flags uint32) []string {
	var out []string
	names := map[string][3]string{
		"sh": {"sh-fallback", "sh-port", "flag-3"},
		"mh": {"mh-fallback", "mh-port", "flag-3"},
	}[sched]
	for i, bit := range []uint32{svcSched1, svcSched2, svcSched3} {
		if flags&bit != 0 {
			if names[i] != "" {
				out = append(out, names[i])
			} else {
				out = append(out, fmt.Sprintf("flag-%d", i+1))
			}
		}
	}
	return out
}

func maskString(v VirtualServer) (string, bool) {
	if v.Addr.Is4() {
		if v.Netmask == 0 || v.Netmask == 0xffffffff {
			return "", false
		}
		m := v.Netmask
		return netip.AddrFrom4([4]byte{byte(m >> 24), byte(m >> 16), byte(m >> 8), byte(m)}).String(), true
	}
	if v.Netmask == 0 || v.Netmask == 128 {
		return "", false
	}
	return fmt.Sprintf("%d", v.Netmask), true
}

// FormatIPVSList writes virtual servers in `ipvsadm -Ln --exact` form;
// header is the first line of /proc/net/ip_vs ("IP Virtual Server version
// 1.2.1 (size=4096)").
func FormatIPVSList(w io.Writer, header string, vs []VirtualServer) error {
	var b strings.Builder
	b.WriteString(header + "\n")
	b.WriteString("Prot LocalAddress:Port Scheduler Flags\n")
	b.WriteString("  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n")
	for _, v := range vs {
		if v.FWMark != 0 {
			fmt.Fprintf(&b, "FWM  %d %s", v.FWMark, v.Sched)
		} else {
			fmt.Fprintf(&b, "%s  %s %s", protoName(v.Protocol), hostPort(v.Addr, v.Port), v.Sched)
		}
		if f := schedFlags(v.Sched, v.Flags); len(f) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(f, ","))
		}
		if v.Flags&svcPersistent != 0 {
			fmt.Fprintf(&b, " persistent %d", v.Timeout)
			if m, ok := maskString(v); ok {
				fmt.Fprintf(&b, " mask %s", m)
			}
		}
		if v.PE != "" {
			fmt.Fprintf(&b, " pe %s", v.PE)
		}
		if v.Flags&svcOnePacket != 0 {
			b.WriteString(" ops")
		}
		b.WriteString("\n")
		for _, d := range v.Dests {
			fwd, _ := fwdName(d.Fwd)
			fmt.Fprintf(&b, "  -> %-28s %-7s %-6d %-10d %-10d\n", hostPort(d.Addr, d.Port), fwd, d.Weight, d.ActiveConns, d.InactConns)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// FormatIPVSSave writes virtual servers in `ipvsadm -Sn` form.
func FormatIPVSSave(w io.Writer, vs []VirtualServer) error {
	var b strings.Builder
	for _, v := range vs {
		var svc string
		switch {
		case v.FWMark != 0:
			svc = fmt.Sprintf("-f %d", v.FWMark)
		case v.Protocol == 17:
			svc = "-u " + hostPort(v.Addr, v.Port)
		case v.Protocol == 132:
			svc = "--sctp-service " + hostPort(v.Addr, v.Port)
		default:
			svc = "-t " + hostPort(v.Addr, v.Port)
		}
		fmt.Fprintf(&b, "-A %s -s %s", svc, v.Sched)
		if f := schedFlags(v.Sched, v.Flags); len(f) > 0 {
			fmt.Fprintf(&b, " -b %s", strings.Join(f, ","))
		}
		if v.Flags&svcPersistent != 0 {
			fmt.Fprintf(&b, " -p %d", v.Timeout)
			if m, ok := maskString(v); ok {
				fmt.Fprintf(&b, " -M %s", m)
			}
		}
		if v.PE != "" {
			fmt.Fprintf(&b, " --pe %s", v.PE)
		}
		if v.Flags&svcOnePacket != 0 {
			b.WriteString(" -o")
		}
		b.WriteString("\n")
		for _, d := range v.Dests {
			_, fwd := fwdName(d.Fwd)
			fmt.Fprintf(&b, "-a %s -r %s %s -w %d", svc, hostPort(d.Addr, d.Port), fwd, d.Weight)
			if d.UpperThreshold != 0 {
				fmt.Fprintf(&b, " -x %d", d.UpperThreshold)
			}
			if d.LowerThreshold != 0 {
				fmt.Fprintf(&b, " -y %d", d.LowerThreshold)
			}
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
