package ipvs

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// ListOptions selects the variant of `ipvsadm -Ln` that FormatList prints.
type ListOptions struct {
	// Columns is the column layout; empty means the dump's own layout (or
	// plain when it has none).
	Columns Columns
	// Exact prints numbers in full, as --exact does.
	Exact bool
}

// ListOptions returns the options that print d the way it was read.
func (d *Dump) ListOptions() ListOptions {
	return ListOptions{Columns: d.Columns, Exact: d.Exact}
}

// FormatList prints d as `ipvsadm -Ln` (with the options' column layout)
// does: the timeout line first when d has timeouts (alone for a timeout
// dump), the version header when d has a version, the two title lines and
// the services and real servers in the order of d. Abbreviated counters
// print as their Value, which gives back their text.
func FormatList(d *Dump, opts ListOptions) []byte {
	var b bytes.Buffer
	if d.Timeouts != nil {
		fmt.Fprintf(&b, "Timeout (tcp tcpfin udp): %d %d %d\n", d.Timeouts.TCP, d.Timeouts.TCPFin, d.Timeouts.UDP)
	}
	if d.Form == FormTimeout {
		return b.Bytes()
	}
	cols := opts.Columns
	if cols == "" {
		cols = d.Columns
	}
	if cols == "" {
		cols = ColumnsPlain
	}
	if d.Version != "" {
		fmt.Fprintf(&b, "IP Virtual Server version %s (size=%d)\n", d.Version, d.Size)
	}
	switch cols {
	case ColumnsStats:
		b.WriteString(titleStats1 + "\n" + titleRemote2 + "\n")
	case ColumnsRate:
		b.WriteString(titleRate1 + "\n" + titleRemote2 + "\n")
	case ColumnsThresholds:
		b.WriteString(titleThresh1 + "\n" + titleRemote2 + "\n")
	case ColumnsPersistent:
		b.WriteString(titlePConn1 + "\n" + titleRemote2 + "\n")
	case ColumnsTunnel:
		b.WriteString(titlePlain1 + "\n" + titleTunnel2 + "\n")
	default:
		b.WriteString(titlePlain1 + "\n" + titlePlain2 + "\n")
	}
	for _, s := range d.Services {
		writeListService(&b, s, cols, opts.Exact)
	}
	return b.Bytes()
}

func listName(s *Service) string {
	if s.FWMark != 0 {
		if s.AddressFamily == FamilyIPv6 {
			return "FWM  " + strconv.FormatUint(uint64(s.FWMark), 10) + " IPv6"
		}
		return "FWM  " + strconv.FormatUint(uint64(s.FWMark), 10)
	}
	name := fmt.Sprintf("%-4s %s", ProtocolName(s.Protocol), addrPort(s.AddressFamily, s.Address, s.Port))
	if s.AddressFamily != FamilyIPv6 && len(name) > 33 {
		name = name[:33]
	}
	return name
}

