package load

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/internal/fault"
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
	"github.com/proxyscan/proxyscan/parsers/sysctl"
)

// Options tune loading.
type Options struct {
	// Node, when set, is the node name to analyse as (the --node flag).
	Node string
	// Version, when set, overrides the kube-proxy version ("1.28").
	Version string
	// Limits bound archive and directory reading; zero means DefaultLimits.
	Limits Limits
	// Compact trims, once every snapshot's service ports are built, what
	// the checks do not read of the exports: the EndpointSlices and
	// Endpoints objects (the ports hold their endpoints as model
	// endpoints, with the objects' positions; kube.Objects counts them),
	// and of each Service all but its name, position, annotations, type,
	// traffic distribution and cluster IPs. The exports are also decoded lean
	// (kube.Options.Lean). For callers that read endpoints and ports only from the model
	// (analyze); the reference proxier rebuilds ports from the objects and
	// needs them whole.
	Compact bool
	// Lean decodes the exports lean (kube.Options.Lean) without trimming
	// them afterwards: for callers that read the objects, but none of what
	// a lean decoding leaves out (the reference proxier). Compact implies
	// it.
	Lean bool
	// Strict reads every file strictly: a line that is not understood is
	// an error. Otherwise only the files of a bundle written by collect
	// (one holding manifest.json) are; the others are read leniently
	// (paste damage repaired, a dump cut short or cut out read as far as
	// it goes), every line skipped or changed reported with its input.
	Strict bool
	// OffHeap reads the text of large iptables dumps and nft listings, on
	// disk or in archives, which the parsed rules point into, into memory outside
	// the Go heap that is never freed: it then counts once in the
	// process's memory, not also in the collector's heap goal. For a
	// process that ends with the snapshots it loads (see
	// internal/offheap); the others keep the text on the heap, freed with
	// the snapshot. The text of the other kinds is not kept by what they
	// parse to: it stays on the heap, freed once parsed.
	OffHeap bool
	// Parsed, when set, is called once with the iptables dumps read, as
	// soon as every input but the Kubernetes exports is parsed (the
	// exports may still be decoding) and before the snapshots are
	// assembled, so that a caller may start reading the dumps in the
	// background beside the exports' decoding. It is called on another
	// goroutine than Load's, before Load returns, even when Load then
	// fails (an input that did not parse). Loading does not change what it
	// reads of the dumps (the rules and chains) afterwards.
	Parsed func(dumps []*iptables.Dump)
	// ParsedNFT, when set, is called as Parsed is (at the same time, on
	// the same goroutine, after it), with the nftables rulesets read.
	// Loading does not change them afterwards.
	ParsedNFT func(rulesets []*nft.Ruleset)
	// LazyChains reads the options of the rules of kube-proxy's
	// per-Service and per-endpoint chains (KUBE-SVC-, KUBE-SEP-, ...) of
	// the iptables dumps when they are first asked for
	// (iptables.ParseLenientLazy, and iptables.ParseLazy for a dump read
	// strictly, a bundle's with a manifest): for a caller that follows a
	// few packets through the rules. A line of those chains that a whole
	// parse would skip, or refuse, is then not noted; the dumps say so
	// (iptables.Dump.LazyFailed) if one is read, and the caller that must
	// answer as a whole parse loads them again without.
	LazyChains bool
	// Shared, when set, holds loose files read once (see [Plan]) that
	// apply to the paths' nodes as if given with them: the snapshots are
	// those of reading them together ([ErrReadTogether] when they are
	// not to be read so).
	Shared *Shared
	// Exports, when set, is the unit's view of what the units of a run
	// share of their own Kubernetes exports (see [Exports]): an export
	// on disk byte for byte the one another unit decoded is not decoded
	// again.
	Exports *UnitExports
	// Only, when set, decodes of the exports' Services and EndpointSlices
	// only those that may concern its destination (kube.Options.Only),
	// for a caller that reads the service port of one destination and
	// nothing else of the others: their objects are not read, and a
	// malformed one is not refused. Load fails with ErrNotLean when what
	// was left out may change what it assembles (the exports' order left
	// out a slice that a Service read needs, the node's name is found
	// where the slices place endpoints); the caller then loads them
	// whole.
	Only *kube.Only
}

