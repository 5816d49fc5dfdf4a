package ipvs

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
)

// MaxLineLength is the longest input line the parser accepts.
const MaxLineLength = 64 << 10

// maxErrors is how many errors Parse collects before it gives up.
const maxErrors = 10

// Header and title lines of `ipvsadm -Ln` (ipvsadm.c print_title).
var (
	titlePlain1  = "Prot LocalAddress:Port Scheduler Flags"
	titlePlain2  = "  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn"
	titleTunnel2 = "  -> RemoteAddress:Port           Forward TunnelInfo    Weight ActiveConn InActConn"
	titleStats1  = fmt.Sprintf("%-33s %8s %8s %8s %8s %8s", "Prot LocalAddress:Port", "Conns", "InPkts", "OutPkts", "InBytes", "OutBytes")
	titleRate1   = fmt.Sprintf("%-33s %8s %8s %8s %8s %8s", "Prot LocalAddress:Port", "CPS", "InPPS", "OutPPS", "InBPS", "OutBPS")
	titleThresh1 = fmt.Sprintf("%-33s %-10s %-10s %-10s %-10s", "Prot LocalAddress:Port", "Uthreshold", "Lthreshold", "ActiveConn", "InActConn")
	titlePConn1  = fmt.Sprintf("%-33s %-9s %-11s %-10s %-10s", "Prot LocalAddress:Port", "Weight", "PersistConn", "ActiveConn", "InActConn")
	titleRemote2 = "  -> RemoteAddress:Port"
)

const (
	versionPrefix = "IP Virtual Server version "
	timeoutPrefix = "Timeout (tcp tcpfin udp):"
)

// line is one input line with its position.
type line = parsers.Line

func splitLines(name string, data []byte) ([]line, error) {
	return parsers.Lines(name, data, MaxLineLength)
}

// skippable reports blank lines and # comment lines, which the parser
// ignores (still counting them for line numbers).
func skippable(s string) bool {
	t := strings.TrimSpace(s)
	return t == "" || strings.HasPrefix(t, "#")
}

// Parse reads any ipvsadm output this package knows: a listing
// (`ipvsadm -Ln`, any column variant, with or without the version header),
// the timeout line (`ipvsadm -Ln --timeout`) or the save form
// (`ipvsadm -Sn`). name is used in error positions. Blank lines and lines
// starting with # are skipped.
func Parse(name string, data []byte) (*Dump, error) {
	lines, err := splitLines(name, data)
	if err != nil {
		return nil, err
	}
	for _, l := range lines {
		if skippable(l.Text) {
			continue
		}
		t := strings.TrimLeft(l.Text, " \t")
		switch {
		case strings.HasPrefix(t, "-A ") || strings.HasPrefix(t, "-a ") ||
			strings.HasPrefix(t, "--add-service ") || strings.HasPrefix(t, "--add-server "):
			return parseSave(lines)
		case strings.HasPrefix(l.Text, versionPrefix), strings.HasPrefix(l.Text, "Prot LocalAddress:Port"),
			strings.HasPrefix(l.Text, timeoutPrefix):
			return parseList(lines)
		case strings.HasPrefix(l.Text, "IPVS connection entries"):
			return nil, parsers.Errorf(l.Pos, "connection listing (ipvsadm -Lc) is not supported")
		}
		return nil, parsers.Errorf(l.Pos, "not ipvsadm output: %s", quoteShort(l.Text))
	}
	return nil, parsers.Errorf(parsers.Pos{File: name}, "empty input: no ipvsadm header, service or timeout line")
}

// ParseList reads `ipvsadm -Ln` output (or the --timeout line) only.
func ParseList(name string, data []byte) (*Dump, error) {
	lines, err := splitLines(name, data)
	if err != nil {
		return nil, err
	}
	return parseList(lines)
}

// ParseSave reads `ipvsadm -Sn` output only.
func ParseSave(name string, data []byte) (*Dump, error) {
	lines, err := splitLines(name, data)
	if err != nil {
		return nil, err
	}
	return parseSave(lines)
}

func quoteShort(s string) string {
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return strconv.Quote(s)
}

