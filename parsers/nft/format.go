package nft

import (
	"strconv"
	"strings"
)

// FormatOptions controls [FormatWith].
type FormatOptions struct {
	// Handles appends `# handle N` annotations, as `nft -a list ruleset`
	// does, to the objects that have a handle.
	Handles bool
}

// Format prints rs as `nft list ruleset` (nft 1.0.6) prints it. For a
// ruleset parsed from that output it reproduces the input byte for byte;
// a ruleset parsed from JSON prints as nft prints the same ruleset, except
// for what nft's JSON omits (see the package documentation).
func Format(rs *Ruleset) []byte { return FormatWith(rs, FormatOptions{}) }

// FormatWith prints rs like [Format], with options.
func FormatWith(rs *Ruleset, o FormatOptions) []byte {
	var b []byte
	for _, t := range rs.Tables {
		b = appendTable(b, t, o)
	}
	return b
}

func appendHandle(b []byte, o FormatOptions, h uint64) []byte {
	if o.Handles && h != 0 {
		b = append(b, " # handle "...)
		b = strconv.AppendUint(b, h, 10)
	}
	return b
}

func appendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendTable(b []byte, t *Table, o FormatOptions) []byte {
	b = append(b, "table "...)
	b = append(b, FamilyName(t.Family)...)
	b = append(b, ' ')
	b = append(b, t.Name...)
	b = append(b, " {"...)
	b = appendHandle(b, o, t.Handle)
	b = append(b, '\n')
	delim := ""
	if len(t.Flags) > 0 {
		b = append(b, "\tflags "...)
		b = append(b, strings.Join(t.Flags, ",")...)
		b = append(b, '\n')
		delim = "\n"
	}
	if t.Comment != "" {
		b = append(b, "\tcomment "...)
		b = appendQuoted(b, t.Comment)
		b = append(b, '\n')
	}
	for _, ob := range t.Objects {
		if ob.Kind != "flowtable" {
			b = append(b, delim...)
			b = appendObject(b, ob, o)
			delim = "\n"
		}
	}
	for _, s := range t.Sets {
		b = append(b, delim...)
		b = appendSet(b, s, o)
		delim = "\n"
	}
	for _, ob := range t.Objects {
		if ob.Kind == "flowtable" {
			b = append(b, delim...)
			b = appendObject(b, ob, o)
			delim = "\n"
		}
	}
	for _, c := range t.Chains {
		b = append(b, delim...)
		b = appendChain(b, c, o)
		delim = "\n"
	}
	return append(b, "}\n"...)
}

func appendObject(b []byte, ob *Object, o FormatOptions) []byte {
	b = append(b, '\t')
	b = append(b, ob.Kind...)
	b = append(b, ' ')
	b = append(b, ob.Name...)
	b = append(b, " {"...)
	b = appendHandle(b, o, ob.Handle)
	b = append(b, '\n')
	if ob.Counter != nil {
		b = append(b, "\t\tpackets "...)
		b = strconv.AppendUint(b, ob.Counter.Packets, 10)
		b = append(b, " bytes "...)
		b = strconv.AppendUint(b, ob.Counter.Bytes, 10)
		b = append(b, '\n')
	}
	for _, l := range ob.Body {
		b = append(b, "\t\t"...)
		b = append(b, l...)
		b = append(b, '\n')
	}
	if ob.JSON != "" && ob.Body == nil && ob.Counter == nil {
		// Only JSON is known: nft refuses this line, see Unsupported.
		b = append(b, "\t\tunsupported-json "...)
		b = append(b, ob.JSON...)
		b = append(b, '\n')
	}
	return append(b, "\t}\n"...)
}

func appendTypes(b []byte, ts []string) []byte {
	for i, t := range ts {
		if i > 0 {
			b = append(b, " . "...)
		}
		b = append(b, t...)
	}
	return b
}

