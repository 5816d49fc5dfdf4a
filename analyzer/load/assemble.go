package load

import (
	"fmt"
	"github.com/google/nftables"
	"maps"
	"net/netip"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/conntrack"
	"github.com/proxyscan/proxyscan/parsers/healthz"
	"github.com/proxyscan/proxyscan/parsers/ipaddr"
	"github.com/proxyscan/proxyscan/parsers/iproute"
	"github.com/proxyscan/proxyscan/parsers/ipset"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
	"github.com/proxyscan/proxyscan/parsers/klog"
	"github.com/proxyscan/proxyscan/parsers/kpcmdline"
	"github.com/proxyscan/proxyscan/parsers/kpconfig"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
	"github.com/proxyscan/proxyscan/parsers/kube"
	"github.com/proxyscan/proxyscan/parsers/manifest"
	"github.com/proxyscan/proxyscan/parsers/metrics"
	"github.com/proxyscan/proxyscan/parsers/modules"
	"github.com/proxyscan/proxyscan/parsers/nft"
	"github.com/proxyscan/proxyscan/parsers/paste"
	"github.com/proxyscan/proxyscan/parsers/sysctl"
)

// clusterLevel reports whether a parsed value describes the cluster (and
// so applies to every node) rather than one node's data plane.
func clusterLevel(p parsed) bool {
	switch p.value.(type) {
	case *kube.Objects, *kpconfig.Config:
		return true
	}
	return false
}

// sharesKind returns what a bundle's files hold of the kind of one of the
// loose node-level files ("a sysctl listing, node/sysctl.txt"; an
// iptables dump of the same family counts, of the other family not), or
// "" when nothing.
func sharesKind(bundle, loose []parsed) string {
	have := map[string]string{}
	for _, r := range bundle {
		have[kindKey(r)] = r.f.name
	}
	for _, r := range loose {
		if name, ok := have[kindKey(r)]; ok {
			return fmt.Sprintf("a file of the kind of %s (%s: %s)", r.f.name, r.kind, name)
		}
	}
	return ""
}

// kindKey is a file's kind, with the family of an iptables dump.
func kindKey(r parsed) string {
	if d, ok := r.value.(*iptables.Dump); ok {
		return string(r.kind) + "/" + string(d.Family)
	}
	return string(r.kind)
}

// builder accumulates one snapshot.
type builder struct {
	snap    *model.Snapshot
	configs []configCandidate
	version *kpversion.Version
	vpos    parsers.Pos
	cmdline *kpcmdline.Cmdline
	// fromNFT are the iptables dumps read from the iptables-nft tables of
	// nft rulesets, used where no iptables dump of their family is given.
	fromNFT []nftDumps
	// exports counts the Kubernetes exports read: objects given twice
	// are looked for only when there are several.
	exports int
	// drafts are the service ports drafted of the exports added (see
	// model.DraftPortsAhead).
	drafts []*model.PortsDraft
	// prompts are the hosts the shell prompts pasted in the node's files
	// name, with the file (see promptOf).
	prompts []filePrompt
	// unsure is set when the node's name was looked for where the
	// exports place endpoints while Options.Only left objects out.
	unsure bool
	// serviceExports and sliceExports count the exports holding
	// Services, and EndpointSlices, decoded or left out.
	serviceExports, sliceExports int
}

// filePrompt is the host the prompts of a file name.
type filePrompt struct {
	file string
	hostPrompt
}

// nftDumps are the iptables dumps read from the iptables-nft tables of the
// nft ruleset of an input (by its index), and the notes of its rules not
// read.
type nftDumps struct {
	input int
	dumps []*iptables.Dump
	notes []parsers.LineNote
}

// configCandidate is one configuration found in the inputs.
type configCandidate struct {
	cfg    *kpconfig.Config
	source string
}

// joinDirBundles reads the node-level files of a directory (given, or
// below one given) that holds one bundle, and no other (case/n1/ holding
// n1.tgz and sysctl.txt), with that bundle's node, as the loose files
// given with one bundle are, unless it holds a file of the kind of one of
// them: the files of a plain directory made a node (split) that holds it,
// and the loose files whose nearest directory holding a bundle holds that
// one only. The files joined are named as loose files, by their paths in
// the directory given, and noted. It returns the groups left.
func joinDirBundles(groups map[string][]parsed, names []string, split map[string]bool) []string {
	// one returns the bundles below dir: how many, and the last.
	one := func(dir string) (bundle string, n int) {
		for _, g := range names {
			if !split[g] && below(g, dir) {
				bundle, n = g, n+1
			}
		}
		return bundle, n
	}
	targets := map[string][]int{} // bundle -> the files of groups[""] to join
	var into []string             // split groups to join, and their bundle
	for _, g := range names {
		if b, n := one(g); split[g] && n == 1 {
			into = append(into, g, b)
		}
	}
	for i, r := range groups[""] {
		arg := r.f.dir
		if r.f.orig != "" {
			arg = r.f.origDir
		}
		if arg == "" || r.f.disk == "" || r.value == nil || clusterLevel(r) {
			continue
		}
		arg = filepath.Clean(arg) // as the paths below it are ("./case/" holds case/n1)
		for d := filepath.Dir(r.f.disk); d == arg || below(d, arg); d = filepath.Dir(d) {
			if b, n := one(d); n > 0 {
				if n == 1 {
					targets[b] = append(targets[b], i)
				}
				break
			}
			if d == arg {
				break
			}
		}
	}
	if len(into) == 0 && len(targets) == 0 {
		return names
	}
	join := func(b string, files []parsed) bool {
		var node []parsed
		for _, r := range files {
			if r.value != nil && !clusterLevel(r) {
				node = append(node, r)
			}
		}
		if sharesKind(groups[b], node) != "" {
			return false
		}
		for _, r := range files {
			if r.f.orig != "" {
				r.f.name, r.f.dir = r.f.orig, r.f.origDir
			}
			r.f.group = ""
			if r.note != "" {
				r.note += "; "
			}
			r.note += "read with the node of " + b
			groups[b] = append(groups[b], r)
		}
		return true
	}
	gone := map[string]bool{}
	for i := 0; i < len(into); i += 2 {
		if join(into[i+1], groups[into[i]]) {
			gone[into[i]] = true
			delete(groups, into[i])
		}
	}
	taken := map[int]bool{}
	for _, b := range slices.Sorted(maps.Keys(targets)) {
		files := make([]parsed, 0, len(targets[b]))
		for _, i := range targets[b] {
			files = append(files, groups[""][i])
		}
		if join(b, files) {
			for _, i := range targets[b] {
				taken[i] = true
			}
		}
	}
	var rest []parsed
	for i, r := range groups[""] {
		if !taken[i] {
			rest = append(rest, r)
		}
	}
	if len(groups[""]) > 0 {
		groups[""] = rest
	}
	return slices.DeleteFunc(names, func(g string) bool { return gone[g] })
}

// below reports whether the path p is below the directory dir (both
// clean, "." the working directory).
func below(p, dir string) bool {
	if dir == "." {
		return p != "." && !filepath.IsAbs(p) && p != ".." && !strings.HasPrefix(p, ".."+string(filepath.Separator))
	}
	return strings.HasPrefix(p, dir+string(filepath.Separator))
}

// notABundle reports whether the files of a group are those of an
// archive of which none is of a kind proxyscan reads.
func notABundle(files []parsed) bool {
	for _, r := range files {
		if !r.f.archive || r.kind != parsers.KindUnknown || r.value != nil {
			return false
		}
	}
	return len(files) > 0
}