// ErrNotLean is the error of a Load with Options.Only whose snapshots
// could differ from those of a whole reading of the exports.
var ErrNotLean = errors.New("what the exports' reading left out may matter: read them whole")

// parseFunc parses one file of a kind into its value.
type parseFunc func(name string, data []byte) (any, error)

// parsersByKind maps each input kind to its parser. A kind without a
// parser is listed in the snapshot's inputs as not analysed.
var parsersByKind = map[parsers.Kind]parseFunc{
	parsers.KindIPTablesSave:    func(n string, d []byte) (any, error) { return iptables.Parse(n, d) },
	parsers.KindKubeProxyConfig: func(n string, d []byte) (any, error) { return kpconfig.ParseLenient(n, d) },
	parsers.KindManifest:        func(n string, d []byte) (any, error) { return manifest.Parse(n, d) },
	parsers.KindVersion:         func(n string, d []byte) (any, error) { return kpversion.Parse(n, d) },
	parsers.KindCmdline:         func(n string, d []byte) (any, error) { return kpcmdline.Parse(n, d) },
	parsers.KindIPVSList:        func(n string, d []byte) (any, error) { return ipvs.Parse(n, d) },
	parsers.KindIPVSSave:        func(n string, d []byte) (any, error) { return ipvs.Parse(n, d) },
	parsers.KindIPSetSave:       func(n string, d []byte) (any, error) { return ipset.Parse(n, d) },
	parsers.KindIPSetList:       func(n string, d []byte) (any, error) { return ipset.Parse(n, d) },
	parsers.KindNFTText:         func(n string, d []byte) (any, error) { return nft.ParseText(n, d) },
	parsers.KindNFTJSON:         func(n string, d []byte) (any, error) { return nft.ParseJSON(n, d) },
	parsers.KindIPAddr:          func(n string, d []byte) (any, error) { return ipaddr.Parse(n, d) },
	parsers.KindIPRoute:         func(n string, d []byte) (any, error) { return iproute.Parse(n, d) },
	parsers.KindSysctl:          func(n string, d []byte) (any, error) { return sysctl.Parse(n, d) },
	parsers.KindModules:         func(n string, d []byte) (any, error) { return modules.Parse(n, d) },
	parsers.KindMetrics:         func(n string, d []byte) (any, error) { return metrics.Parse(n, d) },
	parsers.KindHealthz:         func(n string, d []byte) (any, error) { return healthz.Parse(n, d) },
	parsers.KindLog:             func(n string, d []byte) (any, error) { return klog.ParseKept(n, d) },
	parsers.KindConntrack:       func(n string, d []byte) (any, error) { return conntrack.Parse(n, d) },
	parsers.KindConntrackStats:  func(n string, d []byte) (any, error) { return conntrack.ParseStats(n, d) },
}

// kubeOptions tune the decoding of Kubernetes exports (tests compare the
// fast path with the reference decoders).
var kubeOptions kube.Options

// kube returns the options of the exports' decoding: kubeOptions, lean
// when asked or when the objects are compacted afterwards.
func (o Options) kube() kube.Options {
	ko := kubeOptions
	ko.Lean = o.Compact || o.Lean
	ko.Only = o.Only
	return ko
}

// streamExports decodes Kubernetes exports, on disk or in archives, as
// they are read rather than after reading them whole (tests compare both).
var streamExports = true

type parsed struct {
	f     file
	kind  parsers.Kind
	size  int64
	value any
	err   error
	// notes are the lines a lenient read removed, changed or skipped;
	// note says why a file read leniently was not analysed after all.
	notes []parsers.LineNote
	note  string
	// compacted, for an export whose objects are shared with other units
	// (see Exports), holds the trimmed copy of each of its Services that
	// compacting a snapshot puts in their place.
	compacted map[*kube.Service]*kube.Service
	// draft, for an export, is its service ports drafted as soon as it
	// is decoded (see model.DraftPortsAhead).
	draft *model.PortsDraft
	// prompt is the host the shell prompts pasted above the file's lines
	// name (see promptOf).
	prompt hostPrompt
	// unit, for a log, is the unit the journalctl command pasted above
	// its lines names (-u kubelet), or "".
	unit string
}

