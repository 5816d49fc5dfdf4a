// Package diff compares two analyses of the same nodes — before and after
// a change — and lists the semantic differences: Services and service
// ports added or removed, endpoints added or removed per service port,
// data-plane entries and dispatch backends per service port (compared in
// the mode-neutral form of analyzer/view, so that a mode switch compares
// too, by the comparison node-drift makes between nodes), kube-proxy configuration fields (by kpconfig's YAML paths), the
// kube-proxy version and mode, and the findings that appeared or were
// resolved.
//
// A [Result] is a value; its renderers (table, JSON, markdown) are pure
// functions of it, as the report's are.
package diff

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
	"github.com/proxyscan/proxyscan/internal/fault"
	"github.com/proxyscan/proxyscan/parsers/kpconfig"
)

// SchemaVersion is the version of the JSON shape of a Result.
const SchemaVersion = 1

// Kinds of change, in the order results list them.
const (
	NodeAdded          = "node-added"
	NodeRemoved        = "node-removed"
	NodeRenamed        = "node-renamed"
	ModeChanged        = "mode-changed"
	VersionChanged     = "version-changed"
	ConfigChanged      = "config-changed"
	ServiceAdded       = "service-added"
	ServiceRemoved     = "service-removed"
	ServicePortAdded   = "service-port-added"
	ServicePortRemoved = "service-port-removed"
	ServicePortChanged = "service-port-changed"
	EndpointAdded      = "endpoint-added"
	EndpointRemoved    = "endpoint-removed"
	EndpointChanged    = "endpoint-changed"
	EntryAdded         = "entry-added"
	EntryRemoved       = "entry-removed"
	BackendAdded       = "backend-added"
	BackendRemoved     = "backend-removed"
	FindingAppeared    = "finding-appeared"
	FindingResolved    = "finding-resolved"
)

var kindOrder = map[string]int{}

// KindRank returns the place of a change kind in the order changes are
// listed (nodes, mode and version, configuration, Services, endpoints,
// data plane, findings).
func KindRank(kind string) int { return kindOrder[kind] }

func init() {
	for i, k := range []string{NodeAdded, NodeRemoved, NodeRenamed, ModeChanged, VersionChanged, ConfigChanged,
		ServiceAdded, ServiceRemoved, ServicePortAdded, ServicePortRemoved, ServicePortChanged,
		EndpointAdded, EndpointRemoved, EndpointChanged, EntryAdded, EntryRemoved, BackendAdded, BackendRemoved,
		FindingAppeared, FindingResolved} {
		kindOrder[k] = i
	}
}

// A Change is one difference between the two sides.
type Change struct {
	Kind string `json:"kind"`
	// Node is the node (of the new side, else the old) the change is on.
	Node string `json:"node,omitempty"`
	// Service is the Service ("namespace/name") or service port name
	// ("namespace/name:port") concerned.
	Service string `json:"service,omitempty"`
	// Subject is what changed within it: an entry, an endpoint, a
	// configuration path, a check ID.
	Subject string `json:"subject,omitempty"`
	// Old and New are the values before and after ("" when absent).
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
	// Message describes the change in a sentence fragment.
	Message string `json:"message"`
	// Details are what the change carries along (the ports of a removed
	// Service, the defaults that follow a mode change).
	Details []string `json:"details,omitempty"`
	// OldEvidence and NewEvidence point at each side's inputs.
	OldEvidence []model.Evidence `json:"oldEvidence,omitempty"`
	NewEvidence []model.Evidence `json:"newEvidence,omitempty"`
}

// A Side describes one side of a node pair.
type Side struct {
	Node             string `json:"node,omitempty"`
	Bundle           string `json:"bundle,omitempty"`
	Mode             string `json:"mode,omitempty"`
	ModeSource       string `json:"modeSource,omitempty"`
	KubeProxyVersion string `json:"kubeProxyVersion,omitempty"`
	// DataPlane reports whether the side's data plane could be read in its
	// mode (a view exists).
	DataPlane bool `json:"dataPlane"`
	Inputs    int  `json:"inputs"`
}

// A Pair is a node compared across the two sides (one side is nil for a
// node added or removed).
type Pair struct {
	Node string `json:"node"`
	Old  *Side  `json:"old,omitempty"`
	New  *Side  `json:"new,omitempty"`
}