func assemble(results []parsed, opts Options) ([]*model.Snapshot, error) {
	// splitNote is the note of the nodes of plain directories (split),
	// beside which bundles may be nodes too.
	var splitNote string
	var split map[string]bool
	if d := opts.Shared.dirSplit(); d != nil {
		splitNote = d.record(results)
		_, split = groupByCandidates(results, true)
	} else if slices.ContainsFunc(results, func(r parsed) bool { return r.f.orig != "" }) {
		splitNote, split = groupByCandidates(results, false)
	}
	groups := map[string][]parsed{}
	for _, r := range results {
		groups[r.f.group] = append(groups[r.f.group], r)
	}
	var names []string
	for g := range groups {
		if g != "" {
			names = append(names, g)
		}
	}
	sort.Strings(names)
	// An archive that holds nothing proxyscan reads (a ticket's logs.tgz
	// read with bundles or a node's loose files, or the files of an
	// archive of bundles beside them) is no node: its files are listed,
	// saying so, named by their paths in it after its own (its path in
	// the folder that held it, or as given), not as a bundle's files (a
	// node's bundle is the first among its inputs).
	var listed []parsed
	loneNode := slices.ContainsFunc(groups[""], func(r parsed) bool { return r.value != nil && !clusterLevel(r) })
	if kept := slices.DeleteFunc(slices.Clone(names), func(g string) bool { return notABundle(groups[g]) }); (len(kept) > 0 || loneNode) && len(kept) < len(names) {
		for _, g := range names {
			if slices.Contains(kept, g) {
				continue
			}
			note := fmt.Sprintf("in %s, which is not a bundle: nothing in it is kube-proxy data (leave it out of the inputs)", g)
			if slices.ContainsFunc(kept, func(k string) bool { return strings.HasPrefix(k, g+"/") }) {
				// An archive of bundles with files beside them
				// (a zip's __MACOSX/).
				note = fmt.Sprintf("in %s, outside the bundles it holds", g)
			}
			for _, r := range groups[g] {
				r.note = note
				at := g // the archive, as given or as found in a folder
				if r.f.within != "" {
					at = r.f.within
				}
				r.f.name, r.f.group = path.Join(filepath.ToSlash(at), r.f.name), ""
				listed = append(listed, r)
			}
		}
		names = kept
	}
	names = joinDirBundles(groups, names, split)
	// Loose files: cluster-level values (exports, configuration) apply to
	// every node; files with no parsed value (unknown kinds) are listed
	// with the first node; node-level files (dumps, listings, logs) join
	// the node of the one bundle given when it holds nothing of their
	// kinds (a sysctl listing or a conntrack table added to a bundle),
	// and otherwise form a node of their own.
	var shared []parsed
	joined := map[string]string{} // loose file joined to a bundle's node -> the bundle
	looseNote := ""
	if loose := groups[""]; len(loose) > 0 {
		var nodeFiles []parsed
		for _, r := range loose {
			switch {
			case r.value == nil:
				listed = append(listed, r)
			case clusterLevel(r):
				shared = append(shared, r)
			default:
				nodeFiles = append(nodeFiles, r)
			}
		}
		clash := ""
		if len(names) == 1 {
			clash = sharesKind(groups[names[0]], nodeFiles)
		}
		switch {
		case len(nodeFiles) == 0 && len(names) > 0:
		case len(names) == 1 && clash == "":
			for _, r := range nodeFiles {
				joined[r.f.name] = names[0]
			}
			groups[names[0]] = append(groups[names[0]], nodeFiles...)
		default:
			names = append(names, "")
			groups[""] = nodeFiles
			if clash != "" {
				looseNote = fmt.Sprintf("the loose files are read as a node of their own, not with %s: it already holds %s", names[0], clash)
			}
		}
	}
	var out []*model.Snapshot
	for _, g := range names {
		b := &builder{snap: &model.Snapshot{Objects: &kube.Objects{}}}
		for _, r := range groups[g] {
			b.add(r)
			if bundle, ok := joined[r.f.name]; ok && r.f.group == "" {
				in := &b.snap.Inputs[len(b.snap.Inputs)-1]
				if in.Note != "" {
					in.Note += "; "
				}
				in.Note += "read with the node of " + bundle
			}
		}
		for _, r := range shared {
			b.add(r)
		}
		if len(out) == 0 {
			for _, r := range listed {
				b.add(r)
			}
		}
		if err := b.finish(opts); err != nil {
			return nil, err
		}
		if g == "" && looseNote != "" {
			b.snap.Notes = append(b.snap.Notes, looseNote)
		}
		if split[g] && splitNote != "" {
			b.snap.Notes = append(b.snap.Notes, splitNote)
		}
		out = append(out, b.snap)
	}
	if opts.Compact {
		// Exports given as loose files are shared by every snapshot: only
		// now, with all ports built, can they be trimmed. Those shared
		// with other units (see Exports) are not: their Services have
		// trimmed copies.
		var held []map[*kube.Service]*kube.Service
		for _, r := range results {
			if r.compacted != nil {
				held = append(held, r.compacted)
			}
		}
		compacted := func(svc *kube.Service) *kube.Service {
			if c := opts.Shared.compacted(svc); c != nil {
				return c
			}
			for _, m := range held {
				if c := m[svc]; c != nil {
					return c
				}
			}
			return nil
		}
		for _, s := range out {
			compactSnapshot(s, compacted)
		}
	}
	return out, nil
}

