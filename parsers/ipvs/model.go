package ipvs

import (
	"net"
	"strconv"

	"github.com/proxyscan/proxyscan/parsers"
)

// Linux address families and IP protocol numbers as the kernel reports them
// (the values, not the host's syscall constants, so that they hold on every
// system the analysis runs on).
const (
	FamilyIPv4 = 2  // AF_INET
	FamilyIPv6 = 10 // AF_INET6

	ProtoTCP  = 6   // IPPROTO_TCP
	ProtoUDP  = 17  // IPPROTO_UDP
	ProtoSCTP = 132 // IPPROTO_SCTP
)

// Virtual-server flags, the kernel's IP_VS_SVC_F_* values.
const (
	FlagPersistent = 0x0001 // IP_VS_SVC_F_PERSISTENT: "persistent N"
	FlagHashed     = 0x0002 // IP_VS_SVC_F_HASHED: set on every service in the table
	FlagOnePacket  = 0x0004 // IP_VS_SVC_F_ONEPACKET: "ops"
	FlagSched1     = 0x0008 // IP_VS_SVC_F_SCHED1: sh-fallback, mh-fallback, flag-1
	FlagSched2     = 0x0010 // IP_VS_SVC_F_SCHED2: sh-port, mh-port, flag-2
	FlagSched3     = 0x0020 // IP_VS_SVC_F_SCHED3: flag-3

	FlagSchedMask = FlagSched1 | FlagSched2 | FlagSched3
)

// Forwarding methods of a destination, the kernel's IP_VS_CONN_F_* values
// (also ipvs.ConnectionFlagMasq and friends in moby/ipvs).
const (
	FwdMasq        = 0x0000 // "Masq", -m
	FwdLocalNode   = 0x0001 // "Local", printed as -g in the save form
	FwdTunnel      = 0x0002 // "Tunnel", -i
	FwdDirectRoute = 0x0003 // "Route", -g
	FwdMask        = 0x0007
)

// DefaultPersistentTimeout is the timeout ipvsadm gives `-p` without a
// value (IPVS_SVC_PERSISTENT_TIMEOUT).
const DefaultPersistentTimeout = 300

// Form is the kind of ipvsadm output a Dump was read from.
type Form string

// The forms of ipvsadm output.
const (
	FormList    Form = "list"    // ipvsadm -Ln [options]
	FormSave    Form = "save"    // ipvsadm -Sn
	FormTimeout Form = "timeout" // ipvsadm -Ln --timeout
)

// Columns is the column layout of a listing: which of ipvsadm's -L
// options produced it.
type Columns string

// The column layouts of `ipvsadm -Ln`.
const (
	ColumnsPlain      Columns = "plain"           // Forward Weight ActiveConn InActConn
	ColumnsStats      Columns = "stats"           // --stats: Conns InPkts OutPkts InBytes OutBytes
	ColumnsRate       Columns = "rate"            // --rate: CPS InPPS OutPPS InBPS OutBPS
	ColumnsThresholds Columns = "thresholds"      // --thresholds: Uthreshold Lthreshold ActiveConn InActConn
	ColumnsPersistent Columns = "persistent-conn" // --persistent-conn: Weight PersistConn ActiveConn InActConn
	ColumnsTunnel     Columns = "tun-info"        // --tun-info: Forward TunnelInfo Weight ActiveConn InActConn
)

