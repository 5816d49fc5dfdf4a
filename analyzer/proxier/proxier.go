package proxier

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/parsers/ipset"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// A Dataplane is what one proxy mode programs on a node, in the types the
// parsers produce for that mode's dumps: for iptables mode one
// iptables-save dump per IP family.
type Dataplane struct {
	// Mode is the proxy mode ("iptables").
	Mode string
	// Version is the kube-proxy version the data plane was generated for;
	// zero for a captured data plane.
	Version kpversion.Version
	// IPTables holds one dump per family, IPv4 first: iptables mode's
	// rules, or the iptables rules of IPVS mode.
	IPTables []*iptables.Dump
	// NFT is nftables mode's ruleset (tables ip and ip6 kube-proxy).
	NFT *nft.Ruleset
	// IPVS is IPVS mode's virtual and real servers, IPSets its ipsets, and
	// Bound the addresses it binds on the kube-ipvs0 dummy interface.
	IPVS   *ipvs.Dump
	IPSets *ipset.Dump
	Bound  []netip.Addr
	// Files are the dumps in their native text form, one per family, as
	// the tools print them (iptables-save output, loadable with
	// iptables-restore); empty for a captured data plane.
	Files []File

	// ports are the service ports the data plane is compared for.
	ports []*model.ServicePort
	// ipvs holds what IPVS mode compares besides the dumps.
	ipvs *ipvsExtra
	// canonical reports dumps already in iptables-save form (generated
	// ones), which Compare need not canonicalise again.
	canonical bool
}

// A File is one generated dump.
type File struct {
	// Name is the file name a bundle uses for it ("iptables-save.txt",
	// "ip6tables-save.txt").
	Name string
	// Family is the IP family of the dump; empty for a file IPVS mode
	// shares between the families of a dual-stack node (the ipsets, the
	// IPVS table).
	Family model.Family
	// Data is the dump's text.
	Data []byte
}

// IPTablesFor returns the dump of a family, or nil.
func (dp *Dataplane) IPTablesFor(f model.Family) *iptables.Dump {
	for _, d := range dp.IPTables {
		if model.Family(d.Family) == f {
			return d
		}
	}
	return nil
}

// Mode is one proxy mode's generator: given the resolved inputs, it
// returns the data plane of each requested family. Modes plug in by being
// listed in [Modes].
type Mode interface {
	// Name returns the mode's name as the configuration spells it.
	Name() string
	generate(in *input, families []model.Family) (*Dataplane, error)
}

// Modes lists the modes the proxier generates, by name.
var Modes = map[string]Mode{
	model.ModeIPTables: iptablesMode{},
	model.ModeIPVS:     ipvsMode{},
	model.ModeNFTables: nftablesMode{},
}

// modeRanges holds, per mode, the oldest kube-proxy minor whose layout the
// proxier generates, and the mode's name as messages spell it. Every mode
// is generated up to kpversion.NewestMinor. These are the modes'
// supported ranges, the one place they are numbers: what differs between
// the releases within them is asked of resolve's behaviours.
var modeRanges = map[string]struct {
	title  string
	oldest int
}{
	model.ModeIPTables: {"iptables", kpversion.OldestMinor},
	model.ModeIPVS:     {"IPVS", 21},
	// nftables mode from its first release (resolve.NFTablesMode).
	model.ModeNFTables: {"nftables", 29},
}

// modelled returns why the proxier does not generate mode for kube-proxy
// version v, or nil.
func modelled(mode string, v kpversion.Version) error {
	m := modeRanges[mode]
	switch {
	case !v.Supported():
		return fmt.Errorf("kube-proxy %s is not modelled (supported: 1.%d to 1.%d)", v, kpversion.OldestMinor, kpversion.NewestMinor)
	case mode == model.ModeNFTables && !resolve.InRelease(resolve.NFTablesMode, v):
		return fmt.Errorf("kube-proxy %s has no nftables mode (it exists from 1.%d)", v.MinorString(), m.oldest)
	case v.Minor < m.oldest:
		return fmt.Errorf("kube-proxy %s %s mode is not modelled (supported: 1.%d to 1.%d)", v.MinorString(), m.title, m.oldest, kpversion.NewestMinor)
	}
	return nil
}

// ModeNames returns the names of the modes, sorted.
func ModeNames() []string {
	var out []string
	for n := range Modes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Options choose what [Expect] generates besides what the resolution
// says (mode, version, node).
type Options struct {
	// Families lists the IP families to generate; nil means those kube-proxy
	// runs a proxier for on the node (the resolution's).
	Families []model.Family
	// Env describes the node's start-up environment.
	Env Env
	// TextOnly asks for the dumps' text (Files) only: the iptables dumps
	// of iptables and IPVS mode are not parsed back, and IPTables is
	// empty. For callers that print the rules rather than trace or
	// compare them.
	TextOnly bool
}

// Expect returns the data plane kube-proxy programs for the Services,
// EndpointSlices, Node and configuration of a resolved snapshot, in the
// resolved mode and version: what one full sync writes (nothing left from
// earlier syncs). An error says why it cannot (an unknown mode or an
// unmodelled version).
func Expect(r *resolve.Resolution, opts Options) (*Dataplane, error) {
	m, ok := Modes[r.Mode]
	if !ok {
		return nil, fmt.Errorf("proxy mode %q is not generated (available: %s)", r.Mode, strings.Join(ModeNames(), ", "))
	}
	if err := modelled(r.Mode, r.Version.Version); err != nil {
		return nil, err
	}
	in := newInput(r, opts.Env)
	in.textOnly = opts.TextOnly
	fams := opts.Families
	if len(fams) == 0 {
		fams = r.Families
	}
	dp, err := m.generate(in, fams)
	if err != nil {
		return nil, err
	}
	dp.Version = r.Version.Version
	dp.ports = r.Snap.Ports
	dp.canonical = true
	return dp, nil
}

// Captured returns the data plane of the resolved mode captured in the
// snapshot: for iptables and IPVS mode, per family the dump kube-proxy
// wrote to (see [resolve.Resolution.IPTables]).
func Captured(r *resolve.Resolution) (*Dataplane, error) {
	mode := r.Mode
	if _, ok := Modes[mode]; !ok {
		return nil, fmt.Errorf("proxy mode %q is not compared (available: %s)", mode, strings.Join(ModeNames(), ", "))
	}
	dp := &Dataplane{Mode: mode, ports: r.Snap.Ports}
	if mode == model.ModeNFTables {
		return capturedNFT(r, dp), nil
	}
	for _, f := range []model.Family{model.IPv4, model.IPv6} {
		if d := r.IPTables(f); d != nil {
			dp.IPTables = append(dp.IPTables, d)
		}
	}
	if mode == model.ModeIPVS {
		capturedIPVS(r, dp)
	}
	return dp, nil
}
