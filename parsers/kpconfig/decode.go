package kpconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/proxyscan/proxyscan/parsers"
)

// decoder walks the generic value that kube-proxy's YAML-to-JSON conversion
// produces, against the v1alpha1 Go types, taking positions from the YAML
// node tree of the same text.
type decoder struct {
	name   string
	opts   Options
	off    int // added to node lines
	json   bool
	issues parsers.ErrorList // strict-decoding problems (unknown, duplicate)
	errs   parsers.ErrorList // fatal problems (types, syntax)
	fields map[string]*FieldInfo
}

func newDecoder(name string, opts Options) *decoder {
	if opts.Line <= 0 {
		opts.Line = 1
	}
	return &decoder{name: name, opts: opts, off: opts.Line - 1, fields: map[string]*FieldInfo{}}
}

func (d *decoder) filePos() parsers.Pos { return parsers.Pos{File: d.name} }

// pos returns the position of line (1-based within the decoded text).
func (d *decoder) pos(line int) parsers.Pos {
	if d.opts.SingleLine || line <= 0 {
		return parsers.Pos{File: d.name, Line: d.opts.Line}
	}
	return parsers.Pos{File: d.name, Line: line + d.off}
}

func (d *decoder) posAt(line int, path string) parsers.Pos {
	p := d.pos(line)
	if d.json && path != "" {
		p.Path = "$." + path
	}
	return p
}

var reYAMLLine = regexp.MustCompile(`line (\d+)`)

// yamlError turns a goyaml error into a positioned error.
func yamlError(name string, off int, single bool, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.ReplaceAll(msg, "\n", " ")
	msg = strings.Join(strings.Fields(msg), " ")
	line := 0
	if m := reYAMLLine.FindStringSubmatch(msg); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			line = n
		}
		msg = strings.TrimSpace(strings.Replace(msg, m[0]+":", "", 1))
	}
	pos := parsers.Pos{File: name, Line: off + 1}
	if line > 0 && !single {
		pos.Line = line + off
	}
	return parsers.Errorf(pos, "malformed YAML: %s", msg)
}

func docRoot(doc *yaml3.Node) *yaml3.Node {
	if doc.Kind == yaml3.DocumentNode {
		if len(doc.Content) == 0 {
			return nil
		}
		return doc.Content[0]
	}
	return doc
}

// resolve follows aliases.
func resolve(n *yaml3.Node) *yaml3.Node {
	for i := 0; n != nil && n.Kind == yaml3.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// mapLookup returns the key and value nodes of the last occurrence of key
// in a mapping (the occurrence whose value YAML-to-JSON keeps), looking into
// merge keys ("<<") too.
func mapLookup(m *yaml3.Node, key string) (*yaml3.Node, *yaml3.Node) {
	m = resolve(m)
	if m == nil || m.Kind != yaml3.MappingNode {
		return nil, nil
	}
	var k, v *yaml3.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key && m.Content[i].Tag != "!!merge" {
			k, v = m.Content[i], m.Content[i+1]
		}
	}
	if k != nil {
		return k, v
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Tag == "!!merge" {
			src := resolve(m.Content[i+1])
			if src == nil {
				continue
			}
			if src.Kind == yaml3.SequenceNode {
				for _, s := range src.Content {
					if k, v := mapLookup(s, key); k != nil {
						return k, v
					}
				}
				continue
			}
			if k, v := mapLookup(src, key); k != nil {
				return k, v
			}
		}
	}
	return nil, nil
}

func (d *decoder) decode(data []byte) (*Config, error) {
	d.json = isJSON(data)
	// kube-proxy's decoding: YAML 1.1 to JSON (sigs.k8s.io/yaml over
	// goyaml.v2), then JSON into the Go types.
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, yamlError(d.name, d.off, d.opts.SingleLine, err)
	}
	// The node tree, for positions and for strict checks.
	dec := yaml3.NewDecoder(bytes.NewReader(data))
	var doc yaml3.Node
	if err := dec.Decode(&doc); err != nil {
		return nil, yamlError(d.name, d.off, d.opts.SingleLine, err)
	}
	var extra yaml3.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		if r := docRoot(&extra); r != nil && !(r.Kind == yaml3.ScalarNode && r.Tag == "!!null") {
			d.issues.Add(d.pos(r.Line), "more than one YAML document: kube-proxy reads only the first")
		}
	case errors.Is(err, io.EOF):
	default:
		// A broken later document: goyaml.v2 never reads it either.
		d.issues.Add(d.filePos(), "more than one YAML document (a later one is malformed: %s): kube-proxy reads only the first", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	root := docRoot(&doc)
	jd := json.NewDecoder(bytes.NewReader(j))
	jd.UseNumber()
	var gen any
	if err := jd.Decode(&gen); err != nil {
		return nil, parsers.Errorf(d.pos(1), "malformed configuration: %v", err)
	}
	top, ok := gen.(map[string]any)
	if !ok {
		line := 1
		if root != nil {
			line = root.Line
		}
		return nil, parsers.Errorf(d.pos(line), "not a KubeProxyConfiguration: the document is not a mapping")
	}
	if err := d.checkTypeMeta(top, root); err != nil {
		return nil, err
	}
	cfg := &Config{Name: d.name, Pos: d.pos(1), JSON: d.json}
	cfg.Pos.Line = d.opts.Line
	rv := reflect.ValueOf(&cfg.Config).Elem()
	// udpIdleTimeout (1.20–1.25) is not in the newest type; take it out first.
	if v, ok := top["udpIdleTimeout"]; ok {
		delete(top, "udpIdleTimeout")
		k, vn := mapLookup(root, "udpIdleTimeout")
		d.record("udpIdleTimeout", k, vn)
		var t metav1.Duration
		if d.leaf(reflect.ValueOf(&t).Elem(), v, vn, k, "udpIdleTimeout") {
			cfg.UDPIdleTimeout = &t
		}
	}
	d.walkStruct(rv, top, root, nil, "")
	if len(d.errs) > 0 {
		all := append(d.errs, d.issues...)
		all.Sort()
		return nil, all
	}
	cfg.Fields = d.fields
	return cfg, nil
}