func (b *builder) add(r parsed) {
	if r.prompt.host != "" {
		b.prompts = append(b.prompts, filePrompt{r.f.name, r.prompt})
	}
	in := model.Input{Path: r.f.name, Kind: r.kind, Bytes: r.size, Bundle: r.f.group, Note: r.note,
		Skipped: parsers.Ranges(r.notes, true), Changed: parsers.Ranges(r.notes, false), Encoding: r.f.decoded, Compression: r.f.compressed,
		Lines: r.f.lines}
	switch v := r.value.(type) {
	case *kube.Objects:
		in.Partial = v.Partial
		if v.Partial != "" {
			b.snap.ExportCuts = append(b.snap.ExportCuts, model.CutOf(r.f.name, v))
		}
	case *ipset.Dump:
		in.Partial = v.PartialReason
	case *ipvs.Dump:
		in.Partial = v.PartialReason
	case *ipaddr.Dump:
		in.Partial = v.Partial
	case *modules.List:
		in.Partial = v.Partial
	case *metrics.Page:
		in.Partial = filteredReason(v.Filter)
	case *sysctl.Listing:
		in.Partial = filteredReason(v.Filter)
	case *nft.Ruleset:
		in.Partial = v.Partial
		if t := iptablesNFTTables(v); t != "" && in.Note == "" {
			in.Note = "holds " + t + " of iptables-nft: kube-proxy's iptables-mode rules as nft lists them, not read as iptables rules (iptables-save reads them as such)"
			// A paste of the ruleset of a node in iptables mode is read as
			// its iptables-save; a collected ruleset, and one that also
			// holds nftables mode's tables, are not.
			if r.f.strict || hasKubeProxyTable(v) {
				break
			}
			if dumps, notes, ok, err := iptables.FromNFT(r.f.name, v); err == nil && ok {
				b.fromNFT = append(b.fromNFT, nftDumps{len(b.snap.Inputs), dumps, notes})
			}
		}
	}
	switch v := r.value.(type) {
	case *iptables.Dump:
		in.Partial = v.PartialReason
		if v.Family == iptables.FamilyUnknown {
			v.Family = iptables.IPv4
			if strings.Contains(strings.ToLower(r.f.name), "ip6tables") {
				v.Family = iptables.IPv6
			}
		}
		b.snap.IPTables = append(b.snap.IPTables, v)
	case *kube.Objects:
		b.snap.Objects.Merge(v)
		b.exports++
		if len(v.Services)+v.SkippedServices > 0 {
			b.serviceExports++
		}
		if len(v.EndpointSlices)+v.SkippedSlices > 0 {
			b.sliceExports++
		}
		if r.draft != nil {
			b.drafts = append(b.drafts, r.draft)
		}
		for _, ig := range v.Ignored {
			if versions, ok := readKinds[ig.Kind]; ok {
				b.snap.Notes = append(b.snap.Notes, fmt.Sprintf("%s: %s %s of API version %q ignored: proxyscan reads %s", ig.Pos, ig.Kind, objectName(ig.Namespace, ig.Name), ig.APIVersion, "the version(s) "+versions))
			}
		}
		for _, raw := range v.Raw {
			if raw.Kind == "KubeProxyConfiguration" {
				c, err := kpconfig.Decode(raw.Pos.File, raw.Data, kpconfig.Options{Line: raw.Pos.Line, Lenient: true})
				if err != nil {
					in.Note = err.Error()
					continue
				}
				b.configs = append(b.configs, configCandidate{c, "KubeProxyConfiguration in " + raw.Pos.File})
			}
		}
	case *kpconfig.Config:
		b.configs = append(b.configs, configCandidate{v, r.f.name})
	case *manifest.Manifest:
		b.snap.Manifest = v
		b.snap.Notes = append(b.snap.Notes, sourceNotes(r.f.name, v)...)
	case *kpversion.Version:
		b.version = v
		b.vpos = parsers.Pos{File: r.f.name, Line: 1}
	case *kpcmdline.Cmdline:
		b.cmdline = v
	case *ipvs.Dump:
		b.snap.IPVS = append(b.snap.IPVS, v)
	case *ipset.Dump:
		b.snap.IPSets = append(b.snap.IPSets, v)
	case *nft.Ruleset:
		b.snap.NFT = append(b.snap.NFT, v)
	case *ipaddr.Dump:
		b.one(&in, b.snap.Addrs != nil)
		b.snap.Addrs = v
	case *iproute.Dump:
		b.snap.Routes = append(b.snap.Routes, v)
	case *sysctl.Listing:
		b.one(&in, b.snap.Sysctls != nil)
		b.snap.Sysctls = v
	case *modules.List:
		b.one(&in, b.snap.Modules != nil)
		b.snap.Modules = v
	case *metrics.Page:
		b.one(&in, b.snap.Metrics != nil)
		b.snap.Metrics = v
	case *healthz.Health:
		b.one(&in, b.snap.Healthz != nil)
		b.snap.Healthz = v
	case *klog.Log:
		if why := otherLog(v, r.unit); why != "" {
			// Not kube-proxy's: its errors are not kube-proxy's, and
			// the checks of kube-proxy's log are skipped as without one.
			in.Kind = parsers.KindUnknown
			in.Note = "unknown kind of file (another program's log, not kube-proxy's: " + why + "): not analysed"
			break
		}
		b.snap.Logs = append(b.snap.Logs, v)
	case *conntrack.Dump:
		if b.snap.Conntrack == nil {
			b.snap.Conntrack = v
		} else {
			// IPv4 and IPv6 samples (conntrack-dnat.txt, conntrack6-dnat.txt):
			// one table of flows, each with its own position.
			b.snap.Conntrack.Flows = append(b.snap.Conntrack.Flows, v.Flows...)
		}
	case *conntrack.Stats:
		b.one(&in, b.snap.ConntrackStats != nil)
		b.snap.ConntrackStats = v
	case nil:
		switch r.kind {
		case parsers.KindUnknown:
			if r.f.det.prefixes && path.Base(r.f.name) == boundFile && in.Note == "" {
				in.Note = boundNote // no input the checks need: no gap
				break
			}
			why := unreadWhy(r)
			switch rest, ok := strings.CutPrefix(in.Note, "not analysed: "); {
			case ok:
				why = rest
			case in.Note == "":
				in.Note = "unknown kind of file (" + why + "): not analysed"
			default:
				in.Note += "; unknown kind of file (" + why + "): not analysed"
			}
			in.Unread = unreadInput(r.f, why)
		default:
			in.Note = "recognised as " + string(r.kind) + " but not analysed"
		}
	}
	if in.Compression != "" {
		if in.Note != "" {
			in.Note += "; "
		}
		in.Note += compressedNote(in.Compression)
	}
	if in.Encoding != "" {
		if in.Note != "" {
			in.Note += "; "
		}
		in.Note += "decoded from " + in.Encoding
	}
	if r.f.session != "" {
		if in.Note != "" {
			in.Note += "; "
		}
		in.Note += r.f.session
	}
	b.snap.Inputs = append(b.snap.Inputs, in)
}

// unreadInput returns why a file of no known kind makes the verdict
// inconclusive, or "" when it does not: a file named on the command line,
// one of a directory that could not be read at all (file.special), or a
// file at a place of a bundle's layout that is not empty (collect
// writes empty files: an empty log, a sample without flows), was meant
// to be read; other files of a directory or bundle (a README, notes) may
// be unrelated.
func unreadInput(f file, why string) string {
	switch {
	case f.named || f.special:
		return why
	case f.group == "" || layoutKind(f.name) == "":
		return ""
	case f.det.blank && (why == unreadEmpty || why == unreadBlank || why == unreadComments):
		return ""
	}
	return why + " (the bundle layout holds " + string(layoutKind(f.name)) + " here)"
}

// readKinds are the kinds of Kubernetes objects proxyscan reads, with the
// API versions it reads them in.
var readKinds = map[string]string{
	"Service": "v1", "Endpoints": "v1", "ConfigMap": "v1", "Node": "v1", "Pod": "v1",
	"EndpointSlice": "discovery.k8s.io/v1 and v1beta1", "DaemonSet": "apps/v1",
	"ServiceCIDR": "networking.k8s.io/v1, v1beta1 and v1alpha1",
}

// objectName returns namespace/name, or name.
func objectName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// sourceNotes returns a note for each source of a bundle's manifest that
// failed, and one listing those that were skipped, with why.
func sourceNotes(name string, m *manifest.Manifest) []string {
	var out, reasons []string
	skipped := map[string][]string{}
	for _, src := range m.Sources {
		why := src.Error
		if why == "" {
			why = "no reason given"
		}
		switch src.Status {
		case manifest.StatusFailed:
			out = append(out, fmt.Sprintf("%s: source %s failed when the bundle was collected: %s", name, src.Name, why))
		case manifest.StatusSkipped:
			if skipped[why] == nil {
				reasons = append(reasons, why)
			}
			skipped[why] = append(skipped[why], src.Name)
		}
	}
	for _, why := range reasons {
		out = append(out, fmt.Sprintf("%s: not collected: %s: %s", name, strings.Join(skipped[why], ", "), why))
	}
	return out
}

// hasKubeProxyTable reports whether a ruleset holds a table of
// kube-proxy's nftables mode.
func hasKubeProxyTable(rs *nft.Ruleset) bool {
	for _, t := range rs.Tables {
		if t.Name == "kube-proxy" {
			return true
		}
	}
	return false
}

