// Command kpgen runs the real kube-proxy v1.37.2 proxiers (iptables,
// nftables, ipvs) on a set of Services, EndpointSlices, a Node and a
// KubeProxyConfiguration, with fake kernel backends, and writes what the
// proxiers programmed after their first full sync.
//
// Usage:
//
//	kpgen -mode iptables|ipvs|nftables -in DIR -out DIR [-node NAME] [-sort]
//	      [-service-cidrs CIDR,...] [-capture]
//
// DIR holds cluster/*.yaml (kubectl -o yaml exports: a v1 List or a
// multi-document stream of Services, EndpointSlices and Nodes) and
// kube-proxy/config.yaml (the KubeProxyConfiguration). An optional
// DIR/service-cidrs.txt lists the cluster's ServiceCIDRs, one per line; the
// nftables proxier uses them to drop traffic to unallocated ClusterIPs.
//
// The proxiers are built through their exported NewProxier constructors and
// joined by metaproxier on a dual-stack node. Every interface kube-proxy uses
// to touch the kernel is a fake from the kube-proxy tree: the recording
// iptables fake of pkg/util/iptables/testing, knftables.Fake, the IPVS,
// ipset and netlink fakes of pkg/proxy/ipvs, a fake sysctl, conntrack, nfacct,
// network-interface list and service health server. Fakes that the
// constructors create internally are replaced right after construction,
// before any object is fed. The objects are fed as kube-proxy's informers
// feed them at start-up: the node's topology labels and the ServiceCIDRs,
// every Service and EndpointSlice added, then both marked synced, which runs
// the full sync synchronously.
//
// Output files in -out, per mode:
//
//	iptables: iptables-restore.v4, iptables-restore.v6, nfacct.txt
//	nftables: nft-dump.v4, nft-dump.v6
//	ipvs:     iptables-restore.v4, iptables-restore.v6, ipvsadm.txt,
//	          ipvsadm-save.txt, ipset-restore.txt, kube-ipvs0.txt
//
// (".v6" files only on a dual-stack node). With -capture, kpgen also writes
// node-addrs.txt (the node's interface addresses the fakes reported) and,
// in ipvs mode, iptables-restore.vN.loadable, in which every "-m ipvs" match
// is replaced by a comment placeholder, and ipvs-fixup.vN.sed, which turns
// the placeholders in iptables-save output into iptables-save's rendering of
// the "-m ipvs" match; this lets the rules load on a kernel without xt_ipvs.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/proxy"
	kubeproxyconfig "k8s.io/kubernetes/pkg/proxy/apis/config"
	proxyutil "k8s.io/kubernetes/pkg/proxy/util"
)

func main() {
	var (
		mode         = flag.String("mode", "", "proxy mode: iptables, ipvs or nftables; overrides the mode of kube-proxy/config.yaml")
		inDir        = flag.String("in", "", "input directory (cluster/*.yaml, kube-proxy/config.yaml)")
		outDir       = flag.String("out", "", "output directory")
		node         = flag.String("node", "", "name of the node kube-proxy runs on (default: the only Node of the inputs)")
		sortRules    = flag.Bool("sort", false, "stable-sort the rules kube-proxy writes in Go map order by service port name")
		serviceCIDRs = flag.String("service-cidrs", "", "comma-separated ServiceCIDRs (default: DIR/service-cidrs.txt if present)")
		capture      = flag.Bool("capture", false, "also write the helper files capture.sh needs (node-addrs.txt; ipvs mode: restore files loadable without xt_ipvs and their fix-up scripts)")
		nftPrimary   = flag.Bool("nftables-primary-default", true, "in nftables mode, default an empty nodePortAddresses to [primary] as kube-proxy's start-up does")
		verbose      = flag.Int("v", 0, "kube-proxy log verbosity (logs go to stderr)")
	)
	flag.Parse()
	if *inDir == "" || *outDir == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: kpgen -mode iptables|ipvs|nftables -in DIR -out DIR [-node NAME] [-sort] [-service-cidrs CIDR,...] [-capture]")
		os.Exit(2)
	}
	setupLogging(*verbose)

	opts := options{sort: *sortRules, capture: *capture, nftPrimaryDefault: *nftPrimary}
	if err := run(*mode, *inDir, *outDir, *node, *serviceCIDRs, opts); err != nil {
		fmt.Fprintln(os.Stderr, "kpgen:", err)
		os.Exit(1)
	}
}

type options struct {
	sort              bool
	capture           bool
	nftPrimaryDefault bool
}