func isJSON(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// checkTypeMeta mirrors the universal decoder's refusal of a document
// without apiVersion/kind or of another group, version or kind.
func (d *decoder) checkTypeMeta(top map[string]any, root *yaml3.Node) error {
	av, _ := top["apiVersion"].(string)
	kind, _ := top["kind"].(string)
	_, avNode := mapLookup(root, "apiVersion")
	_, kindNode := mapLookup(root, "kind")
	line := func(n *yaml3.Node) int {
		if n != nil {
			return n.Line
		}
		return 1
	}
	switch {
	case av == "":
		return parsers.Errorf(d.posAt(line(avNode), "apiVersion"), "apiVersion is missing: want %s", APIVersion)
	case kind == "":
		return parsers.Errorf(d.posAt(line(kindNode), "kind"), "kind is missing: want %s", Kind)
	case av != APIVersion:
		return parsers.Errorf(d.posAt(line(avNode), "apiVersion"), "apiVersion %q is not %s, the only version kube-proxy 1.20–1.37 reads", av, APIVersion)
	case kind != Kind:
		return parsers.Errorf(d.posAt(line(kindNode), "kind"), "kind %q is not %s", kind, Kind)
	}
	return nil
}

type structField struct {
	index []int
	name  string
}

// jsonFields lists the JSON field names of a struct type, with embedded
// structs without a name inlined as encoding/json does.
func jsonFields(t reflect.Type) map[string]structField {
	out := map[string]structField{}
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			name, _, _ := strings.Cut(tag, ",")
			if name == "-" {
				continue
			}
			idx := append(append([]int(nil), prefix...), i)
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				walk(f.Type, idx)
				continue
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			out[name] = structField{index: idx, name: name}
		}
	}
	walk(t, nil)
	return out
}