// Tool names the program that wrote a result.
type Tool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Result is the comparison of two analyses.
type Result struct {
	SchemaVersion int    `json:"schemaVersion"`
	Tool          Tool   `json:"tool"`
	OldPath       string `json:"old,omitempty"`
	NewPath       string `json:"new,omitempty"`
	Pairs         []Pair `json:"nodes"`
	// Changes are sorted: node, kind, service, subject.
	Changes []Change `json:"changes"`
	// Notes say what could not be compared.
	Notes []string `json:"notes,omitempty"`
	// Incomplete is set when part of a side's data plane could not be
	// compared (the notes say which): a result without changes then says
	// that what was compared does not differ, not that the sides do not.
	Incomplete bool `json:"incomplete,omitempty"`
	// Summary counts the changes by kind.
	Summary map[string]int `json:"summary"`
}

// Differs reports whether the sides differ.
func (r *Result) Differs() bool { return len(r.Changes) > 0 }

// Options tune a comparison.
type Options struct {
	// Checks are run on both sides to compare findings (default checks.All).
	Checks []*checks.Check
}

// Compare compares the snapshots of two sides. Nodes are paired by name;
// when each side holds one node, they are paired whatever their names.
func Compare(tool Tool, oldSnaps, newSnaps []*model.Snapshot, opts Options) *Result {
	list := opts.Checks
	if list == nil {
		list = checks.All
	}
	r := &Result{SchemaVersion: SchemaVersion, Tool: tool, Changes: []Change{}, Summary: map[string]int{}}
	type match struct{ old, new *model.Snapshot }
	var pairs []match
	if len(oldSnaps) == 1 && len(newSnaps) == 1 {
		pairs = append(pairs, match{oldSnaps[0], newSnaps[0]})
	} else {
		byName := map[string]*model.Snapshot{}
		for _, s := range newSnaps {
			byName[s.Node.Name] = s
		}
		used := map[*model.Snapshot]bool{}
		for _, o := range oldSnaps {
			n := byName[o.Node.Name]
			if n != nil && !used[n] {
				used[n] = true
			} else {
				n = nil
			}
			pairs = append(pairs, match{o, n})
		}
		for _, n := range newSnaps {
			if !used[n] {
				pairs = append(pairs, match{nil, n})
			}
		}
	}
	for _, p := range pairs {
		c := &comparer{r: r, checks: list}
		c.pair(p.old, p.new)
	}
	sort.SliceStable(r.Changes, func(i, j int) bool {
		a, b := r.Changes[i], r.Changes[j]
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		if kindOrder[a.Kind] != kindOrder[b.Kind] {
			return kindOrder[a.Kind] < kindOrder[b.Kind]
		}
		if a.Service != b.Service {
			return a.Service < b.Service
		}
		return a.Subject < b.Subject
	})
	for _, ch := range r.Changes {
		r.Summary[ch.Kind]++
	}
	return r
}

// comparer compares one pair of nodes.
type comparer struct {
	r      *Result
	checks []*checks.Check
	node   string
}

func (c *comparer) add(ch Change) {
	ch.Node = c.node
	c.r.Changes = append(c.r.Changes, ch)
}

func (c *comparer) note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	if c.node != "" {
		n = c.node + ": " + n
	}
	c.r.Notes = append(c.r.Notes, n)
}

// sideOf summarises a snapshot.
func sideOf(s *model.Snapshot, mode, source string, views []*view.View) *Side {
	sd := &Side{Node: s.Node.Name, Mode: mode, ModeSource: source, DataPlane: len(views) > 0, Inputs: len(s.Inputs)}
	if s.Version.Known() {
		sd.KubeProxyVersion = s.Version.String()
	}
	if len(s.Inputs) > 0 {
		sd.Bundle = s.Inputs[0].Bundle
	}
	return sd
}

