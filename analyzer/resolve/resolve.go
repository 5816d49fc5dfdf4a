// Package resolve decides, once per snapshot, what the node's kube-proxy is
// and what it should do: the proxy mode it runs and how that is known, which
// of the captured dumps are kube-proxy's, the IP families it runs a proxier
// for, the node's addresses (read, or assumed from what kube-proxy itself
// guarantees), its version and the behaviours of that release, and the
// rules by which it selects endpoints. Every command and check asks a
// [Resolution]; nothing else decides these.
package resolve

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
)

// How a fact of a resolution was established.
const (
	// Given: a command-line flag said so.
	Given = "given"
	// Configured: the kube-proxy configuration says so.
	Configured = "configured"
	// Inferred: read off the captured data plane.
	Inferred = "inferred"
	// Assumed: nothing in the inputs says; kube-proxy's default (or what it
	// guarantees) is taken.
	Assumed = "assumed"
)

// Options override what the inputs say.
type Options struct {
	// Mode is the proxy mode to take (a --mode flag), "" for the node's.
	Mode string
	// Version is the kube-proxy version to take (a --version flag); the
	// zero value means the snapshot's.
	Version kpversion.Version
}

// A Resolution is what one node's kube-proxy is and does, as far as the
// inputs tell, with how each part was established.
type Resolution struct {
	// Snap is the snapshot resolved.
	Snap *model.Snapshot

	// Mode is the proxy mode kube-proxy runs: given, else configured, else
	// the one mode the data plane shows, else iptables (kube-proxy's
	// default on Linux). ModeOrigin says which (Given, Configured, Inferred,
	// Assumed) and ModeSource says it in words ("configured in
	// kube-proxy/config.yaml").
	Mode, ModeOrigin, ModeSource string
	// Programmed lists the modes whose rules the data plane shows, in a
	// fixed order (iptables, ipvs, nftables).
	Programmed []string

	// Version is the kube-proxy version the analysis follows, and Source
	// where it came from.
	Version model.Version

	// Families are the IP families kube-proxy runs a proxier for on the
	// node, IPv4 first.
	Families []model.Family

	// NodeIPs holds the node IP of each family (the first InternalIP, else
	// ExternalIP, as kube-proxy's detectNodeIPs picks it; a bindAddress
	// that is not unspecified overrides it).
	NodeIPs map[model.Family]netip.Addr
	// NodeAddrs are the node's own addresses: the Node object's, and those
	// of ip addr that kube-proxy serves node ports on when
	// nodePortAddresses is unset (not kube-ipvs0's, loopback or IPv6
	// link-local ones).
	NodeAddrs []netip.Addr
	// InterfaceAddrs are the addresses nodePortAddresses are matched
	// against: loopback and every address of the node.
	InterfaceAddrs []netip.Addr
	// Local are the addresses the kernel takes as local (addrtype LOCAL,
	// fib daddr type local): loopback aside, those of ip addr and the
	// node's; Assumed lists those of them no input shows but kube-proxy
	// guarantees (the addresses IPVS mode binds to kube-ipvs0 when ip addr
	// was not captured), and AssumedWhy says why.
	Local, AssumedLocal []netip.Addr
	AssumedWhy          string
	// AssumedBrief says in a few words why AssumedLocal are assumed when
	// it is not for want of ip addr ("ip addr does not show kube-ipvs0");
	// "" otherwise.
	AssumedBrief string
	// Zone is the node's topology zone label.
	Zone string

	// ImpliedGates are feature gates the data plane shows were on although
	// no configuration says so (the nftables mode of 1.29 and 1.30 exists
	// only with NFTablesProxyMode), with why.
	ImpliedGates map[string]string

	// Categorize holds the endpoint-selection rules of the version, the
	// gates and the node.
	Categorize model.CategorizeOptions

	dumps dumps
}

