package kpgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	kubeproxyconfigv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	kubeproxyconfig "k8s.io/kubernetes/pkg/proxy/apis/config"
	proxyconfigscheme "k8s.io/kubernetes/pkg/proxy/apis/config/scheme"
	"k8s.io/kubernetes/pkg/proxy/apis/config/validation"
	"sigs.k8s.io/yaml"
)

// inputs is what kube-proxy learns from its config file and the API
// server at start-up.
type inputs struct {
	config   *kubeproxyconfig.KubeProxyConfiguration
	services []*v1.Service
	slices   [][]byte // EndpointSlices as JSON, decoded by the release
	node     *v1.Node
	nodeName string
	nodeIP   net.IP   // as kube-proxy's detectNodeIP computes it
	localIPs []net.IP // the node's own addresses (InternalIPs)
}

// loadInputs reads DIR/cluster/*.yaml and DIR/kube-proxy/config.yaml, both
// in the shape the release's API server and kube-proxy accept.
func loadInputs(rel *Release, dir string) (*inputs, error) {
	in := &inputs{}
	cfgPath := filepath.Join(dir, "kube-proxy", "config.yaml")
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		return nil, err
	}
	if in.config, err = loadConfig(rel, data); err != nil {
		return nil, fmt.Errorf("%s: %w", cfgPath, err)
	}
	if in.config.Mode != "" && in.config.Mode != kubeproxyconfig.ProxyModeIPTables {
		return nil, fmt.Errorf("%s: mode %q: only iptables mode is generated", cfgPath, in.config.Mode)
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
		objs, err := decodeStream(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, o := range objs {
			kind, _ := o["kind"].(string)
			js, err := json.Marshal(o)
			if err != nil {
				return nil, err
			}
			switch kind {
			case "Service":
				svc := &v1.Service{}
				if err := strictJSON(js, svc); err != nil {
					return nil, fmt.Errorf("%s: Service: %w", f, err)
				}
				in.services = append(in.services, svc)
			case "EndpointSlice":
				if av, _ := o["apiVersion"].(string); av != rel.SliceAPIVersion {
					return nil, fmt.Errorf("%s: EndpointSlice of %s; kube-proxy %s reads %s", f, av, rel.Version, rel.SliceAPIVersion)
				}
				in.slices = append(in.slices, js)
			case "Node":
				n := &v1.Node{}
				if err := strictJSON(js, n); err != nil {
					return nil, fmt.Errorf("%s: Node: %w", f, err)
				}
				nodes = append(nodes, n)
			}
		}
	}

	nodeName := strings.ToLower(strings.TrimSpace(in.config.HostnameOverride))
	if nodeName == "" {
		if len(nodes) != 1 {
			return nil, fmt.Errorf("%s: %d Node objects and no hostnameOverride: cannot tell which node kube-proxy runs on", dir, len(nodes))
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
	for _, a := range in.node.Status.Addresses {
		if a.Type == v1.NodeInternalIP {
			if ip := net.ParseIP(a.Address); ip != nil {
				in.localIPs = append(in.localIPs, ip)
			}
		}
	}
	for _, ip := range in.localIPs {
		if ip.To4() == nil {
			return nil, fmt.Errorf("node %s has IPv6 address %s: only IPv4 nodes are generated", nodeName, ip)
		}
	}
	in.nodeIP = detectNodeIP(in.node, in.config.BindAddress)
	return in, nil
}

// detectNodeIP mirrors detectNodeIP of cmd/kube-proxy/app in 1.20-1.24:
// the bind address if it is set, else the Node's first InternalIP (then
// ExternalIP), else 127.0.0.1.
func detectNodeIP(node *v1.Node, bindAddress string) net.IP {
	if ip := net.ParseIP(bindAddress); ip != nil && !ip.IsUnspecified() {
		return ip
	}
	for _, t := range []v1.NodeAddressType{v1.NodeInternalIP, v1.NodeExternalIP} {
		for _, a := range node.Status.Addresses {
			if a.Type == t {
				if ip := net.ParseIP(a.Address); ip != nil {
					return ip
				}
			}
		}
	}
	return net.IPv4(127, 0, 0, 1)
}

// loadConfig decodes a KubeProxyConfiguration as the release's --config
// loader does (decoding, defaulting, conversion to the internal type),
// after checking that every field is one the release knows, then applies
// its feature gates and validates it.
func loadConfig(rel *Release, data []byte) (*kubeproxyconfig.KubeProxyConfiguration, error) {
	if err := yaml.UnmarshalStrict(data, &kubeproxyconfigv1alpha1.KubeProxyConfiguration{}); err != nil {
		return nil, fmt.Errorf("not a configuration kube-proxy %s accepts: %w", rel.Version, err)
	}
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

func strictJSON(data []byte, into any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

// decodeStream reads a v1 List, a multi-document YAML stream or single
// objects and returns the objects, Lists flattened.
func decodeStream(data []byte) ([]map[string]any, error) {
	var out []map[string]any
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var raw map[string]any
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if raw == nil {
			continue
		}
		out = append(out, flatten(raw)...)
	}
}

func flatten(raw map[string]any) []map[string]any {
	kind, _ := raw["kind"].(string)
	if !strings.HasSuffix(kind, "List") {
		return []map[string]any{raw}
	}
	var out []map[string]any
	items, _ := raw["items"].([]any)
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = append(out, flatten(m)...)
		}
	}
	return out
}

func strictLenient(data []byte, into any) error {
	return json.Unmarshal(data, into)
}
