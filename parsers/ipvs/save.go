package ipvs

import (
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
)

// maxTimeout is ipvsadm's largest persistence timeout (31 days).
const maxTimeout = 86400 * 31

// saveParser holds the state of a save-form parse.
type saveParser struct {
	d     *Dump
	errs  parsers.ErrorList
	byKey map[svcKey]*Service
	dkeys map[*Service]map[destKey]bool
	// failed holds the keys of -A lines that had errors, whose -a lines
	// are then skipped without more errors.
	failed map[svcKey]bool
}

func (p *saveParser) errorf(pos parsers.Pos, format string, args ...any) {
	if len(p.errs) < maxErrors {
		p.errs.Add(pos, format, args...)
	}
}

func parseSave(lines []line) (*Dump, error) {
	p := &saveParser{
		d:      &Dump{Form: FormSave, Services: []*Service{}},
		byKey:  map[svcKey]*Service{},
		dkeys:  map[*Service]map[destKey]bool{},
		failed: map[svcKey]bool{},
	}
	for _, l := range lines {
		if skippable(l.Text) {
			continue
		}
		if len(p.errs) >= maxErrors {
			break
		}
		p.line(l)
	}
	if err := p.errs.Err(); err != nil {
		return nil, err
	}
	return p.d, nil
}

// saveArgs is one parsed -A or -a line.
type saveArgs struct {
	cmd      byte // 'A' or 'a'
	svc      *Service
	hasPort  bool
	sched    string
	schedSet bool
	pers     bool
	timeout  uint32
	mask     string
	pe       string
	ops      bool
	bflags   string
	dest     string
	fwd      int // -1 unset
	weight   int
	uthr     uint32
	lthr     uint32
	tunType  string
	tunPort  int
	tunCsum  string
	seen     uint32 // option groups given, bits of optionGroups
}

// groupBit numbers the option groups of a line, for saveArgs.seen.
func groupBit(g string) uint32 {
	switch g {
	case "service":
		return 1 << 0
	case "6":
		return 1 << 1
	case "s":
		return 1 << 2
	case "p":
		return 1 << 3
	case "M":
		return 1 << 4
	case "pe":
		return 1 << 5
	case "o":
		return 1 << 6
	case "b":
		return 1 << 7
	case "r":
		return 1 << 8
	case "forward":
		return 1 << 9
	case "w":
		return 1 << 10
	case "x":
		return 1 << 11
	case "y":
		return 1 << 12
	case "tun-type":
		return 1 << 13
	case "tun-port":
		return 1 << 14
	case "tun-csum":
		return 1 << 15
	}
	panic("ipvs: unknown option group " + g)
}

func (a *saveArgs) has(group string) bool { return a.seen&groupBit(group) != 0 }

// option names, long and short, mapped to a canonical key.
var saveOptions = map[string]string{
	"-A": "A", "--add-service": "A", "-a": "a", "--add-server": "a",
	"-t": "t", "--tcp-service": "t", "-u": "u", "--udp-service": "u",
	"--sctp-service": "sctp", "-f": "f", "--fwmark-service": "f", "-6": "6", "--ipv6": "6",
	"-s": "s", "--scheduler": "s", "-p": "p", "--persistent": "p",
	"-M": "M", "--netmask": "M", "--pe": "pe", "-o": "o", "--ops": "o",
	"-b": "b", "--sched-flags": "b", "-r": "r", "--real-server": "r",
	"-g": "g", "--gatewaying": "g", "-i": "i", "--ipip": "i", "-m": "m", "--masquerading": "m",
	"-w": "w", "--weight": "w", "-x": "x", "--u-threshold": "x", "-y": "y", "--l-threshold": "y",
	"--tun-type": "tun-type", "--tun-port": "tun-port",
	"--tun-nocsum": "-c", "--tun-csum": "+c", "--tun-remcsum": "r+c",
}