// setStrictness marks the files read strictly: all with strict, else
// those of a bundle holding manifest.json (one written by collect). The
// kinds of files read into memory are detected now.
func setStrictness(files []file, strict bool) {
	collected := map[string]bool{}
	for _, f := range files {
		if f.group != "" && f.name == "manifest.json" {
			collected[f.group] = true
		}
	}
	for i := range files {
		f := &files[i]
		f.strict = strict || collected[f.group]
		if f.path == "" && f.zpath == "" && f.member == nil && f.parsed == nil && !f.special {
			f.det = f.detect()
		}
	}
}

// Load reads every path and returns one snapshot per node: each bundle
// (an archive, or a directory holding manifest.json or node/) is a node of
// its own; loose files form one more; Kubernetes exports and configuration
// given as loose files apply to every node.
func Load(paths []string, opts Options) ([]*model.Snapshot, error) {
	defer opts.Exports.decoded()
	lim := opts.Limits
	if lim.MaxFiles == 0 {
		lim = DefaultLimits
	}
	var files []file
	// shown are the bundles whose files' errors are given with their
	// paths: those of several arguments, or of a folder given (read
	// together, an error naming node/iptables-save.txt would not say of
	// which bundle). The others are given alone: a fleet's unit is its
	// bundle, which the caller names.
	shown := map[string]bool{}
	rd := &reader{lim: lim, ko: opts.kube(), offheap: opts.OffHeap, ex: opts.Exports}
	for _, p := range paths {
		if opts.Only != nil {
			// The exports of an archive are decoded as it is read.
			rd.ko.Only = opts.Only.In("archive " + p)
		}
		fs, err := rd.path(p)
		if err != nil {
			return nil, err
		}
		if len(fs) == 0 && isDir(p) {
			// A directory given that holds no file: with other PATHs,
			// an input not read, which the verdict says; alone, nothing
			// to read.
			if len(paths) == 1 {
				return nil, inputErrorf("%s: no input files: the directory holds none (hidden ones aside)", p)
			}
			fs = []file{emptyDir(p)}
		}
		if opts.Shared.dirSplit() != nil {
			// A plain directory made a unit of its own (it holds no
			// bundle): its files are its node's, named by their paths
			// in it.
			for i := range fs {
				fs[i].dir = p
			}
		} else {
			fs = regroup(p, fs)
		}
		folder := len(paths) == 1 && isDir(p)
		for _, f := range fs {
			if f.group != "" && (len(paths) > 1 || folder && f.group != p) {
				shown[f.group] = true
			}
		}
		files = append(files, fs...)
	}
	for i := range files {
		files[i].offheap, files[i].lazy = opts.OffHeap, opts.LazyChains
	}
	if len(files) == 0 {
		return nil, inputErrorf("no input files in %s", strings.Join(paths, ", "))
	}
	setStrictness(files, opts.Strict)
	defer opts.Exports.loaded()
	renamed := opts.Shared.dirSplit() == nil && nameByCandidates(files)
	files = splitSessions(files)
	results, err := parseAll(files, opts.kube(), opts.parsed(), opts.Exports, opts.Compact)
	if err != nil {
		return nil, err
	}
	if renamed && !sharesCapture(results) {
		// The plain directories given are one node's files after all:
		// read again under their names in the arguments.
		// (The files' bytes were dropped as they were parsed: each is
		// read again from disk.)
		var idx []int
		var again []file
		for i, f := range files {
			if f.orig == "" {
				continue
			}
			if f.special {
				// Never opened: listed as before, under its name in
				// the arguments.
				g := f
				g.name, g.dir, g.group = f.orig, f.origDir, ""
				idx, again = append(idx, i), append(again, g)
				continue
			}
			fs, err := (&reader{lim: lim, ko: opts.kube()}).path(f.disk)
			if err != nil {
				return nil, err
			}
			if len(fs) != 1 {
				return nil, fault.Errorf("reading %s again: %d files", f.disk, len(fs))
			}
			g := fs[0]
			g.name, g.dir, g.group, g.named, g.strict = f.orig, f.origDir, "", f.named, f.strict
			idx, again = append(idx, i), append(again, g)
		}
		reread, err := parseAll(again, opts.kube(), nil, opts.Exports, opts.Compact)
		if err != nil {
			return nil, err
		}
		for j, i := range idx {
			results[i] = reread[j]
		}
	}
	if opts.Shared != nil {
		if err := opts.Shared.wait(); err != nil {
			return nil, err
		}
		results = append(results, opts.Shared.results...)
	}
	// A bundle that is not as its manifest says is reported as such,
	// before what its changed files hold.
	if err := verifyManifests(results); err != nil {
		return nil, err
	}
	var errs parsers.ErrorList
	var other fileErrors
	for _, r := range results {
		if r.err == nil {
			continue
		}
		if fault.Is(r.err) {
			return nil, r.err // proxyscan's failure, not the file's
		}
		if errors.Is(r.err, kube.ErrOnlyOrder) {
			// The caller loads the exports whole.
			return nil, fmt.Errorf("%s: %w: %w", r.f.name, ErrNotLean, r.err)
		}
		name := r.f.name
		if shown[r.f.group] {
			name = path.Join(filepath.ToSlash(r.f.group), r.f.name)
		}
		// The errors name the file by its name in its bundle, renamed
		// here when the bundle is to be shown, and by the caller when
		// it names the one bundle given.
		for _, one := range positioned(r.f.name, r.err) {
			if one.Pos.File == r.f.name {
				one.Pos.File = name
			}
			if one.Pos.Line == 0 && one.Pos.Path == "" && !parsers.IsInputError(r.err) {
				other = append(other, one)
				continue
			}
			errs = append(errs, one)
		}
	}
	if len(other) > 0 {
		return nil, other
	}
	if len(errs) > 0 {
		errs.Sort()
		return nil, errs
	}
	results = append(results, emptySources(results)...)
	if err := nothingKnown(results); err != nil {
		return nil, err
	}
	return assemble(results, opts)
}