// listParser holds the state of a listing parse.
type listParser struct {
	d        *Dump
	errs     parsers.ErrorList
	svc      *Service
	keys     map[svcKey]bool
	dkeys    map[destKey]bool
	sawAbbr  *parsers.Pos // first abbreviated number
	sawExact *parsers.Pos // first number of 1e8 or more printed in full
	sawSvc   bool         // a service line was seen (even a bad one)
}

func (p *listParser) errorf(pos parsers.Pos, format string, args ...any) {
	if len(p.errs) < maxErrors {
		p.errs.Add(pos, format, args...)
	}
}

func parseList(lines []line) (*Dump, error) {
	p := &listParser{d: &Dump{Form: FormList, Services: []*Service{}}, keys: map[svcKey]bool{}}
	i := 0
	next := func() (line, bool) {
		for i < len(lines) {
			l := lines[i]
			i++
			if !skippable(l.Text) {
				return l, true
			}
		}
		return line{}, false
	}
	l, ok := next()
	if !ok {
		return nil, parsers.Errorf(lines[0].Pos, "empty input")
	}
	if strings.HasPrefix(l.Text, timeoutPrefix) {
		t, msg := parseTimeouts(l.Text)
		if msg != "" {
			return nil, parsers.Errorf(l.Pos, "%s", msg)
		}
		t.Pos, t.Raw = l.Pos, l.Text
		p.d.Timeouts = t
		if l, ok = next(); !ok {
			p.d.Form = FormTimeout
			return p.d, nil
		}
	}
	if strings.HasPrefix(l.Text, versionPrefix) {
		v, size, msg := parseVersion(l.Text)
		if msg != "" {
			return nil, parsers.Errorf(l.Pos, "%s", msg)
		}
		p.d.Version, p.d.Size, p.d.HeaderPos = v, size, l.Pos
		if l, ok = next(); !ok {
			return nil, parsers.Errorf(lines[len(lines)-1].Pos, "truncated listing: no column title after the version header")
		}
	}
	t1 := strings.TrimRight(l.Text, " ")
	l2, ok := next()
	if !ok {
		return nil, parsers.Errorf(l.Pos, "truncated listing: column title has one line of two")
	}
	t2 := strings.TrimRight(l2.Text, " ")
	// ipvsadm pads the last column of some titles (--thresholds,
	// --persistent-conn): the lines are compared without trailing blanks,
	// which a paste often loses.
	titleThresh1, titlePConn1 := strings.TrimRight(titleThresh1, " "), strings.TrimRight(titlePConn1, " ")
	switch {
	case t1 == titlePlain1 && t2 == titlePlain2:
		p.d.Columns = ColumnsPlain
	case t1 == titlePlain1 && t2 == titleTunnel2:
		p.d.Columns = ColumnsTunnel
	case t1 == titleStats1 && t2 == titleRemote2:
		p.d.Columns = ColumnsStats
	case t1 == titleRate1 && t2 == titleRemote2:
		p.d.Columns = ColumnsRate
	case t1 == titleThresh1 && t2 == titleRemote2:
		p.d.Columns = ColumnsThresholds
	case t1 == titlePConn1 && t2 == titleRemote2:
		p.d.Columns = ColumnsPersistent
	default:
		if strings.HasPrefix(t1, "Prot LocalAddress:Port") {
			return nil, parsers.Errorf(l.Pos, "unknown column title %s / %s", quoteShort(l.Text), quoteShort(l2.Text))
		}
		return nil, parsers.Errorf(l.Pos, "expected the ipvsadm column title, found %s", quoteShort(l.Text))
	}
	for {
		l, ok := next()
		if !ok {
			break
		}
		if len(p.errs) >= maxErrors {
			break
		}
		t := strings.TrimLeft(l.Text, " ")
		if strings.HasPrefix(t, "->") {
			p.destLine(l)
		} else {
			p.serviceLine(l)
		}
	}
	if p.sawAbbr != nil && p.sawExact != nil {
		at := *p.sawExact
		if at.Line < p.sawAbbr.Line {
			at = *p.sawAbbr
		}
		p.errorf(at, "listing mixes abbreviated numbers (line %d) and numbers of 100 million or more in full (line %d): not one ipvsadm run", p.sawAbbr.Line, p.sawExact.Line)
	}
	if err := p.errs.Err(); err != nil {
		return nil, err
	}
	p.d.Exact = p.sawExact != nil
	return p.d, nil
}

