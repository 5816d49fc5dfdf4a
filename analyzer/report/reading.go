package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers"
)

// maxRanges is how many ranges of skipped lines a line of the report
// lists before it counts the rest.
const maxRanges = 8

// readingLines says, for every input read leniently that was not taken as
// written, what was skipped and changed and whether it is partial:
// "dump.txt: 12 lines skipped: shell prompt (line 1), kubectl table (lines
// 2-3), cut short (lines 45-54); 180 lines changed: 180 carriage return; partial: cut short: ...".
// In a report of several nodes, what the files of one path say alike in
// several bundles is one line naming the bundles ("(in bundles a, b, c and
// 97 more)").
func readingLines(r *Report) []string {
	var keys []string
	bundlesOf := map[string][]string{}
	for _, in := range r.Inputs {
		s := readingLine(in)
		if s == "" {
			continue
		}
		// A transcript of commands of several kinds is read as one
		// input per kind: each says its kind and lines.
		name := in.Path
		if in.Lines != "" {
			name += " (" + string(in.Kind) + ", lines " + in.Lines + ")"
		}
		key := name + ": " + s
		if _, ok := bundlesOf[key]; !ok {
			keys = append(keys, key)
		}
		bundlesOf[key] = append(bundlesOf[key], in.Bundle)
	}
	out := make([]string, 0, len(keys))
	for _, key := range keys {
		if bs := bundlesOf[key]; len(r.Nodes) > 1 && bs[0] != "" {
			key += " (in " + listNames(bs, "bundle") + ")"
		}
		out = append(out, key)
	}
	return out
}

func readingLine(in model.Input) string {
	var parts []string
	if len(in.Skipped) > 0 {
		parts = append(parts, plural(parsers.CountLines(in.Skipped), "line")+" skipped: "+skippedByReason(in.Skipped))
	}
	if len(in.Changed) > 0 {
		// Changes are counted by reason: they are spread over the file.
		count := map[string]int{}
		for _, x := range in.Changed {
			count[x.Reason] += x.Lines()
		}
		reasons := make([]string, 0, len(count))
		for r := range count {
			reasons = append(reasons, r)
		}
		sort.Strings(reasons)
		var cs []string
		for _, r := range reasons {
			cs = append(cs, strconv.Itoa(count[r])+" "+r)
		}
		parts = append(parts, plural(parsers.CountLines(in.Changed), "line")+" changed: "+strings.Join(cs, ", "))
	}
	if in.Partial != "" {
		parts = append(parts, "partial: "+in.Partial)
	}
	return strings.Join(parts, "; ")
}

// skippedByReason lists skipped ranges by reason, in the order the reasons
// first occur: "shell prompt (lines 1, 105), kubectl table (lines 2-3)".
// At most maxRanges ranges are listed; the rest are counted.
func skippedByReason(skipped []parsers.LineRange) string {
	var order []string
	spans := map[string][]string{}
	listed := 0
	for _, x := range skipped {
		if listed == maxRanges {
			break
		}
		if _, ok := spans[x.Reason]; !ok {
			order = append(order, x.Reason)
		}
		spans[x.Reason] = append(spans[x.Reason], lineSpan(x))
		listed++
	}
	rs := make([]string, 0, len(order)+1)
	for _, reason := range order {
		word := "lines"
		if l := spans[reason]; len(l) == 1 && !strings.Contains(l[0], "-") {
			word = "line"
		}
		rs = append(rs, reason+" ("+word+" "+strings.Join(spans[reason], ", ")+")")
	}
	if n := len(skipped) - listed; n > 0 {
		rs = append(rs, fmt.Sprintf("and %d more", n))
	}
	return strings.Join(rs, ", ")
}

// lineSpan formats the lines of a range: "12" or "2-3".
func lineSpan(x parsers.LineRange) string {
	if x.From == x.To {
		return strconv.Itoa(x.From)
	}
	return strconv.Itoa(x.From) + "-" + strconv.Itoa(x.To)
}

// unknownReason says why an input of no known kind was not analysed: the
// reason the loader gave (empty, binary, not UTF-8, ...), else "kind not
// recognised".
func unknownReason(r *Report, path string) string {
	for _, in := range r.Inputs {
		if in.Path != path {
			continue
		}
		if in.Unread != "" {
			return in.Unread
		}
		if _, rest, ok := strings.Cut(in.Note, "unknown kind of file ("); ok {
			if why, _, ok := strings.Cut(rest, "): not analysed"); ok {
				return why
			}
		}
	}
	return "kind not recognised"
}
