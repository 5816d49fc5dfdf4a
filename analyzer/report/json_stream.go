package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// streamJSON writes v, a struct, as [jsonValue] does, byte for byte, but
// one field at a time and each element of its list fields apart: the
// report of a fleet is never held whole in its JSON form, whatever the
// number of nodes.
func streamJSON(w io.Writer, v any) error {
	rv := reflect.Indirect(reflect.ValueOf(v))
	rt := rv.Type()
	bw := bufio.NewWriter(w)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// put writes one value at the depth of prefix, without the newline
	// the encoder ends it with.
	put := func(x reflect.Value, prefix string) error {
		buf.Reset()
		enc.SetIndent(prefix, "  ")
		if err := enc.Encode(x.Interface()); err != nil {
			return err
		}
		_, err := bw.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
		return err
	}
	bw.WriteString("{")
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
			bw.WriteString(",")
		}
		first = false
		key, err := json.Marshal(name)
		if err != nil {
			return err
		}
		fmt.Fprintf(bw, "\n  %s: ", key)
		if fv.Kind() != reflect.Slice || fv.Len() == 0 {
			if err := put(fv, "  "); err != nil {
				return err
			}
			continue
		}
		bw.WriteString("[")
		for j := 0; j < fv.Len(); j++ {
			if j > 0 {
				bw.WriteString(",")
			}
			bw.WriteString("\n    ")
			if err := put(fv.Index(j), "    "); err != nil {
				return err
			}
		}
		bw.WriteString("\n  ]")
	}
	if first {
		bw.WriteString("}\n")
	} else {
		bw.WriteString("\n}\n")
	}
	return bw.Flush()
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
