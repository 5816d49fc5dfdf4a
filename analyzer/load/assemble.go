package load

import (
	"bytes"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	kpv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/kube"
	"github.com/proxyscan/proxyscan/parsers/manifest"
)

// clusterLevel reports whether a parsed value describes the cluster (and
// so applies to every node) rather than one node's data plane.
func clusterLevel(p parsed) bool {
	switch p.value.(type) {
	case *kube.Objects, *model.Config:
		return true
	}
	return false
}

// builder accumulates one snapshot.
type builder struct {
	snap    *model.Snapshot
	configs []*model.Config
	version string // raw text of a version file
	vpos    parsers.Pos
}

func assemble(results []parsed, opts Options) ([]*model.Snapshot, error) {
	groups := map[string][]parsed{}
	for _, r := range results {
		groups[r.f.group] = append(groups[r.f.group], r)
	}
	var names []string
	for g := range groups {
		if g != "" {
			names = append(names, g)
		}
	}
	sort.Strings(names)
	var shared []parsed
	if loose := groups[""]; len(loose) > 0 {
		nodeLevel := false
		for _, r := range loose {
			if !clusterLevel(r) {
				nodeLevel = true
				shared = nil
				break
			}
			shared = append(shared, r)
		}
		if nodeLevel || len(names) == 0 {
			names = append(names, "")
			shared = nil
		}
	}
	var out []*model.Snapshot
	for _, g := range names {
		b := &builder{snap: &model.Snapshot{Objects: &kube.Objects{}}}
		for _, r := range groups[g] {
			b.add(r)
		}
		for _, r := range shared {
			b.add(r)
		}
		if err := b.finish(opts); err != nil {
			return nil, err
		}
		out = append(out, b.snap)
	}
	return out, nil
}

func (b *builder) add(r parsed) {
	in := model.Input{Path: r.f.name, Kind: r.kind, Bytes: int64(len(r.f.data)), Bundle: r.f.group}
	switch v := r.value.(type) {
	case *iptables.Dump:
		if v.Family == iptables.FamilyUnknown {
			v.Family = iptables.IPv4
			if strings.Contains(strings.ToLower(r.f.name), "ip6tables") {
				v.Family = iptables.IPv6
			}
		}
		b.snap.IPTables = append(b.snap.IPTables, v)
	case *kube.Objects:
		b.snap.Objects.Merge(v)
		for _, raw := range v.Raw {
			if raw.Kind == "KubeProxyConfiguration" {
				if c, err := decodeConfig(raw.Data, raw.Pos, "KubeProxyConfiguration in "+raw.Pos.File); err == nil {
					b.configs = append(b.configs, c)
				} else {
					in.Note = err.Error()
				}
			}
		}
	case *model.Config:
		b.configs = append(b.configs, v)
	case *manifest.Manifest:
		b.snap.Manifest = v
	case nil:
		switch r.kind {
		case parsers.KindUnknown:
			in.Note = "unknown kind of file: not analysed"
		case parsers.KindVersion:
			b.version = strings.TrimSpace(string(r.f.data))
			b.vpos = parsers.Pos{File: r.f.name, Line: 1}
		default:
			in.Note = "recognised as " + string(r.kind) + " but not analysed"
		}
	}
	b.snap.Inputs = append(b.snap.Inputs, in)
}

func (b *builder) finish(opts Options) error {
	s := b.snap
	sort.SliceStable(s.Inputs, func(i, j int) bool { return s.Inputs[i].Path < s.Inputs[j].Path })
	sort.SliceStable(s.IPTables, func(i, j int) bool {
		if s.IPTables[i].Family != s.IPTables[j].Family {
			return s.IPTables[i].Family < s.IPTables[j].Family
		}
		return s.IPTables[i].Name < s.IPTables[j].Name
	})
	b.pickConfig()
	if err := b.pickVersion(opts); err != nil {
		return err
	}
	b.pickNode(opts)
	s.Ports = model.BuildServicePorts(s.Objects, model.BuildOptions{
		NodeName:     s.Node.Name,
		HonourIPMode: s.Version.AtLeast(30) || s.Version.AtLeast(29) && s.FeatureGate("LoadBalancerIPMode", false),
	})
	return nil
}

// pickConfig chooses the configuration: a bare KubeProxyConfiguration file
// wins over the ConfigMap (it is what the process reads).
func (b *builder) pickConfig() {
	s := b.snap
	for _, cm := range s.Objects.ConfigMaps {
		if cm.Namespace != "kube-system" || cm.Name != "kube-proxy" {
			continue
		}
		for _, key := range []string{"config.conf", "config.yaml", "kube-proxy-config.yaml"} {
			data, ok := cm.Data[key]
			if !ok {
				continue
			}
			pos := cm.Pos
			if l := cm.DataLines[key]; l > 0 {
				pos.Line = l
			}
			c, err := decodeConfig([]byte(data), pos, "ConfigMap kube-system/kube-proxy")
			if err != nil {
				s.Notes = append(s.Notes, fmt.Sprintf("the kube-proxy ConfigMap's %s could not be read: %v", key, err))
				continue
			}
			b.configs = append(b.configs, c)
			break
		}
	}
	if len(b.configs) == 0 {
		return
	}
	sort.SliceStable(b.configs, func(i, j int) bool {
		return !strings.HasPrefix(b.configs[i].Source, "ConfigMap") && strings.HasPrefix(b.configs[j].Source, "ConfigMap")
	})
	s.Config = b.configs[0]
	for _, c := range b.configs[1:] {
		if c.EffectiveMode() != s.Config.EffectiveMode() {
			s.Notes = append(s.Notes, fmt.Sprintf("%s (%s) sets mode %s but %s sets %s; using %s",
				c.Source, c.Pos, c.EffectiveMode(), s.Config.Source, s.Config.EffectiveMode(), s.Config.Source))
		}
	}
}

