package kpconfig

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kube-proxy/config/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/proxyscan/proxyscan/parsers"
)

// The group, version and kind every kube-proxy release 1.20–1.37 reads.
const (
	APIVersion = "kubeproxy.config.k8s.io/v1alpha1"
	Kind       = "KubeProxyConfiguration"
)

// MaxSize is the largest configuration Decode accepts. Real ones are a few
// KiB.
const MaxSize = 4 << 20

// ConfigMapKey is the ConfigMap data key kubeadm stores the configuration
// under (kube-system/kube-proxy).
const ConfigMapKey = "config.conf"

// Origin says where the value of a field came from.
type Origin string

// The origins of a field's value.
const (
	OriginFile    Origin = "file"    // written in the configuration file or ConfigMap
	OriginFlag    Origin = "flag"    // given as a command-line flag
	OriginDefault Origin = "default" // filled in by kube-proxy's defaulting (SetDefaults)
	OriginRuntime Origin = "runtime" // chosen by kube-proxy at start-up (mode "" → iptables)
)

// FieldInfo records one field of a configuration: where it was set, or
// that kube-proxy defaulted it.
type FieldInfo struct {
	// Path is the YAML path: "ipvs.scheduler", "nodePortAddresses[1]",
	// "featureGates.NFTablesProxyMode".
	Path   string `json:"path"`
	Origin Origin `json:"origin"`
	// Pos is the line of the key in the file, the flag on the command line,
	// or (for defaults of absent fields) the file as a whole.
	Pos parsers.Pos `json:"pos"`
	// Flag is the flag that set the field ("--proxy-mode"), for OriginFlag.
	Flag string `json:"flag,omitempty"`
	// Raw is the scalar as written, for values from a file or a flag.
	Raw string `json:"raw,omitempty"`
	// Note explains a default: "defaulted to iptables".
	Note string `json:"note,omitempty"`
}

// Config is a KubeProxyConfiguration with the provenance of its fields.
type Config struct {
	// Config is the configuration, in the external v1alpha1 types.
	Config v1alpha1.KubeProxyConfiguration `json:"config"`
	// UDPIdleTimeout is the userspace-proxy field udpIdleTimeout of
	// kube-proxy 1.20–1.25, which the v1alpha1 type of later releases no
	// longer has; nil when absent.
	UDPIdleTimeout *metav1.Duration `json:"udpIdleTimeout,omitempty"`
	// Name is the file the configuration was read from.
	Name string `json:"name"`
	// Pos is where the configuration starts (line 1 of a file; the first
	// line of config.conf in a ConfigMap).
	Pos parsers.Pos `json:"pos"`
	// JSON reports that the input was JSON rather than YAML.
	JSON bool `json:"json,omitempty"`
	// Fields records every field set or defaulted, by YAML path.
	Fields map[string]*FieldInfo `json:"fields"`
	// Warnings holds what kube-proxy tolerates after falling back to lenient
	// decoding (unknown and duplicate fields, extra documents); only
	// [ParseLenient] fills it, [Parse] returns these as errors.
	Warnings parsers.ErrorList `json:"warnings,omitempty"`
	// DefaultedFor is the version [Defaults] was applied for, "" if none.
	DefaultedFor string `json:"defaultedFor,omitempty"`
	// Merged describes how [Effective] combined flags and file, if it did.
	Merged []string `json:"merged,omitempty"`
	// ConfigMapKey is the data key of the ConfigMap the configuration
	// was read from ([ParseConfigMap]), "" for a file.
	ConfigMapKey string `json:"configMapKey,omitempty"`
	// ConfigMapNote says why that key was chosen when several keys hold
	// a configuration.
	ConfigMapNote string `json:"configMapNote,omitempty"`
}

// Options control [Decode].
type Options struct {
	// Line is the line of the input's first byte in the file named by name
	// (1 when 0): for text taken out of a ConfigMap, the first line of the
	// block scalar, so that positions are lines of the ConfigMap file.
	Line int
	// SingleLine maps every position to Line: for text that was one quoted
	// scalar in its file (a JSON ConfigMap, a double-quoted YAML string).
	SingleLine bool
	// Lenient decodes as kube-proxy finally does: unknown and duplicate
	// fields become warnings instead of errors.
	Lenient bool
}

// Parse decodes a KubeProxyConfiguration file strictly: unknown or
// duplicate fields are errors, as kube-proxy's first, strict decoding
// reports them. Errors are *parsers.Error values (or a parsers.ErrorList)
// naming name and the line.
func Parse(name string, data []byte) (*Config, error) {
	return Decode(name, data, Options{})
}

// ParseLenient decodes a KubeProxyConfiguration file the way kube-proxy
// ends up decoding it: unknown and duplicate fields (and documents after
// the first) are ignored and kept as [Config.Warnings].
func ParseLenient(name string, data []byte) (*Config, error) {
	return Decode(name, data, Options{Lenient: true})
}

// Decode decodes a KubeProxyConfiguration with the given options.
func Decode(name string, data []byte, opts Options) (*Config, error) {
	d := newDecoder(name, opts)
	if len(data) > MaxSize {
		return nil, parsers.Errorf(d.filePos(), "configuration too large (%d bytes, limit %d)", len(data), MaxSize)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, parsers.Errorf(d.pos(1), "empty configuration")
	}
	cfg, err := d.decode(data)
	if err != nil {
		return nil, err
	}
	if len(d.issues) > 0 {
		d.issues.Sort()
		if !opts.Lenient {
			return nil, d.issues
		}
		cfg.Warnings = d.issues
	}
	return cfg, nil
}

