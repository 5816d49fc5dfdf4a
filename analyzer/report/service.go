package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/proxier"
)

// RenderServiceTable writes analyze --service's comparisons as text: per
// node a summary line, then the differences grouped by family, table and
// chain, each with where it is and what it concerns.
func RenderServiceTable(w io.Writer, reps []*proxier.ServiceReport, _ Options) error {
	var b strings.Builder
	for i, r := range reps {
		if i > 0 {
			b.WriteByte('\n')
		}
		node := ""
		if r.Node != "" {
			node = " on node " + r.Node
		}
		fmt.Fprintf(&b, "%s%s: kube-proxy %s %s mode, %d expected rules",
			r.Service, node, r.Version, r.Mode, r.ExpectedRules)
		switch {
		case !r.Captured:
			fmt.Fprintf(&b, "; no %s data plane in the inputs\n", r.Mode)
		case len(r.Differences) == 0 && len(r.NotChecked) > 0:
			b.WriteString("; no difference in what the inputs show, which is not all of it\n")
		case len(r.Differences) == 0:
			b.WriteString("; the captured data plane matches\n")
			continue
		default:
			fmt.Fprintf(&b, "; %d differences\n", len(r.Differences))
		}
		for _, n := range r.NotChecked {
			fmt.Fprintf(&b, "  not checked: %s\n", n)
		}
		last := ""
		for _, d := range r.Differences {
			if key := string(d.Family) + " " + d.Table + " " + d.Chain; key != last {
				fmt.Fprintf(&b, "  %s %s %s\n", d.Family, d.Table, d.Chain)
				last = key
			}
			text := d.Rule
			if text == "" {
				text = d.Evidence.Text
			}
			fmt.Fprintf(&b, "    %-13s %s\n", d.Kind, text)
			extra := []string{evidenceLoc(d.Evidence)}
			if d.Endpoint != "" {
				extra = append(extra, "endpoint "+d.Endpoint)
			}
			if d.Note != "" {
				extra = append(extra, d.Note)
			}
			fmt.Fprintf(&b, "    %-13s (%s)\n", "", strings.Join(extra, "; "))
		}
	}
	// Nothing of it is styled: escaping the whole text escapes every
	// input's text in it.
	_, err := io.WriteString(w, Escape(b.String()))
	return err
}