// nothingKnown refuses inputs none of which proxyscan recognises: a run
// on them would check nothing and could only end in a verdict that means
// nothing. A directory or bundle may hold unrelated files next to known
// ones; those are listed as unknown in the report.
func nothingKnown(results []parsed) error {
	var names, hints []string
	hinted := map[string][]string{} // the files of each hint
	for _, r := range results {
		if r.kind != parsers.KindUnknown {
			return nil
		}
		if len(names) < 5 {
			names = append(names, r.f.name)
		}
		if h, ok := strings.CutPrefix(unreadWhy(r), "kind not recognised: "); ok {
			if hinted[h] == nil {
				hints = append(hints, h)
			}
			hinted[h] = append(hinted[h], r.f.name)
		}
	}
	more := ""
	if n := len(results) - len(names); n > 0 {
		more = fmt.Sprintf(" (and %d more)", n)
	}
	verb := "is"
	if len(results) > 1 {
		verb = "are"
	}
	const kinds = "iptables-save, ipvsadm, ipset, nft, kubectl exports, kube-proxy configuration, logs, metrics, node listings"
	if a := oneArchive(results); a != "" {
		// An archive given, or found among bundles, that holds
		// nothing of a node: not a bundle (a ticket's logs.tgz).
		var inner []string
		for _, r := range results {
			if strings.Contains(r.f.det.unread, nestedArchive) {
				inner = append(inner, r.f.name)
			}
		}
		if len(inner) == len(results) {
			// An archive of bundle archives.
			return inputErrorf("%s is not a bundle: it holds archives (%s), which proxyscan does not open inside an archive; extract it and give the directory it holds",
				a, listFiles(inner))
		}
		hint := "leave it out of the inputs (move it out of the directory given, or give the bundles by name)"
		if len(inner) > 0 {
			hint = fmt.Sprintf("the archives in it (%s) are not opened: extract them and give them as PATHs of their own", listFiles(inner))
		}
		return inputErrorf("%s is not a bundle: nothing in it is kube-proxy data: %s%s %s of no kind proxyscan reads (%s); %s",
			a, strings.Join(names, ", "), more, verb, kinds, hint)
	}
	hint := ""
	for _, h := range hints {
		// kubectl get's tables, kubectl describe: what to export instead.
		hint += "; " + listFiles(hinted[h]) + ": " + h
	}
	return inputErrorf("nothing in these inputs is kube-proxy data: %s%s %s of no kind proxyscan reads (%s)%s",
		strings.Join(names, ", "), more, verb, kinds, hint)
}