func parseVersion(s string) (string, int, string) {
	rest := strings.TrimPrefix(s, versionPrefix)
	v, size, ok := strings.Cut(rest, " ")
	if !ok || !strings.HasPrefix(size, "(size=") || !strings.HasSuffix(strings.TrimRight(size, " "), ")") {
		return "", 0, "bad version header " + quoteShort(s)
	}
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return "", 0, "bad IPVS version " + strconv.Quote(v)
	}
	for _, x := range parts {
		if _, err := strconv.ParseUint(x, 10, 8); err != nil {
			return "", 0, "bad IPVS version " + strconv.Quote(v)
		}
	}
	sz := strings.TrimSuffix(strings.TrimPrefix(strings.TrimRight(size, " "), "(size="), ")")
	n, err := strconv.ParseInt(sz, 10, 32)
	if err != nil || n < 0 {
		return "", 0, "bad table size " + strconv.Quote(sz)
	}
	return v, int(n), ""
}

func parseTimeouts(s string) (*Timeouts, string) {
	f := strings.Fields(strings.TrimPrefix(s, timeoutPrefix))
	if len(f) != 3 {
		return nil, "timeout line needs 3 values (tcp tcpfin udp), found " + strconv.Itoa(len(f))
	}
	var v [3]int
	for i, x := range f {
		n, err := strconv.ParseInt(x, 10, 32)
		if err != nil || n < 0 {
			return nil, "bad timeout " + strconv.Quote(x)
		}
		v[i] = int(n)
	}
	return &Timeouts{TCP: v[0], TCPFin: v[1], UDP: v[2]}, ""
}

// svcKey identifies a virtual service; destKey a real server within one.
type svcKey struct {
	mark       uint32
	fam, proto uint16
	addr       [16]byte
	port       uint16
}

type destKey struct {
	addr [16]byte
	port uint16
}

func serviceKey(s *Service) svcKey {
	k := svcKey{mark: s.FWMark, fam: s.AddressFamily, proto: s.Protocol, port: s.Port}
	copy(k.addr[:], s.Address)
	return k
}

func destinationKey(d *Destination) destKey {
	k := destKey{port: d.Port}
	copy(k.addr[:], d.Address)
	return k
}

// newService returns a service for a protocol name and address text.
func newServiceFromSpec(proto uint16, family uint16, ip net.IP, port uint16) *Service {
	s := &Service{Destinations: []*Destination{}}
	s.Protocol, s.AddressFamily, s.Address, s.Port = proto, family, ip, port
	s.Flags = FlagHashed
	s.Netmask = defaultNetmask(family)
	return s
}

func newFWMService(mark uint32, family uint16) *Service {
	s := &Service{Destinations: []*Destination{}}
	s.FWMark, s.AddressFamily = mark, family
	s.Flags = FlagHashed
	s.Netmask = defaultNetmask(family)
	return s
}

func defaultNetmask(family uint16) uint32 {
	if family == FamilyIPv6 {
		return 128
	}
	return 0xffffffff
}

func protoFromName(s string) (uint16, bool) {
	switch s {
	case "TCP":
		return ProtoTCP, true
	case "UDP":
		return ProtoUDP, true
	case "SCTP":
		return ProtoSCTP, true
	}
	return 0, false
}