func (p *saveParser) line(l line) {
	f := strings.Fields(l.Text)
	a := &saveArgs{fwd: -1, weight: 1}
	nerr := len(p.errs)
	defer func() {
		if len(p.errs) > nerr && a.cmd == 'A' && a.svc != nil {
			p.failed[serviceKey(a.svc)] = true
		}
	}()
	bad := func(format string, args ...any) { p.errorf(l.Pos, format, args...) }
	for i := 0; i < len(f); i++ {
		tok := f[i]
		key, ok := saveOptions[tok]
		if !ok {
			switch {
			case tok == "-E" || tok == "-e" || tok == "-D" || tok == "-d" || tok == "-C" || tok == "--set" || tok == "-Z":
				bad("command %s is not part of a saved table", tok)
			case strings.HasPrefix(tok, "-"):
				bad("unknown option %s", strconv.Quote(tok))
			default:
				bad("unexpected argument %s", strconv.Quote(tok))
			}
			return
		}
		if key == "A" || key == "a" {
			if i != 0 {
				bad("%s must come first", tok)
				return
			}
			a.cmd = key[0]
			continue
		}
		if i == 0 {
			bad("line must start with -A or -a, found %s", strconv.Quote(tok))
			return
		}
		group := key
		switch key {
		case "t", "u", "sctp", "f":
			group = "service"
		case "g", "i", "m":
			group = "forward"
		case "-c", "+c", "r+c":
			group = "tun-csum"
		}
		if a.has(group) {
			bad("option %s given twice", tok)
			return
		}
		a.seen |= groupBit(group)
		arg := func() (string, bool) {
			if i+1 >= len(f) {
				bad("option %s needs a value", tok)
				return "", false
			}
			i++
			return f[i], true
		}
		switch key {
		case "t", "u", "sctp":
			v, ok := arg()
			if !ok {
				return
			}
			proto := map[string]uint16{"t": ProtoTCP, "u": ProtoUDP, "sctp": ProtoSCTP}[key]
			fam, ip, port, hasPort, msg := parseAddrPort(v, false)
			if msg != "" {
				bad("virtual service: %s", msg)
				return
			}
			a.svc = newServiceFromSpec(proto, fam, ip, port)
			a.hasPort = hasPort
		case "f":
			v, ok := arg()
			if !ok {
				return
			}
			mark, err := strconv.ParseUint(v, 10, 32)
			if err != nil || mark == 0 {
				bad("invalid fwmark value %s", strconv.Quote(v))
				return
			}
			a.svc = newFWMService(uint32(mark), FamilyIPv4)
		case "6":
			if a.svc == nil || a.svc.FWMark == 0 {
				bad("-6 used before -f")
				return
			}
			a.svc.AddressFamily = FamilyIPv6
			a.svc.Netmask = 128
		case "s":
			v, ok := arg()
			if !ok {
				return
			}
			a.sched, a.schedSet = v, true
		case "p":
			a.pers = true
			a.timeout = DefaultPersistentTimeout
			if i+1 < len(f) && !strings.HasPrefix(f[i+1], "-") {
				i++
				t, err := strconv.ParseUint(f[i], 10, 32)
				if err != nil || t < 1 || t > maxTimeout {
					bad("invalid timeout value %s", strconv.Quote(f[i]))
					return
				}
				a.timeout = uint32(t)
			}
		case "M":
			v, ok := arg()
			if !ok {
				return
			}
			a.mask = v
		case "pe":
			v, ok := arg()
			if !ok {
				return
			}
			a.pe = v
		case "o":
			a.ops = true
		case "b":
			v, ok := arg()
			if !ok {
				return
			}
			a.bflags = v
		case "r":
			v, ok := arg()
			if !ok {
				return
			}
			a.dest = v
		case "g":
			a.fwd = FwdDirectRoute
		case "i":
			a.fwd = FwdTunnel
		case "m":
			a.fwd = FwdMasq
		case "w", "x", "y", "tun-port":
			v, ok := arg()
			if !ok {
				return
			}
			max := map[string]uint64{"w": 65535, "x": 1<<31 - 1, "y": 1<<31 - 1, "tun-port": 65535}[key]
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil || n > max || (key == "tun-port" && n == 0) {
				bad("illegal %s %s", map[string]string{"w": "weight", "x": "upper threshold", "y": "lower threshold", "tun-port": "tunnel port"}[key], strconv.Quote(v))
				return
			}
			switch key {
			case "w":
				a.weight = int(n)
			case "x":
				a.uthr = uint32(n)
			case "y":
				a.lthr = uint32(n)
			default:
				a.tunPort = int(n)
			}
		case "tun-type":
			v, ok := arg()
			if !ok {
				return
			}
			if v != "ipip" && v != "gue" && v != "gre" {
				bad("illegal tunnel type %s", strconv.Quote(v))
				return
			}
			a.tunType = v
		case "-c", "+c", "r+c":
			a.tunCsum = key
		}
	}
	if a.cmd == 0 {
		bad("line must start with -A or -a")
		return
	}
	if a.svc == nil {
		bad("missing virtual service (-t, -u, --sctp-service or -f)")
		return
	}
	a.svc.Pos, a.svc.Raw = l.Pos, l.Text
	if a.cmd == 'A' {
		p.addService(l, a)
	} else {
		p.addDest(l, a)
	}
}