// oneArchive returns the archive every result was read from, or "".
func oneArchive(results []parsed) string {
	a := ""
	for _, r := range results {
		if !r.f.archive || a != "" && r.f.group != a {
			return ""
		}
		a = r.f.group
	}
	return a
}

// parseAll parses files, keeping their order. Kubernetes exports are
// decoded one at a time, as their decoder uses every core and frees each
// export's text once decoded; meanwhile one worker parses the other files,
// largest first, and once the exports are done every core does. Files on
// disk are read as they are parsed; Kubernetes exports on disk are
// decoded as they are read (see streamKube), and those of archives were
// decoded as the archive was read (or read through, when ex may hold
// them: see UnitExports.archived); an export that ex (when not nil) holds
// decoded already is not decoded again, and one that a later unit may
// hold is kept in ex, with the trimmed copies of its Services when
// compact. The error is a worker's panic. dumpsParsed, when not nil, is called with the iptables dumps and the nftables rulesets once every
// file but the exports is parsed, on the goroutine that parsed the last
// one, while the exports may still be decoding.
func parseAll(files []file, ko kube.Options, dumpsParsed func([]*iptables.Dump, []*nft.Ruleset), ex *UnitExports, compact bool) ([]parsed, error) {
	out := make([]parsed, len(files))
	parse := func(i int) {
		f := files[i]
		ko := ko
		if ko.Only != nil {
			// The exports of a bundle, or the loose ones (group ""),
			// decide their slices from their Services (see kube.Only.In).
			ko.Only = ko.Only.In(f.group)
		}
		k := f.detectKind()
		if k == parsers.KindUnknown && layoutCmdline(&f) {
			k = f.kind
		}
		r := parsed{f: f, kind: k}
		if lk := layoutKind(f.name); f.group != "" && f.det.blank && emptyDump(f.name, lk) != nil {
			// iptables-save, ipvsadm and ipset print nothing when
			// there are no rules: a data plane without rules, not a
			// missing input.
			r.kind, r.value, r.size = lk, emptyDump(f.name, lk), f.length()
			r.note = "empty: a data plane without rules"
			files[i].data = nil
			out[i] = r
			return
		}
		// A log on disk is read as it is parsed (when its text reads
		// as it is: see readLogStreamed).
		logged := readLogStreamed(&r, &f, k)
		switch {
		case logged:
		case f.skipped:
			r.size = f.size
		case f.parsed != nil:
			r.size = f.size
			r.value, r.compacted, r.err = ex.archived(&f, compact)
		case k == parsers.KindKube && streamed(&f):
			r.value, r.size, r.f.sum, r.compacted, r.err = ex.decode(&f, ko, compact)
			if r.err != nil && !f.strict && parsers.IsInputError(r.err) {
				// Paste damage past its head (words below the
				// export) that the stream does not repair: the
				// file is read again as a paste.
				if data, err := f.load(k); err == nil {
					r.value, r.compacted, r.err, r.size = nil, nil, nil, int64(len(data))
					readLenient(&r, data, ko)
				}
			}
		case f.path != "" && binaryUnknown(&f, k):
			// Nothing in it is read (a core dump in a ticket's
			// folder): it is not read into memory, as an archive's
			// member of no known kind is not.
			r.size = f.size
		default:
			data, err := f.load(k)
			r.size = int64(len(data))
			switch {
			case err != nil:
				r.err = err
			case f.det.unread == "" && k != parsers.KindCmdline && bytes.IndexByte(data, 0) >= 0:
				// Text holds no NUL: one in a file whose kind its text
				// told is damage (a bad disk, a binary spliced in), and
				// the lines around it cannot be trusted. (A file told
				// binary by its head says so already.) A command line
				// read from /proc/PID/cmdline is the one kind whose
				// words NULs separate.
				at := bytes.IndexByte(data, 0)
				r.kind = parsers.KindUnknown
				r.note = fmt.Sprintf("not analysed: binary: a NUL byte at offset %d (line %d)", at, bytes.Count(data[:at], []byte("\n"))+1)
			case !f.strict:
				readLenient(&r, data, ko)
			case k == parsers.KindIPTablesSave && f.lazy:
				// Read strictly, its per-Service chains lazily (see
				// Options.LazyChains).
				r.value, r.err = iptables.ParseLazy(f.name, data, kpnames.IsServiceChain)
			case k == parsers.KindKube:
				r.value, r.err = kube.ParseWith(f.name, data, ko)
			default:
				if fn := parsersByKind[k]; fn != nil {
					r.value, r.err = fn(f.name, data)
				}
			}
		}
		if l, ok := r.value.(*klog.Log); ok && l != nil && r.err == nil {
			if hosts, lines := l.Hosts(); len(hosts) == 1 {
				r.prompt = hostPrompt{host: strings.ToLower(hosts[0]), line: lines[0], journal: true}
			}
		}
		if objs, ok := r.value.(*kube.Objects); ok && objs != nil && r.err == nil {
			// Built on the core the decoding leaves, while the dumps are
			// parsed: the assembly takes the draft when the node's
			// objects are this export's.
			r.draft = ex.draft(objs)
		}
		// The parsed value keeps what it needs; drop the bytes so
		// that a large export is freed as soon as it is decoded.
		r.f.data = nil
		files[i].data = nil
		out[i] = r
	}
	order := make([]int, len(files))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return files[order[a]].length() > files[order[b]].length() })
	// The other files are parsed by one worker while the exports are
	// decoded (their decoder uses every core), then by all.
	var kube, rest []int
	for _, i := range order {
		if files[i].detectKind() == parsers.KindKube {
			kube = append(kube, i)
		} else {
			rest = append(rest, i)
		}
	}
	if ko.Only != nil {
		// The slices an export holds are decided from the Services
		// decoded before them (see kube.Only): the exports named for
		// Services are decoded first, so that a bundle's
		// endpointslices.yaml (the larger) is not decoded before its
		// services.yaml.
		sort.SliceStable(kube, func(a, b int) bool {
			return namedForServices(files[kube[a]].name) && !namedForServices(files[kube[b]].name)
		})
	}
	// left counts the files but the exports still to parse: the one that
	// parses the last hands the dumps to dumpsParsed.
	var left atomic.Int64
	inOrder := slices.Sorted(slices.Values(rest))
	left.Store(int64(len(rest)))
	handDumps := func() {
		if dumpsParsed == nil {
			return
		}
		var dumps []*iptables.Dump
		var rulesets []*nft.Ruleset
		for _, i := range inOrder {
			// A file that did not parse fails the load: its dump, if
			// any, is not one to read.
			if out[i].err != nil {
				continue
			}
			switch v := out[i].value.(type) {
			case *iptables.Dump:
				if v != nil {
					dumps = append(dumps, v)
				}
			case *nft.Ruleset:
				if v != nil {
					rulesets = append(rulesets, v)
				}
			}
		}
		dumpsParsed(dumps, rulesets)
	}
	if len(rest) == 0 {
		handDumps()
	}
	workers := runtime.GOMAXPROCS(0)
	g := fault.Group{Name: "load.parseAll"}
	next := make(chan int)
	worker := func() error {
		for i := range next {
			parse(i)
			if left.Add(-1) == 0 {
				handDumps()
			}
		}
		return nil
	}
	fault.GoDraining(&g, next, worker)
	go func() {
		for _, i := range rest {
			next <- i
		}
		close(next)
	}()
	ex.listAhead(files, kube)
	for _, i := range kube {
		parse(i)
	}
	ex.decoded()
	for w := 1; w < workers; w++ {
		fault.GoDraining(&g, next, worker)
	}
	// parse keeps each file's error in out.
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// namedForServices reports whether the file name of an export says that
// it holds Services (services.yaml, svc.json), not ServiceCIDRs.
func namedForServices(name string) bool {
	base := strings.ToLower(path.Base(filepath.ToSlash(name)))
	return (strings.Contains(base, "service") || strings.Contains(base, "svc")) && !strings.Contains(base, "servicecidr")
}