// iptablesNFTTables names the tables of a ruleset that iptables-nft
// writes and that hold kube-proxy's iptables-mode chains ("table ip nat,
// table ip filter"), "" when none does.
func iptablesNFTTables(rs *nft.Ruleset) string {
	var out []string
	for _, t := range rs.Tables {
		if t.Name != "nat" && t.Name != "filter" || t.Family != nftables.TableFamilyIPv4 && t.Family != nftables.TableFamilyIPv6 {
			continue
		}
		kube := resolve.NFTHasIPTablesMode(t)
		for _, c := range t.Chains {
			kube = kube || strings.HasPrefix(c.Name, "KUBE-")
		}
		if kube {
			fam := "ip"
			if t.Family == nftables.TableFamilyIPv6 {
				fam = "ip6"
			}
			out = append(out, "table "+fam+" "+t.Name)
		}
	}
	return strings.Join(out, ", ")
}

// one notes that a file replaced another of a kind a node has only one of
// (the last one read wins).
func (b *builder) one(in *model.Input, replaced bool) {
	if replaced {
		in.Note = "another file of this kind was read before; this one is used"
	}
}

func (b *builder) finish(opts Options) error {
	s := b.snap
	b.useNFTDumps() // before the inputs are sorted: it knows them by index
	sort.SliceStable(s.Inputs, func(i, j int) bool { return s.Inputs[i].Path < s.Inputs[j].Path })
	sort.SliceStable(s.IPTables, func(i, j int) bool {
		if s.IPTables[i].Family != s.IPTables[j].Family {
			return s.IPTables[i].Family < s.IPTables[j].Family
		}
		return s.IPTables[i].Name < s.IPTables[j].Name
	})
	composeTables(s)
	if o := s.Objects; o.SkippedServices > 0 && b.serviceExports > 1 || o.SkippedSlices > 0 && b.sliceExports > 1 {
		// A copy of an object left out in one export may be the newer
		// of one read in another (see dropDuplicates).
		return fmt.Errorf("objects of the node's exports were left out: %w", ErrNotLean)
	}
	if b.exports > 1 {
		s.Notes = append(s.Notes, dropDuplicates(s.Objects)...)
	}
	s.SettleCuts()
	b.useLogs()
	// The service ports are built while the rule layout, the version, the
	// configuration and the node they depend on are found.
	var draft *model.PortsDraft
	for _, d := range b.drafts {
		if draft == nil && d.Claim(s.Objects) {
			draft = d
			continue
		}
		// Not this node's: it must be over before the objects are
		// compacted.
		d.Wait()
	}
	if draft == nil {
		draft = model.DraftPorts(s.Objects)
	}
	layout := resolve.RecognizeLayout(s)
	if err := b.pickVersion(opts, layout); err != nil {
		return err
	}
	noteLayout(s, layout)
	noteNewerRelease(s)
	if err := b.pickConfig(); err != nil {
		return err
	}
	b.pickNode(opts)
	if b.unsure {
		return fmt.Errorf("the node's name is where the exports place endpoints: %w", ErrNotLean)
	}
	splitLogHosts(s)
	splitLogPods(s)
	s.BuildPortsFrom(draft, model.BuildOptions{
		NodeName:     s.Node.Name,
		HonourIPMode: resolve.Enabled(resolve.LoadBalancerIPMode, s.Version.Version, resolve.ConfiguredGates(s)),
	})
	return nil
}

// listFiles names files: all of them up to four, else the first three and
// how many more.
func listFiles(names []string) string {
	if len(names) > 4 {
		return strings.Join(names[:3], ", ") + fmt.Sprintf(" and %d more", len(names)-3)
	}
	return strings.Join(names, ", ")
}

// composeTables makes one ruleset of the iptables dumps of a family and
// backend that each hold other tables (iptables-save -t nat and -t filter
// saved to two files), and says so on their inputs; dumps that share a
// table (two captures, or a whole dump and a table of it) stay apart.
func composeTables(s *model.Snapshot) {
	type key struct {
		fam     iptables.Family
		backend iptables.Backend
	}
	groups := map[key][]*iptables.Dump{}
	var order []key
	for _, d := range s.IPTables {
		k := key{d.Family, d.Backend}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], d)
	}
	var out []*iptables.Dump
	for _, k := range order {
		g := groups[k]
		d, ok := iptables.Compose(g)
		if !ok {
			if len(g) > 1 {
				// Several captures of one family for one node are as
				// likely the dumps of several nodes, given as plain
				// directories or loose files.
				names := make([]string, len(g))
				for i, x := range g {
					names[i] = x.Name
				}
				s.Notes = append(s.Notes, fmt.Sprintf("%d iptables dumps of %s that hold the same tables (%s) are read as captures of one node; "+
					"if they are of several nodes, give each node's files in a directory of its own (or as a bundle) to analyse them as a fleet",
					len(g), k.fam, listFiles(names)))
			}
			out = append(out, g...)
			continue
		}
		out = append(out, d)
		for _, x := range g {
			var tables []string
			for _, t := range x.Tables {
				tables = append(tables, t.Name)
			}
			for i := range s.Inputs {
				if in := &s.Inputs[i]; in.Path == x.Name {
					if in.Note != "" {
						in.Note += "; "
					}
					in.Note += fmt.Sprintf("read with the other tables of %s as one ruleset (%s): it holds %s", d.Family, d.Name, strings.Join(tables, ", "))
				}
			}
		}
	}
	s.IPTables = out
}

// useNFTDumps reads the iptables-nft tables of nft rulesets as iptables
// dumps of the families no iptables dump is given of, and says so on
// their inputs.
func (b *builder) useNFTDumps() {
	s := b.snap
	given := map[iptables.Family]bool{}
	for _, d := range s.IPTables {
		given[d.Family] = true
	}
	for _, f := range b.fromNFT {
		var used []string
		var why []string
		for _, d := range f.dumps {
			if given[d.Family] {
				continue
			}
			given[d.Family] = true
			s.IPTables = append(s.IPTables, d)
			used = append(used, string(d.Family))
			if d.PartialReason != "" {
				why = append(why, d.PartialReason)
			}
		}
		if len(used) == 0 {
			continue
		}
		in := &s.Inputs[f.input]
		t := strings.TrimSuffix(strings.TrimPrefix(in.Note, "holds "), " of iptables-nft: kube-proxy's iptables-mode rules as nft lists them, not read as iptables rules (iptables-save reads them as such)")
		in.Note = "holds " + t + " of iptables-nft, read as iptables rules (" + strings.Join(used, " and ") + ") from what nft lists of them"
		if dumps := strings.Join(why, "; "); dumps != "" && (in.Partial == "" || strings.Contains(dumps, in.Partial)) {
			// The dumps' reasons hold the listing's, when it is cut
			// in or before their tables.
			in.Partial = dumps
		} else if dumps != "" {
			in.Partial += "; " + dumps
		}
		in.Skipped = append(in.Skipped, parsers.Ranges(f.notes, true)...)
		sort.SliceStable(in.Skipped, func(i, j int) bool { return in.Skipped[i].From < in.Skipped[j].From })
	}
}