func (p *saveParser) addService(l line, a *saveArgs) {
	bad := func(format string, args ...any) { p.errorf(l.Pos, format, args...) }
	for _, o := range []string{"r", "forward", "w", "x", "y", "tun-type", "tun-port", "tun-csum"} {
		if a.has(o) {
			bad("real-server option with -A")
			return
		}
	}
	s := a.svc
	s.SchedName = "wlc" // ipvsadm's default scheduler
	if a.schedSet {
		s.SchedName = a.sched
	}
	if a.pers {
		s.Flags |= FlagPersistent
		s.Timeout = a.timeout
	}
	if a.mask != "" {
		if !a.pers {
			bad("-M without -p: the netmask applies only to persistent services")
			return
		}
		m, msg := parseMask(s.AddressFamily, a.mask)
		if msg != "" {
			bad("%s", msg)
			return
		}
		s.Netmask = m
	}
	s.PEName = a.pe
	if a.ops {
		s.Flags |= FlagOnePacket
	}
	if a.bflags != "" {
		fl, msg := parseSchedFlags(s.SchedName, a.bflags, false)
		if msg != "" {
			bad("%s", msg)
			return
		}
		s.Flags |= fl
	}
	if a.ops && s.FWMark == 0 && s.Protocol != ProtoUDP {
		bad("one-packet scheduling (-o) is only for UDP virtual services")
		return
	}
	if s.FWMark == 0 && s.Port == 0 && !s.IsPersistent() {
		bad("zero port specified for non-persistent service")
		return
	}
	k := serviceKey(s)
	if p.byKey[k] != nil {
		bad("duplicate virtual service %s (first at line %d)", s, p.byKey[k].Pos.Line)
		return
	}
	p.byKey[k] = s
	p.dkeys[s] = map[destKey]bool{}
	p.d.Services = append(p.d.Services, s)
}

func (p *saveParser) addDest(l line, a *saveArgs) {
	bad := func(format string, args ...any) { p.errorf(l.Pos, format, args...) }
	for _, o := range []string{"s", "p", "M", "pe", "o", "b"} {
		if a.has(o) {
			bad("virtual-service option with -a")
			return
		}
	}
	s := p.byKey[serviceKey(a.svc)]
	if s == nil && p.failed[serviceKey(a.svc)] {
		return
	}
	if s == nil {
		bad("real server for virtual service %s, which no -A line above defines", a.svc)
		return
	}
	if a.dest == "" {
		bad("missing real server (-r)")
		return
	}
	fam, ip, port, hasPort, msg := parseAddrPort(a.dest, false)
	if msg != "" {
		bad("real server: %s", msg)
		return
	}
	d := &Destination{Pos: l.Pos, Raw: l.Text}
	d.AddressFamily, d.Address, d.Port = fam, ip, port
	if !hasPort {
		d.Port = s.Port
	}
	fwd := a.fwd
	if fwd < 0 {
		fwd = FwdDirectRoute // ipvsadm's default
	}
	d.ConnectionFlags = uint32(fwd)
	if s.FWMark == 0 && (fwd == FwdTunnel || fwd == FwdDirectRoute) {
		d.Port = s.Port // ipvsadm forces the service port
	}
	if fam != s.AddressFamily && fwd != FwdTunnel {
		bad("different address family is allowed only for tunneling servers")
		return
	}
	d.Weight = a.weight
	d.UpperThreshold, d.LowerThreshold = a.uthr, a.lthr
	if a.has("tun-type") || a.has("tun-port") || a.has("tun-csum") {
		if fwd != FwdTunnel {
			bad("tunnel options conflict with forward method")
			return
		}
		t := &Tunnel{Type: a.tunType}
		if t.Type == "" {
			t.Type = "ipip"
		}
		switch t.Type {
		case "ipip":
			if a.has("tun-port") || a.has("tun-csum") {
				bad("illegal tunnel option with the ipip tunnel type")
				return
			}
		case "gue":
			if !a.has("tun-port") {
				bad("the gue tunnel type needs --tun-port")
				return
			}
			t.Port = uint16(a.tunPort)
			t.Checksum = "-c"
		case "gre":
			if a.has("tun-port") || a.tunCsum == "r+c" {
				bad("illegal tunnel option with the gre tunnel type")
				return
			}
			t.Checksum = "-c"
		}
		if a.tunCsum != "" {
			t.Checksum = a.tunCsum
		}
		d.Tunnel = t
	} else if fwd == FwdTunnel {
		d.Tunnel = &Tunnel{Type: "ipip"} // the kernel's default
	}
	k := destinationKey(d)
	if p.dkeys[s][k] {
		bad("duplicate real server %s in %s", d, s)
		return
	}
	p.dkeys[s][k] = true
	s.Destinations = append(s.Destinations, d)
}