func appendSet(b []byte, s *Set, o FormatOptions) []byte {
	if s.IsMap {
		b = append(b, "\tmap "...)
	} else {
		b = append(b, "\tset "...)
	}
	b = append(b, s.Name...)
	b = append(b, " {"...)
	b = appendHandle(b, o, s.Handle)
	b = append(b, "\n\t\t"...)
	if s.Typeof != "" {
		b = append(b, "typeof "...)
		b = append(b, s.Typeof...)
	} else {
		b = append(b, "type "...)
		b = appendTypes(b, s.KeyType)
	}
	if s.IsMap {
		b = append(b, " : "...)
		if s.DataInterval {
			b = append(b, "interval "...)
		}
		if s.DataTypeof != "" {
			b = append(b, s.DataTypeof...)
		} else {
			b = appendTypes(b, s.DataType)
		}
	}
	b = append(b, '\n')
	if !s.HasFlag("constant") {
		if s.Policy != "" {
			b = append(b, "\t\tpolicy "...)
			b = append(b, s.Policy...)
			b = append(b, '\n')
		}
		if s.Size > 0 {
			b = append(b, "\t\tsize "...)
			b = strconv.AppendUint(b, uint64(s.Size), 10)
			b = append(b, '\n')
		}
	}
	// nft leaves out a flags line that would only say "timeout" when the
	// set has a default timeout.
	shown := false
	for _, f := range s.Flags {
		if f != "timeout" || s.Timeout == 0 {
			shown = true
		}
	}
	if shown {
		b = append(b, "\t\tflags "...)
		b = append(b, strings.Join(s.Flags, ",")...)
		b = append(b, '\n')
	}
	if s.Counter {
		b = append(b, "\t\tcounter\n"...)
	}
	if s.AutoMerge {
		b = append(b, "\t\tauto-merge\n"...)
	}
	if s.Timeout != 0 {
		b = append(b, "\t\ttimeout "...)
		b = appendTime(b, s.Timeout)
		b = append(b, '\n')
	}
	if s.GCInterval != 0 {
		b = append(b, "\t\tgc-interval "...)
		b = appendTime(b, s.GCInterval)
		b = append(b, '\n')
	}
	if s.Comment != "" {
		b = append(b, "\t\tcomment "...)
		b = appendQuoted(b, s.Comment)
		b = append(b, '\n')
	}
	if len(s.Elements) > 0 {
		b = append(b, "\t\telements = { "...)
		per := perLine(s.KeyType)
		count := 0
		for i := range s.Elements {
			if i > 0 {
				if per > 1 && count < per {
					b = append(b, ", "...)
				} else {
					count = 0
					b = append(b, ",\n\t\t\t     "...)
				}
			}
			b = appendElement(b, &s.Elements[i])
			count++
		}
		b = append(b, " }\n"...)
	}
	return append(b, "\t}\n"...)
}

func appendChain(b []byte, c *Chain, o FormatOptions) []byte {
	b = append(b, "\tchain "...)
	b = append(b, c.Name...)
	b = append(b, " {"...)
	b = appendHandle(b, o, c.Handle)
	if c.Comment != "" {
		b = append(b, "\n\t\tcomment "...)
		b = appendQuoted(b, c.Comment)
	}
	b = append(b, '\n')
	if c.Hook != "" {
		b = append(b, "\t\ttype "...)
		b = append(b, c.Type...)
		b = append(b, " hook "...)
		b = append(b, c.Hook...)
		switch len(c.Devices) {
		case 0:
		case 1:
			b = append(b, " device "...)
			b = appendQuoted(b, c.Devices[0])
		default:
			b = append(b, " devices = { "...)
			b = append(b, strings.Join(c.Devices, ", ")...)
			b = append(b, " }"...)
		}
		b = append(b, " priority "...)
		if c.Priority != nil {
			b = append(b, c.Priority.Text...)
		}
		b = append(b, ';')
		if c.Policy != nil {
			b = append(b, " policy "...)
			b = append(b, PolicyName(*c.Policy)...)
			b = append(b, ';')
		}
		for _, f := range c.Flags {
			b = append(b, " flags "...)
			b = append(b, f...)
			b = append(b, ';')
		}
		b = append(b, '\n')
	}
	for _, r := range c.Rules {
		b = append(b, "\t\t"...)
		b = appendRule(b, r)
		b = appendHandle(b, o, r.Handle)
		b = append(b, '\n')
	}
	return append(b, "\t}\n"...)
}