// pickConfig chooses the configuration kube-proxy runs with: a bare
// KubeProxyConfiguration file wins over the ConfigMap (it is what the
// process reads), flags of a captured command line are merged as kube-proxy
// merges them, and the result is defaulted for the snapshot's version.
func (b *builder) pickConfig() error {
	s := b.snap
	for _, cm := range s.Objects.ConfigMaps {
		if cm.Namespace != "kube-system" || cm.Name != "kube-proxy" {
			continue
		}
		// The key whose content is a KubeProxyConfiguration: kubeadm's
		// config.conf, or another installer's.
		key, why := kpconfig.ConfigMapConfigKey(cm.Data)
		if key == "" {
			continue
		}
		opts := kpconfig.Options{Line: cm.DataLines[key], Lenient: true}
		if opts.Line == 0 {
			opts.Line, opts.SingleLine = cm.Pos.Line, true
		}
		c, err := kpconfig.Decode(cm.Pos.File, []byte(cm.Data[key]), opts)
		if err != nil {
			// The error names the ConfigMap's file and line, the context
			// in its message (see positioned).
			return positioned(cm.Pos.File, fmt.Errorf("in %s of the kube-proxy ConfigMap: %w", key, err))
		}
		c.ConfigMapKey, c.ConfigMapNote = key, why
		b.configs = append(b.configs, configCandidate{c, "ConfigMap kube-system/kube-proxy"})
		if key != kpconfig.ConfigMapKey || why != "" {
			b.noteConfigKey(cm.Pos.File, key, why)
		}
	}
	cmdlineSource := "command line"
	if b.cmdline == nil {
		var notes []string
		if b.cmdline, notes = daemonSetCmdline(s.Objects); b.cmdline != nil {
			cmdlineSource = "command line of DaemonSet " + dsName(s.Objects, b.cmdline)
		}
		s.Notes = append(s.Notes, notes...)
	}
	if len(b.configs) == 0 && b.cmdline == nil {
		return nil
	}
	sort.SliceStable(b.configs, func(i, j int) bool {
		return !strings.HasPrefix(b.configs[i].source, "ConfigMap") && strings.HasPrefix(b.configs[j].source, "ConfigMap")
	})
	var read *kpconfig.Config
	cfg := &model.Config{}
	if len(b.configs) > 0 {
		read, cfg.Source, cfg.Pos = b.configs[0].cfg, b.configs[0].source, b.configs[0].cfg.Pos
		for _, c := range b.configs[1:] {
			if mode(c.cfg) != mode(read) {
				s.Notes = append(s.Notes, fmt.Sprintf("%s (%s) sets mode %q but %s sets %q; using %s",
					c.source, c.cfg.Pos, mode(c.cfg), cfg.Source, mode(read), cfg.Source))
				cfg.Others = append(cfg.Others, model.OtherConfig{Source: c.source, Pos: c.cfg.Pos, Differ: []string{"mode"}})
			} else if diff := configDiff(read, c.cfg, s.Version.Version); len(diff) > 0 {
				s.Notes = append(s.Notes, configDiffNote(diff, read, c.cfg, cfg.Source, c.source))
				cfg.Others = append(cfg.Others, model.OtherConfig{Source: c.source, Pos: c.cfg.Pos, Differ: diff})
			}
		}
	}
	eff := read
	if b.cmdline != nil {
		flags, err := kpconfig.ParseFlags(b.cmdline, s.Version.Version)
		if err != nil {
			s.Notes = append(s.Notes, "the kube-proxy command line could not be interpreted: "+err.Error())
		} else {
			cfg.Flags = flags
			if e, err := kpconfig.Effective(flags, read); err == nil {
				eff = e
				switch {
				case read == nil:
					cfg.Source, cfg.Pos = cmdlineSource, b.cmdline.Pos
				case flags.ConfigFile == "":
					// kube-proxy reads no configuration file: the
					// one given is not what it runs with.
					s.Notes = append(s.Notes, fmt.Sprintf("the %s passes no --config: kube-proxy does not read %s (%s) and runs with its flags and their defaults", cmdlineSource, cfg.Source, cfg.Pos))
					cfg.Source, cfg.Pos, read = cmdlineSource, b.cmdline.Pos, nil
				}
			} else {
				s.Notes = append(s.Notes, "merging the kube-proxy flags and configuration file: "+err.Error())
			}
		}
	}
	if eff == nil {
		return nil
	}
	eff = eff.Clone()
	kpconfig.Defaults(eff, s.Version.Version)
	cfg.Read, cfg.Effective = read, eff
	cfg.KubeProxyConfiguration = &eff.Config
	s.Config = cfg
	return nil
}

// noteConfigKey notes on the input of a ConfigMap file the key kube-proxy's
// configuration was read from, when it is not kubeadm's config.conf or
// several keys held one.
func (b *builder) noteConfigKey(file, key, why string) {
	n := "kube-proxy's configuration read from key " + key + " of ConfigMap kube-system/kube-proxy"
	if why != "" {
		n += " (" + why + ")"
	}
	for i := range b.snap.Inputs {
		in := &b.snap.Inputs[i]
		if in.Path != file {
			continue
		}
		if in.Note != "" {
			n = in.Note + "; " + n
		}
		in.Note = n
		return
	}
	b.snap.Notes = append(b.snap.Notes, n)
}

func mode(c *kpconfig.Config) string {
	if c.Config.Mode == "" {
		return model.ModeIPTables
	}
	return string(c.Config.Mode)
}

func (b *builder) pickVersion(opts Options, layout *resolve.Layout) error {
	s := b.snap
	set := func(raw, source string) bool {
		v, err := kpversion.ParseString(raw)
		if err != nil || v.Major != 1 {
			return false
		}
		s.Version = model.Version{Version: v, Source: source}
		return true
	}
	if opts.Version != "" {
		if !set(opts.Version, "--version flag") {
			return inputErrorf("invalid --version %q (want 1.N, e.g. 1.28)", opts.Version)
		}
		return nil
	}
	if b.version != nil {
		if v := *b.version; v.Major == 1 {
			s.Version = model.Version{Version: v, Source: b.vpos.File}
			return nil
		}
		// A development build (v0.0.0-master+...) says nothing of the
		// release it was built from: the other inputs may.
		s.Notes = append(s.Notes, fmt.Sprintf("%s says kube-proxy %s, which is not a release; the version is taken from the other inputs", b.vpos.File, b.version))
	}
	for _, ds := range s.Objects.DaemonSets {
		if ds.Namespace != "kube-system" || !strings.Contains(ds.Name, "kube-proxy") {
			continue
		}
		for _, c := range ds.Spec.Template.Spec.Containers {
			if v, ok := kpversion.FromImage(c.Image); ok && strings.Contains(c.Image, "kube-proxy") {
				s.Version = model.Version{Version: v, Source: "image of DaemonSet kube-system/" + ds.Name}
				return nil
			}
		}
	}
	nodes := versionNodes(s.Objects.Nodes, opts.Node)
	//lint:ignore SA1019 the Nodes of older clusters still report it, and an export may hold them
	kubeProxyVersion := func(n *kube.Node) string { return n.Status.NodeInfo.KubeProxyVersion }
	if n, ok := b.nodesVersion(nodes, "kube-proxy versions", kubeProxyVersion); n != nil && ok &&
		set(kubeProxyVersion(n), "status.nodeInfo.kubeProxyVersion of Node "+n.Name) {
		doubtNodeVersion(s, layout)
		return nil
	}
	kubeletVersion := func(n *kube.Node) string { return n.Status.NodeInfo.KubeletVersion }
	if n, ok := b.nodesVersion(nodes, "kubelet versions", kubeletVersion); n != nil && ok && set(kubeletVersion(n), "kubelet version of Node "+n.Name) {
		note := "kube-proxy version taken from the kubelet version of node " + n.Name
		if len(nodes) > 1 {
			note = fmt.Sprintf("kube-proxy version taken from the kubelet version of the %d Nodes exported, all %s", len(nodes), s.Version.Version.MinorString())
		}
		if b.version == nil {
			note += "; add kube-proxy/version.txt to be exact"
		}
		if !doubtNodeVersion(s, layout) {
			s.Notes = append(s.Notes, note)
		}
		return nil
	}
	if layout.Old() && !layout.Mixed() {
		v := kpversion.V(layout.Newest)
		s.Version = model.Version{Version: v, Source: "assumed: newest release with the rule layout of kube-proxy " + layout.Range()}
		s.Notes = append(s.Notes, "no kube-proxy version in the inputs; assuming "+v.MinorString()+", the newest release that writes the rules' layout (use --version)")
		return nil
	}
	s.Version = model.Newest
	s.Version.Source = "assumed: newest supported"
	s.Notes = append(s.Notes, "no kube-proxy version in the inputs; assuming "+model.Newest.Version.MinorString()+" (use --version)")
	return nil
}

