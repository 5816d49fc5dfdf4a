package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	kubeproxyconfig "k8s.io/kubernetes/pkg/proxy/apis/config"
	proxyconfigscheme "k8s.io/kubernetes/pkg/proxy/apis/config/scheme"
	"k8s.io/kubernetes/pkg/proxy/apis/config/validation"
	utilnode "k8s.io/kubernetes/pkg/util/node"
	netutils "k8s.io/utils/net"
	"sigs.k8s.io/yaml"
)

// inputs is everything kube-proxy would learn from its config file and the
// API server at start-up.
type inputs struct {
	config    *kubeproxyconfig.KubeProxyConfiguration
	services  []*v1.Service
	slices    []*discovery.EndpointSlice
	node      *v1.Node
	nodeName  string
	nodeIPs   map[v1.IPFamily]net.IP // as kube-proxy's detectNodeIPs computes them
	localIPs  []net.IP               // the node's own addresses (InternalIPs)
	podCIDRs  []string
	families  []v1.IPFamily // proxiers to run, primary first
	primary   v1.IPFamily
	topoLabel map[string]string
}

// loadInputs reads DIR/cluster/*.yaml and DIR/kube-proxy/config.yaml.
func loadInputs(dir, nodeName, mode string, nftPrimaryDefault bool) (*inputs, error) {
	in := &inputs{}
	cfgPath := filepath.Join(dir, "kube-proxy", "config.yaml")
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		return nil, err
	}
	if mode != "" {
		// Run the config as if its mode field said mode: the
		// mode-dependent fields (syncPeriod, masqueradeAll) are taken from
		// that mode's section, as kube-proxy does.
		var m map[string]any
		if err := yaml.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", cfgPath, err)
		}
		m["mode"] = mode
		if data, err = yaml.Marshal(m); err != nil {
			return nil, err
		}
	}
	in.config, err = loadConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfgPath, err)
	}

	files, err := filepath.Glob(filepath.Join(dir, "cluster", "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var nodes []*v1.Node
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		objs, err := decodeObjects(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, o := range objs {
			switch o := o.(type) {
			case *v1.Service:
				in.services = append(in.services, o)
			case *discovery.EndpointSlice:
				in.slices = append(in.slices, o)
			case *v1.Node:
				nodes = append(nodes, o)
			}
		}
	}

	// The node this kube-proxy runs on: -node, else hostnameOverride, else
	// the only Node in the inputs.
	if nodeName == "" {
		nodeName = strings.ToLower(strings.TrimSpace(in.config.HostnameOverride))
	}
	if nodeName == "" {
		if len(nodes) != 1 {
			return nil, fmt.Errorf("%s: %d Node objects and no -node flag: cannot tell which node kube-proxy runs on", dir, len(nodes))
		}
		nodeName = nodes[0].Name
	}
	for _, n := range nodes {
		if n.Name == nodeName {
			in.node = n
		}
	}
	if in.node == nil {
		return nil, fmt.Errorf("%s: no Node named %q in cluster/*.yaml", dir, nodeName)
	}
	in.nodeName = nodeName

	// What proxy.NodeManager and detectNodeIPs derive from the Node.
	rawIPs, err := utilnode.GetNodeHostIPs(in.node)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", nodeName, err)
	}
	in.primary = v1.IPv4Protocol
	in.nodeIPs = map[v1.IPFamily]net.IP{
		v1.IPv4Protocol: net.IPv4(127, 0, 0, 1),
		v1.IPv6Protocol: net.IPv6loopback,
	}
	if !netutils.IsIPv4(rawIPs[0]) {
		in.primary = v1.IPv6Protocol
	}
	in.nodeIPs[in.primary] = rawIPs[0]
	if len(rawIPs) > 1 {
		fam := v1.IPv4Protocol
		if !netutils.IsIPv4(rawIPs[1]) {
			fam = v1.IPv6Protocol
		}
		in.nodeIPs[fam] = rawIPs[1]
	}
	if bindIP := netutils.ParseIPSloppy(in.config.BindAddress); bindIP != nil && !bindIP.IsUnspecified() {
		fam := v1.IPv4Protocol
		if !netutils.IsIPv4(bindIP) {
			fam = v1.IPv6Protocol
		}
		in.primary = fam
		in.nodeIPs[fam] = bindIP
	}
	for _, a := range in.node.Status.Addresses {
		if a.Type != v1.NodeInternalIP {
			continue
		}
		if ip := netutils.ParseIPSloppy(a.Address); ip != nil {
			in.localIPs = append(in.localIPs, ip)
		}
	}
	if len(in.node.Spec.PodCIDRs) > 0 {
		in.podCIDRs = in.node.Spec.PodCIDRs
	} else if in.node.Spec.PodCIDR != "" {
		in.podCIDRs = []string{in.node.Spec.PodCIDR}
	}

	// kube-proxy runs one proxier per IP family the node is configured
	// for: both on a dual-stack node, otherwise only the primary one.
	in.families = []v1.IPFamily{in.primary}
	hasV4, hasV6 := false, false
	for _, ip := range in.localIPs {
		if netutils.IsIPv4(ip) {
			hasV4 = true
		} else {
			hasV6 = true
		}
	}
	if hasV4 && hasV6 {
		other := v1.IPv6Protocol
		if in.primary == v1.IPv6Protocol {
			other = v1.IPv4Protocol
		}
		in.families = append(in.families, other)
	}

	// The node's topology labels, as NodeTopologyConfig passes them.
	in.topoLabel = map[string]string{}
	if z, ok := in.node.Labels[v1.LabelTopologyZone]; ok {
		in.topoLabel[v1.LabelTopologyZone] = z
	}

	// platformApplyDefaults and the keyword expansion of newProxyServer.
	if in.config.Mode == "" {
		in.config.Mode = kubeproxyconfig.ProxyModeIPTables
	}
	if nftPrimaryDefault && in.config.Mode == kubeproxyconfig.ProxyModeNFTables && len(in.config.NodePortAddresses) == 0 {
		in.config.NodePortAddresses = []string{kubeproxyconfig.NodePortAddressesPrimary}
	}
	if in.config.DetectLocalMode == "" {
		in.config.DetectLocalMode = kubeproxyconfig.LocalModeClusterCIDR
	}
	in.config.NodePortAddresses = expandNodePortAddresses(in.config.NodePortAddresses, in.nodeIPs)
	return in, nil
}