func (p *listParser) serviceLine(l line) {
	p.svc = nil
	p.sawSvc = true
	f := strings.Fields(l.Text)
	if _, ok := protoFromName(f[0]); !ok && f[0] != "FWM" && f[0] != "?" {
		p.errorf(l.Pos, "expected a service line (TCP, UDP, SCTP or FWM), found %s", quoteShort(l.Text))
		return
	}
	if len(f) < 2 {
		p.errorf(l.Pos, "truncated service line %s", quoteShort(l.Text))
		return
	}
	var s *Service
	rest := f[2:]
	if f[0] == "FWM" {
		mark, err := strconv.ParseUint(f[1], 10, 32)
		if err != nil || mark == 0 {
			p.errorf(l.Pos, "bad firewall mark %s", strconv.Quote(f[1]))
			return
		}
		fam := uint16(FamilyIPv4)
		if len(rest) > 0 && rest[0] == "IPv6" {
			fam, rest = FamilyIPv6, rest[1:]
		}
		s = newFWMService(uint32(mark), fam)
	} else {
		proto, ok := protoFromName(f[0])
		if !ok {
			if f[0] == "?" {
				p.errorf(l.Pos, "service of an unknown protocol (ipvsadm prints \"?\")")
			} else {
				p.errorf(l.Pos, "expected a service line (TCP, UDP, SCTP or FWM), found %s", quoteShort(l.Text))
			}
			return
		}
		fam, ip, port, _, msg := parseAddrPort(f[1], true)
		if msg != "" {
			p.errorf(l.Pos, "%s", msg)
			return
		}
		s = newServiceFromSpec(proto, fam, ip, port)
	}
	s.Pos, s.Raw, s.Listed = l.Pos, l.Text, p.d.Columns
	switch p.d.Columns {
	case ColumnsStats, ColumnsRate:
		st, ok := p.counters(l, rest, p.d.Columns, false)
		if !ok {
			return
		}
		s.Counters = st
		s.Stats = svcStats(st)
	default:
		if !p.serviceOptions(l, s, rest) {
			return
		}
	}
	k := serviceKey(s)
	if p.keys[k] {
		p.errorf(l.Pos, "duplicate virtual service %s", s)
		return
	}
	p.keys[k] = true
	p.d.Services = append(p.d.Services, s)
	p.svc = s
	p.dkeys = map[destKey]bool{}
}

// serviceOptions parses "rr [(flags)] [persistent N [mask M] [pe NAME]] [ops]".
func (p *listParser) serviceOptions(l line, s *Service, f []string) bool {
	if len(f) == 0 {
		p.errorf(l.Pos, "service line without a scheduler")
		return false
	}
	s.SchedName = f[0]
	f = f[1:]
	if len(f) > 0 && strings.HasPrefix(f[0], "(") {
		if !strings.HasSuffix(f[0], ")") {
			p.errorf(l.Pos, "unterminated scheduler flags %s", strconv.Quote(f[0]))
			return false
		}
		flags, msg := parseSchedFlags(s.SchedName, f[0][1:len(f[0])-1], true)
		if msg != "" {
			p.errorf(l.Pos, "%s", msg)
			return false
		}
		s.Flags |= flags
		f = f[1:]
	}
	if len(f) > 0 && f[0] == "persistent" {
		if len(f) < 2 {
			p.errorf(l.Pos, "persistent without a timeout")
			return false
		}
		t, err := strconv.ParseUint(f[1], 10, 32)
		if err != nil {
			p.errorf(l.Pos, "bad persistence timeout %s", strconv.Quote(f[1]))
			return false
		}
		s.Flags |= FlagPersistent
		s.Timeout = uint32(t)
		f = f[2:]
		if len(f) > 0 && f[0] == "mask" {
			if len(f) < 2 {
				p.errorf(l.Pos, "mask without a value")
				return false
			}
			m, msg := parseMask(s.AddressFamily, f[1])
			if msg != "" {
				p.errorf(l.Pos, "%s", msg)
				return false
			}
			s.Netmask = m
			f = f[2:]
		}
		if len(f) > 0 && f[0] == "pe" {
			if len(f) < 2 {
				p.errorf(l.Pos, "pe without a persistence engine name")
				return false
			}
			s.PEName = f[1]
			f = f[2:]
		}
	}
	if len(f) > 0 && f[0] == "ops" {
		s.Flags |= FlagOnePacket
		f = f[1:]
	}
	if len(f) > 0 {
		p.errorf(l.Pos, "unexpected %s on service line", strconv.Quote(f[0]))
		return false
	}
	return true
}