func (c *comparer) pair(o, n *model.Snapshot) {
	switch {
	case o == nil:
		mode, src, views := checks.ViewsOf(n)
		c.node = n.Node.Name
		c.r.Pairs = append(c.r.Pairs, Pair{Node: c.node, New: sideOf(n, mode, src, views)})
		c.add(Change{Kind: NodeAdded, Subject: n.Node.Name, New: n.Node.Name, Message: "node " + orUnknown(n.Node.Name) + " only on the new side"})
		return
	case n == nil:
		mode, src, views := checks.ViewsOf(o)
		c.node = o.Node.Name
		c.r.Pairs = append(c.r.Pairs, Pair{Node: c.node, Old: sideOf(o, mode, src, views)})
		c.add(Change{Kind: NodeRemoved, Subject: o.Node.Name, Old: o.Node.Name, Message: "node " + orUnknown(o.Node.Name) + " only on the old side"})
		return
	}
	// One view per side: the checks run on the views compared. The sides
	// are prepared and checked at once, each on the cores the other
	// leaves idle; each then reads what its views program per service
	// port, and indexes its service ports, while the other may still
	// run its checks.
	var op, np *checks.Prepared
	var or, nr *checks.Result
	var oPlane, nPlane *checks.PlaneDigest
	var oPorts, nPorts map[string]*model.ServicePort
	both(func() {
		op = checks.Prepare(o, c.checks)
		or = op.Run()
		_, _, views := op.Views()
		oPlane, oPorts = checks.ReadPlaneDigest(views), portIndex(o)
	}, func() {
		np = checks.Prepare(n, c.checks)
		nr = np.Run()
		_, _, views := np.Views()
		nPlane, nPorts = checks.ReadPlaneDigest(views), portIndex(n)
	})
	oMode, oSrc, oViews := op.Views()
	nMode, nSrc, nViews := np.Views()
	c.node = n.Node.Name
	if c.node == "" {
		c.node = o.Node.Name
	}
	c.r.Pairs = append(c.r.Pairs, Pair{Node: c.node, Old: sideOf(o, oMode, oSrc, oViews), New: sideOf(n, nMode, nSrc, nViews)})
	if o.Node.Name != n.Node.Name {
		c.add(Change{Kind: NodeRenamed, Subject: "node", Old: o.Node.Name, New: n.Node.Name,
			Message: fmt.Sprintf("node %s → %s", orUnknown(o.Node.Name), orUnknown(n.Node.Name))})
	}
	var modeChange, versionChange *Change
	if oMode != nMode {
		ch := Change{Kind: ModeChanged, Subject: "mode", Old: oMode, New: nMode, Message: fmt.Sprintf("proxy mode %s → %s", oMode, nMode),
			OldEvidence: modeEvidence(o, oMode), NewEvidence: modeEvidence(n, nMode)}
		modeChange = &ch
	}
	if o.Version.String() != n.Version.String() {
		ch := Change{Kind: VersionChanged, Subject: "kube-proxy version", Old: o.Version.String(), New: n.Version.String(),
			Message:     fmt.Sprintf("kube-proxy %s → %s", o.Version, n.Version),
			OldEvidence: versionEvidence(o), NewEvidence: versionEvidence(n)}
		versionChange = &ch
	}
	c.config(o, n, modeChange, versionChange)
	if modeChange != nil {
		c.add(*modeChange)
	}
	if versionChange != nil {
		c.add(*versionChange)
	}
	removed := c.services(o, n)
	c.ports(oPorts, nPorts, removed)
	c.dataPlane(o, n, oMode, nMode, oPlane, nPlane, len(oViews), len(nViews), removed,
		lackedFamilies(op.PartialFamilies(), oViews, nViews), lackedFamilies(np.PartialFamilies(), nViews, oViews))
	c.findings(or, nr)
}

