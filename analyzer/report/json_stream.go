package report

import (
	"bufio"
	"bytes"
	"encoding"
	"encoding/json"
	"io"
	"reflect"
	"strings"
)

// streamJSON writes v, a struct, as [jsonValue] does, byte for byte, but
// one field at a time and each element of its list fields apart: the
// report of a fleet is never held whole in its JSON form, whatever the
// number of nodes. Below the top level, a list of more than streamMin
// elements is written an element at a time too, and so is a struct
// holding such a list (a finding that one cause explains for thousands
// of objects, each with its evidence), so that no element of the report
// is held whole in its JSON form either.
func streamJSON(w io.Writer, v any) error {
	s := &jsonStreamer{bw: bufio.NewWriter(w)}
	s.enc = json.NewEncoder(&s.buf)
	s.enc.SetEscapeHTML(false)
	rv := reflect.Indirect(reflect.ValueOf(v))
	var err error
	if streamable(rv.Type()) {
		err = s.object(rv, "", true)
	} else {
		err = s.put(rv, "")
	}
	if err != nil {
		return err
	}
	s.bw.WriteString("\n")
	return s.bw.Flush()
}

// streamMin is the length from which a list below the report's top level
// is written an element at a time: a shorter one is encoded whole, which
// costs fewer calls of the encoder.
const streamMin = 256

// jsonStreamer writes values as a json.Encoder with an indent of two
// spaces and HTML escaping off does.
type jsonStreamer struct {
	bw  *bufio.Writer
	buf bytes.Buffer
	enc *json.Encoder
}

// put writes one value whole at the depth of prefix, without the newline
// the encoder ends it with.
func (s *jsonStreamer) put(x reflect.Value, prefix string) error {
	s.buf.Reset()
	s.enc.SetIndent(prefix, "  ")
	if err := s.enc.Encode(x.Interface()); err != nil {
		return err
	}
	_, err := s.bw.Write(bytes.TrimSuffix(s.buf.Bytes(), []byte("\n")))
	return err
}

// object writes rv, a struct of fields that streamable accepts, a field
// at a time; top says it is the report itself, whose lists are written an
// element at a time whatever their length.
func (s *jsonStreamer) object(rv reflect.Value, prefix string, top bool) error {
	rt := rv.Type()
	s.bw.WriteString("{")
	first := true
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fv := rv.Field(i)
		if strings.Contains(","+opts+",", ",omitempty,") && emptyJSON(fv) {
			continue
		}
		if !first {
			s.bw.WriteString(",")
		}
		first = false
		key, err := json.Marshal(name)
		if err != nil {
			return err
		}
		s.bw.WriteString("\n" + prefix + "  ")
		s.bw.Write(key)
		s.bw.WriteString(": ")
		if err := s.value(fv, prefix+"  ", top); err != nil {
			return err
		}
	}
	if !first {
		s.bw.WriteString("\n" + prefix)
	}
	s.bw.WriteString("}")
	return nil
}

// value writes v at the depth of prefix: a list an element at a time
// when it is one of the report's own or long, a struct holding a long
// list a field at a time, anything else whole.
func (s *jsonStreamer) value(v reflect.Value, prefix string, top bool) error {
	switch {
	case v.Kind() == reflect.Slice && v.Len() > 0 && (top || v.Len() > streamMin) && streamable(v.Type()):
		s.bw.WriteString("[")
		for j := 0; j < v.Len(); j++ {
			if j > 0 {
				s.bw.WriteString(",")
			}
			s.bw.WriteString("\n" + prefix + "  ")
			if err := s.value(v.Index(j), prefix+"  ", false); err != nil {
				return err
			}
		}
		s.bw.WriteString("\n" + prefix + "]")
		return nil
	case v.Kind() == reflect.Pointer && !v.IsNil() && v.Elem().Kind() == reflect.Struct && streamable(v.Type()) && holdsLongList(v.Elem()):
		return s.object(v.Elem(), prefix, false)
	case v.Kind() == reflect.Struct && streamable(v.Type()) && holdsLongList(v):
		return s.object(v, prefix, false)
	}
	return s.put(v, prefix)
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// streamable reports whether values of type t are written by parts as
// encoding/json writes them whole: lists (not of bytes, which it writes
// in base64) and structs that encode themselves in no way of their own,
// and structs without embedded fields or options other than omitempty,
// which would change the fields or their forms.
func streamable(t reflect.Type) bool {
	for _, u := range []reflect.Type{t, reflect.PointerTo(t)} {
		if u.Implements(jsonMarshaler) || u.Implements(textMarshaler) {
			return false
		}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return t.Elem().Kind() == reflect.Struct && streamable(t.Elem())
	case reflect.Slice:
		return t.Elem().Kind() != reflect.Uint8
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Anonymous {
				return false
			}
			tag, ok := f.Tag.Lookup("json")
			if !ok {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if name == "-" && opts != "" {
				return false
			}
			for _, o := range strings.Split(opts, ",") {
				if o != "" && o != "omitempty" {
					return false
				}
			}
		}
		return true
	}
	return false
}

// holdsLongList reports whether the struct v has a list field of more
// than streamMin elements.
func holdsLongList(v reflect.Value) bool {
	for i := 0; i < v.NumField(); i++ {
		if f := v.Field(i); f.Kind() == reflect.Slice && f.Len() > streamMin && v.Type().Field(i).IsExported() {
			return true
		}
	}
	return false
}

// emptyJSON reports whether encoding/json leaves a field with omitempty
// out.
func emptyJSON(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}
