package kube

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"unicode/utf8"

	jsoniter "github.com/json-iterator/go"
)

// fastJSON decodes like encoding/json (same field matching, same
// json.Unmarshaler calls) at several times its speed.
var fastJSON = jsoniter.ConfigCompatibleWithStandardLibrary

// decoder decodes chunks; each decoding goroutine has its own, as it
// holds scratch space.
type decoder struct {
	fast bool
	buf  []byte // the JSON form of the current YAML chunk
	conv yconv
	iter *jsoniter.Iterator
}

// unmarshal decodes chunk c into v. The fast path (YAML converted to JSON
// by yamlToJSON, JSON decoded by json-iterator) is tried first; when it
// refuses the input or fails, v is reset and the reference decoders decode
// it, so that results and error messages are theirs.
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
			if err := d.fastUnmarshal(js, v); err == nil {
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

// fastJSONSafe reports whether json-iterator decodes data exactly as
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

// fastUnmarshal decodes js with json-iterator, like its Unmarshal but
// with an iterator of its own that lets go of js afterwards: a pooled one
// would keep the whole export it was a slice of alive. It turns a panic
// into an error: on malformed input json-iterator can hand a
// json.Unmarshaler an empty value, which some Kubernetes types do not
// expect.
func (d *decoder) fastUnmarshal(js []byte, v any) (err error) {
	if d.iter == nil {
		d.iter = jsoniter.NewIterator(fastJSON)
	}
	it := d.iter
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("json-iterator: %v", r)
		}
		it.ResetBytes(nil)
		it.Error = nil
	}()
	it.ResetBytes(js)
	it.Error = nil
	it.ReadVal(v)
	if it.Error != nil {
		return it.Error
	}
	// Only white space may follow: looking further must reach the end.
	it.WhatIsNext()
	if it.Error != io.EOF {
		return errors.New("json-iterator: data after the value")
	}
	return nil
}
