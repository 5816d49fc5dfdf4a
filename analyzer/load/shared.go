package load

import (
	"errors"
	"path/filepath"
	"sort"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/kube"
)

// Shared is what the loose cluster-level files of a run hold (Kubernetes
// exports, kube-proxy configuration files), read and decoded once and
// given to every unit [Load] reads with it ([Options.Shared]), as they
// apply to every bundle read together. They are decoded in the
// background, beside the first units' own files: Load waits for them
// once its files are parsed. Nothing loading or analysing a unit changes
// them: units read with them may be loaded and analysed at once.
type Shared struct {
	// done is closed once the files are parsed; then results, services
	// and err are set.
	done chan struct{}
	// results are the loose files as parsed, in the order of the
	// arguments.
	results []parsed
	// services maps the Services of the exports to a trimmed copy of
	// each (see compactService), which compacting a snapshot puts in
	// their place instead of trimming them; nil without Options.Compact.
	services map[*kube.Service]*kube.Service
	// err is ErrReadTogether when a file turned out not to be
	// cluster-level or could not be read, or proxyscan's failure.
	err error
	// dirs, when set, are the plain directories made units of their own
	// (see planPlainDirs).
	dirs *dirSplit
}

// ErrReadTogether is the error of [Load] with a [Shared] whose loose files
// turned out not all to apply to every node, or not to be readable: the
// run reads every argument together instead, which reports them as they
// are.
var ErrReadTogether = errors.New("the loose files are to be read together with the bundles")

// wait waits until the files are parsed and returns their error.
func (s *Shared) wait() error {
	<-s.done
	return s.err
}

// compacted returns the trimmed copy of a Service of s, or nil when svc
// is not one of s (or s is nil). The files are parsed.
func (s *Shared) compacted(svc *kube.Service) *kube.Service {
	if s == nil {
		return nil
	}
	return s.services[svc]
}

// Files returns the names of the loose files as the report gives them
// (a file of a directory by its path in it), in the order of the
// arguments, once they are parsed; nil when they are to be read together
// (see [ErrReadTogether]).
func (s *Shared) Files() []string {
	if s.wait() != nil {
		return nil
	}
	out := make([]string, len(s.results))
	for i, r := range s.results {
		out[i] = r.f.name
	}
	return out
}

// Plan splits the arguments of a run as [Units] does and, when they are
// two or more bundles (directories of bundles and globs of them) plus
// loose files that all apply to every node — Kubernetes exports and
// kube-proxy configuration files — starts reading and decoding those
// loose files once: the units are then the bundles, one each, to be
// loaded with the returned Shared in [Options.Shared], and their
// snapshots are those [Load] gives of every argument read together. When
// a loose file turns out not to be read (it cannot be, or it holds
// nothing of the cluster), Load returns [ErrReadTogether] instead: the
// caller then reads every argument together.
//
// Files beside the bundles of a directory given are loose files given
// with them, named by their paths in it; among them, a file of no known
// kind (a README) is read once too, listed with every node and not
// analysed.
//
// Otherwise shared is nil and the units are those of [Units]: loose
// files of a node (a dump, a listing, a log), a file of no known kind
// named on the command line, a plain directory holding a bundle and a
// node's file, a node report among the arguments or a loose file that
// cannot be opened keep every argument in one unit, read together as
// before.
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
	// names holds, for a file beside the bundles of a directory given, its
	// path in that directory (the name it has when read together).
	names := map[string]string{}
	for _, p := range args {
		found, beside, ok, err := bundlesIn(p)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			loose = append(loose, p)
			continue
		}
		bundles = append(bundles, found...)
		for _, q := range beside {
			rel, err := filepath.Rel(p, q)
			if err != nil {
				return together, nil, nil
			}
			loose = append(loose, q)
			names[q] = filepath.ToSlash(rel)
		}
	}
	if len(bundles) == 0 {
		// Plain directories of several nodes (see splitPlainDirs) are
		// units of their own, as bundles are, when their heads say so;
		// CheckSplit tells, once they are loaded, whether their contents
		// agree.
		lim := opts.Limits
		if lim.MaxFiles == 0 {
			lim = DefaultLimits
		}
		dirs, rest, names, split := planPlainDirs(loose, lim, opts.kube())
		if split == nil {
			return together, nil, nil
		}
		if len(rest) > 0 {
			shared = readShared(rest, names, opts)
			if shared == nil {
				return together, nil, nil
			}
		} else {
			shared = &Shared{done: make(chan struct{})}
			close(shared.done)
		}
		shared.dirs = split
		for _, d := range dirs {
			units = append(units, []string{d})
		}
		return units, shared, nil
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
	shared = readShared(loose, names, opts)
	if shared == nil {
		return together, nil, nil
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

// readShared reads the loose arguments as [Load] does (a file named in
// names is shown by that name, its path in the directory given that holds
// it, and not named on the command line) and starts parsing them in the
// background; it returns nil when one of their files is not cluster-level
// by its kind (nor of no known kind, found in a directory given), holds a
// bundle or cannot be opened (Load then reads every argument together
// and says what is wrong).
func readShared(loose []string, names map[string]string, opts Options) *Shared {
	lim := opts.Limits
	if lim.MaxFiles == 0 {
		lim = DefaultLimits
	}
	// A directory holding a bundle archive is not read through: it is
	// read together with the bundles.
	rd := &reader{lim: lim, ko: opts.kube(), planning: true}
	var files []file
	for _, p := range loose {
		fs, err := rd.path(p)
		if err != nil {
			return nil
		}
		for _, f := range regroup(p, fs) {
			if f.group != "" {
				return nil // a bundle inside a plain directory
			}
			if n, ok := names[p]; ok {
				// A file of a directory given, named as in it, and not
				// named on the command line: of no known kind, it is
				// listed and does not make the verdict inconclusive.
				f.name, f.named = n, false
			}
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return nil
	}
	setStrictness(files, opts.Strict)
	for _, f := range files {
		switch k := f.detectKind(); {
		case k == parsers.KindKube || k == parsers.KindKubeProxyConfig:
		case k == parsers.KindUnknown && !f.named:
			// A file of no known kind beside the bundles or node
			// directories of a directory given (a README, notes) is given
			// to every node, listed once and not analysed, unless reading
			// it finds a node's capture pasted in it (see parse). One
			// named on the command line was meant to be read: the nodes
			// are read together, the verdict saying it was not.
		default:
			return nil // a node's file: read together, without parsing it twice
		}
	}
	s := &Shared{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.err = s.parse(files, opts)
	}()
	return s
}

// parse parses the loose files and makes the trimmed copies of their
// Services (with Options.Compact).
func (s *Shared) parse(files []file, opts Options) error {
	results, err := parseAll(files, opts.kube(), nil, nil, false)
	if err != nil {
		return err
	}
	for _, r := range results {
		if r.err == nil && r.value == nil && r.kind == parsers.KindUnknown {
			continue // of no known kind once read too: listed, not analysed
		}
		if r.err != nil || r.value == nil || !clusterLevel(r) {
			return ErrReadTogether
		}
	}
	s.results = results
	if !opts.Compact {
		return nil
	}
	s.services = map[*kube.Service]*kube.Service{}
	for _, r := range results {
		if o, ok := r.value.(*kube.Objects); ok {
			trimmedCopies(o.Services, s.services)
		}
	}
	return nil
}
