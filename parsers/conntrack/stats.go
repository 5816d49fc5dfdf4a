package conntrack

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
)

// Stats is the `conntrack -S` listing: one line of counters per CPU.
type Stats struct {
	CPUs []*CPUStats `json:"cpus"`
}

// CPUStats are the counters of one CPU, in the order printed.
type CPUStats struct {
	CPU      int         `json:"cpu"`
	Counters []Counter   `json:"counters"`
	Pos      parsers.Pos `json:"pos"`
	Raw      string      `json:"raw"`
}

// Counter is one named counter (found, invalid, insert_failed, drop,
// early_drop, error, search_restart, clash_resolve, chaintoolong, …).
type Counter struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

// Get returns the named counter and whether it was printed.
func (c *CPUStats) Get(name string) (uint64, bool) {
	for _, x := range c.Counters {
		if x.Name == name {
			return x.Value, true
		}
	}
	return 0, false
}

// Total returns the sum of the named counter over all CPUs.
func (s *Stats) Total(name string) uint64 {
	var t uint64
	for _, c := range s.CPUs {
		v, _ := c.Get(name)
		t += v
	}
	return t
}

// ParseStats reads `conntrack -S` output ("cpu=0 \tfound=0 invalid=3 …").
func ParseStats(name string, data []byte) (*Stats, error) {
	st := &Stats{CPUs: []*CPUStats{}}
	var errs parsers.ErrorList
	seen := map[int]bool{}
	for n, lb := range bytes.Split(data, []byte("\n")) {
		pos := parsers.Pos{File: name, Line: n + 1}
		if len(lb) > MaxLineLength {
			return nil, parsers.Errorf(pos, "line too long (%d bytes, limit %d)", len(lb), MaxLineLength)
		}
		l := strings.TrimSuffix(string(lb), "\r")
		if strings.TrimSpace(l) == "" {
			continue
		}
		if len(errs) >= maxErrors {
			break
		}
		f := strings.Fields(l)
		cpu, ok := strings.CutPrefix(f[0], "cpu=")
		c, err := strconv.ParseUint(cpu, 10, 16)
		if !ok || err != nil {
			errs.Add(pos, "expected cpu=N, found %s", quoteShort(l))
			continue
		}
		if seen[int(c)] {
			errs.Add(pos, "cpu %d listed twice", c)
			continue
		}
		seen[int(c)] = true
		cs := &CPUStats{CPU: int(c), Pos: pos, Raw: l, Counters: []Counter{}}
		bad := false
		for _, tok := range f[1:] {
			k, v, ok := strings.Cut(tok, "=")
			val, err := strconv.ParseUint(v, 10, 64)
			if !ok || k == "" || err != nil {
				errs.Add(pos, "bad counter %s", strconv.Quote(tok))
				bad = true
				break
			}
			cs.Counters = append(cs.Counters, Counter{k, val})
		}
		if bad {
			continue
		}
		if len(cs.Counters) == 0 {
			errs.Add(pos, "cpu line without counters (truncated?)")
			continue
		}
		st.CPUs = append(st.CPUs, cs)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	if len(st.CPUs) == 0 {
		return nil, parsers.Errorf(parsers.Pos{File: name}, "empty input: no cpu= line")
	}
	return st, nil
}

// FormatStats prints s as conntrack-tools 1.4.7 does: "cpu=%-4u\t" and
// every counter followed by a space.
func FormatStats(s *Stats) []byte {
	var b bytes.Buffer
	for _, c := range s.CPUs {
		fmt.Fprintf(&b, "cpu=%-4d\t", c.CPU)
		for _, x := range c.Counters {
			b.WriteString(x.Name + "=" + strconv.FormatUint(x.Value, 10) + " ")
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}
