package ipset

import (
	"bytes"
	"strconv"
	"strings"
)

func writeOptions(b *bytes.Buffer, opts []Option, quoteComment bool) {
	for _, o := range opts {
		b.WriteByte(' ')
		b.WriteString(o.Name)
		if o.Flag {
			continue
		}
		b.WriteByte(' ')
		if quoteComment && o.Name == "comment" {
			b.WriteString(`"` + o.Value + `"`)
		} else {
			b.WriteString(o.Value)
		}
	}
}

// FormatSave prints d as `ipset save` does: each set's create line
// followed by its add lines.
func FormatSave(d *Dump) []byte {
	var b bytes.Buffer
	for _, s := range d.Sets {
		b.WriteString("create " + s.Name + " " + s.Type)
		writeOptions(&b, s.Options, false)
		b.WriteByte('\n')
		for _, e := range s.Entries {
			b.WriteString("add " + s.Name + " " + e.Elem)
			writeOptions(&b, e.Options, true)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// FormatList prints d as `ipset list` does: one block per set, separated
// by blank lines. Lines a set's ListInfo marks as absent are left out; a
// set without ListInfo (read from the save form) prints revision, memory
// size and references as 0.
func FormatList(d *Dump) []byte {
	var b bytes.Buffer
	for i, s := range d.Sets {
		if i > 0 {
			b.WriteByte('\n')
		}
		info := s.List
		if info == nil {
			info = &ListInfo{Entries: len(s.Entries)}
		}
		b.WriteString("Name: " + s.Name + "\nType: " + s.Type + "\n")
		if info.Revision >= 0 {
			b.WriteString("Revision: " + strconv.Itoa(info.Revision) + "\n")
		}
		var h bytes.Buffer
		writeOptions(&h, s.Options, false)
		b.WriteString("Header: " + strings.TrimPrefix(h.String(), " "))
		b.WriteString("\nSize in memory: " + strconv.Itoa(info.SizeInMemory) + "\n")
		b.WriteString("References: " + strconv.Itoa(info.References) + "\n")
		if info.Entries >= 0 {
			b.WriteString("Number of entries: " + strconv.Itoa(len(s.Entries)) + "\n")
		}
		b.WriteString("Members:\n")
		for _, e := range s.Entries {
			b.WriteString(e.Elem)
			writeOptions(&b, e.Options, true)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}