func parseMask(family uint16, s string) (uint32, string) {
	if family == FamilyIPv6 {
		n, err := strconv.ParseUint(s, 10, 8)
		if err != nil || n < 1 || n > 128 {
			return 0, "bad IPv6 persistence mask " + strconv.Quote(s) + " (want 1-128)"
		}
		return uint32(n), ""
	}
	m, ok := parseNetmask(s)
	if !ok {
		return 0, "bad persistence netmask " + strconv.Quote(s)
	}
	return m, ""
}

// parseSchedFlags parses ipvsadm's scheduler flag names (comma-separated).
// In a listing (listing=true) "sh" and "mh" name only their own flags, and
// an empty list is the third flag, which ipvsadm prints as "()" for them.
func parseSchedFlags(sched, list string, listing bool) (uint32, string) {
	if list == "" {
		if listing && (sched == "sh" || sched == "mh") {
			return FlagSched3, ""
		}
		return 0, "empty scheduler flags"
	}
	var flags uint32
	for _, name := range strings.Split(list, ",") {
		var bit uint32
		own := ""
		switch name {
		case "flag-1":
			bit = FlagSched1
		case "flag-2":
			bit = FlagSched2
		case "flag-3":
			bit = FlagSched3
		case "sh-fallback":
			bit, own = FlagSched1, "sh"
		case "sh-port":
			bit, own = FlagSched2, "sh"
		case "mh-fallback":
			bit, own = FlagSched1, "mh"
		case "mh-port":
			bit, own = FlagSched2, "mh"
		default:
			return 0, "invalid scheduler flag " + strconv.Quote(name)
		}
		if own != "" && own != sched {
			return 0, "scheduler flag " + strconv.Quote(name) + " with scheduler " + strconv.Quote(sched)
		}
		if own == "" && (sched == "sh" || sched == "mh") && (listing || bit == FlagSched3) {
			return 0, "scheduler flag " + strconv.Quote(name) + " with scheduler " + strconv.Quote(sched)
		}
		if flags&bit != 0 {
			return 0, "repeated scheduler flag " + strconv.Quote(name)
		}
		flags |= bit
	}
	if listing {
		// A listing names the flags in ipvsadm's order; accept only that
		// text.
		if list != schedFlagNames(sched, flags) {
			return 0, "scheduler flags " + strconv.Quote(list) + " not in ipvsadm order"
		}
	}
	return flags, ""
}

