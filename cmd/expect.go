package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/proxier"
	"github.com/proxyscan/proxyscan/analyzer/report"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
)

// ExpectOptions are the flags and arguments of `proxyscan expect`.
type ExpectOptions struct {
	IO      *IOStreams
	Paths   []string
	Mode    string
	Version string
	Family  string
	Node    string
	Dir     string
	// Strict reads every input strictly (the global --strict flag).
	Strict bool
}

// NewCmdExpect builds `proxyscan expect`; runF replaces expectRun in tests.
func NewCmdExpect(f *Factory, runF func(*ExpectOptions) error) *cobra.Command {
	opts := &ExpectOptions{IO: f.IO}
	c := &cobra.Command{
		Use:   "expect PATH...",
		Short: "Print the rules kube-proxy should have programmed",
		Long: "Load the Services, EndpointSlices, Node and kube-proxy configuration in PATH and print what one\n" +
			"full sync of kube-proxy programs for them, in the native dump format of the mode: for iptables\n" +
			"mode an iptables-save file per IP family (IPv4 then IPv6 on a dual-stack node), each loadable\n" +
			"with iptables-restore (ip6tables-restore). On stdout the files follow each other, each after a\n" +
			"comment line naming it; with --dir they are written as DIR/iptables-save.txt and\n" +
			"DIR/ip6tables-save.txt (DIR/NODE/... for several nodes). For ipvs mode (kube-proxy 1.21 to\n" +
			"1.37) the files are ipset-save.txt (ipset save form, loadable with ipset restore),\n" +
			"ipvsadm-save.txt (the virtual and real servers, ipvsadm -Sn form, loadable with ipvsadm -R),\n" +
			"kube-ipvs0.txt (the addresses bound to kube-ipvs0) and the iptables-save files of the rules\n" +
			"ipvs mode writes. For nftables mode (kube-proxy 1.29 to 1.37; 1.29 with the NFTablesProxyMode gate) it is nft-ruleset.txt:\n" +
			"the tables ip and ip6 kube-proxy as `nft list ruleset` prints them, loadable with nft -f.",
		Example: "  proxyscan expect bundle.tgz\n" +
			"  proxyscan expect cluster.yaml kube-proxy.yaml --node worker-1 --version 1.23\n" +
			"  proxyscan expect ./bundle --family IPv6 --dir expected/\n" +
			"  proxyscan expect ./bundle --mode ipvs --dir expected/\n" +
			"  proxyscan expect ./bundle --mode nftables",
		Args: requirePaths("expect"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Paths, opts.Strict = args, f.Strict
			if runF != nil {
				return runF(opts)
			}
			return expectRun(opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.Mode, "mode", "", "proxy mode: "+strings.Join(proxier.ModeNames(), ", ")+" (default: the configured mode, else iptables)")
	fl.StringVar(&opts.Version, "version", "", "kube-proxy version to mirror, 1.20 to 1.37 (default: from the inputs, else the newest)")
	fl.StringVar(&opts.Family, "family", "", "only this IP family: IPv4 or IPv6 (default: the families kube-proxy runs on the node)")
	fl.StringVar(&opts.Node, "node", "", "name of the node to generate for (decides which endpoints are local)")
	fl.StringVar(&opts.Dir, "dir", "", "write one file per family into this directory instead of stdout")
	registerCompletions(c, map[string]cobra.CompletionFunc{
		"mode":    completeValues(proxier.ModeNames()...),
		"version": completeValues(versionValues()...),
		"family":  completeValues("IPv4", "IPv6"),
		"node":    completeNothing,
		"dir":     completeDirs,
	})
	return c
}

func expectRun(opts *ExpectOptions) error {
	// The rules are printed, not traced: their text is enough.
	popts := proxier.Options{TextOnly: true}
	var ropts resolve.Options
	if opts.Mode != "" {
		ropts.Mode = opts.Mode
		if _, ok := proxier.Modes[opts.Mode]; !ok {
			return flagErrorf("unknown --mode %q (want one of %s)", opts.Mode, strings.Join(proxier.ModeNames(), ", "))
		}
	}
	if opts.Version != "" {
		v, err := kpversion.ParseString(opts.Version)
		if err != nil || !v.Supported() {
			return flagErrorf("invalid --version %q (want 1.%d to 1.%d)", opts.Version, kpversion.OldestMinor, kpversion.NewestMinor)
		}
		ropts.Version = v
	}
	switch strings.ToLower(opts.Family) {
	case "":
	case "ipv4", "4":
		popts.Families = []model.Family{model.IPv4}
	case "ipv6", "6":
		popts.Families = []model.Family{model.IPv6}
	default:
		return flagErrorf("invalid --family %q (want IPv4 or IPv6)", opts.Family)
	}
	opts.Paths = oncePaths(opts.IO, "expect", opts.Paths)
	snaps, err := load.Load(opts.Paths, offHeap(expectLoadOptions(opts.Node, opts.Version, opts.Strict)))
	if err != nil {
		return inSingle(opts.Paths, err)
	}
	for _, s := range snaps {
		if _, err := incompleteFor(opts.IO, "expect", s, needServices); err != nil {
			return err
		}
		res := resolve.Resolve(s, ropts)
		dp, err := proxier.Expect(res, popts)
		if err != nil {
			return &FlagError{Err: err}
		}
		warnAssumed(opts.IO, res)
		if opts.Dir != "" {
			dir := opts.Dir
			if len(snaps) > 1 {
				dir = filepath.Join(dir, nodeDirName(s))
			}
			if err := writeExpectFiles(dir, dp); err != nil {
				return err
			}
			continue
		}
		for _, f := range dp.Files {
			fam := ""
			if f.Family != "" {
				fam = ", " + string(f.Family)
			}
			fmt.Fprintf(opts.IO.Out, "# proxyscan expect: %s, kube-proxy %s %s mode%s, node %s\n",
				f.Name, dp.Version.MinorString(), dp.Mode, fam, report.Escape(nodeLabel(s)))
			if _, err := opts.IO.Out.Write(f.Data); err != nil {
				return fmt.Errorf("writing the expected rules: %w", err)
			}
		}
	}
	return nil
}

// warnAssumed says on stderr what the expected rules of a node rest on that
// its inputs do not tell: no Service (the rules are kube-proxy's own
// chains alone), a proxy mode or a kube-proxy version assumed.
func warnAssumed(io *IOStreams, res *resolve.Resolution) {
	s := res.Snap
	node := report.Escape(nodeLabel(s))
	if len(s.Objects.Services) == 0 {
		fmt.Fprintf(io.ErrOut, "proxyscan: warning: expect: node %s: no Service in the inputs, so the rules printed hold none, only kube-proxy's own chains; add the cluster's Services and EndpointSlices (kubectl get services,endpointslices -A -o yaml)\n", node)
	}
	if res.ModeOrigin == resolve.Assumed {
		fmt.Fprintf(io.ErrOut, "proxyscan: warning: expect: node %s: proxy mode %s %s; add the kube-proxy configuration or use --mode\n", node, res.Mode, report.Escape(res.ModeSource))
	}
	if strings.HasPrefix(res.Version.Source, resolve.Assumed) {
		fmt.Fprintf(io.ErrOut, "proxyscan: warning: expect: node %s: kube-proxy %s (%s); add kube-proxy/version.txt or use --version\n", node, res.Version.MinorString(), report.Escape(res.Version.Source))
	}
}

// expectLoadOptions are the options of loading the inputs of expect: the
// reference proxier reads of the exports nothing a lean decoding leaves
// out, so they are decoded lean.
func expectLoadOptions(node, version string, strict bool) load.Options {
	return load.Options{Node: node, Version: version, Strict: strict, Lean: true}
}

func writeExpectFiles(dir string, dp *proxier.Dataplane) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	for _, f := range dp.Files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			return fmt.Errorf("writing the expected rules: %w", err)
		}
	}
	return nil
}

func nodeLabel(s *model.Snapshot) string {
	if s.Node.Name == "" {
		return "unknown"
	}
	return s.Node.Name
}

func nodeDirName(s *model.Snapshot) string {
	if s.Node.Name != "" {
		return s.Node.Name
	}
	for _, in := range s.Inputs {
		if in.Bundle != "" {
			return filepath.Base(in.Bundle)
		}
	}
	return "node"
}
