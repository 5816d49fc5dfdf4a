package kpconfig

import (
	"fmt"
	"sort"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
)

// ConfigMapKeys are the data keys kube-proxy's ConfigMap is known to keep
// its configuration under: kubeadm's config.conf, then those of other
// installers (config.yaml, kube-proxy-config.yaml, config), in the order
// they are preferred when several hold one.
var ConfigMapKeys = []string{ConfigMapKey, "config.yaml", "kube-proxy-config.yaml", "config"}

// ConfigMapConfigKey returns the data key of kube-proxy's ConfigMap that
// holds its configuration: the one key whose content is a
// KubeProxyConfiguration (kind: KubeProxyConfiguration), whatever its
// name; of several, the first of ConfigMapKeys (else the first by name),
// with a note naming the others; of none, config.conf, config.yaml or
// kube-proxy-config.yaml if present (a configuration without its kind).
// It returns "" when no key fits.
func ConfigMapConfigKey(data map[string]string) (key, note string) {
	var found []string
	for k, v := range data {
		if isKubeProxyConfiguration(v) {
			found = append(found, k)
		}
	}
	sort.Slice(found, func(i, j int) bool {
		a, b := keyRank(found[i]), keyRank(found[j])
		if a != b {
			return a < b
		}
		return found[i] < found[j]
	})
	switch {
	case len(found) == 1:
		return found[0], ""
	case len(found) > 1:
		return found[0], fmt.Sprintf("keys %s each hold a KubeProxyConfiguration; %s is read", strings.Join(found, ", "), found[0])
	}
	for _, k := range ConfigMapKeys[:3] {
		if _, ok := data[k]; ok {
			return k, ""
		}
	}
	return "", ""
}

// keyRank is the place of a key in ConfigMapKeys, after them when not
// there.
func keyRank(k string) int {
	for i, c := range ConfigMapKeys {
		if c == k {
			return i
		}
	}
	return len(ConfigMapKeys)
}

// isKubeProxyConfiguration reports whether a ConfigMap value is a YAML or
// JSON document of kind KubeProxyConfiguration.
func isKubeProxyConfiguration(v string) bool {
	if !strings.Contains(v, Kind) || len(v) > MaxSize {
		return false
	}
	var doc yaml3.Node
	if err := yaml3.Unmarshal([]byte(v), &doc); err != nil {
		return false
	}
	_, kind := mapLookup(docRoot(&doc), "kind")
	return kind != nil && kind.Kind == yaml3.ScalarNode && kind.Value == Kind
}