// versionNodes returns the Nodes whose versions may be the node's: the
// one --node names when it is exported, else every Node exported.
func versionNodes(nodes []*kube.Node, name string) []*kube.Node {
	if name != "" {
		for _, n := range nodes {
			if n.Name == name {
				return []*kube.Node{n}
			}
		}
	}
	return nodes
}

// nodesVersion returns the first of nodes that reports a version (read by
// of), and whether the others that report one report its minor release:
// Nodes of several releases (a cluster being upgraded) do not say which
// the node runs, and that is noted (what says is "kubelet versions").
func (b *builder) nodesVersion(nodes []*kube.Node, what string, of func(*kube.Node) string) (*kube.Node, bool) {
	var first *kube.Node
	var minor kpversion.Version
	var seen []string
	agree := true
	for _, n := range nodes {
		v, err := kpversion.ParseString(of(n))
		if err != nil || v.Major != 1 {
			continue
		}
		if first == nil {
			first, minor = n, v
		} else if v.Minor != minor.Minor {
			agree = false
		}
		if len(seen) < 4 {
			seen = append(seen, n.Name+" "+of(n))
		}
	}
	if !agree {
		b.snap.Notes = append(b.snap.Notes, fmt.Sprintf("the Nodes exported report %s of several releases (%s): none is taken as this node's kube-proxy (pass --node NAME or --version, or add kube-proxy/version.txt)",
			what, strings.Join(seen, ", ")))
	}
	return first, agree
}

// doubtNodeVersion drops the version a Node reported (its kube-proxy or
// kubelet version, which need not be the running kube-proxy's) when the
// rules have the layout of older releases only, which it does not write:
// the version is then the newest release that writes the layout, as with
// no version at all, and s.Version.Doubt and a note, first of the notes
// of the version, say why. It reports whether it did.
func doubtNodeVersion(s *model.Snapshot, layout *resolve.Layout) bool {
	v := s.Version
	if !layout.Old() || layout.Mixed() || layout.Allows(v.Minor) {
		return false
	}
	newest := kpversion.V(layout.Newest)
	doubt := fmt.Sprintf("%s says %s, but the rules have the layout of kube-proxy %s, which %s does not write", v.Source, v.Version, layout.Range(), v.MinorString())
	s.Version = model.Version{Version: newest, Source: "assumed: newest release with the rule layout of kube-proxy " + layout.Range(), Doubt: doubt}
	s.Notes = append(s.Notes, doubt+": the node's kube-proxy may be older than its Node reports, or the rules left from another release; "+
		"the version is not taken, and the rules are read as "+newest.MinorString()+"'s, the newest release that writes them, "+
		"without judging what depends on the release (use --version, or add kube-proxy/version.txt)")
	return true
}

// noteLayout names the rule layout of an older kube-proxy release the
// dumps show, and says when the version of the inputs does not write it.
func noteLayout(s *model.Snapshot, layout *resolve.Layout) {
	if !layout.Old() && !layout.Mixed() {
		return
	}
	s.Notes = append(s.Notes, layout.String())
	if v := s.Version; !layout.Mixed() && !strings.HasPrefix(v.Source, "assumed") && v.Major == 1 && !layout.Allows(v.Minor) {
		s.Notes = append(s.Notes, fmt.Sprintf("kube-proxy %s (%s) does not write that layout: the rules may be left from another release", v.MinorString(), v.Source))
	}
}

// noteNewerRelease says when the node's kube-proxy is newer than the newest
// release proxyscan knows: its rules and configuration are read as that
// release's, and a change of layout or behaviour since is not known.
func noteNewerRelease(s *model.Snapshot) {
	v := s.Version
	if v.Major != 1 || v.Minor <= kpversion.NewestMinor {
		return
	}
	s.Notes = append(s.Notes, fmt.Sprintf("kube-proxy %s (%s) is newer than the newest release proxyscan knows (1.%d): its rules and configuration are read as 1.%d's, and a finding may reflect a change made after it rather than a fault",
		v.MinorString(), v.Source, kpversion.NewestMinor, kpversion.NewestMinor))
}

// nodeIPs returns n's InternalIP and ExternalIP addresses.
func nodeIPs(n *corev1.Node) []netip.Addr {
	var out []netip.Addr
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP && a.Type != corev1.NodeExternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil {
			out = append(out, ip.Unmap())
		}
	}
	return out
}

// nodeHasAddress reports whether one of n's InternalIP and ExternalIP
// addresses is among addrs, or n lists no such address to compare.
func nodeHasAddress(n *corev1.Node, addrs []netip.Addr) bool {
	ips := nodeIPs(n)
	for _, ip := range ips {
		if slices.Contains(addrs, ip) {
			return true
		}
	}
	return len(ips) == 0
}

// nodeOfMany returns, among the several Nodes of the exports (a
// `kubectl get nodes` of the cluster), the one that is this node and why:
// the only one named as the host of the bundle's manifest, or else the
// only one with an address (InternalIP, ExternalIP) that ip addr shows on
// this node's interfaces; nil when none or several are.
func nodeOfMany(s *model.Snapshot) (*kube.Node, string) {
	if s.Manifest != nil && s.Manifest.Host != "" {
		var found *kube.Node
		n := 0
		for _, x := range s.Objects.Nodes {
			if strings.EqualFold(x.Name, strings.TrimSpace(s.Manifest.Host)) {
				found, n = x, n+1
			}
		}
		if n == 1 {
			return found, "the Node named as the host of manifest.json"
		}
	}
	found, at := nodeOfAddrs(s)
	if found == nil {
		return nil, ""
	}
	return found, fmt.Sprintf("the only Node exported with an address of this node's interfaces (%s)", at)
}

// nodeOfAddrs returns the only exported Node with an address (InternalIP,
// ExternalIP) that ip addr shows on this node's interfaces, and that
// address; nil when none or several are.
func nodeOfAddrs(s *model.Snapshot) (*kube.Node, netip.Addr) {
	if s.Addrs == nil {
		return nil, netip.Addr{}
	}
	addrs := s.Addrs.NodeAddresses()
	var found *kube.Node
	var at netip.Addr
	n := 0
	for _, x := range s.Objects.Nodes {
		for _, ip := range nodeIPs(x.Node) {
			if slices.Contains(addrs, ip) {
				found, at, n = x, ip, n+1
				break
			}
		}
	}
	if n != 1 {
		return nil, netip.Addr{}
	}
	return found, at
}