func writeListService(b *bytes.Buffer, s *Service, cols Columns, exact bool) {
	name := listName(s)
	switch cols {
	case ColumnsStats, ColumnsRate:
		fmt.Fprintf(b, "%-33s", name)
		st := s.Counters
		if st == nil {
			st = &Stats{}
		}
		for _, c := range statColumns(st, cols) {
			largenum(b, c.Value, exact)
		}
	default:
		fmt.Fprintf(b, "%s %s", name, s.SchedName)
		if s.Flags&FlagSchedMask != 0 {
			b.WriteString(" (" + schedFlagNames(s.SchedName, s.Flags) + ")")
		}
		if s.Flags&FlagPersistent != 0 {
			fmt.Fprintf(b, " persistent %d", s.Timeout)
			writeMask(b, s, " mask ")
			if s.PEName != "" {
				b.WriteString(" pe " + s.PEName)
			}
		}
		if s.Flags&FlagOnePacket != 0 {
			b.WriteString(" ops")
		}
	}
	b.WriteByte('\n')
	for _, d := range s.Destinations {
		dname := addrPort(d.AddressFamily, d.Address, d.Port)
		if d.AddressFamily != FamilyIPv6 && len(dname) > 28 {
			dname = dname[:28]
		}
		switch cols {
		case ColumnsStats:
			st := d.Counters
			if st == nil {
				st = &Stats{}
			}
			fmt.Fprintf(b, "  -> %-28s", dname)
			for _, c := range statColumns(st, cols) {
				largenum(b, c.Value, exact)
			}
			b.WriteByte('\n')
		case ColumnsRate:
			st := d.Counters
			if st == nil {
				st = &Stats{}
			}
			fmt.Fprintf(b, "  -> %-28s %8d %8d %8d", dname, st.CPS.Value, st.InPPS.Value, st.OutPPS.Value)
			largenum(b, st.InBPS.Value, exact)
			largenum(b, st.OutBPS.Value, exact)
			b.WriteByte('\n')
		case ColumnsThresholds:
			fmt.Fprintf(b, "  -> %-28s %-10d %-10d %-10d %-10d\n", dname, d.UpperThreshold, d.LowerThreshold, uint32(d.ActiveConnections), uint32(d.InactiveConnections))
		case ColumnsPersistent:
			fmt.Fprintf(b, "  -> %-28s %-9d %-11d %-10d %-10d\n", dname, uint32(d.Weight), uint32(d.PersistentConnections), uint32(d.ActiveConnections), uint32(d.InactiveConnections))
		case ColumnsTunnel:
			fmt.Fprintf(b, "  -> %-28s %-7s %-13s %-6d %-10d %-10d\n", dname, fwdName(d.ConnectionFlags), tunInfo(d), d.Weight, uint32(d.ActiveConnections), uint32(d.InactiveConnections))
		default:
			fmt.Fprintf(b, "  -> %-28s %-7s %-6d %-10d %-10d\n", dname, fwdName(d.ConnectionFlags), d.Weight, uint32(d.ActiveConnections), uint32(d.InactiveConnections))
		}
	}
}

func statColumns(st *Stats, cols Columns) [5]Counter {
	if cols == ColumnsRate {
		return [5]Counter{st.CPS, st.InPPS, st.OutPPS, st.InBPS, st.OutBPS}
	}
	return [5]Counter{st.Conns, st.InPkts, st.OutPkts, st.InBytes, st.OutBytes}
}

// largenum prints a number as ipvsadm's print_largenum does.
func largenum(b *bytes.Buffer, v uint64, exact bool) {
	if exact {
		s := strconv.FormatUint(v, 10)
		w := 9
		if len(s) > 8 {
			w = len(s) + 1
		}
		fmt.Fprintf(b, "%*s", w, s)
		return
	}
	if v < 1e8 {
		fmt.Fprintf(b, "%9d", v)
		return
	}
	for _, u := range units {
		if v < u.max || u.suffix == 'T' {
			fmt.Fprintf(b, "%8d%c", v/u.div, u.suffix)
			return
		}
	}
}

// FormatCounter returns the text ipvsadm prints for a number (without the
// column padding).
func FormatCounter(v uint64, exact bool) string {
	var b bytes.Buffer
	largenum(&b, v, exact)
	return strings.TrimLeft(b.String(), " ")
}

func writeMask(b *bytes.Buffer, s *Service, prefix string) {
	if s.AddressFamily == FamilyIPv4 && s.Netmask != 0xffffffff {
		b.WriteString(prefix + netmaskString(s.Netmask))
	}
	if s.AddressFamily == FamilyIPv6 && s.Netmask != 128 {
		b.WriteString(prefix + strconv.FormatInt(int64(int32(s.Netmask)), 10))
	}
}