// Resolve resolves a snapshot.
func Resolve(s *model.Snapshot, o Options) *Resolution {
	r := &Resolution{Snap: s, NodeIPs: map[model.Family]netip.Addr{}}
	r.Version = s.Version
	switch {
	case o.Version.Major != 0:
		r.Version = model.Version{Version: o.Version, Source: "--version flag"}
	case !r.Version.Known():
		r.Version = model.Version{Version: kpversion.Newest, Source: "assumed: newest supported"}
	}
	r.Programmed = programmedModes(s)
	logged, loggedSource := loggedProxyMode(s)
	switch {
	case o.Mode != "":
		r.Mode, r.ModeOrigin, r.ModeSource = o.Mode, Given, "--mode flag"
	case s.Config != nil:
		r.Mode, r.ModeOrigin, r.ModeSource = s.Config.EffectiveMode(), Configured, "configured in "+s.Config.Source
		if s.Config.Read != nil && s.Config.Read.Config.Mode == "" && s.Config.Source != "command line" && !modeFlag(s.Config) {
			how := "mode not set"
			if s.Config.Read.IsSet("mode") {
				how = `mode: ""`
			}
			r.ModeSource = fmt.Sprintf("%s in %s: kube-proxy's default applies", how, s.Config.Source)
		}
	case len(r.Programmed) == 1:
		r.Mode, r.ModeOrigin, r.ModeSource = r.Programmed[0], Inferred, "inferred from the data plane"
	case len(r.Programmed) == 0 && iptablesSkeleton(s) != "":
		r.Mode, r.ModeOrigin, r.ModeSource = model.ModeIPTables, Inferred,
			"inferred from the data plane: kube-proxy's iptables-mode chains, without a Service (nat "+kpnames.KubeServices+" in "+iptablesSkeleton(s)+")"
	case logged != "":
		r.Mode, r.ModeOrigin, r.ModeSource = logged, Inferred, loggedSource
	case ipvsSet(s) != "":
		r.Mode, r.ModeOrigin, r.ModeSource = model.ModeIPVS, Inferred,
			"inferred from the ipset listing: kube-proxy's IPVS-mode set "+ipvsSet(s)
	default:
		r.Mode, r.ModeOrigin, r.ModeSource = model.ModeIPTables, Assumed, "assumed (kube-proxy's default)"
	}
	r.dumps = selectDumps(s)
	if r.ModeOrigin == Inferred && len(r.Programmed) > 0 && r.Mode == model.ModeNFTables && !Enabled(NFTablesMode, r.Version.Version, ConfiguredGates(s)) {
		r.ImpliedGates = map[string]string{behaviours[NFTablesMode].gate: fmt.Sprintf(
			"kube-proxy %s has the nftables mode only with this gate, and the data plane holds nftables-mode rules", r.Version.MinorString())}
	}
	r.nodeAddresses()
	r.families()
	r.localAddresses()
	r.Zone = s.Node.Zone
	if n := s.Node.Object; n != nil {
		r.Zone = n.Labels[corev1.LabelTopologyZone]
	}
	r.Categorize = CategorizeOptions(r.Version.Version, r.Gates(), s.Node.Name, r.Zone)
	return r
}

// CategorizeOptions returns the endpoint-selection rules of kube-proxy of
// version v with the configured gates, on the named node in zone.
func CategorizeOptions(v kpversion.Version, gates map[string]bool, node, zone string) model.CategorizeOptions {
	o := model.CategorizeOptions{
		NodeName:                 node,
		Zone:                     zone,
		TerminatingFallback:      Enabled(ClusterTerminatingFallback, v, gates),
		LocalTerminatingFallback: Enabled(LocalTerminatingFallback, v, gates),
		ZoneHints:                Enabled(ZoneTopologyHints, v, gates),
		NodeHints:                Enabled(NodeTopologyHints, v, gates),
	}
	switch {
	case Enabled(TopologyHintsWithoutAnnotation, v, gates):
		o.TopologyAnnotation = model.AnnotationIgnored
	case Enabled(TopologyAnnotationAnyValue, v, gates):
		o.TopologyAnnotation = model.AnnotationEnabled
	default:
		o.TopologyAnnotation = model.AnnotationAuto
	}
	return o
}

// Has reports whether the resolved kube-proxy has behaviour b (its version
// and configured feature gates).
func (r *Resolution) Has(b Behaviour) bool { return Enabled(b, r.Version.Version, r.Gates()) }

// Gates returns the feature gates kube-proxy runs with as far as the inputs
// tell: the configured ones, and those the data plane implies.
func (r *Resolution) Gates() map[string]bool {
	cfg := ConfiguredGates(r.Snap)
	if len(r.ImpliedGates) == 0 {
		return cfg
	}
	out := make(map[string]bool, len(cfg)+len(r.ImpliedGates))
	for g := range r.ImpliedGates {
		out[g] = true
	}
	for g, v := range cfg {
		out[g] = v
	}
	return out
}

// ConfiguredGates returns the feature gates of a snapshot's configuration,
// nil when it has none.
func ConfiguredGates(s *model.Snapshot) map[string]bool {
	if c := s.Config; c != nil && c.KubeProxyConfiguration != nil {
		return c.FeatureGates
	}
	return nil
}

// modeFlag reports whether a captured command line sets the mode.
func modeFlag(c *model.Config) bool {
	if c.Flags == nil {
		return false
	}
	for _, f := range c.Flags.Applied {
		if f.Field == "mode" {
			return true
		}
	}
	return false
}

// ModeAssumed reports a mode that no input and no flag says.
func (r *Resolution) ModeAssumed() bool { return r.ModeOrigin == Assumed }

// IsLocal reports whether a is an address of the node (loopback included).
func (r *Resolution) IsLocal(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLoopback() {
		return true
	}
	for _, l := range r.Local {
		if l == a {
			return true
		}
	}
	return false
}

// IsAssumedLocal reports whether a is local only by assumption.
func (r *Resolution) IsAssumedLocal(a netip.Addr) bool {
	a = a.Unmap()
	for _, l := range r.AssumedLocal {
		if l == a {
			return true
		}
	}
	return false
}

// HasFamily reports whether kube-proxy runs a proxier for f.
func (r *Resolution) HasFamily(f model.Family) bool {
	for _, x := range r.Families {
		if x == f {
			return true
		}
	}
	return false
}

// String summarises the resolution in one line ("nftables mode (inferred
// from the data plane), kube-proxy v1.37 (kube-proxy/version.txt), IPv4").
func (r *Resolution) String() string {
	fams := ""
	for i, f := range r.Families {
		if i > 0 {
			fams += "+"
		}
		fams += string(f)
	}
	return fmt.Sprintf("%s mode (%s), kube-proxy %s (%s), %s", r.Mode, r.ModeSource, r.Version, r.Version.Source, fams)
}
