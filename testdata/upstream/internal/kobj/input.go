package kobj

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	kubeproxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
)

// Input is one kpgen input directory.
type Input struct {
	Node         NodeSpec
	APIServer    string // host:port of the kubernetes Service's endpoint
	ServiceCIDRs []string
	Services     []Service
	Builder      *Builder
	// Config adjusts the KubeProxyConfiguration. With Modes set, one
	// configuration (and ConfigMap) per mode is written to DIR/MODE/;
	// otherwise one, to DIR/kube-proxy/config.yaml, with the mode fn sets.
	Config func(c *kubeproxyv1alpha1.KubeProxyConfiguration)
	Modes  []string
	// ConfigMap also writes cluster/kube-proxy-configmap.yaml.
	ConfigMap bool
}

// Write writes the input directory: cluster/cluster.yaml (Services and
// EndpointSlices as kubectl get svc,endpointslices -A -o yaml prints them),
// cluster/node.yaml, service-cidrs.txt and the configuration(s).
func (in *Input) Write(dir string) error {
	var svcs []*v1.Service
	var slices []*discovery.EndpointSlice
	for _, s := range in.Services {
		svc, es := in.Builder.Objects(s)
		svcs = append(svcs, svc)
		slices = append(slices, es...)
	}
	SortObjects(svcs, slices)
	var objs []any
	for _, s := range svcs {
		objs = append(objs, s)
	}
	for _, s := range slices {
		objs = append(objs, s)
	}
	list, err := ListYAML(objs)
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "cluster", "cluster.yaml"), list); err != nil {
		return err
	}
	node, err := ObjectYAML(Node(in.Node))
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "cluster", "node.yaml"), node); err != nil {
		return err
	}
	if len(in.ServiceCIDRs) > 0 {
		if err := writeFile(filepath.Join(dir, "service-cidrs.txt"), []byte(strings.Join(in.ServiceCIDRs, "\n")+"\n")); err != nil {
			return err
		}
	}
	write := func(base, mode string) error {
		cfg, err := ProxyConfig(func(c *kubeproxyv1alpha1.KubeProxyConfiguration) {
			if in.Config != nil {
				in.Config(c)
			}
			if mode != "" {
				c.Mode = kubeproxyv1alpha1.ProxyMode(mode)
			}
		})
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(base, "kube-proxy", "config.yaml"), cfg); err != nil {
			return err
		}
		if in.ConfigMap {
			cm, err := ConfigMap(cfg, in.APIServer, in.Node.Created.Add(-95*time.Second))
			if err != nil {
				return err
			}
			return writeFile(filepath.Join(base, "cluster", "kube-proxy-configmap.yaml"), cm)
		}
		return nil
	}
	if len(in.Modes) == 0 {
		return write(dir, "")
	}
	for _, m := range in.Modes {
		if err := write(filepath.Join(dir, m), m); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
