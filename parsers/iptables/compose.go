package iptables

import "strings"

// Compose returns one dump of the tables of several dumps of one family
// and backend that each hold other tables: iptables-save -t nat and
// iptables-save -t filter saved to two files are the node's ruleset of
// that family. Each table keeps the dump it was read from, so positions
// name its file; the dump's Name joins the files' names with " + ". ok is
// false, and nil returned, when they cannot be one ruleset: fewer than two
// dumps, a table in two of them, another family or backend, or a family
// not known.
func Compose(dumps []*Dump) (d *Dump, ok bool) {
	if len(dumps) < 2 {
		return nil, false
	}
	first := dumps[0]
	if first.Family != IPv4 && first.Family != IPv6 {
		return nil, false
	}
	seen := map[string]bool{}
	out := &Dump{Family: first.Family, Backend: first.Backend, Counters: true}
	var names, partial []string
	for _, x := range dumps {
		if x.Family != first.Family || x.Backend != first.Backend || len(x.Tables) == 0 {
			return nil, false
		}
		for _, t := range x.Tables {
			if seen[t.Name] {
				return nil, false
			}
			seen[t.Name] = true
		}
		names = append(names, x.Name)
		out.Tables = append(out.Tables, x.Tables...)
		if out.Tool == "" {
			out.Tool = x.Tool
		}
		out.Counters = out.Counters && x.Counters
		out.HidesInterfaces = out.HidesInterfaces || x.HidesInterfaces
		if x.Partial {
			out.Partial = true
			partial = append(partial, x.Name+": "+x.PartialReason)
		}
	}
	out.Name = strings.Join(names, " + ")
	out.PartialReason = strings.Join(partial, "; ")
	return out, true
}