func setupLogging(v int) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", fmt.Sprint(v))
	_ = fs.Set("logtostderr", "true")
	if v == 0 {
		// kube-proxy logs a few errors about its environment (the
		// deprecated ipvs mode, fakes it cannot tell from real kernels);
		// keep stderr for kpgen's own messages unless asked for.
		_ = fs.Set("stderrthreshold", "FATAL")
		klog.SetOutput(discard{})
		klog.LogToStderr(false)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func run(mode, inDir, outDir, node, serviceCIDRFlag string, opts options) error {
	in, err := loadInputs(inDir, node, mode, opts.nftPrimaryDefault)
	if err != nil {
		return err
	}
	cidrs, err := readServiceCIDRs(inDir, serviceCIDRFlag)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var b backend
	switch in.config.Mode {
	case kubeproxyconfig.ProxyModeIPTables:
		b, err = newIPTablesBackend(ctx, in)
	case kubeproxyconfig.ProxyModeNFTables:
		b, err = newNFTablesBackend(ctx, in)
	case kubeproxyconfig.ProxyModeIPVS:
		b, err = newIPVSBackend(ctx, in)
	default:
		return fmt.Errorf("unsupported mode %q", in.config.Mode)
	}
	if err != nil {
		return err
	}
	feed(b.provider(), in, cidrs)
	if err := b.write(outDir, opts); err != nil {
		return err
	}
	if opts.capture {
		var sb strings.Builder
		for _, a := range nodeInterfaceAddrs(in) {
			if !a.IP.IsLoopback() {
				sb.WriteString(a.String() + "\n")
			}
		}
		return writeFile(outDir, "node-addrs.txt", sb.String())
	}
	return nil
}

// backend is one proxy mode: its proxier(s) and the fakes they program.
type backend interface {
	provider() proxy.Provider
	write(dir string, opts options) error
}

// feed delivers the inputs the way kube-proxy's informers do at start-up.
// The second "synced" call runs syncProxyRules synchronously.
func feed(p proxy.Provider, in *inputs, serviceCIDRs []string) {
	p.OnTopologyChange(in.topoLabel)
	if len(serviceCIDRs) > 0 {
		p.OnServiceCIDRsChanged(serviceCIDRs)
	}
	for _, svc := range in.services {
		// The service informer selects Services without
		// service.kubernetes.io/service-proxy-name and with a ClusterIP
		// other than "None".
		if _, ok := svc.Labels["service.kubernetes.io/service-proxy-name"]; ok {
			continue
		}
		if svc.Spec.ClusterIP == v1.ClusterIPNone {
			continue
		}
		p.OnServiceAdd(svc)
	}
	for _, es := range in.slices {
		// The EndpointSlice informer skips slices of headless Services.
		if _, ok := es.Labels[v1.IsHeadlessService]; ok {
			continue
		}
		p.OnEndpointSliceAdd(es)
	}
	p.OnServiceSynced()
	p.OnEndpointSlicesSynced()
}

func readServiceCIDRs(inDir, flagValue string) ([]string, error) {
	var raw []string
	if flagValue != "" {
		raw = strings.Split(flagValue, ",")
	} else {
		data, err := os.ReadFile(filepath.Join(inDir, "service-cidrs.txt"))
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		raw = strings.Split(string(data), "\n")
	}
	var out []string
	for _, c := range raw {
		c = strings.TrimSpace(c)
		if c == "" || strings.HasPrefix(c, "#") {
			continue
		}
		if _, _, err := net.ParseCIDR(c); err != nil {
			return nil, fmt.Errorf("service CIDR %q: %w", c, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// localDetectors mirrors getLocalDetectors of cmd/kube-proxy/app.
func localDetectors(cfg *kubeproxyconfig.KubeProxyConfiguration, podCIDRs []string) map[v1.IPFamily]proxyutil.LocalTrafficDetector {
	d := map[v1.IPFamily]proxyutil.LocalTrafficDetector{
		v1.IPv4Protocol: proxyutil.NewNoOpLocalDetector(),
		v1.IPv6Protocol: proxyutil.NewNoOpLocalDetector(),
	}
	switch cfg.DetectLocalMode {
	case kubeproxyconfig.LocalModeClusterCIDR:
		for fam, cidrs := range proxyutil.MapCIDRsByIPFamily(cfg.DetectLocal.ClusterCIDRs) {
			d[fam] = proxyutil.NewDetectLocalByCIDR(cidrs[0].String())
		}
	case kubeproxyconfig.LocalModeNodeCIDR:
		for fam, cidrs := range proxyutil.MapCIDRsByIPFamily(podCIDRs) {
			d[fam] = proxyutil.NewDetectLocalByCIDR(cidrs[0].String())
		}
	case kubeproxyconfig.LocalModeBridgeInterface:
		det := proxyutil.NewDetectLocalByBridgeInterface(cfg.DetectLocal.BridgeInterface)
		d[v1.IPv4Protocol], d[v1.IPv6Protocol] = det, det
	case kubeproxyconfig.LocalModeInterfaceNamePrefix:
		det := proxyutil.NewDetectLocalByInterfaceNamePrefix(cfg.DetectLocal.InterfaceNamePrefix)
		d[v1.IPv4Protocol], d[v1.IPv6Protocol] = det, det
	}
	return d
}

// nodeInterfaceAddrs is what the node's interfaces carry: loopback and the
// node's InternalIPs. The prefix lengths of the InternalIPs are not part of
// the Node object; /24 and /64 are assumed (kube-proxy only looks at the
// addresses).
func nodeInterfaceAddrs(in *inputs) []*net.IPNet {
	out := []*net.IPNet{
		{IP: net.IPv4(127, 0, 0, 1), Mask: net.CIDRMask(8, 32)},
		{IP: net.IPv6loopback, Mask: net.CIDRMask(128, 128)},
	}
	for _, ip := range in.localIPs {
		if ip.To4() != nil {
			out = append(out, &net.IPNet{IP: ip.To4(), Mask: net.CIDRMask(24, 32)})
		} else {
			out = append(out, &net.IPNet{IP: ip, Mask: net.CIDRMask(64, 128)})
		}
	}
	return out
}

func familySuffix(fam v1.IPFamily) string {
	if fam == v1.IPv6Protocol {
		return "v6"
	}
	return "v4"
}

func writeFile(dir, name, content string) error {
	return os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
}