// nodeOfPrompt returns the node the shell prompts pasted in the node's
// files name ("[root@worker-1 ~]# iptables-save": bash shows the host name
// up to its first dot), and the journal's prefixes of its logs ("Dec 03
// 10:01:12 worker-1 kube-proxy[1234]: ..."), when they all name one host:
// the one Node so named (or whose name is that host's with a domain);
// with no Node exported, the one node so named where the EndpointSlices,
// Endpoints or Pods place an endpoint, else the host itself, which
// nothing else names. A host that is not the node the rules show (see
// [nodeOfRules]) is not believed: a note says so, and the node the rules
// show is returned. prompted says a host is named that no exported Node
// is (then the only Node exported is not taken as this node either: a
// note says so).
func (b *builder) nodeOfPrompt() (name, source string, prompted bool) {
	if len(b.prompts) == 0 {
		return "", "", false
	}
	p := b.prompts[0]
	for _, q := range b.prompts[1:] {
		if q.host != p.host {
			return "", "", false
		}
	}
	s := b.snap
	var names []string
	if len(s.Objects.Nodes) > 0 {
		for _, n := range s.Objects.Nodes {
			names = append(names, n.Name)
		}
	} else {
		names = placedNodes(s.Objects)
		b.unsure = s.Objects.SkippedServices+s.Objects.SkippedSlices > 0
	}
	match := ""
	n := 0
	for _, x := range names {
		if sameHost(p.host, x) {
			if match != x {
				n++
			}
			match = x
		}
	}
	where := fmt.Sprintf("the shell prompt of %s (line %d)", p.file, p.line)
	if p.journal {
		where = fmt.Sprintf("the journal's lines of %s (line %d)", p.file, p.line)
	}
	if rules, why := nodeOfRules(s); rules != "" && !sameHost(p.host, rules) {
		s.Notes = append(s.Notes, fmt.Sprintf("%s names host %s, but %s: the node is taken to be %s, not %s (pass --node NAME to choose)",
			where, p.host, why, rules, p.host))
		return rules, why, true
	}
	switch {
	case n == 1 && len(s.Objects.Nodes) > 0:
		return match, "the Node named by " + where, true
	case n == 1:
		return match, "the host named by " + where + ", where the exports place endpoints", true
	case len(s.Objects.Nodes) > 0:
		s.Notes = append(s.Notes, fmt.Sprintf("%s names host %s, which no exported Node is (or several are): not taken as this node's name (pass --node NAME)", where, p.host))
		return "", "", true
	case n == 0:
		return p.host, "the host named by " + where, true
	}
	return "", "", false
}

// sameHost reports whether a host name, as a shell prompt shows it (up
// to its first dot, in lower case), names the node: its name, or its
// name with a domain.
func sameHost(host, node string) bool {
	host, node = strings.ToLower(host), strings.ToLower(node)
	return host == node || strings.HasPrefix(node, host+".") || strings.HasPrefix(host, node+".")
}

// nodeOfRules returns the node the node's own data shows it is, and how:
// the one node the exports place every endpoint of the rules' Local
// policy chains on (an iptables dump's KUBE-SVL and KUBE-XLB chains jump
// only to the node's own endpoints), else the only exported Node with an
// address of this node's interfaces; "" when they show none, or several.
func nodeOfRules(s *model.Snapshot) (name, why string) {
	if n := localEndpointsNode(s); n != "" {
		return n, "the endpoints of its rules' Local-policy chains are on node " + n + " (by the exports)"
	}
	if len(s.Objects.Nodes) > 0 {
		if n, at := nodeOfAddrs(s); n != nil {
			return n.Name, fmt.Sprintf("its interfaces hold %s, the address of Node %s", at, n.Name)
		}
	}
	return "", ""
}

// localEndpointsNode returns the node the exports' EndpointSlices place
// every endpoint of the Local-policy chains of the node's iptables dumps
// on, when there is one such node: "" when the chains forward to no
// endpoint the exports place, or to endpoints of several nodes.
func localEndpointsNode(s *model.Snapshot) string {
	if len(s.IPTables) == 0 || len(s.Objects.EndpointSlices) == 0 {
		return ""
	}
	// The endpoint chains the Local-policy chains jump to.
	local := map[string]bool{}
	var nats []*iptables.Table
	for _, d := range s.IPTables {
		for _, t := range d.Tables {
			if t.Name != "nat" {
				continue
			}
			nats = append(nats, t)
			for _, c := range t.Chains {
				if !strings.HasPrefix(c.Name, kpnames.ChainSVL) && !strings.HasPrefix(c.Name, kpnames.ChainXLB) {
					continue
				}
				for _, r := range c.Rules {
					if tg := r.Target(); strings.HasPrefix(tg, kpnames.ChainSEP) {
						local[tg] = true
					}
				}
			}
		}
	}
	if len(local) == 0 {
		return ""
	}
	nodeOf := map[netip.Addr]string{}
	for _, es := range s.Objects.EndpointSlices {
		for i := range es.Endpoints {
			ep := &es.Endpoints[i]
			if ep.NodeName == nil || *ep.NodeName == "" {
				continue
			}
			for _, a := range ep.Addresses {
				if ip, err := netip.ParseAddr(a); err == nil {
					nodeOf[ip.Unmap()] = *ep.NodeName
				}
			}
		}
	}
	node := ""
	for _, t := range nats {
		for _, c := range t.Chains {
			if !local[c.Name] {
				continue
			}
			for _, r := range c.Rules {
				if r.Target() != "DNAT" {
					continue
				}
				ip, ok := dnatAddr(r.Raw)
				if !ok {
					continue
				}
				n, ok := nodeOf[ip]
				switch {
				case !ok:
				case node == "":
					node = n
				case node != n:
					return ""
				}
			}
		}
	}
	return node
}

