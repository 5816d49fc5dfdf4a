package proxier

import (
	"fmt"
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
	// NotChecked says, one line per partial input, what was left out of
	// Differences: what the comparison found missing that may only lie
	// outside what a partial input (a dump cut short, a listing filtered)
	// shows.
	NotChecked []string `json:"notChecked,omitempty"`
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