// both runs a and b at once and returns when both are done, raising again
// a panic of a (one of b is raised where it happens).
func both(a, b func()) {
	g := fault.Group{Name: "diff"}
	g.Go(func() error { a(); return nil })
	b()
	if err := g.Wait(); err != nil {
		panic(err)
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}

func modeEvidence(s *model.Snapshot, mode string) []model.Evidence {
	if s.Config != nil {
		return []model.Evidence{model.EvidenceAt(s.Config.FieldPos("mode"), "mode: "+mode)}
	}
	return nil
}

func versionEvidence(s *model.Snapshot) []model.Evidence {
	for _, in := range s.Inputs {
		if in.Path == s.Version.Source {
			return []model.Evidence{{File: in.Path, Line: 1, Text: "kube-proxy " + s.Version.String()}}
		}
	}
	return nil
}

// config compares the configuration fields. Fields neither side sets (the
// defaults kube-proxy fills in) follow from a mode or version change and
// are listed as its details.
func (c *comparer) config(o, n *model.Snapshot, modeChange, versionChange *Change) {
	if (o.Config == nil) != (n.Config == nil) {
		c.note("the kube-proxy configuration is only in the inputs of the %s side: it was not compared", map[bool]string{true: "old", false: "new"}[o.Config != nil])
		return
	}
	if o.Config == nil {
		return
	}
	ov, nv := checks.ConfigValues(o.Config), checks.ConfigValues(n.Config)
	fields := map[string]bool{}
	for k := range ov {
		fields[k] = true
	}
	for k := range nv {
		fields[k] = true
	}
	var keys []string
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if ov[k] == nv[k] || k == "mode" && modeChange != nil || k == "hostnameOverride" && o.Node.Name != n.Node.Name {
			continue
		}
		old, new := valueOrUnset(ov[k]), valueOrUnset(nv[k])
		explicit := explicitlySet(o.Config, k, ov[k]) || explicitlySet(n.Config, k, nv[k])
		if !explicit && (modeChange != nil || versionChange != nil) {
			into := modeChange
			if into == nil {
				into = versionChange
			}
			d := fmt.Sprintf("%s: %s → %s", k, old, new)
			if note := defaultNote(n.Config, k); note != "" {
				d += " (" + note + ")"
			}
			into.Details = append(into.Details, d)
			continue
		}
		c.add(Change{Kind: ConfigChanged, Subject: k, Old: old, New: new, Message: fmt.Sprintf("%s: %s → %s", k, old, new),
			OldEvidence: []model.Evidence{model.EvidenceAt(o.Config.FieldPos(k), k+": "+old)},
			NewEvidence: []model.Evidence{model.EvidenceAt(n.Config.FieldPos(k), k+": "+new)}})
	}
}

// explicitlySet reports whether the user gave a field its value (in the
// file or a flag), rather than kube-proxy defaulting it: a field written as
// null or empty is unset.
func explicitlySet(c *model.Config, path, value string) bool {
	if value == "" {
		return false
	}
	if c.Effective != nil {
		if f := c.Effective.Field(path); f != nil {
			return f.Origin == kpconfig.OriginFile || f.Origin == kpconfig.OriginFlag
		}
	}
	return c.IsSet(path)
}

func valueOrUnset(s string) string {
	if s == "" {
		return "unset"
	}
	return s
}

func defaultNote(c *model.Config, path string) string {
	if c.Effective == nil {
		return ""
	}
	if f := c.Effective.Field(path); f != nil {
		return f.Note
	}
	return ""
}

// services compares the Services and returns the names of those removed
// or added (their ports and rules are not listed one by one). A Service is
// known to a side by its object or its service ports; the evidence and the
// ports of one only a side knows are read once it is found, so that two
// sides of the same Services build no name, evidence or list per Service.
func (c *comparer) services(o, n *model.Snapshot) map[string]bool {
	gone := map[string]bool{}
	// known maps each Service of a side to its last object (-1 for a
	// Service only its service ports name).
	known := func(s *model.Snapshot) map[serviceKey]int {
		out := make(map[serviceKey]int, len(s.Objects.Services))
		for i, x := range s.Objects.Services {
			out[keyOf(x.Namespace, x.Name)] = i
		}
		for _, sp := range s.Ports {
			k := keyOf(sp.Name.Namespace, sp.Name.Name)
			if _, ok := out[k]; !ok {
				out[k] = -1
			}
		}
		return out
	}
	oKnown, nKnown := known(o), known(n)
	// only lists, sorted by name, the Services of a side the other does
	// not know, with their evidence and ports.
	type onlyService struct {
		name  string
		ev    model.Evidence
		ports []*model.ServicePort
	}
	only := func(s *model.Snapshot, mine, theirs map[serviceKey]int) []onlyService {
		at := map[serviceKey]int{}
		var out []onlyService
		for k, i := range mine {
			if _, ok := theirs[k]; ok {
				continue
			}
			x := onlyService{name: k.ns + "/" + k.name}
			if i >= 0 {
				x.ev = model.EvidenceAt(s.Objects.Services[i].Pos, "Service "+x.name)
			}
			at[k] = len(out)
			out = append(out, x)
		}
		if len(out) == 0 {
			return nil
		}
		for _, sp := range s.Ports {
			if j, ok := at[keyOf(sp.Name.Namespace, sp.Name.Name)]; ok {
				out[j].ports = append(out[j].ports, sp)
			}
		}
		sort.Slice(out, func(a, b int) bool { return out[a].name < out[b].name })
		return out
	}
	describe := func(ports []*model.ServicePort) []string {
		var out []string
		for _, sp := range ports {
			d := fmt.Sprintf("port %s %d/%s", orDash(sp.Name.Port), sp.Port, sp.Protocol)
			if sp.Skip != "" {
				d += " (" + sp.Skip + ")"
			}
			d += fmt.Sprintf(", %d endpoints", len(sp.Endpoints))
			out = append(out, d)
		}
		return out
	}
	for _, x := range only(o, oKnown, nKnown) {
		gone[x.name] = true
		c.add(Change{Kind: ServiceRemoved, Service: x.name, Old: x.name, Message: "Service " + x.name + " removed", Details: describe(x.ports),
			OldEvidence: []model.Evidence{x.ev}})
	}
	for _, x := range only(n, nKnown, oKnown) {
		gone[x.name] = true
		c.add(Change{Kind: ServiceAdded, Service: x.name, New: x.name, Message: "Service " + x.name + " added", Details: describe(x.ports),
			NewEvidence: []model.Evidence{x.ev}})
	}
	return gone
}