// Dump is an IPVS table: the virtual services with their real servers, or
// the connection timeouts, in the order the input listed them.
type Dump struct {
	// Form is the output the dump was read from.
	Form Form `json:"form"`
	// Version is the IPVS version of the listing header ("1.2.1"); empty
	// when the header is absent (a single-service listing, the save form).
	Version string `json:"version,omitempty"`
	// Size is the connection hash table size of the listing header.
	Size int `json:"size,omitempty"`
	// HeaderPos is the position of the version header line.
	HeaderPos parsers.Pos `json:"headerPos,omitzero"`
	// Columns is the column layout of a listing.
	Columns Columns `json:"columns,omitempty"`
	// Exact reports that the listing printed its numbers with --exact. It
	// can only be seen from a number of 100 million or more printed in full;
	// smaller numbers print the same either way.
	Exact bool `json:"exact,omitempty"`
	// Timeouts holds the `ipvsadm -Ln --timeout` values.
	Timeouts *Timeouts `json:"timeouts,omitempty"`
	// Services are the virtual services.
	Services []*Service `json:"services"`
	// PartialReason, for a dump read leniently ([ParseLenient]), says why
	// it may not hold the whole IPVS table; "" when it does.
	PartialReason string `json:"partialReason,omitempty"`
}

// Timeouts are the IPVS connection timeouts in seconds.
type Timeouts struct {
	TCP    int         `json:"tcp"`
	TCPFin int         `json:"tcpFin"`
	UDP    int         `json:"udp"`
	Pos    parsers.Pos `json:"pos"`
	Raw    string      `json:"raw"`
}

// Service is one IPVS virtual service with its real servers. The embedded
// VirtualServer (moby/ipvs' Service) holds the kernel's view; Counters holds
// the statistics columns as printed.
type Service struct {
	VirtualServer
	// Counters are the --stats or --rate columns, nil when the listing had
	// none.
	Counters *Stats `json:"counters,omitempty"`
	// Destinations are the real servers, in input order.
	Destinations []*Destination `json:"destinations"`
	// Pos and Raw locate the service line (-Ln) or its -A line (-Sn).
	Pos parsers.Pos `json:"pos"`
	Raw string      `json:"raw"`
	// Listed is the column layout of the listing the service was read
	// from ("" for the save form and the kernel's table): see
	// SchedulerKnown and WeightsKnown.
	Listed Columns `json:"-"`
}

// SchedulerKnown reports whether the service's scheduler, scheduler flags
// and persistence were read: false for a service of an `ipvsadm -Ln
// --stats` or `--rate` listing, which prints none of them (its SchedName
// is then "" and it looks not persistent).
func (s *Service) SchedulerKnown() bool { return s.Listed.ShowsScheduler() }

// WeightsKnown reports whether the weights of the service's real servers
// were read: false for a listing of --stats, --rate or --thresholds, which
// prints none (their Weight is then 0, which says nothing).
func (s *Service) WeightsKnown() bool { return s.Listed.ShowsWeights() }

// ShowsScheduler reports whether a listing of these columns prints each
// virtual server's scheduler, its flags and persistence: every layout but
// --stats and --rate ("", the save form, prints them).
func (c Columns) ShowsScheduler() bool { return c != ColumnsStats && c != ColumnsRate }

// ShowsWeights reports whether a listing of these columns prints the
// real servers' weights: every layout but --stats, --rate and
// --thresholds.
func (c Columns) ShowsWeights() bool { return c.ShowsScheduler() && c != ColumnsThresholds }

// Hidden says, in words, what of a virtual server kube-proxy programs a
// listing of these columns does not print ("" when it prints it all).
func (c Columns) Hidden() string {
	switch {
	case !c.ShowsScheduler():
		return "no scheduler, persistence or weights"
	case !c.ShowsWeights():
		return "no weights"
	}
	return ""
}

// Option is the ipvsadm option that prints a listing of these columns
// ("--stats"; "" for the plain listing).
func (c Columns) Option() string {
	if c == ColumnsPlain || c == "" {
		return ""
	}
	return "--" + string(c)
}

// Destination is one real server of a virtual service. The embedded
// RealServer (moby/ipvs' Destination) holds the kernel's view.
type Destination struct {
	RealServer
	// PersistentConnections is the PersistConn column of --persistent-conn.
	PersistentConnections int `json:"persistentConnections,omitempty"`
	// Tunnel describes the tunnel of a Tunnel destination (--tun-info, or
	// --tun-type in the save form); nil when not shown.
	Tunnel *Tunnel `json:"tunnel,omitempty"`
	// Counters are the --stats or --rate columns, nil when the listing had
	// none.
	Counters *Stats `json:"counters,omitempty"`
	// Pos and Raw locate the "  -> " line (-Ln) or the -a line (-Sn).
	Pos parsers.Pos `json:"pos"`
	Raw string      `json:"raw"`
}

