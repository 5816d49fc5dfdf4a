// Package kpgen runs the iptables proxier of an old kube-proxy release
// (1.20-1.24) on a set of Services, EndpointSlices, a Node and a
// KubeProxyConfiguration, after that release's kubelet has written its own
// iptables rules, and writes the iptables state that results from the
// first full sync. It is compiled into one command per release (each in a
// module that pins k8s.io/kubernetes to that release); the release's
// differences (the EndpointSlice API it reads, how NewProxier is called)
// come in a Release.
//
// Usage of a release command:
//
//	kpgen -convert -in DIR -out DIR
//	kpgen -in DIR -out DIR [-sort] [-v N]
//
// With -convert, the inputs of -in (current-release exports) are written
// to -out as the release's cluster would export them (see convert). Without
// it, -in holds cluster/*.yaml and kube-proxy/config.yaml in the release's
// shape, and -out receives:
//
//	iptables-restore.v4  one complete iptables-restore input recreating the
//	                     final IPv4 state in an empty namespace
//	node-addrs.txt       the node's interface addresses the fakes reported
//	calls.log            every iptables and exec call, in order
package kpgen

import (
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	kubeproxyconfig "k8s.io/kubernetes/pkg/proxy/apis/config"
	proxyutiliptables "k8s.io/kubernetes/pkg/proxy/util/iptables"
	utiliptables "k8s.io/kubernetes/pkg/util/iptables"
	utilexec "k8s.io/utils/exec"
	netutils "k8s.io/utils/net"

	"github.com/proxyscan/proxyscan/testdata/upstream-legacy/common/iptstate"
)

// Provider is the part of the release's proxy.Provider the generator
// calls; EndpointSlices go through Release.AddSlice, whose type differs.
type Provider interface {
	OnServiceAdd(service *v1.Service)
	OnServiceSynced()
	OnEndpointSlicesSynced()
	OnNodeAdd(node *v1.Node)
}

// ProxierArgs is what the release's NewProxier is called with.
type ProxierArgs struct {
	IPT               utiliptables.Interface
	Exec              utilexec.Interface
	Config            *kubeproxyconfig.KubeProxyConfiguration
	Detector          proxyutiliptables.LocalTrafficDetector
	Hostname          string
	NodeIP            net.IP
	NodePortAddresses []string
}

// Release describes one kube-proxy release.
type Release struct {
	// Version is the release, e.g. "v1.23.17"; Minor its minor version.
	Version string
	Minor   int
	// SliceAPIVersion is the EndpointSlice API kube-proxy reads, and
	// SliceType a value of its EndpointSlice type.
	SliceAPIVersion string
	SliceType       any
	// WatchesNode tells whether kube-proxy's default start-up feeds the
	// proxier its Node (1.20 only does with the ServiceTopology gate).
	WatchesNode bool
	// DualStack tells whether kube-proxy's default start-up builds the
	// dual-stack proxier (IPv6DualStack on, both iptables binaries
	// present); its IPv4 half then gets the bind address as node IP.
	DualStack bool
	// NewProxier calls the release's iptables.NewProxier and replaces the
	// release-specific host handles it opened.
	NewProxier func(a ProxierArgs) (Provider, error)
	// AddSlice decodes an EndpointSlice (JSON) into the release's type and
	// calls the proxier's OnEndpointSliceAdd.
	AddSlice func(p Provider, slice []byte) error
}

// Main is the command of one release.
func Main(rel *Release) {
	// A flag set of its own: some releases' dependencies register flags
	// (such as -v) on the global one.
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	var (
		inDir     = fs.String("in", "", "input directory (cluster/*.yaml, kube-proxy/config.yaml)")
		outDir    = fs.String("out", "", "output directory")
		doConvert = fs.Bool("convert", false, "write the inputs as the release's cluster exports them, instead of running the proxier")
		sortRules = fs.Bool("sort", false, "stable-sort the rules kube-proxy writes in Go map order by service port name")
		verbose   = fs.Int("v", 0, "kube-proxy log verbosity (logs go to stderr)")
	)
	_ = fs.Parse(os.Args[1:])
	if *inDir == "" || *outDir == "" || fs.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: kpgen [-convert] -in DIR -out DIR [-sort] [-v N]")
		os.Exit(2)
	}
	setupLogging(*verbose)
	var err error
	if *doConvert {
		err = convert(rel, *inDir, *outDir)
	} else {
		err = generate(rel, *inDir, *outDir, *sortRules)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kpgen:", err)
		os.Exit(1)
	}
}