// serviceKey is a Service's name, "namespace/name", in two parts: cut at
// its first slash (see keyOf).
type serviceKey struct{ ns, name string }

// keyOf returns the key of the Service of a namespace and a name: two
// Services have one key exactly when their names are the same string, a
// namespace holding a slash (which none does) included.
func keyOf(ns, name string) serviceKey {
	if i := strings.IndexByte(ns, '/'); i >= 0 {
		return serviceKey{ns[:i], ns[i+1:] + "/" + name}
	}
	return serviceKey{ns, name}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// portSig describes what kube-proxy derives from a service port, to tell
// that it changed.
func portSig(sp *model.ServicePort) map[string]string {
	addrs := func(a []string) string { return strings.Join(a, ",") }
	var cips, eips, lbs []string
	for _, a := range sp.ClusterIPs {
		cips = append(cips, a.String())
	}
	for _, a := range sp.ExternalIPs {
		eips = append(eips, a.String())
	}
	for _, a := range sp.LoadBalancerVIPs {
		lbs = append(lbs, a.String())
	}
	sig := map[string]string{
		"clusterIPs":            addrs(cips),
		"externalIPs":           addrs(eips),
		"loadBalancerIPs":       addrs(lbs),
		"port":                  fmt.Sprint(sp.Port),
		"protocol":              string(sp.Protocol),
		"nodePort":              fmt.Sprint(sp.NodePort),
		"externalTrafficPolicy": map[bool]string{true: "Local", false: "Cluster"}[sp.ExternalPolicyLocal],
		"internalTrafficPolicy": map[bool]string{true: "Local", false: "Cluster"}[sp.InternalPolicyLocal],
		"sessionAffinity":       map[bool]string{true: fmt.Sprintf("ClientIP %ds", sp.AffinityTimeout), false: "None"}[sp.AffinityClientIP],
		"skipped":               sp.Skip,
	}
	if sp.NodePort == 0 {
		sig["nodePort"] = ""
	}
	return sig
}

// portIndex maps the names of a snapshot's service ports to them (the
// last of a name).
func portIndex(s *model.Snapshot) map[string]*model.ServicePort {
	out := make(map[string]*model.ServicePort, len(s.Ports))
	for _, sp := range s.Ports {
		out[sp.String()] = sp
	}
	return out
}

// samePort reports whether two service ports hold the same values of
// what portSig describes (and of the affinity's timeout, which it
// describes only with ClientIP affinity): their signatures are then equal.
func samePort(a, b *model.ServicePort) bool {
	return a.Port == b.Port && a.Protocol == b.Protocol && a.NodePort == b.NodePort &&
		a.ExternalPolicyLocal == b.ExternalPolicyLocal && a.InternalPolicyLocal == b.InternalPolicyLocal &&
		a.AffinityClientIP == b.AffinityClientIP && a.AffinityTimeout == b.AffinityTimeout && a.Skip == b.Skip &&
		slices.Equal(a.ClusterIPs, b.ClusterIPs) && slices.Equal(a.ExternalIPs, b.ExternalIPs) &&
		slices.Equal(a.LoadBalancerVIPs, b.LoadBalancerVIPs)
}

// ports compares the service ports and their endpoints of Services on
// both sides, given by name (see portIndex).
func (c *comparer) ports(op, np map[string]*model.ServicePort, gone map[string]bool) {
	for _, k := range sortedKeys(op) {
		sp := op[k]
		if len(gone) > 0 && gone[sp.Name.Service()] {
			continue
		}
		nsp := np[k]
		if nsp == nil {
			c.add(Change{Kind: ServicePortRemoved, Service: k, Old: k, Message: "service port " + k + " removed",
				OldEvidence: []model.Evidence{checks.ServiceEvidence(sp)}})
			continue
		}
		if samePort(sp, nsp) {
			c.endpoints(k, sp, nsp)
			continue
		}
		os, ns := portSig(sp), portSig(nsp)
		for _, f := range sortedKeys(os) {
			if os[f] != ns[f] {
				c.add(Change{Kind: ServicePortChanged, Service: k, Subject: f, Old: orDash(os[f]), New: orDash(ns[f]),
					Message:     fmt.Sprintf("%s %s: %s → %s", k, f, orDash(os[f]), orDash(ns[f])),
					OldEvidence: []model.Evidence{checks.ServiceEvidence(sp)}, NewEvidence: []model.Evidence{checks.ServiceEvidence(nsp)}})
			}
		}
		c.endpoints(k, sp, nsp)
	}
	for _, k := range sortedKeys(np) {
		sp := np[k]
		if op[k] != nil || len(gone) > 0 && gone[sp.Name.Service()] {
			continue
		}
		c.add(Change{Kind: ServicePortAdded, Service: k, New: k, Message: "service port " + k + " added",
			NewEvidence: []model.Evidence{checks.ServiceEvidence(sp)}})
	}
}

func epState(e *model.Endpoint) string {
	var s []string
	if e.Ready {
		s = append(s, "ready")
	} else if e.Serving {
		s = append(s, "serving")
	} else {
		s = append(s, "not ready")
	}
	if e.Terminating {
		s = append(s, "terminating")
	}
	return strings.Join(s, ", ")
}

// sameEndpoints reports whether two lists of endpoints are the same
// endpoints in the same states, in the same order: they then differ in
// nothing endpoints compares.
func sameEndpoints(a, b []*model.Endpoint) bool {
	if len(a) != len(b) {
		return false
	}
	for i, x := range a {
		y := b[i]
		if x.IP != y.IP || x.Port != y.Port || x.Ready != y.Ready || x.Serving != y.Serving || x.Terminating != y.Terminating {
			return false
		}
	}
	return true
}

func (c *comparer) endpoints(name string, o, n *model.ServicePort) {
	if sameEndpoints(o.Endpoints, n.Endpoints) {
		return
	}
	index := func(sp *model.ServicePort) map[string]*model.Endpoint {
		out := map[string]*model.Endpoint{}
		for _, e := range sp.Endpoints {
			out[e.String()] = e
		}
		return out
	}
	oe, ne := index(o), index(n)
	for _, k := range sortedKeys(oe) {
		e := oe[k]
		if ne[k] == nil {
			c.add(Change{Kind: EndpointRemoved, Service: name, Subject: k, Old: epState(e), Message: fmt.Sprintf("%s: endpoint %s removed", name, k),
				OldEvidence: []model.Evidence{checks.EndpointEvidence(o, e)}})
		} else if a, b := epState(e), epState(ne[k]); a != b {
			c.add(Change{Kind: EndpointChanged, Service: name, Subject: k, Old: a, New: b, Message: fmt.Sprintf("%s: endpoint %s %s → %s", name, k, a, b),
				OldEvidence: []model.Evidence{checks.EndpointEvidence(o, e)}, NewEvidence: []model.Evidence{checks.EndpointEvidence(n, ne[k])}})
		}
	}
	for _, k := range sortedKeys(ne) {
		if oe[k] == nil {
			c.add(Change{Kind: EndpointAdded, Service: name, Subject: k, New: epState(ne[k]), Message: fmt.Sprintf("%s: endpoint %s added", name, k),
				NewEvidence: []model.Evidence{checks.EndpointEvidence(n, ne[k])}})
		}
	}
}

// lackedFamilies returns, by family, why a side's data plane may not hold
// all that kube-proxy programs there, so that what it lacks of the other
// side's is not a change: the dump or listing of the family is partial
// (partial, from [checks.Prepared.PartialFamilies]), or the side has no
// data plane of a family the other side has one of (mine and theirs are
// the two sides' views), as a listing of one table or a dump of one
// family gives.
func lackedFamilies(partial map[model.Family]string, mine, theirs []*view.View) map[model.Family]string {
	var out map[model.Family]string
	set := func(fam model.Family, why string) {
		if out == nil {
			out = map[model.Family]string{}
		}
		out[fam] = why
	}
	for fam, why := range partial {
		set(fam, "its "+string(fam)+" data plane may not be whole: "+why)
	}
	for _, v := range theirs {
		if out[v.Family] != "" || slices.ContainsFunc(mine, func(w *view.View) bool { return w.Family == v.Family }) {
			continue
		}
		set(v.Family, "its inputs hold no "+string(v.Family)+" data plane")
	}
	return out
}

// dataPlane compares the entries and backends of each service port, read
// from each side's views (oViews and nViews of them). What a side whose
// data plane of a family may not hold all of it (oLacks, nLacks; see
// lackedFamilies) does not show of that family is not compared: a note
// per such side and family says so, and how many of the other side's
// entries and backends were left out.
func (c *comparer) dataPlane(o, n *model.Snapshot, oMode, nMode string, oPlane, nPlane *checks.PlaneDigest, oViews, nViews int, gone map[string]bool,
	oLacks, nLacks map[model.Family]string) {
	switch {
	case oViews == 0 && nViews == 0:
		c.note("neither side has a data plane proxyscan can read (old: %s mode, new: %s mode): the data planes were not compared", oMode, nMode)
		c.r.Incomplete = true
		return
	case oViews == 0:
		c.note("the data plane of the old side (%s mode) could not be compared: %s", oMode, noViewReason(o, oMode))
		c.r.Incomplete = true
		return
	case nViews == 0:
		c.note("the data plane of the new side (%s mode) could not be compared: %s", nMode, noViewReason(n, nMode))
		c.r.Incomplete = true
		return
	}
	if oMode != nMode {
		c.note("the mode changed: entries and backends are compared in mode-neutral form (%s rules before, %s after)", oMode, nMode)
	}
	type leftOut struct {
		side string
		fam  model.Family
	}
	left := map[leftOut]int{}
	for _, ch := range checks.ComparePlaneDigests(oPlane, nPlane) {
		if sp, _ := model.ParseServicePortName(ch.Service); len(gone) > 0 && gone[sp.Service()] {
			continue
		}
		if ch.Old && nLacks[ch.Family] != "" {
			left[leftOut{"new", ch.Family}]++
			continue
		}
		if !ch.Old && oLacks[ch.Family] != "" {
			left[leftOut{"old", ch.Family}]++
			continue
		}
		what, kind := "entry", map[bool]string{true: EntryRemoved, false: EntryAdded}[ch.Old]
		if ch.Backend {
			what, kind = "backend", map[bool]string{true: BackendRemoved, false: BackendAdded}[ch.Old]
		}
		x := Change{Kind: kind, Service: ch.Service, Subject: ch.Subject}
		if ch.Old {
			x.Old, x.OldEvidence = ch.Subject, ch.Evidence
			x.Message = fmt.Sprintf("%s: %s %s no longer programmed", ch.Service, what, ch.Subject)
		} else {
			x.New, x.NewEvidence = ch.Subject, ch.Evidence
			x.Message = fmt.Sprintf("%s: %s %s newly programmed", ch.Service, what, ch.Subject)
		}
		c.add(x)
	}
	for _, side := range []struct {
		name, other string
		lacks       map[model.Family]string
	}{{"old", "new", oLacks}, {"new", "old", nLacks}} {
		for _, fam := range []model.Family{model.IPv4, model.IPv6} {
			why := side.lacks[fam]
			if why == "" {
				continue
			}
			c.r.Incomplete = true
			c.note("the %s side: %s; what it does not show was not compared: %s only the %s side shows left out",
				side.name, why, plural(left[leftOut{side.name, fam}], "entry or backend", "entries and backends"), side.other)
		}
	}
}

// plural returns "1 entry", "2 entries".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func noViewReason(s *model.Snapshot, mode string) string {
	for _, in := range s.Inputs {
		if strings.HasPrefix(string(in.Kind), "nft") && mode == model.ModeNFTables {
			return fmt.Sprintf("%s holds no kube-proxy table", in.Path)
		}
		if strings.HasPrefix(string(in.Kind), "ipvs") && mode == model.ModeIPVS {
			return fmt.Sprintf("proxyscan does not read a %s data plane into its view yet (%s is in the inputs)", mode, in.Path)
		}
	}
	return fmt.Sprintf("no %s data plane in the inputs", mode)
}

