package cmd

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/proxyscan/proxyscan/analyzer/checks"
)

// suggest returns the candidates closest to a mistyped name (within an
// edit distance that grows with its length), closest first.
func suggest(name string, candidates []string) []string {
	limit := max(2, len(name)/4)
	best := limit + 1
	var out []string
	for _, c := range candidates {
		d := editDistance(strings.ToLower(name), strings.ToLower(c))
		if strings.HasPrefix(c, name) && len(name) >= 3 {
			d = min(d, 1)
		}
		switch {
		case d < best:
			best, out = d, []string{c}
		case d == best:
			out = append(out, c)
		}
	}
	if best > limit {
		return nil
	}
	return out
}

// didYouMean formats suggestions as " (did you mean X?)", or "".
func didYouMean(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return " (did you mean " + strings.Join(s, " or ") + "?)"
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// flagError turns cobra's flag errors into usage errors, with the flags
// of c closest to an unknown one.
func flagError(c *cobra.Command, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		var names []string
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				names = append(names, f.Name)
			}
		})
		if s := suggest(name, names); len(s) > 0 {
			for i := range s {
				s[i] = "--" + s[i]
			}
			return flagErrorf("%s%s", msg, didYouMean(s))
		}
	}
	return &FlagError{Err: err}
}

// unknownCheck is the usage error of a check ID no check has, with the
// closest IDs.
func unknownCheck(err error) error {
	var u *checks.UnknownCheckError
	if !errors.As(err, &u) {
		return &FlagError{Err: err}
	}
	return flagErrorf("unknown check %q%s; proxyscan checks lists them", u.ID, didYouMean(suggest(u.ID, checks.IDs(checks.All))))
}
