// Command benchgen writes the generated benchmark inputs into a directory:
// node/iptables-save.txt (or, with -mode nftables, node/nft-ruleset.txt),
// cluster/cluster.json (indented, as kubectl prints it),
// cluster/cluster-compact.json (the same objects unindented, as an API
// client reads them), cluster/cluster.yaml and kube-proxy/config.yaml; with
// -bundles N, N node bundles of that cluster instead; with -reports N, the
// node reports of N nodes of that cluster; with -log-mb N, a kube-proxy
// log of N megabytes too (kube-proxy/kube-proxy.log).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/proxyscan/proxyscan/analyzer/report"
	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/internal/benchgen/fleetreports"
)

func main() {
	out := flag.String("out", "", "directory to write into")
	spec := benchgen.Default
	flag.IntVar(&spec.Services, "services", spec.Services, "number of Services")
	flag.IntVar(&spec.Endpoints, "endpoints", spec.Endpoints, "number of endpoints")
	mode := flag.String("mode", "iptables", "proxy mode of the node: iptables or nftables")
	bundles := flag.Int("bundles", 0, "write this many node bundles (node-0001...), each under its own node name, instead (iptables mode)")
	reports := flag.Int("reports", 0, "write the node reports (collect --analyze) of this many nodes (node-0001/node-report.json...) instead, one in a hundred lacking a Service (iptables mode)")
	logMB := flag.Int("log-mb", 0, "write a kube-proxy log of this many megabytes as kube-proxy/kube-proxy.log too")
	version := flag.String("tool-version", "v0.1.0-dev", "with -reports: the proxyscan version the reports name (analyze merges only its own)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "usage: benchgen -out DIR [-services N] [-endpoints N] [-mode iptables|nftables] [-bundles N]")
		os.Exit(2)
	}
	if *reports > 0 {
		if err := fleetreports.Write(spec, *out, *reports, report.Tool{Name: "proxyscan", Version: *version}); err != nil {
			fail(err)
		}
		return
	}
	if *bundles > 0 {
		if err := spec.WriteFleet(*out, *bundles); err != nil {
			fail(err)
		}
		return
	}
	files := map[string]func(io.Writer) error{
		"node/iptables-save.txt":       spec.IPTablesSave,
		"cluster/cluster.json":         spec.WriteJSON,
		"cluster/cluster-compact.json": spec.WriteCompactJSON,
		"cluster/cluster.yaml":         spec.WriteYAML,
		"kube-proxy/config.yaml":       func(w io.Writer) error { _, err := w.Write(spec.Config()); return err },
	}
	switch *mode {
	case "iptables":
	case "nftables":
		delete(files, "node/iptables-save.txt")
		files["node/nft-ruleset.txt"] = spec.NFTRuleset
		files["kube-proxy/config.yaml"] = func(w io.Writer) error { _, err := w.Write(spec.NFTConfig()); return err }
	}
	if *logMB > 0 {
		files["kube-proxy/kube-proxy.log"] = func(w io.Writer) error { return benchgen.WriteLog(w, int64(*logMB)<<20) }
	}
	switch *mode {
	case "iptables", "nftables":
	default:
		fmt.Fprintf(os.Stderr, "benchgen: unknown mode %q (want iptables or nftables)\n", *mode)
		os.Exit(2)
	}
	for name, write := range files {
		p := filepath.Join(*out, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fail(err)
		}
		f, err := os.Create(p)
		if err != nil {
			fail(err)
		}
		if err := write(f); err != nil {
			fail(err)
		}
		if err := f.Close(); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchgen:", err)
	os.Exit(1)
}