// parsed returns what parseAll calls once the inputs but the exports are
// parsed: Parsed with the dumps, then ParsedNFT with the nftables
// rulesets; nil when neither is set.
func (o Options) parsed() func([]*iptables.Dump, []*nft.Ruleset) {
	if o.Parsed == nil && o.ParsedNFT == nil {
		return nil
	}
	return func(dumps []*iptables.Dump, rulesets []*nft.Ruleset) {
		if o.Parsed != nil {
			o.Parsed(dumps)
		}
		if o.ParsedNFT != nil {
			o.ParsedNFT(rulesets)
		}
	}
}

// streamed reports whether a Kubernetes export is decoded as it is read
// from disk (see streamKube).
func streamed(f *file) bool {
	return f.path != "" && streamExports && (f.strict || !f.det.damaged)
}

// regroup assigns the files read from one argument to bundles: a directory
// (or archive) prefix holding manifest.json or node/ is a bundle.
// The files of a bundle archive found in a directory given (see
// reader.dir) are grouped already: the directory's own files are grouped
// as if they were not there, save that a top directory is common to them
// only if it holds the archives too.
func regroup(arg string, fs []file) []file {
	if len(fs) == 0 || fs[0].group == "" {
		return fs
	}
	var own []int
	var archives []string
	for i := range fs {
		if fs[i].within == "" {
			own = append(own, i)
		} else if len(archives) == 0 || archives[len(archives)-1] != fs[i].within {
			archives = append(archives, fs[i].within)
		}
	}
	if len(archives) > 0 {
		sub := make([]file, len(own))
		for j, i := range own {
			sub[j] = fs[i]
		}
		sub = regroupOwn(arg, sub, archives)
		for j, i := range own {
			fs[i] = sub[j]
		}
		return fs
	}
	return regroupOwn(arg, fs, nil)
}