// dnatAddr returns the address of a DNAT rule's --to-destination
// ("10.244.1.5:8080", "[fd00::5]:8080").
func dnatAddr(raw string) (netip.Addr, bool) {
	f := strings.Fields(raw)
	for i := 0; i+1 < len(f); i++ {
		if f[i] != "--to-destination" {
			continue
		}
		if ap, err := netip.ParseAddrPort(f[i+1]); err == nil {
			return ap.Addr().Unmap(), true
		}
		if ip, err := netip.ParseAddr(strings.Trim(f[i+1], "[]")); err == nil {
			return ip.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// matchGivenNode says, in a note, when the node's name, given by --node
// or hostnameOverride, is known to the exports nowhere though they name
// nodes: no Node is so named, nor the node of any endpoint or Pod (a typo,
// or a name of another form, such as a fully qualified one). Which
// endpoints are local is then not known: the node is marked Unmatched, and
// the checks leave the Local traffic policies out.
func (b *builder) matchGivenNode() {
	s := b.snap
	name := s.Node.Name
	var names []string
	for _, n := range s.Objects.Nodes {
		names = append(names, n.Name)
	}
	for _, n := range placedNodes(s.Objects) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 || slices.Contains(names, name) {
		return
	}
	s.Node.Unmatched = true
	// The names that differ from it only in case or by a domain.
	var alike []string
	ln := strings.ToLower(name)
	for _, x := range names {
		lx := strings.ToLower(x)
		if lx == ln || strings.HasPrefix(lx, ln+".") || strings.HasPrefix(ln, lx+".") {
			alike = append(alike, x)
		}
	}
	slices.Sort(names)
	known := strings.Join(names, ", ")
	if len(names) > 5 {
		known = strings.Join(names[:5], ", ") + fmt.Sprintf(" and %d more", len(names)-5)
	}
	what := "Nodes and endpoints of the exports are on " + known
	if len(alike) > 0 {
		what = "the exports know " + strings.Join(alike, ", ") + ", which differs in case or domain only"
	}
	s.Notes = append(s.Notes, fmt.Sprintf("node %s (%s) is neither a Node of the exports nor the node of any endpoint (%s): "+
		"which endpoints are local is not known, and the Local traffic policies are not checked (check the name; kube-proxy "+
		"names its node by hostnameOverride, else the host name)", name, s.Node.NameSource, what))
}

// placedNodes returns the node names the exports place endpoints or Pods
// on, once each.
func placedNodes(o *kube.Objects) []string {
	seen := map[string]bool{}
	var out []string
	add := func(n *string) {
		if n != nil && *n != "" && !seen[*n] {
			seen[*n] = true
			out = append(out, *n)
		}
	}
	for _, es := range o.EndpointSlices {
		for i := range es.Endpoints {
			add(es.Endpoints[i].NodeName)
		}
	}
	for _, e := range o.Endpoints {
		for _, ss := range e.Subsets {
			for i := range ss.Addresses {
				add(ss.Addresses[i].NodeName)
			}
			for i := range ss.NotReadyAddresses {
				add(ss.NotReadyAddresses[i].NodeName)
			}
		}
	}
	for _, p := range o.Pods {
		add(&p.Spec.NodeName)
	}
	return out
}

func (b *builder) pickNode(opts Options) {
	s := b.snap
	name, source := opts.Node, "--node flag"
	if name == "" && s.Config != nil && s.Config.HostnameOverride != "" {
		name, source = strings.ToLower(strings.TrimSpace(s.Config.HostnameOverride)), "hostnameOverride of "+s.Config.Source
	}
	prompted := false
	if name == "" {
		name, source, prompted = b.nodeOfPrompt()
	}
	if name == "" && len(s.Objects.Nodes) == 1 && !prompted {
		if n := s.Objects.Nodes[0]; s.Addrs == nil || nodeHasAddress(n.Node, s.Addrs.NodeAddresses()) {
			name, source = n.Name, "the only Node in the exports"
		} else {
			s.Notes = append(s.Notes, fmt.Sprintf("the only Node exported, %s, has none of the addresses ip addr shows: not taken as this node (pass --node NAME)", n.Name))
		}
	}
	if name == "" && len(s.Objects.Nodes) > 1 {
		if n, why := nodeOfMany(s); n != nil {
			name, source = n.Name, why
		}
	}
	s.Node.Name, s.Node.NameSource = name, source
	if opts.Node != "" || strings.HasPrefix(source, "hostnameOverride") || prompted && name != "" && !strings.Contains(source, "where the exports place") {
		b.matchGivenNode()
	}
	// The interfaces say which addresses are the node's (what addrtype
	// LOCAL matches) whether or not the Node is known by name.
	addrsOfInterfaces := func() {
		if s.Addrs == nil {
			return
		}
		s.Node.Local = s.Addrs.LocalAddresses()
		for _, a := range s.Addrs.NodeAddresses() {
			if !s.Node.IsLocal(a) {
				s.Node.Addresses = append(s.Node.Addresses, a)
			}
		}
	}
	defer addrsOfInterfaces()
	if name == "" {
		if len(s.Objects.Nodes) > 1 {
			s.Notes = append(s.Notes, fmt.Sprintf("%d Nodes exported and none chosen: pass --node NAME so that local endpoints are known", len(s.Objects.Nodes)))
		}
		return
	}
	for _, n := range s.Objects.Nodes {
		if n.Name != name {
			continue
		}
		s.Node.Object = n
		s.Node.Addresses = append(s.Node.Addresses, nodeIPs(n.Node)...)
		cidrs := n.Spec.PodCIDRs
		if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
			cidrs = []string{n.Spec.PodCIDR}
		}
		for _, c := range cidrs {
			if p, err := netip.ParsePrefix(c); err == nil {
				s.Node.PodCIDRs = append(s.Node.PodCIDRs, p.Masked())
			}
		}
		s.Node.Zone = n.Labels[corev1.LabelTopologyZone]
	}
}

// compactSnapshot drops, once the service ports are built, what of the
// exports nothing reads afterwards (see [Options.Compact]): the
// EndpointSlices and Endpoints objects (the ports hold their endpoints,
// with their positions; their number is kept), and of the Services all
// but their names, annotations, type, traffic distribution and cluster
// IPs (clusterip-outside-servicecidr reads those of port-less Services
// too): the ports hold the rest. The Services of exports shared with
// other snapshots (loose files, see Shared, or a unit's own export, see
// Exports), which they read meanwhile, are not trimmed: the snapshot's
// objects and ports get the trimmed copy of each that compacted returns,
// one for every snapshot; compacted returns nil for the others.
func compactSnapshot(s *model.Snapshot, compacted func(*kube.Service) *kube.Service) {
	o := s.Objects
	if o == nil {
		return
	}
	o.ReleaseEndpoints()
	copied := false
	var block []corev1.Service
	for i, svc := range o.Services {
		if c := compacted(svc); c != nil {
			o.Services[i] = c
			copied = true
			continue
		}
		if len(block) == 0 {
			block = make([]corev1.Service, len(o.Services)-i)
		}
		compactService(svc, &block[0])
		block = block[1:]
	}
	if copied {
		for _, sp := range s.Ports {
			if c := compacted(sp.Service); c != nil {
				sp.Service = c
			}
		}
	}
	s.ObjectsChanged()
}

// trimmedCopies adds to copies, for each of services, a trimmed copy of it
// (see compactService), for snapshots that share the services with others
// and so may not trim them, and returns copies.
func trimmedCopies(services []*kube.Service, copies map[*kube.Service]*kube.Service) map[*kube.Service]*kube.Service {
	block := make([]corev1.Service, len(services))
	for i, svc := range services {
		c := *svc
		compactService(&c, &block[i])
		copies[svc] = &c
	}
	return copies
}

// compactService trims a Service as compactSnapshot does, into to: the
// trimmed Services of an export are made in one block (a large cluster
// has tens of thousands, 592 bytes each, which alone took 640).
func compactService(svc *kube.Service, to *corev1.Service) {
	// The decoder already dropped the last applied configuration.
	ann := svc.Annotations
	if len(ann) == 0 {
		ann = nil
	}
	*to = corev1.Service{
		TypeMeta:   svc.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: svc.Name, Namespace: svc.Namespace, UID: svc.UID, Annotations: ann},
		Spec: corev1.ServiceSpec{Type: svc.Spec.Type, TrafficDistribution: svc.Spec.TrafficDistribution,
			ClusterIP: svc.Spec.ClusterIP, ClusterIPs: svc.Spec.ClusterIPs},
	}
	svc.Service = to
}

// unreadWhy returns why a file of no known kind was not read: the reason
// its head gives (see unreadReason), or that it is kubectl get's table
// without -o, names and addresses but no objects.
func unreadWhy(r parsed) string {
	why := r.f.det.unread
	if why == "" {
		why = "kind not recognised"
	}
	if why == "kind not recognised" {
		for _, n := range r.notes {
			if n.Reason == paste.ReasonKubectl {
				return "kind not recognised: " + kubectlTableHint
			}
		}
	}
	return why
}

// kubectlTableHint says what to export in place of kubectl get's table.
const kubectlTableHint = "a kubectl table holds no objects; export them with kubectl get -o yaml"

// filteredReason is the partial reason of a page or listing pasted under
// a command line that pipes it through filter ("" for none).
func filteredReason(filter string) string {
	if filter == "" {
		return ""
	}
	return "filtered by `" + filter + "` on the command line above it"
}
