package iptables

import (
	"bytes"
	"strconv"
)

// Format writes d as iptables-save does: per table its comments, the
// "*table" line, the chain headers, the rules grouped by chain in chain
// order, "COMMIT" and the trailing comments. Rules keep their raw text, and
// their counters when the dump has them.
func Format(d *Dump) []byte {
	var b bytes.Buffer
	for _, t := range d.Tables {
		for _, c := range t.Comments {
			b.WriteString(c)
			b.WriteByte('\n')
		}
		b.WriteByte('*')
		b.WriteString(t.Name)
		b.WriteByte('\n')
		for _, c := range t.Chains {
			b.WriteByte(':')
			b.WriteString(c.Name)
			b.WriteByte(' ')
			b.WriteString(c.Policy())
			b.WriteString(" [")
			pk, by := c.Counters()
			b.WriteString(strconv.FormatUint(pk, 10))
			b.WriteByte(':')
			b.WriteString(strconv.FormatUint(by, 10))
			b.WriteString("]\n")
		}
		for _, c := range t.Chains {
			for _, r := range c.Rules {
				if pk, by, ok := r.Counters(); ok {
					b.WriteByte('[')
					b.WriteString(strconv.FormatUint(pk, 10))
					b.WriteByte(':')
					b.WriteString(strconv.FormatUint(by, 10))
					b.WriteString("] ")
				}
				b.WriteString(r.Raw)
				b.WriteByte('\n')
			}
		}
		b.WriteString("COMMIT\n")
		for _, c := range t.Trailer {
			b.WriteString(c)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}