func (p *listParser) destLine(l line) {
	if p.svc == nil {
		if !p.sawSvc {
			p.errorf(l.Pos, "real server line before any virtual service")
		}
		// After a bad service line its servers are skipped silently: the
		// service line already has an error.
		return
	}
	t := strings.TrimLeft(l.Text, " ")
	f := strings.Fields(strings.TrimPrefix(t, "->"))
	if len(f) == 0 {
		p.errorf(l.Pos, "truncated real server line")
		return
	}
	fam, ip, port, _, msg := parseAddrPort(f[0], true)
	if msg != "" {
		p.errorf(l.Pos, "%s", msg)
		return
	}
	d := &Destination{Pos: l.Pos, Raw: l.Text}
	d.AddressFamily, d.Address, d.Port = fam, ip, port
	f = f[1:]
	want := map[Columns]int{ColumnsPlain: 4, ColumnsTunnel: 5, ColumnsStats: 5, ColumnsRate: 5, ColumnsThresholds: 4, ColumnsPersistent: 4}[p.d.Columns]
	if len(f) != want {
		if len(f) < want {
			p.errorf(l.Pos, "truncated real server line: %d of %d columns after the address", len(f), want)
		} else {
			p.errorf(l.Pos, "real server line has %d columns after the address, want %d", len(f), want)
		}
		return
	}
	num := func(s, what string, max uint64) (uint64, bool) {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || n > max {
			p.errorf(l.Pos, "bad %s %s", what, strconv.Quote(s))
			return 0, false
		}
		return n, true
	}
	const u32 = 1<<32 - 1
	var ok bool
	var n [4]uint64
	switch p.d.Columns {
	case ColumnsPlain, ColumnsTunnel:
		fwd, okf := fwdFromName(f[0])
		if !okf {
			p.errorf(l.Pos, "unknown forwarding method %s", strconv.Quote(f[0]))
			return
		}
		d.ConnectionFlags = fwd
		f = f[1:]
		if p.d.Columns == ColumnsTunnel {
			if f[0] != "n/a" {
				tun, msg := parseTunInfo(f[0])
				if msg != "" {
					p.errorf(l.Pos, "%s", msg)
					return
				}
				if fwd != FwdTunnel {
					p.errorf(l.Pos, "tunnel info %s on a %s real server", strconv.Quote(f[0]), fwdName(fwd))
					return
				}
				d.Tunnel = tun
			} else if fwd == FwdTunnel {
				p.errorf(l.Pos, "tunnel real server without tunnel info")
				return
			}
			f = f[1:]
		}
		if n[0], ok = num(f[0], "weight", 65535); !ok {
			return
		}
		if n[1], ok = num(f[1], "active connection count", u32); !ok {
			return
		}
		if n[2], ok = num(f[2], "inactive connection count", u32); !ok {
			return
		}
		d.Weight, d.ActiveConnections, d.InactiveConnections = int(n[0]), int(n[1]), int(n[2])
	case ColumnsThresholds:
		for j, what := range []string{"upper threshold", "lower threshold", "active connection count", "inactive connection count"} {
			if n[j], ok = num(f[j], what, u32); !ok {
				return
			}
		}
		d.UpperThreshold, d.LowerThreshold = uint32(n[0]), uint32(n[1])
		d.ActiveConnections, d.InactiveConnections = int(n[2]), int(n[3])
	case ColumnsPersistent:
		for j, what := range []string{"weight", "persistent connection count", "active connection count", "inactive connection count"} {
			max := uint64(u32)
			if j == 0 {
				max = 65535
			}
			if n[j], ok = num(f[j], what, max); !ok {
				return
			}
		}
		d.Weight, d.PersistentConnections = int(n[0]), int(n[1])
		d.ActiveConnections, d.InactiveConnections = int(n[2]), int(n[3])
	case ColumnsStats, ColumnsRate:
		st, ok := p.counters(l, f, p.d.Columns, true)
		if !ok {
			return
		}
		d.Counters = st
		d.Stats = DstStats(svcStats(st))
	}
	k := destinationKey(d)
	if p.dkeys[k] {
		p.errorf(l.Pos, "duplicate real server %s in %s", d, p.svc)
		return
	}
	p.dkeys[k] = true
	p.svc.Destinations = append(p.svc.Destinations, d)
}

func fwdFromName(s string) (uint32, bool) {
	switch s {
	case "Masq":
		return FwdMasq, true
	case "Local":
		return FwdLocalNode, true
	case "Tunnel":
		return FwdTunnel, true
	case "Route":
		return FwdDirectRoute, true
	}
	return 0, false
}

func fwdName(f uint32) string {
	switch f & FwdMask {
	case FwdMasq:
		return "Masq"
	case FwdLocalNode:
		return "Local"
	case FwdTunnel:
		return "Tunnel"
	case FwdDirectRoute:
		return "Route"
	}
	return "(null)"
}

func parseTunInfo(s string) (*Tunnel, string) {
	parts := strings.Split(s, ":")
	bad := "bad tunnel info " + strconv.Quote(s)
	switch parts[0] {
	case "ipip":
		if len(parts) != 1 {
			return nil, bad
		}
		return &Tunnel{Type: "ipip"}, ""
	case "gue":
		if len(parts) != 3 || !validCsum(parts[2]) {
			return nil, bad
		}
		port, err := strconv.ParseUint(parts[1], 10, 16)
		if err != nil || port == 0 {
			return nil, bad
		}
		return &Tunnel{Type: "gue", Port: uint16(port), Checksum: parts[2]}, ""
	case "gre":
		if len(parts) != 2 || !validCsum(parts[1]) || parts[1] == "r+c" {
			return nil, bad
		}
		return &Tunnel{Type: "gre", Checksum: parts[1]}, ""
	}
	return nil, bad
}

func validCsum(s string) bool { return s == "-c" || s == "+c" || s == "r+c" }

