package kube

import (
	"bytes"
	"fmt"
	"reflect"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// decoder decodes chunks; each decoding goroutine has its own, as it
// holds scratch space.
type decoder struct {
	fast bool
	lean bool   // Options.Lean
	buf  []byte // the JSON form of the current YAML chunk
	item []byte // the de-indented text of the current YAML List item
	conv yconv
	dir  direct
}

// unmarshal decodes chunk c into v. The fast path (YAML converted to JSON
// by yamlToJSON, JSON decoded by the direct decoder or goccy/go-json) is
// tried first; when it refuses the input or fails, v is reset and the
// reference decoders decode it, so that results and error messages are
// theirs.
func (d *decoder) unmarshal(c *chunk, v any) error {
	if d.fast {
		var js []byte
		if c.json {
			if fastJSONSafe(c.data) {
				js = c.data
			}
		} else if out, ok := d.conv.convert(d.buf[:0], c.data); ok {
			d.buf, js = out, out
		}
		if js != nil {
			if d.fastDecode(js, v) {
				d.release()
				return nil
			}
			reflect.ValueOf(v).Elem().SetZero()
		}
		d.release()
	}
	return referenceUnmarshal(c, v)
}

// release drops a scratch buffer grown by an unusually large object.
func (d *decoder) release() {
	if cap(d.buf) > 1<<20 {
		d.buf = nil
	}
	if cap(d.conv.lines) > 1<<16 {
		d.conv.lines = nil
	}
	d.conv.doc, d.conv.out = nil, nil
}

// fastDecode decodes js into v with the direct decoder when it knows v's
// type and can read js, or else with goccy/go-json, reporting whether
// either could.
func (d *decoder) fastDecode(js []byte, v any) bool {
	switch o := v.(type) {
	case *corev1.Service:
		if d.dir.service(js, o) {
			return true
		}
		*o = corev1.Service{}
	case *discoveryv1.EndpointSlice:
		if d.dir.endpointSlice(js, o) {
			return true
		}
		*o = discoveryv1.EndpointSlice{}
	}
	return fastUnmarshal(js, v) == nil
}

// fastJSONSafe reports whether the fast decoders read data exactly as
// encoding/json does: it is valid UTF-8 and has no escaped UTF-16
// surrogate (which encoding/json replaces when unpaired).
func fastJSONSafe(data []byte) bool {
	if !utf8.Valid(data) {
		return false
	}
	for i := 0; ; {
		j := bytes.Index(data[i:], []byte(`\u`))
		if j < 0 {
			return true
		}
		i += j + 2
		if i < len(data) && (data[i] == 'd' || data[i] == 'D') {
			return false
		}
	}
}

// fastUnmarshal decodes js with goccy/go-json, turning a panic into an
// error (the general path then decodes js with encoding/json).
func fastUnmarshal(js []byte, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("go-json: %v", r)
		}
	}()
	return gojson.Unmarshal(js, v)
}