// loadConfig decodes a KubeProxyConfiguration the way kube-proxy's --config
// loader does (defaulting and conversion to the internal type), applies its
// feature gates and validates it.
func loadConfig(data []byte) (*kubeproxyconfig.KubeProxyConfiguration, error) {
	obj, gvk, err := proxyconfigscheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	cfg, ok := obj.(*kubeproxyconfig.KubeProxyConfiguration)
	if !ok {
		return nil, fmt.Errorf("unexpected object %v", gvk)
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(cfg.FeatureGates); err != nil {
		return nil, fmt.Errorf("feature gates: %w", err)
	}
	if errs := validation.Validate(cfg); len(errs) > 0 {
		return nil, fmt.Errorf("invalid configuration: %w", errs.ToAggregate())
	}
	return cfg, nil
}

func expandNodePortAddresses(addrs []string, nodeIPs map[v1.IPFamily]net.IP) []string {
	var out []string
	for _, a := range addrs {
		switch a {
		case kubeproxyconfig.NodePortAddressesPrimary:
			if ip := nodeIPs[v1.IPv4Protocol]; ip != nil && !ip.IsLoopback() {
				out = append(out, ip.String()+"/32")
			}
			if ip := nodeIPs[v1.IPv6Protocol]; ip != nil && !ip.IsLoopback() {
				out = append(out, ip.String()+"/128")
			}
		case kubeproxyconfig.NodePortAddressesLocalhost:
			out = append(out, "127.0.0.0/8", "::1/128")
		case kubeproxyconfig.NodePortAddressesAll:
			out = append(out, "0.0.0.0/0", "::/0")
		default:
			out = append(out, a)
		}
	}
	return out
}

// decodeObjects reads a v1 List, a multi-document YAML stream or single
// objects, and returns the Services, EndpointSlices and Nodes in it.
func decodeObjects(data []byte) ([]any, error) {
	var out []any
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var raw map[string]any
		if err := dec.Decode(&raw); err != nil {
			if err.Error() == "EOF" {
				return out, nil
			}
			return nil, err
		}
		if raw == nil {
			continue
		}
		objs, err := decodeRaw(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
}

func decodeRaw(raw map[string]any) ([]any, error) {
	kind, _ := raw["kind"].(string)
	if strings.HasSuffix(kind, "List") {
		items, _ := raw["items"].([]any)
		var out []any
		for _, it := range items {
			m, ok := it.(map[string]any)
			if !ok {
				continue
			}
			objs, err := decodeRaw(m)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
		}
		return out, nil
	}
	b, err := yaml.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var target any
	switch kind {
	case "Service":
		target = &v1.Service{}
	case "EndpointSlice":
		target = &discovery.EndpointSlice{}
	case "Node":
		target = &v1.Node{}
	default:
		return nil, nil
	}
	if err := yaml.UnmarshalStrict(b, target); err != nil {
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	if m, ok := target.(metav1.Object); ok && m.GetName() == "" {
		return nil, fmt.Errorf("%s without metadata.name", kind)
	}
	return []any{target}, nil
}