// Tunnel is the encapsulation of a tunnelling destination.
type Tunnel struct {
	// Type is "ipip", "gue" or "gre".
	Type string `json:"type"`
	// Port is the GUE destination port.
	Port uint16 `json:"port,omitempty"`
	// Checksum is "-c" (none), "+c" (checksum) or "r+c" (remote checksum);
	// empty for ipip.
	Checksum string `json:"checksum,omitempty"`
}

// Stats are the statistics columns of --stats (Conns … OutBytes) and
// --rate (CPS … OutBPS). A listing shows one group; the other stays zero.
type Stats struct {
	Conns    Counter `json:"conns,omitzero"`
	InPkts   Counter `json:"inPkts,omitzero"`
	OutPkts  Counter `json:"outPkts,omitzero"`
	InBytes  Counter `json:"inBytes,omitzero"`
	OutBytes Counter `json:"outBytes,omitzero"`
	CPS      Counter `json:"cps,omitzero"`
	InPPS    Counter `json:"inPPS,omitzero"`
	OutPPS   Counter `json:"outPPS,omitzero"`
	InBPS    Counter `json:"inBPS,omitzero"`
	OutBPS   Counter `json:"outBPS,omitzero"`
}

// Counter is one statistics number. Without --exact ipvsadm prints numbers
// of 100 million or more divided by 1000, 1e6, 1e9 or 1e12 with a K, M, G
// or T suffix; such a counter is Abbreviated and its Value is the smallest
// number that prints that way (the true value is below Value plus one unit).
type Counter struct {
	// Value is the best numeric value.
	Value uint64 `json:"value"`
	// Text is the number as printed ("123456K"); empty for a counter that
	// was not read from text.
	Text string `json:"text,omitempty"`
	// Abbreviated reports a K/M/G/T-rounded number.
	Abbreviated bool `json:"abbreviated,omitempty"`
}

// ProtocolName returns ipvsadm's name of an IP protocol number: "TCP",
// "UDP", "SCTP", or "?".
func ProtocolName(proto uint16) string {
	switch proto {
	case ProtoTCP:
		return "TCP"
	case ProtoUDP:
		return "UDP"
	case ProtoSCTP:
		return "SCTP"
	}
	return "?"
}

// String returns the service the way kube-proxy names a virtual server:
// "10.96.0.1:443/TCP", "[fd00::1]:443/TCP"; a firewall-mark service is
// "FWM 123" (with " IPv6" for an IPv6 one).
func (s *Service) String() string {
	if s.FWMark != 0 {
		if s.AddressFamily == FamilyIPv6 {
			return "FWM " + strconv.FormatUint(uint64(s.FWMark), 10) + " IPv6"
		}
		return "FWM " + strconv.FormatUint(uint64(s.FWMark), 10)
	}
	return net.JoinHostPort(ipString(s.Address), strconv.Itoa(int(s.Port))) + "/" + ProtocolName(s.Protocol)
}

// String returns the destination as "10.244.1.5:8080" ("[fd00::5]:8080").
func (d *Destination) String() string {
	return net.JoinHostPort(ipString(d.Address), strconv.Itoa(int(d.Port)))
}

// IsPersistent reports whether the service has ClientIP affinity
// ("persistent N").
func (s *Service) IsPersistent() bool { return s.Flags&FlagPersistent != 0 }

// Find returns the service with the given address, port and protocol
// number, or nil.
func (d *Dump) Find(addr net.IP, port uint16, proto uint16) *Service {
	for _, s := range d.Services {
		if s.FWMark == 0 && s.Port == port && s.Protocol == proto && s.Address.Equal(addr) {
			return s
		}
	}
	return nil
}