func joinPath(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// record notes that the input set path, at the key's line.
func (d *decoder) record(path string, key, val *yaml3.Node) {
	fi := &FieldInfo{Path: path, Origin: OriginFile, Pos: d.pos(0)}
	if key != nil {
		fi.Pos = d.posAt(key.Line, path)
	} else if val != nil {
		fi.Pos = d.posAt(val.Line, path)
	}
	if v := resolve(val); v != nil && v.Kind == yaml3.ScalarNode {
		fi.Raw = clip(v.Value)
	}
	d.fields[path] = fi
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// keyLine returns the line to report for a key, falling back to the parent.
func (d *decoder) lineOf(n *yaml3.Node, fallback *yaml3.Node) int {
	if n != nil {
		return n.Line
	}
	if fallback != nil {
		return fallback.Line
	}
	return 1
}

func (d *decoder) walkStruct(rv reflect.Value, m map[string]any, node, parentKey *yaml3.Node, prefix string) {
	fields := jsonFields(rv.Type())
	node = resolve(node)
	d.checkDuplicates(node, prefix)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	line := func(k string) int {
		kn, _ := mapLookup(node, k)
		if kn == nil {
			return 1 << 30
		}
		return kn.Line
	}
	sort.Slice(keys, func(i, j int) bool {
		li, lj := line(keys[i]), line(keys[j])
		if li != lj {
			return li < lj
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		kn, vn := mapLookup(node, k)
		path := joinPath(prefix, k)
		f, ok := fields[k]
		if !ok {
			pos := d.posAt(d.lineOf(kn, orNode(node, parentKey)), path)
			if alt := foldMatch(fields, k); alt != "" {
				d.issues.Add(pos, "unknown field %q: field names are case-sensitive, did you mean %q", path, joinPath(prefix, alt))
			} else {
				d.issues.Add(pos, "unknown field %q", path)
			}
			continue
		}
		if kn == nil {
			kn = orNode(node, parentKey)
		}
		d.record(path, kn, vn)
		d.value(rv.FieldByIndex(f.index), m[k], vn, kn, path)
	}
}

func orNode(a, b *yaml3.Node) *yaml3.Node {
	if b != nil {
		return b
	}
	return a
}

func foldMatch(fields map[string]structField, k string) string {
	for name := range fields {
		if strings.EqualFold(name, k) {
			return name
		}
	}
	return ""
}

// checkDuplicates reports keys given twice in one mapping, as the strict
// YAML-to-JSON conversion does ("key already set in map").
func (d *decoder) checkDuplicates(node *yaml3.Node, prefix string) {
	if node == nil || node.Kind != yaml3.MappingNode {
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(node.Content); i += 2 {
		k := node.Content[i]
		if k.Tag == "!!merge" {
			continue
		}
		if first, ok := seen[k.Value]; ok {
			path := joinPath(prefix, k.Value)
			d.issues.Add(d.posAt(k.Line, path), "duplicate field %q (first at line %d); kube-proxy keeps the last", path, first+d.off)
			continue
		}
		seen[k.Value] = k.Line
	}
}

var unmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

// value decodes v into rv.
func (d *decoder) value(rv reflect.Value, v any, vn, kn *yaml3.Node, path string) {
	t := rv.Type()
	vn = resolve(vn)
	switch {
	case reflect.PointerTo(t).Implements(unmarshalerType):
		d.leaf(rv, v, vn, kn, path)
	case t.Kind() == reflect.Struct:
		if v == nil {
			return
		}
		m, ok := v.(map[string]any)
		if !ok {
			d.errs.Add(d.posAt(d.lineOf(vn, kn), path), "%s: want a mapping, got %s", path, describe(v))
			return
		}
		d.walkStruct(rv, m, vn, kn, path)
	case t.Kind() == reflect.Slice && elemIsStruct(t):
		if v == nil {
			return
		}
		list, ok := v.([]any)
		if !ok {
			d.errs.Add(d.posAt(d.lineOf(vn, kn), path), "%s: want a list, got %s", path, describe(v))
			return
		}
		out := reflect.MakeSlice(t, len(list), len(list))
		for i, e := range list {
			var en *yaml3.Node
			if vn != nil && vn.Kind == yaml3.SequenceNode && i < len(vn.Content) {
				en = vn.Content[i]
			}
			ep := fmt.Sprintf("%s[%d]", path, i)
			d.record(ep, nil, orNode(vn, en))
			d.value(out.Index(i), e, en, orNode(kn, en), ep)
		}
		rv.Set(out)
	default:
		if d.leaf(rv, v, vn, kn, path) {
			d.recordElems(v, vn, kn, path)
		}
	}
}

func elemIsStruct(t reflect.Type) bool {
	e := t.Elem()
	return e.Kind() == reflect.Struct && !reflect.PointerTo(e).Implements(unmarshalerType)
}

// recordElems records the items of a list of scalars and the keys of a
// map, so that "nodePortAddresses[1]" and "featureGates.X" have lines.
func (d *decoder) recordElems(v any, vn, kn *yaml3.Node, path string) {
	switch x := v.(type) {
	case []any:
		for i := range x {
			var en *yaml3.Node
			if vn != nil && vn.Kind == yaml3.SequenceNode && i < len(vn.Content) {
				en = vn.Content[i]
			}
			d.record(fmt.Sprintf("%s[%d]", path, i), nil, orNode(orNode(kn, vn), en))
		}
	case map[string]any:
		for k := range x {
			ek, ev := mapLookup(vn, k)
			if ek == nil {
				ek = orNode(vn, kn)
			}
			d.record(path+"."+k, ek, ev)
		}
	}
}

// leaf decodes a scalar-like value the way the apimachinery JSON serializer
// does (case-sensitive, integers preserved).
func (d *decoder) leaf(rv reflect.Value, v any, vn, kn *yaml3.Node, path string) bool {
	b, err := json.Marshal(v)
	if err != nil {
		d.errs.Add(d.posAt(d.lineOf(vn, kn), path), "%s: cannot decode value: %v", path, err)
		return false
	}
	p := reflect.New(rv.Type())
	if err := kjson.UnmarshalCaseSensitivePreserveInts(b, p.Interface()); err != nil {
		d.errs.Add(d.posAt(d.lineOf(vn, kn), path), "%s: cannot decode %s: %s", path, clip(string(b)), cleanJSONError(err))
		return false
	}
	rv.Set(p.Elem())
	return true
}

func cleanJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("want %s, got a JSON %s", typeName(te.Type), te.Value)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer (" + t.Kind().String() + ")"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer (" + t.Kind().String() + ")"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return t.String()
}

func describe(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return "null"
}
