package kpgen

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	kubeproxyconfigv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	"sigs.k8s.io/yaml"
)

// containerRuntimeVersion is what the Nodes of the converted clusters
// report: containerd 1.6 serves both CRI v1alpha2 (kubelet 1.20-1.22) and
// CRI v1, which containerd 2.x (in the current-release inputs) does not.
const containerRuntimeVersion = "containerd://1.6.20"

// convert writes the inputs of inDir (current-release exports:
// discovery.k8s.io/v1 EndpointSlices, a current KubeProxyConfiguration) as
// the release's cluster would hold and export them, to outDir/cluster and
// outDir/kube-proxy/config.yaml. What changes, and why, is written to
// outDir/CONVERSION.txt.
//
//   - Every field the release's API types do not have is dropped
//     (Service status.loadBalancer.ingress[].ipMode, the
//     KubeProxyConfiguration's iptables.localhostNodePorts, ...).
//   - Fields of features whose gate is off by default in the release are
//     dropped, as the API server's dropDisabledFields does on write:
//     Service ipFamilies/ipFamilyPolicy (IPv6DualStack, alpha in 1.20),
//     allocateLoadBalancerNodePorts (ServiceLBNodePortControl, alpha in
//     1.20-1.21), internalTrafficPolicy (ServiceInternalTrafficPolicy,
//     alpha in 1.21; the field does not exist in 1.20), EndpointSlice
//     conditions.serving/terminating (EndpointSliceTerminatingCondition,
//     alpha in 1.20-1.21).
//   - With EndpointSliceTerminatingCondition off, the EndpointSlice
//     controller leaves terminating Pods out of the slices.
//   - 1.20 serves discovery.k8s.io/v1beta1 to kube-proxy: each endpoint's
//     nodeName and zone become the topology map the 1.20 controller wrote
//     (kubernetes.io/hostname, topology.kubernetes.io/zone); nodeName itself
//     is gated by EndpointSliceNodeName (alpha) and left out.
//   - The Node reports the release as kubeletVersion and kubeProxyVersion
//     (kubelets of that era filled in both) and a containerd 1.6 runtime.
func convert(rel *Release, inDir, outDir string) error {
	var notes []string
	note := func(format string, args ...any) { notes = append(notes, fmt.Sprintf(format, args...)) }

	cfgIn, err := os.ReadFile(filepath.Join(inDir, "kube-proxy", "config.yaml"))
	if err != nil {
		return err
	}
	cfgText, err := convertConfig(cfgIn, func(p string) {
		note("kube-proxy/config.yaml: dropped %s (not a field of the %s KubeProxyConfiguration)", p, rel.Version)
	})
	if err != nil {
		return fmt.Errorf("kube-proxy/config.yaml: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(outDir, "kube-proxy"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(outDir, "kube-proxy", "config.yaml"), []byte(cfgText), 0o644); err != nil {
		return err
	}

	files, err := filepath.Glob(filepath.Join(inDir, "cluster", "*.yaml"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	if err := os.MkdirAll(filepath.Join(outDir, "cluster"), 0o755); err != nil {
		return err
	}
	for _, f := range files {
		base := filepath.Base(f)
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var doc map[string]any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		c := &converter{rel: rel, cfgText: cfgText, note: func(format string, args ...any) {
			note(base+": "+format, args...)
		}}
		out, err := c.object(doc)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		text, err := yaml.Marshal(out)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(outDir, "cluster", base), text, 0o644); err != nil {
			return err
		}
	}
	sort.Strings(notes)
	return os.WriteFile(filepath.Join(outDir, "CONVERSION.txt"), []byte(strings.Join(notes, "\n")+"\n"), 0o644)
}

// convertConfig drops the fields the release's v1alpha1
// KubeProxyConfiguration does not have.
func convertConfig(data []byte, dropped func(path string)) (string, error) {
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return "", err
	}
	pruned := prune(m, reflect.TypeOf(kubeproxyconfigv1alpha1.KubeProxyConfiguration{}), "", dropped)
	out, err := yaml.Marshal(pruned)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

type converter struct {
	rel     *Release
	cfgText string
	note    func(format string, args ...any)
}

func (c *converter) object(o map[string]any) (map[string]any, error) {
	kind, _ := o["kind"].(string)
	name := objName(o)
	switch {
	case strings.HasSuffix(kind, "List"):
		items, _ := o["items"].([]any)
		var kept []any
		for _, it := range items {
			m, ok := it.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("list item is not an object")
			}
			n, err := c.object(m)
			if err != nil {
				return nil, err
			}
			kept = append(kept, n)
		}
		o["items"] = kept
		return o, nil
	case kind == "Service":
		c.service(o, name)
		return c.prune(o, reflect.TypeOf(v1.Service{}), "Service "+name), nil
	case kind == "EndpointSlice":
		if err := c.slice(o, name); err != nil {
			return nil, err
		}
		return c.prune(o, reflect.TypeOf(c.rel.SliceType), "EndpointSlice "+name), nil
	case kind == "Node":
		c.node(o, name)
		return c.prune(o, reflect.TypeOf(v1.Node{}), "Node "+name), nil
	case kind == "ConfigMap" && name == "kube-system/kube-proxy":
		data, _ := o["data"].(map[string]any)
		if _, ok := data["config.conf"]; ok {
			data["config.conf"] = strings.TrimSuffix(c.cfgText, "\n")
			c.note("ConfigMap %s: config.conf is the converted kube-proxy/config.yaml", name)
		}
		return c.prune(o, reflect.TypeOf(v1.ConfigMap{}), "ConfigMap "+name), nil
	default:
		return o, nil
	}
}

func (c *converter) prune(o map[string]any, t reflect.Type, what string) map[string]any {
	return prune(o, t, "", func(p string) {
		c.note("%s: dropped %s (not a field of the %s API)", what, p, c.rel.Version)
	}).(map[string]any)
}

func (c *converter) service(o map[string]any, name string) {
	spec, _ := o["spec"].(map[string]any)
	if spec == nil {
		return
	}
	drop := func(field, why string) {
		if _, ok := spec[field]; ok {
			delete(spec, field)
			c.note("Service %s: dropped spec.%s (%s)", name, field, why)
		}
	}
	if c.rel.Minor <= 20 {
		drop("ipFamilies", "IPv6DualStack is alpha and off in 1.20")
		drop("ipFamilyPolicy", "IPv6DualStack is alpha and off in 1.20")
	}
	if c.rel.Minor <= 21 {
		drop("allocateLoadBalancerNodePorts", "ServiceLBNodePortControl is alpha and off in 1.20-1.21")
	}
	if c.rel.Minor == 21 {
		drop("internalTrafficPolicy", "ServiceInternalTrafficPolicy is alpha and off in 1.21")
	}
}

func (c *converter) slice(o map[string]any, name string) error {
	if av, _ := o["apiVersion"].(string); av != "discovery.k8s.io/v1" {
		return fmt.Errorf("EndpointSlice %s: apiVersion %q, want discovery.k8s.io/v1", name, av)
	}
	o["apiVersion"] = c.rel.SliceAPIVersion
	eps, _ := o["endpoints"].([]any)
	var kept []any
	droppedConds := false
	for _, e := range eps {
		ep, ok := e.(map[string]any)
		if !ok {
			return fmt.Errorf("EndpointSlice %s: endpoint is not an object", name)
		}
		cond, _ := ep["conditions"].(map[string]any)
		if c.rel.Minor <= 21 && cond != nil {
			if t, _ := cond["terminating"].(bool); t {
				c.note("EndpointSlice %s: left out terminating endpoint %v (EndpointSliceTerminatingCondition is off: the controller skips terminating Pods)", name, ep["addresses"])
				continue
			}
			for _, f := range []string{"serving", "terminating"} {
				if _, ok := cond[f]; ok {
					delete(cond, f)
					droppedConds = true
				}
			}
		}
		if c.rel.SliceAPIVersion == "discovery.k8s.io/v1beta1" {
			topo := map[string]any{}
			if n, ok := ep["nodeName"].(string); ok && n != "" {
				topo["kubernetes.io/hostname"] = n
			}
			if z, ok := ep["zone"].(string); ok && z != "" {
				topo["topology.kubernetes.io/zone"] = z
			}
			delete(ep, "nodeName")
			delete(ep, "zone")
			if len(topo) > 0 {
				ep["topology"] = topo
			}
		}
		kept = append(kept, ep)
	}
	if droppedConds {
		c.note("EndpointSlice %s: dropped conditions.serving and conditions.terminating (EndpointSliceTerminatingCondition is alpha and off)", name)
	}
	if c.rel.SliceAPIVersion == "discovery.k8s.io/v1beta1" {
		c.note("EndpointSlice %s: discovery.k8s.io/v1beta1, nodeName and zone as topology (kubernetes.io/hostname, topology.kubernetes.io/zone)", name)
	}
	if eps != nil {
		o["endpoints"] = kept
	}
	return nil
}

func (c *converter) node(o map[string]any, name string) {
	status, _ := o["status"].(map[string]any)
	info, _ := status["nodeInfo"].(map[string]any)
	if info == nil {
		return
	}
	info["kubeletVersion"] = c.rel.Version
	info["kubeProxyVersion"] = c.rel.Version
	info["containerRuntimeVersion"] = containerRuntimeVersion
	c.note("Node %s: nodeInfo.kubeletVersion and kubeProxyVersion %s, containerRuntimeVersion %s", name, c.rel.Version, containerRuntimeVersion)
}

func objName(o map[string]any) string {
	md, _ := o["metadata"].(map[string]any)
	n, _ := md["name"].(string)
	if ns, _ := md["namespace"].(string); ns != "" {
		return ns + "/" + n
	}
	return n
}

var unmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

// prune drops from a decoded JSON value every object key that the Go type
// t (a Kubernetes API type, walked through its json tags) has no field
// for; dropped is called with the path of each dropped key.
func prune(v any, t reflect.Type, path string, dropped func(string)) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return v
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		fields := jsonFields(t)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ft, ok := fields[k]
			if !ok {
				delete(m, k)
				dropped(joinPath(path, k))
				continue
			}
			m[k] = prune(m[k], ft, joinPath(path, k), dropped)
		}
		return m
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		for k, e := range m {
			m[k] = prune(e, t.Elem(), joinPath(path, k), dropped)
		}
		return m
	case reflect.Slice, reflect.Array:
		s, ok := v.([]any)
		if !ok {
			return v
		}
		for i, e := range s {
			s[i] = prune(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), dropped)
		}
		return s
	default:
		return v
	}
}

func joinPath(p, k string) string {
	if p == "" {
		return k
	}
	return p + "." + k
}

// jsonFields maps the JSON names of a struct's fields to their types,
// with inlined and embedded structs flattened.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if (name == "" && f.Anonymous) || strings.Contains(","+opts+",", ",inline,") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					out[k] = v
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