// findings runs the checks on both sides and lists the findings that
// appeared and those resolved (by check, service, endpoint and message).
// A finding only one side reports is not listed when the other side's
// check did not cover all it checks (a partial data plane, a family with
// none: see partlyChecked): it may only be outside what that side shows.
// A note says how many were left out, and why.
func (c *comparer) findings(or, nr *checks.Result) {
	key := func(f checks.Finding) string {
		return strings.Join([]string{f.Check, f.Service, f.Endpoint, f.Message}, "\x00")
	}
	ran := func(res *checks.Result) map[string]checks.Status {
		out := map[string]checks.Status{}
		for _, s := range res.Statuses {
			out[s.ID] = s
		}
		return out
	}
	oran, nran := ran(or), ran(nr)
	ok, nk := map[string]checks.Finding{}, map[string]checks.Finding{}
	for _, f := range or.Findings {
		ok[key(f)] = f
	}
	for _, f := range nr.Findings {
		nk[key(f)] = f
	}
	unchecked := map[string]int{}
	partly := map[[2]string]int{} // side and check
	for _, k := range sortedKeys(ok) {
		f := ok[k]
		if _, still := nk[k]; still {
			continue
		}
		if st := nran[f.Check]; st.State != "ran" {
			unchecked[f.Check]++
			continue
		}
		if partlyChecked(nran[f.Check]) != "" {
			partly[[2]string{"new", f.Check}]++
			continue
		}
		c.add(Change{Kind: FindingResolved, Service: f.Service, Subject: f.Check, Old: f.Severity.String(),
			Message: fmt.Sprintf("%s resolved: %s", f.Check, f.Message), OldEvidence: f.Evidence})
	}
	for _, k := range sortedKeys(nk) {
		f := nk[k]
		if _, before := ok[k]; before {
			continue
		}
		if partlyChecked(oran[f.Check]) != "" {
			partly[[2]string{"old", f.Check}]++
			continue
		}
		c.add(Change{Kind: FindingAppeared, Service: f.Service, Subject: f.Check, New: f.Severity.String(),
			Message: fmt.Sprintf("%s appeared: %s", f.Check, f.Message), NewEvidence: f.Evidence})
	}
	for _, id := range sortedKeys(unchecked) {
		c.note("%d %s findings of the old side could not be re-checked: the check was skipped on the new side (%s)", unchecked[id], id, nran[id].Reason)
	}
	for _, side := range []struct{ name, other string }{{"new", "old"}, {"old", "new"}} {
		st := nran
		if side.name == "old" {
			st = oran
		}
		ids := map[string]int{}
		for k, n := range partly {
			if k[0] == side.name {
				ids[k[1]] = n
			}
		}
		for _, id := range sortedKeys(ids) {
			c.r.Incomplete = true
			c.note("%d %s findings only the %s side reports were not compared: the check did not cover all of the %s side (%s)",
				ids[id], id, side.other, side.name, partlyChecked(st[id]))
		}
	}
}

// partlyChecked returns the note of a check's status that says part of
// what it checks was not (a partial data plane, a family without one),
// or "".
func partlyChecked(st checks.Status) string {
	for _, n := range st.Notes {
		if strings.HasPrefix(n, "not checked for ") || strings.HasPrefix(n, "no "+string(model.IPv4)+" data plane in the inputs") ||
			strings.HasPrefix(n, "no "+string(model.IPv6)+" data plane in the inputs") {
			return n
		}
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
