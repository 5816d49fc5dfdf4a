package load

import (
	"sort"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/kube"
)

// Shared is what the loose cluster-level files of a run hold (Kubernetes
// exports, kube-proxy configuration files), read and decoded once and
// given to every unit [Load] reads with it ([Options.Shared]), as they
// apply to every bundle read together. Nothing loading or analysing a
// unit changes it: units read with it may be loaded and analysed at once.
type Shared struct {
	// results are the loose files as parsed, in the order of the
	// arguments.
	results []parsed
	// services maps the Services of the exports to a trimmed copy of
	// each (see compactService), which compacting a snapshot puts in
	// their place instead of trimming them; nil without Options.Compact.
	services map[*kube.Service]*kube.Service
}

// compacted returns the trimmed copy of a Service of s, or nil when svc
// is not one of s (or s is nil).
func (s *Shared) compacted(svc *kube.Service) *kube.Service {
	if s == nil {
		return nil
	}
	return s.services[svc]
}

// Files returns the names of the loose files as the report gives them
// (a file of a directory by its path in it), in the order of the
// arguments.
func (s *Shared) Files() []string {
	out := make([]string, len(s.results))
	for i, r := range s.results {
		out[i] = r.f.name
	}
	return out
}

// Plan splits the arguments of a run as [Units] does and, when they are
// two or more bundles (directories of bundles and globs of them) plus
// loose files that all apply to every node — Kubernetes exports and
// kube-proxy configuration files, each read without error — reads and
// decodes those loose files once: the units are then the bundles, one
// each, to be loaded with the returned Shared in [Options.Shared], and
// their snapshots are those [Load] gives of every argument read together.
//
// Otherwise shared is nil and the units are those of [Units]: loose
// files of a node (a dump, a listing, a log), a file of no known kind, a
// plain directory holding a bundle, a node report among the arguments or
// a loose file that cannot be read keep every argument in one unit, read
// together as before (an error of a loose file is then reported as Load
// reports it).
func Plan(paths []string, opts Options) (units [][]string, shared *Shared, err error) {
	var args []string
	for _, p := range paths {
		expanded, err := expand(p)
		if err != nil {
			return nil, nil, err
		}
		args = append(args, expanded...)
	}
	together := [][]string{args}
	var bundles, loose []string
	for _, p := range args {
		found, ok, err := bundlesIn(p)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			bundles = append(bundles, found...)
		} else {
			loose = append(loose, p)
		}
	}
	units = bundleUnits(bundles)
	if len(loose) == 0 {
		return units, nil, nil
	}
	if len(units) < 2 {
		// One bundle: its files and the loose ones are read at once.
		return together, nil, nil
	}
	for _, u := range units {
		if IsNodeReportFile(u[0]) {
			// Load refuses a node report among loose files.
			return together, nil, nil
		}
	}
	shared, ok, err := readShared(loose, opts)
	if err != nil || !ok {
		return together, nil, err
	}
	return units, shared, nil
}

// bundleUnits returns one unit per bundle, sorted, each once.
func bundleUnits(bundles []string) [][]string {
	sort.Strings(bundles)
	var out [][]string
	for i, b := range bundles {
		if i > 0 && b == bundles[i-1] {
			continue
		}
		out = append(out, []string{b})
	}
	return out
}

// readShared reads and parses the loose arguments as [Load] does; ok is
// false when one of their files is not cluster-level, holds a bundle or
// cannot be read or parsed (Load then reads every argument together and
// says what is wrong). err is proxyscan's failure only.
func readShared(loose []string, opts Options) (shared *Shared, ok bool, err error) {
	lim := opts.Limits
	if lim.MaxFiles == 0 {
		lim = DefaultLimits
	}
	rd := &reader{lim: lim, ko: opts.kube()}
	var files []file
	for _, p := range loose {
		fs, err := rd.path(p)
		if err != nil {
			return nil, false, nil
		}
		for _, f := range regroup(p, fs) {
			if f.group != "" {
				return nil, false, nil // a bundle inside a plain directory
			}
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return nil, false, nil
	}
	setStrictness(files, opts.Strict)
	for _, f := range files {
		if k := f.detectKind(); k != parsers.KindKube && k != parsers.KindKubeProxyConfig {
			return nil, false, nil // a node's file: read together, without parsing it twice
		}
	}
	results, err := parseAll(files, opts.kube())
	if err != nil {
		return nil, false, err
	}
	s := &Shared{results: results}
	for _, r := range results {
		if r.err != nil || r.value == nil || !clusterLevel(r) {
			return nil, false, nil
		}
	}
	if !opts.Compact {
		return s, true, nil
	}
	s.services = map[*kube.Service]*kube.Service{}
	for _, r := range results {
		if o, ok := r.value.(*kube.Objects); ok {
			for _, svc := range o.Services {
				c := *svc
				compactService(&c)
				s.services[svc] = &c
			}
		}
	}
	return s, true, nil
}