// ParseConfigMap finds the key of the kube-system/kube-proxy ConfigMap
// that holds kube-proxy's configuration in a ConfigMap file (YAML or
// JSON, as kubectl prints it): kubeadm's config.conf, or any other key
// whose content is a KubeProxyConfiguration ([ConfigMapConfigKey]; the
// key read is the result's ConfigMapKey), and decodes it, with positions that are lines of the ConfigMap file. A literal
// block scalar (config.conf: |) maps line for line; any other style maps
// every position to the key's line.
func ParseConfigMap(name string, data []byte, lenient bool) (*Config, error) {
	if len(data) > MaxSize {
		return nil, parsers.Errorf(parsers.Pos{File: name}, "ConfigMap too large (%d bytes, limit %d)", len(data), MaxSize)
	}
	var doc yaml3.Node
	if err := yaml3.Unmarshal(data, &doc); err != nil {
		return nil, yamlError(name, 0, false, err)
	}
	root := docRoot(&doc)
	if root == nil || root.Kind != yaml3.MappingNode {
		return nil, parsers.Errorf(parsers.Pos{File: name, Line: 1}, "not a ConfigMap: the document is not a mapping")
	}
	_, kind := mapLookup(root, "kind")
	if kind == nil || kind.Value != "ConfigMap" {
		line := 1
		got := "nothing"
		if kind != nil {
			line, got = kind.Line, fmt.Sprintf("%q", kind.Value)
		}
		return nil, parsers.Errorf(parsers.Pos{File: name, Line: line}, "not a ConfigMap: kind is %s", got)
	}
	_, dataNode := mapLookup(root, "data")
	if dataNode == nil || dataNode.Kind != yaml3.MappingNode {
		return nil, parsers.Errorf(parsers.Pos{File: name, Line: 1}, "ConfigMap has no data")
	}
	values := map[string]string{}
	for i := 0; i+1 < len(dataNode.Content); i += 2 {
		if v := dataNode.Content[i+1]; v.Kind == yaml3.ScalarNode {
			values[dataNode.Content[i].Value] = v.Value
		}
	}
	which, note := ConfigMapConfigKey(values)
	if which == "" {
		return nil, parsers.Errorf(parsers.Pos{File: name, Line: dataNode.Line}, "ConfigMap has no data key holding a KubeProxyConfiguration (%s or another)", ConfigMapKey)
	}
	key, val := mapLookup(dataNode, which)
	opts := Options{Lenient: lenient, Line: key.Line, SingleLine: true}
	if val.Style&yaml3.LiteralStyle != 0 {
		opts.Line, opts.SingleLine = val.Line+1, false
	}
	cfg, err := Decode(name, []byte(val.Value), opts)
	if err != nil {
		return nil, fmt.Errorf("decoding %s of ConfigMap: %w", which, err)
	}
	cfg.ConfigMapKey, cfg.ConfigMapNote = which, note
	return cfg, nil
}

// Format writes the configuration as YAML with sorted keys (the form of
// `kube-proxy --write-config-to`), apiVersion and kind included. Parse reads
// it back to the same configuration.
func Format(c *Config) ([]byte, error) {
	kpc := c.Config
	kpc.APIVersion, kpc.Kind = APIVersion, Kind
	b, err := yaml.Marshal(kpc)
	if err != nil {
		return nil, fmt.Errorf("formatting configuration: %w", err)
	}
	if c.UDPIdleTimeout != nil {
		extra, err := yaml.Marshal(map[string]any{"udpIdleTimeout": c.UDPIdleTimeout})
		if err != nil {
			return nil, fmt.Errorf("formatting configuration: %w", err)
		}
		b = append(b, extra...)
	}
	return b, nil
}

// Field returns the record of the field at a YAML path, or nil.
func (c *Config) Field(path string) *FieldInfo { return c.Fields[path] }

// IsSet reports whether the field at path was given by the file or a flag.
func (c *Config) IsSet(path string) bool {
	f := c.Fields[path]
	return f != nil && (f.Origin == OriginFile || f.Origin == OriginFlag)
}

// PosOf returns the position of the field at path, of its nearest recorded
// parent when the field itself was not written, or of the configuration.
func (c *Config) PosOf(path string) parsers.Pos {
	for p := path; p != ""; p = parentPath(p) {
		if f := c.Fields[p]; f != nil && f.Pos.IsValid() && (f.Origin == OriginFile || f.Origin == OriginFlag) {
			return f.Pos
		}
	}
	return c.Pos
}

// SortedFields returns the field records ordered by position, then path.
func (c *Config) SortedFields() []*FieldInfo {
	out := make([]*FieldInfo, 0, len(c.Fields))
	for _, f := range c.Fields {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Pos.Line != out[j].Pos.Line {
			return out[i].Pos.Line < out[j].Pos.Line
		}
		return out[i].Path < out[j].Path
	})
	return out
}

// Clone returns a deep copy of c.
func (c *Config) Clone() *Config {
	n := *c
	c.Config.DeepCopyInto(&n.Config)
	if c.UDPIdleTimeout != nil {
		t := *c.UDPIdleTimeout
		n.UDPIdleTimeout = &t
	}
	n.Fields = make(map[string]*FieldInfo, len(c.Fields))
	for k, v := range c.Fields {
		fi := *v
		n.Fields[k] = &fi
	}
	n.Warnings = append(parsers.ErrorList(nil), c.Warnings...)
	n.Merged = append([]string(nil), c.Merged...)
	return &n
}

func parentPath(p string) string {
	if strings.HasSuffix(p, "]") {
		if i := strings.LastIndexByte(p, '['); i >= 0 {
			return p[:i]
		}
	}
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}