// counters parses the five statistics columns. dest selects the real-server
// layout of --rate, whose first three columns ipvsadm never abbreviates.
func (p *listParser) counters(l line, f []string, cols Columns, dest bool) (*Stats, bool) {
	if len(f) != 5 {
		if len(f) < 5 {
			p.errorf(l.Pos, "truncated statistics: %d of 5 numbers", len(f))
		} else {
			p.errorf(l.Pos, "%d statistics numbers, want 5", len(f))
		}
		return nil, false
	}
	var c [5]Counter
	for j, tok := range f {
		plainOnly := cols == ColumnsRate && dest && j < 3
		v, abbr, msg := parseCounter(tok, plainOnly)
		if msg != "" {
			p.errorf(l.Pos, "%s", msg)
			return nil, false
		}
		c[j] = Counter{Value: v, Text: tok, Abbreviated: abbr}
		pos := l.Pos
		if abbr && p.sawAbbr == nil {
			p.sawAbbr = &pos
		}
		if !abbr && !plainOnly && v >= 100000000 && p.sawExact == nil {
			p.sawExact = &pos
		}
	}
	st := &Stats{}
	if cols == ColumnsStats {
		st.Conns, st.InPkts, st.OutPkts, st.InBytes, st.OutBytes = c[0], c[1], c[2], c[3], c[4]
	} else {
		st.CPS, st.InPPS, st.OutPPS, st.InBPS, st.OutBPS = c[0], c[1], c[2], c[3], c[4]
	}
	return st, true
}

// Units of ipvsadm's abbreviated numbers (print_largenum) and the range of
// values each is used for.
var units = []struct {
	suffix   byte
	div      uint64
	min, max uint64 // value range [min, max)
}{
	{'K', 1e3, 1e8, 1e9},
	{'M', 1e6, 1e9, 1e11},
	{'G', 1e9, 1e11, 1e14},
	{'T', 1e12, 1e14, 1<<64 - 1},
}

func parseCounter(tok string, plainOnly bool) (uint64, bool, string) {
	if tok == "" {
		return 0, false, "empty number"
	}
	if len(tok) > 1 && tok[0] == '0' {
		return 0, false, "number " + strconv.Quote(tok) + " with leading zeros"
	}
	last := tok[len(tok)-1]
	if last >= '0' && last <= '9' {
		v, err := strconv.ParseUint(tok, 10, 64)
		if err != nil || tok[0] == '+' {
			return 0, false, "bad number " + strconv.Quote(tok)
		}
		return v, false, ""
	}
	if plainOnly {
		return 0, false, "bad number " + strconv.Quote(tok) + " (this column is never abbreviated)"
	}
	for _, u := range units {
		if last != u.suffix {
			continue
		}
		digits := tok[:len(tok)-1]
		n, err := strconv.ParseUint(digits, 10, 64)
		if err != nil || digits == "" || digits[0] == '+' {
			return 0, false, "bad number " + strconv.Quote(tok)
		}
		if n > (1<<64-1)/u.div {
			return 0, false, "number " + strconv.Quote(tok) + " out of range"
		}
		v := n * u.div
		if v < u.min || (u.suffix != 'T' && v >= u.max) {
			return 0, false, "abbreviated number " + strconv.Quote(tok) + " out of range for its suffix"
		}
		return v, true, ""
	}
	return 0, false, "bad number " + strconv.Quote(tok)
}

// svcStats converts printed counters into moby/ipvs statistics, truncating
// to 32 bits where the netlink attribute is 32 bits wide (as the kernel
// does when it fills the non-64-bit statistics).
func svcStats(st *Stats) SvcStats {
	return SvcStats{
		Connections: uint32(st.Conns.Value),
		PacketsIn:   uint32(st.InPkts.Value),
		PacketsOut:  uint32(st.OutPkts.Value),
		BytesIn:     st.InBytes.Value,
		BytesOut:    st.OutBytes.Value,
		CPS:         uint32(st.CPS.Value),
		PPSIn:       uint32(st.InPPS.Value),
		PPSOut:      uint32(st.OutPPS.Value),
		BPSIn:       uint32(st.InBPS.Value),
		BPSOut:      uint32(st.OutBPS.Value),
	}
}