// regroupOwn groups the files of one argument (see regroup); others are
// the paths in it of the archives read beside them.
func regroupOwn(arg string, fs []file, others []string) []file {
	if len(fs) == 0 {
		return fs
	}
	fs = stripCommonDir(fs, others)
	roots := map[string]bool{}
	if fs[0].archive {
		roots[""] = true // an archive is a bundle even without a manifest
	}
	for _, f := range fs {
		dir, base := path.Split(f.name)
		if base == "manifest.json" {
			roots[strings.TrimSuffix(dir, "/")] = true
		}
		if i := strings.Index("/"+f.name, "/node/"); i >= 0 {
			roots[strings.TrimSuffix(f.name[:i], "/")] = true
		}
	}
	for i := range fs {
		best := ""
		found := false
		for r := range roots {
			if (r == "" || strings.HasPrefix(fs[i].name, r+"/")) && (!found || len(r) > len(best)) {
				best, found = r, true
			}
		}
		if !found {
			fs[i].group = "" // loose file inside a plain directory
			fs[i].dir = arg
			continue
		}
		if best != "" {
			fs[i].name = strings.TrimPrefix(fs[i].name, best+"/")
			fs[i].group = path.Join(arg, best)
		} else {
			fs[i].group = arg
		}
	}
	return fs
}

// stripCommonDir removes a single top directory shared by every entry of
// an archive ("proxyscan-node1-20260302T081500Z/node/...") and by the
// other paths (of archives read beside them in a directory).
func stripCommonDir(fs []file, others []string) []file {
	first, _, ok := strings.Cut(fs[0].name, "/")
	if !ok || first == "node" || first == "cluster" || first == "kube-proxy" {
		return fs
	}
	for _, f := range fs {
		if !strings.HasPrefix(f.name, first+"/") {
			return fs
		}
	}
	for _, o := range others {
		if !strings.HasPrefix(o, first+"/") {
			return fs
		}
	}
	for i := range fs {
		fs[i].name = strings.TrimPrefix(fs[i].name, first+"/")
	}
	return fs
}

// emptyDir returns the input that stands for the directory p given on
// the command line that holds no file: named, unread, so that the verdict
// is not ok for a PATH that gave nothing.
func emptyDir(p string) file {
	return file{name: p, kind: parsers.KindUnknown, named: true, skipped: true, special: true,
		det: detection{done: true, kind: parsers.KindUnknown, loose: parsers.KindUnknown, unread: "an empty directory: it holds no file (hidden ones aside)"}}
}

// isDir reports whether p is a directory.
func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// binaryUnknown reports whether a file of the kind k is of no known kind
// and binary by its head: there is nothing in it to read.
func binaryUnknown(f *file, k parsers.Kind) bool {
	return k == parsers.KindUnknown && strings.HasPrefix(f.det.unread, "binary: ")
}
