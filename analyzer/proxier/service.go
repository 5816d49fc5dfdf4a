package proxier

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
)

// A ServiceReport is the comparison of expected and captured data planes
// for one Service or service port of one node.
type ServiceReport struct {
	Node    string `json:"node,omitempty"`
	Service string `json:"service"`
	Mode    string `json:"mode"`
	// Version is the kube-proxy version compared with ("1.37").
	Version string `json:"version"`
	// Ports are the service port names the report covers.
	Ports []string `json:"ports"`
	// ExpectedRules counts the expected rules attributed to the ports (in
	// IPVS mode also the virtual and real servers, set members and
	// kube-ipvs0 addresses).
	ExpectedRules int `json:"expectedRules"`
	// Captured reports whether the inputs hold a data plane of the mode;
	// when not, every expected rule is missing.
	Captured    bool         `json:"captured"`
	Differences []Difference `json:"differences"`
}

// ServiceDiff compares, for a Service ("ns/name") or one of its ports
// ("ns/name:port"), what kube-proxy programs with what the snapshot
// captured. It fails when the inputs have no such Service.
func ServiceDiff(r *resolve.Resolution, name string, opts Options) (*ServiceReport, error) {
	snap := r.Snap
	rep := &ServiceReport{Node: snap.Node.Name, Service: name}
	for _, sp := range snap.Ports {
		if s := sp.String(); s == name || !strings.Contains(name, ":") && sp.Name.Service() == name {
			rep.Ports = appendOnce(rep.Ports, s)
		}
	}
	if len(rep.Ports) == 0 {
		return nil, fmt.Errorf("no Service port %s in the inputs", name)
	}
	exp, err := Expect(r, opts)
	if err != nil {
		return nil, err
	}
	act, err := Captured(r)
	if err != nil {
		return nil, err
	}
	rep.Mode, rep.Version, rep.Captured = exp.Mode, exp.Version.MinorString(), len(act.IPTables) > 0
	if exp.Mode == model.ModeIPVS {
		rep.Captured = act.IPVS != nil
		rep.ExpectedRules += ipvsExpectedItems(exp, name)
	}
	if exp.Mode == model.ModeNFTables {
		rep.Captured = act.NFT != nil
		rep.ExpectedRules += nftExpectedFor(exp, name)
	}
	rep.Differences = ForService(Compare(exp, act), name)
	if rep.Differences == nil {
		rep.Differences = []Difference{}
	}
	attr := newAttributor(snap.Ports)
	for _, d := range exp.IPTables {
		for _, t := range d.Tables {
			for _, c := range t.Chains {
				for _, r := range c.Rules {
					if s := attr.rule(c.Name, r).Service; s == name || !strings.Contains(name, ":") && strings.HasPrefix(s, name+":") {
						rep.ExpectedRules++
					}
				}
			}
		}
	}
	return rep, nil
}

// WriteServiceReports writes reports as text: per report a summary line,
// then the differences grouped by family, table and chain.
func WriteServiceReports(w io.Writer, reps []*ServiceReport) error {
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
		case len(r.Differences) == 0:
			b.WriteString("; the captured data plane matches\n")
			continue
		default:
			fmt.Fprintf(&b, "; %d differences\n", len(r.Differences))
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
			where := d.Evidence.File
			if d.Evidence.Line > 0 {
				where = fmt.Sprintf("%s:%d", where, d.Evidence.Line)
			}
			extra := []string{where}
			if d.Endpoint != "" {
				extra = append(extra, "endpoint "+d.Endpoint)
			}
			if d.Note != "" {
				extra = append(extra, d.Note)
			}
			fmt.Fprintf(&b, "    %-13s (%s)\n", "", strings.Join(extra, "; "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteServiceReportsJSON writes reports as a JSON array.
func WriteServiceReportsJSON(w io.Writer, reps []*ServiceReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(reps)
}