func setupLogging(v int) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", fmt.Sprint(v))
	_ = fs.Set("logtostderr", "true")
	if v == 0 {
		_ = fs.Set("stderrthreshold", "FATAL")
		klog.SetOutput(discard{})
		klog.LogToStderr(false)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// sorters are the chains the 1.20-1.24 iptables proxier fills while
// ranging over its service map.
var sorters = map[string]map[string]iptstate.SortFunc{
	"nat":    {"KUBE-SERVICES": iptstate.SortByService, "KUBE-NODEPORTS": iptstate.SortByService},
	"filter": {"KUBE-SERVICES": iptstate.SortByService, "KUBE-EXTERNAL-SERVICES": iptstate.SortByService, "KUBE-NODEPORTS": iptstate.SortByService},
}

func generate(rel *Release, inDir, outDir string, sortRules bool) error {
	in, err := loadInputs(rel, inDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}

	st := iptstate.New()
	ipt := newRecIPT(st)
	// The kubelet runs first: it starts kube-proxy's Pod.
	if err := runKubelet(ipt); err != nil {
		return err
	}

	det, err := localDetector(in, ipt)
	if err != nil {
		return err
	}
	nodeIP := in.nodeIP
	if rel.DualStack {
		nodeIP = net.IPv4zero
		if ip := net.ParseIP(in.config.BindAddress); ip != nil && !netutils.IsIPv6(ip) {
			nodeIP = ip
		}
	}
	var npa []string
	for _, a := range in.config.NodePortAddresses {
		if !netutils.IsIPv6CIDRString(a) {
			npa = append(npa, a)
		}
	}
	exec := &recExec{}
	p, err := rel.NewProxier(ProxierArgs{
		IPT: ipt, Exec: exec, Config: in.config, Detector: det,
		Hostname: in.nodeName, NodeIP: nodeIP, NodePortAddresses: npa,
	})
	if err != nil {
		return fmt.Errorf("iptables proxier: %w", err)
	}
	replaceHostHandles(p, in)
	if err := ipt.applyMonitor(); err != nil {
		return err
	}

	// The informers at start-up: every Service and EndpointSlice the label
	// selector lets through, then both marked synced (the second runs the
	// full sync synchronously); the Node comes from its own informer.
	if rel.WatchesNode {
		p.OnNodeAdd(in.node)
	}
	for _, svc := range in.services {
		if selected(svc.Labels) {
			p.OnServiceAdd(svc)
		}
	}
	for i, js := range in.slices {
		if !selectedSlice(js) {
			continue
		}
		if err := rel.AddSlice(p, js); err != nil {
			return fmt.Errorf("EndpointSlice %d: %w", i, err)
		}
	}
	p.OnServiceSynced()
	p.OnEndpointSlicesSynced()

	var srt map[string]map[string]iptstate.SortFunc
	if sortRules {
		srt = sorters
	}
	if err := writeFile(outDir, "iptables-restore.v4", st.Render(srt)); err != nil {
		return err
	}
	if err := writeFile(outDir, "calls.log", ipt.callLog()+exec.callLog()); err != nil {
		return err
	}
	var sb strings.Builder
	for _, a := range nodeInterfaceAddrs(in) {
		if !a.IP.IsLoopback() {
			sb.WriteString(a.String() + "\n")
		}
	}
	return writeFile(outDir, "node-addrs.txt", sb.String())
}

// selected applies the label selector of kube-proxy's informers:
// !service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless.
func selected(labels map[string]string) bool {
	if _, ok := labels["service.kubernetes.io/service-proxy-name"]; ok {
		return false
	}
	_, ok := labels[v1.IsHeadlessService]
	return !ok
}

func selectedSlice(js []byte) bool {
	var o struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if err := strictLenient(js, &o); err != nil {
		return true
	}
	return selected(o.Metadata.Labels)
}

// localDetector mirrors getLocalDetector / getDualStackLocalDetectorTuple
// of cmd/kube-proxy/app (IPv4 half) for the modes of 1.20-1.24's default
// start-up.
func localDetector(in *inputs, ipt utiliptables.Interface) (proxyutiliptables.LocalTrafficDetector, error) {
	mode := in.config.DetectLocalMode
	if mode == "" {
		mode = kubeproxyconfig.LocalModeClusterCIDR
	}
	var cidrs []string
	switch mode {
	case kubeproxyconfig.LocalModeClusterCIDR:
		cidrs = strings.Split(in.config.ClusterCIDR, ",")
	case kubeproxyconfig.LocalModeNodeCIDR:
		cidrs = in.node.Spec.PodCIDRs
		if len(cidrs) == 0 && in.node.Spec.PodCIDR != "" {
			cidrs = []string{in.node.Spec.PodCIDR}
		}
	default:
		return nil, fmt.Errorf("detectLocalMode %q is not supported by this generator", mode)
	}
	for _, c := range cidrs {
		c = strings.TrimSpace(c)
		if c != "" && !netutils.IsIPv6CIDRString(c) {
			return proxyutiliptables.NewDetectLocalByCIDR(c, ipt)
		}
	}
	return proxyutiliptables.NewNoOpLocalDetector(), nil
}

func writeFile(dir, name, content string) error {
	return os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
}