func (b *builder) pickVersion(opts Options) error {
	s := b.snap
	set := func(raw, source string) bool {
		v, err := model.ParseVersion(raw)
		if err != nil || !v.AtLeast(1) {
			return false
		}
		v.Source = source
		s.Version = v
		return true
	}
	if opts.Version != "" {
		if !set(opts.Version, "--version flag") {
			return inputErrorf("invalid --version %q (want 1.N, e.g. 1.28)", opts.Version)
		}
		return nil
	}
	if b.version != "" && set(b.version, b.vpos.File) {
		return nil
	}
	for _, ds := range s.Objects.DaemonSets {
		if ds.Namespace != "kube-system" || !strings.Contains(ds.Name, "kube-proxy") {
			continue
		}
		for _, c := range ds.Spec.Template.Spec.Containers {
			if i := strings.LastIndex(c.Image, ":"); i >= 0 && strings.Contains(c.Image, "kube-proxy") {
				if set(c.Image[i+1:], "image of DaemonSet kube-system/"+ds.Name) {
					return nil
				}
			}
		}
	}
	for _, n := range s.Objects.Nodes {
		if v := n.Status.NodeInfo.KubeProxyVersion; v != "" && set(v, "status.nodeInfo.kubeProxyVersion of Node "+n.Name) {
			return nil
		}
	}
	for _, n := range s.Objects.Nodes {
		if v := n.Status.NodeInfo.KubeletVersion; v != "" && set(v, "kubelet version of Node "+n.Name) {
			s.Notes = append(s.Notes, "kube-proxy version taken from the kubelet version of node "+n.Name+"; add kube-proxy/version.txt to be exact")
			return nil
		}
	}
	s.Version = model.Newest
	s.Version.Source = "assumed: newest supported"
	s.Notes = append(s.Notes, "no kube-proxy version in the inputs; assuming "+model.Newest.String()+" (use --version)")
	return nil
}

func (b *builder) pickNode(opts Options) {
	s := b.snap
	name, source := opts.Node, "--node flag"
	if name == "" && s.Config != nil && s.Config.HostnameOverride != "" {
		name, source = s.Config.HostnameOverride, "hostnameOverride of "+s.Config.Source
	}
	if name == "" && len(s.Objects.Nodes) == 1 {
		name, source = s.Objects.Nodes[0].Name, "the only Node in the exports"
	}
	s.Node.Name, s.Node.NameSource = name, source
	if name == "" {
		if len(s.Objects.Nodes) > 1 {
			s.Notes = append(s.Notes, fmt.Sprintf("%d Nodes exported and none chosen: pass --node NAME so that local endpoints are known", len(s.Objects.Nodes)))
		}
		return
	}
	for _, n := range s.Objects.Nodes {
		if n.Name != name {
			continue
		}
		s.Node.Object = n
		for _, a := range n.Status.Addresses {
			if a.Type != corev1.NodeInternalIP && a.Type != corev1.NodeExternalIP {
				continue
			}
			if ip, err := netip.ParseAddr(a.Address); err == nil {
				s.Node.Addresses = append(s.Node.Addresses, ip.Unmap())
			}
		}
		cidrs := n.Spec.PodCIDRs
		if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
			cidrs = []string{n.Spec.PodCIDR}
		}
		for _, c := range cidrs {
			if p, err := netip.ParsePrefix(c); err == nil {
				s.Node.PodCIDRs = append(s.Node.PodCIDRs, p.Masked())
			}
		}
		s.Node.Zone = n.Labels[corev1.LabelTopologyZone]
	}
}

// parseConfigFile reads a bare KubeProxyConfiguration file.
func parseConfigFile(name string, data []byte) (*model.Config, error) {
	return decodeConfig(data, parsers.Pos{File: name, Line: 1}, name)
}

// decodeConfig decodes a KubeProxyConfiguration (YAML or JSON); pos is
// where its first line is.
func decodeConfig(data []byte, pos parsers.Pos, source string) (*model.Config, error) {
	cfg := &kpv1alpha1.KubeProxyConfiguration{}
	if err := yaml.Unmarshal(data, cfg); err != nil {
		return nil, parsers.ErrorList{parsers.Errorf(pos, "decoding KubeProxyConfiguration: %v", err)}
	}
	if cfg.Kind != "" && cfg.Kind != "KubeProxyConfiguration" {
		return nil, parsers.ErrorList{parsers.Errorf(pos, "kind %q is not KubeProxyConfiguration", cfg.Kind)}
	}
	return &model.Config{KubeProxyConfiguration: cfg, Pos: pos, Source: source, Lines: yamlFieldLines(data, pos.Line)}, nil
}

// yamlFieldLines maps dotted field paths of a block-style YAML document to
// their lines (first is the file line of the document's first line).
func yamlFieldLines(data []byte, first int) map[string]int {
	out := map[string]int{}
	type level struct {
		indent int
		key    string
	}
	var stack []level
	for n, ln := range bytes.Split(data, []byte("\n")) {
		t := bytes.TrimLeft(ln, " ")
		if len(t) == 0 || t[0] == '#' || t[0] == '-' {
			continue
		}
		key, _, ok := bytes.Cut(t, []byte(":"))
		if !ok || bytes.ContainsAny(key, " \"'{[") {
			continue
		}
		indent := len(ln) - len(t)
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, level{indent: indent, key: string(key)})
		parts := make([]string, len(stack))
		for i, l := range stack {
			parts[i] = l.key
		}
		out[strings.Join(parts, ".")] = first + n
	}
	return out
}