// schedFlagNames lists the scheduler flags as ipvsadm names them.
func schedFlagNames(sched string, flags uint32) string {
	var names []string
	switch sched {
	case "sh", "mh":
		if flags&FlagSched1 != 0 {
			names = append(names, sched+"-fallback")
		}
		if flags&FlagSched2 != 0 {
			names = append(names, sched+"-port")
		}
	default:
		for i, bit := range []uint32{FlagSched1, FlagSched2, FlagSched3} {
			if flags&bit != 0 {
				names = append(names, "flag-"+strconv.Itoa(i+1))
			}
		}
	}
	return strings.Join(names, ",")
}

var tunFlagOpts = map[string]string{"-c": "--tun-nocsum", "+c": "--tun-csum", "r+c": "--tun-remcsum"}

func tunInfo(d *Destination) string {
	if d.ConnectionFlags&FwdMask != FwdTunnel {
		return "n/a"
	}
	t := d.Tunnel
	if t == nil {
		return "ipip"
	}
	switch t.Type {
	case "gue":
		return fmt.Sprintf("gue:%d:%s", t.Port, t.Checksum)
	case "gre":
		return "gre:" + t.Checksum
	case "ipip":
		return "ipip"
	}
	return "n/a"
}

func fwdSwitch(flags uint32) string {
	switch flags & FwdMask {
	case FwdMasq:
		return "-m"
	case FwdTunnel:
		return "-i"
	case FwdLocalNode, FwdDirectRoute:
		return "-g"
	}
	return "(null)"
}

func saveName(s *Service) string {
	if s.FWMark != 0 {
		if s.AddressFamily == FamilyIPv6 {
			return "-f " + strconv.FormatUint(uint64(s.FWMark), 10) + " -6"
		}
		return "-f " + strconv.FormatUint(uint64(s.FWMark), 10)
	}
	opt := "--xxx-service"
	switch s.Protocol {
	case ProtoTCP:
		opt = "-t"
	case ProtoUDP:
		opt = "-u"
	case ProtoSCTP:
		opt = "--sctp-service"
	}
	return opt + " " + addrPort(s.AddressFamily, s.Address, s.Port)
}

// FormatSave prints d as `ipvsadm -Sn` does, in the order of d. Like
// ipvsadm it writes no thresholds (-x, -y), no statistics and no
// connection counts, and -g for both Route and Local destinations.
func FormatSave(d *Dump) []byte {
	var b bytes.Buffer
	for _, s := range d.Services {
		name := saveName(s)
		fmt.Fprintf(&b, "-A %s -s %s", name, s.SchedName)
		if s.Flags&FlagPersistent != 0 {
			fmt.Fprintf(&b, " -p %d", s.Timeout)
			writeMask(&b, s, " -M ")
		}
		if s.PEName != "" {
			b.WriteString(" --pe " + s.PEName)
		}
		if s.Flags&FlagOnePacket != 0 {
			b.WriteString(" -o")
		}
		if s.Flags&FlagSchedMask != 0 {
			b.WriteString(" -b " + schedFlagNames(s.SchedName, s.Flags))
		}
		b.WriteByte('\n')
		for _, dst := range s.Destinations {
			dname := addrPort(dst.AddressFamily, dst.Address, dst.Port)
			fmt.Fprintf(&b, "-a %s -r %s %s -w %d", name, dname, fwdSwitch(dst.ConnectionFlags), dst.Weight)
			if dst.ConnectionFlags&FwdMask == FwdTunnel {
				t := dst.Tunnel
				if t == nil {
					t = &Tunnel{Type: "ipip"}
				}
				switch t.Type {
				case "gre":
					fmt.Fprintf(&b, " --tun-type gre %s", tunFlagOpts[t.Checksum])
				case "gue":
					fmt.Fprintf(&b, " --tun-type gue --tun-port %d %s", t.Port, tunFlagOpts[t.Checksum])
				case "ipip":
					b.WriteString(" --tun-type ipip")
				}
			}
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}
