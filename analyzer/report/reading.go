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
// "dump.txt: 12 lines skipped: 1 shell prompt, 2-3 kubectl table, 45 cut
// short; 180 lines changed: 180 carriage return; partial: cut short: ...".
func readingLines(r *Report) []string {
	var out []string
	for _, in := range r.Inputs {
		if s := readingLine(in); s != "" {
			out = append(out, in.Path+": "+s)
		}
	}
	return out
}

func readingLine(in model.Input) string {
	var parts []string
	if len(in.Skipped) > 0 {
		var rs []string
		for i, x := range in.Skipped {
			if i == maxRanges {
				rs = append(rs, fmt.Sprintf("and %d more", len(in.Skipped)-maxRanges))
				break
			}
			rs = append(rs, lineSpan(x)+" "+x.Reason)
		}
		parts = append(parts, plural(parsers.CountLines(in.Skipped), "line")+" skipped: "+strings.Join(rs, ", "))
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
