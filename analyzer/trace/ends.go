package trace

import (
	"bytes"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// This file merges the ends of a summary walk the way [Merge] merges
// paths, without formatting their destinations.

// endPaths returns the paths of ends in the order given (nil: as they
// are), as a summary trace returns them.
func endPaths(ends []pathEnd, order []endOrder) []Path {
	if len(ends) == 0 {
		return nil
	}
	out := make([]Path, len(ends))
	for i := range ends {
		e := &ends[i]
		if order != nil {
			e = &ends[order[i].i]
		}
		out[i] = Path{Probability: e.prob, Verdict: e.verdict, Destination: e.dst.String(), Masquerade: e.masq,
			SNAT: e.snat, Conditions: e.conds, Warnings: e.warnings}
	}
	return out
}

// mergeEnds is [merge] of the paths of ends, in place: paths that end
// alike are folded into the first (their probabilities added in order),
// then ordered most probable first, then by destination. It returns the
// ends merged and their order (the ends are not moved; the order is w's,
// valid until its next merge); the destinations are written into w's
// buffer to be compared.
func mergeEnds(ends []pathEnd, w *walker) ([]pathEnd, []endOrder) {
	out := ends[:0]
	if len(ends) <= smallMerge {
	next:
		for _, p := range ends {
			for i := range out {
				if sameEnd(&out[i], &p) {
					out[i].prob += p.prob
					continue next
				}
			}
			out = append(out, p)
		}
	} else {
		// As merge: the keys of paths without steps are their end keys.
		keys := make([]string, len(ends))
		count := make(map[string]int, len(ends))
		for i := range ends {
			keys[i] = endKey(Path{Verdict: ends[i].verdict, Destination: ends[i].dst.String(), Masquerade: ends[i].masq,
				SNAT: ends[i].snat, Conditions: ends[i].conds})
			count[keys[i]]++
		}
		idx := map[string]int{}
		for i, p := range ends {
			k := keys[i]
			if count[k] == 1 {
				out = append(out, p)
				continue
			}
			if j, ok := idx[k]; ok {
				out[j].prob += p.prob
				continue
			}
			idx[k] = len(out)
			out = append(out, p)
		}
	}
	keys := w.endKeys[:0]
	if len(out) < 2 {
		for i := range out {
			keys = append(keys, endOrder{i: int32(i)})
		}
		w.endKeys = keys[:0]
		return out, keys
	}
	// merge's order: the same stable sort (SortStableFunc only asks
	// whether cmp is below 0, where merge asks less), of small keys.
	buf := w.destText[:0]
	for i := range out {
		start := len(buf)
		buf = appendDest(buf, out[i].dst)
		keys = append(keys, endOrder{prob: out[i].prob, text: buf[start:len(buf):len(buf)], i: int32(i)})
	}
	slices.SortStableFunc(keys, func(a, b endOrder) int {
		switch d := a.prob - b.prob; {
		case d > 1e-12:
			return -1
		case d < -1e-12:
			return 1
		}
		return bytes.Compare(a.text, b.text)
	})
	w.endKeys, w.destText = keys[:0], buf
	return out, keys
}

// endOrder is what sorting ends reads of one: its probability and its
// destination as written.
type endOrder struct {
	prob float64
	text []byte
	i    int32
}

// appendDest appends the Path's Destination of a path to dst to b: an
// IPv4 one from the octets' decimal forms, which is faster than
// AddrPort.AppendTo and gives the same text.
func appendDest(b []byte, dst netip.AddrPort) []byte {
	a := dst.Addr()
	switch {
	case a.Is4():
		v := a.As4()
		b = append(b, octets[v[0]]...)
		b = append(b, '.')
		b = append(b, octets[v[1]]...)
		b = append(b, '.')
		b = append(b, octets[v[2]]...)
		b = append(b, '.')
		b = append(b, octets[v[3]]...)
		b = append(b, ':')
		return strconv.AppendUint(b, uint64(dst.Port()), 10)
	case !a.IsValid():
		return append(b, dst.String()...)
	}
	return dst.AppendTo(b)
}

// octets holds the decimal forms of 0 to 255.
var octets = func() (out [256]string) {
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}()

// sameEnd reports whether the paths of a and b have the same key (see
// samePath).
func sameEnd(a, b *pathEnd) bool {
	if a.verdict != b.verdict || a.dst != b.dst || a.masq != b.masq || a.snat != b.snat {
		return false
	}
	if len(a.conds) == len(b.conds) {
		same := true
		for i := range a.conds {
			if a.conds[i] != b.conds[i] {
				same = false
				break
			}
		}
		if same {
			return true
		}
	}
	return strings.Join(a.conds, ",") == strings.Join(b.conds, ",")
}
