package proxier

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// attribution names the service port (and endpoint) a rule or chain
// belongs to.
type attribution struct {
	Service, Endpoint, How string
}

// attributor indexes service ports by chain hash, by endpoint chain hash
// and by address.
type attributor struct {
	byHash map[string]string
	bySEP  map[string][2]string // SEP hash -> service, endpoint
	byDest map[string][]string  // "ip proto port" -> services
	byNode map[string][]string  // "proto nodeport" -> services
	byEP   map[string][]string  // "ip:port" -> services
}

func newAttributor(ports []*model.ServicePort) *attributor {
	a := &attributor{
		byHash: map[string]string{}, bySEP: map[string][2]string{},
		byDest: map[string][]string{}, byNode: map[string][]string{}, byEP: map[string][]string{},
	}
	for _, sp := range ports {
		name, proto := sp.String(), sp.ProtoLower()
		a.byHash[kpnames.PortProtoHash(sp.String(), proto)] = name
		for _, e := range sp.Endpoints {
			a.bySEP[kpnames.EndpointChainHash(sp.String(), proto, e.String())] = [2]string{name, e.String()}
			a.byEP[e.String()] = appendOnce(a.byEP[e.String()], name)
		}
		if sp.Skip != "" {
			continue
		}
		for _, ips := range [][]netip.Addr{sp.ClusterIPs, sp.ExternalIPs, sp.LoadBalancerVIPs} {
			for _, ip := range ips {
				k := ip.String() + " " + proto + " " + strconv.Itoa(int(sp.Port))
				a.byDest[k] = appendOnce(a.byDest[k], name)
			}
		}
		if sp.NodePort != 0 {
			k := proto + " " + strconv.Itoa(int(sp.NodePort))
			a.byNode[k] = appendOnce(a.byNode[k], name)
		}
		if sp.HealthCheckNodePort != 0 {
			k := "tcp " + strconv.Itoa(int(sp.HealthCheckNodePort))
			a.byNode[k] = appendOnce(a.byNode[k], name)
		}
	}
	return a
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// rule attributes one rule of chain.
func (a *attributor) rule(chain string, r *iptables.Rule) attribution {
	if s, ep := kpnames.CommentService(r.Comment()); s != "" {
		if ep == "" {
			ep = a.endpointOfChain(chain)
		}
		return attribution{Service: s, Endpoint: ep, How: "comment"}
	}
	if at := a.chain(chain); at.Service != "" {
		return at
	}
	if at := a.chain(r.Target()); at.Service != "" {
		at.How = "target"
		return at
	}
	if d, ok := r.Find("-d"); ok && !d.Neg {
		if p, ok := r.Find("-p"); ok {
			if dp := r.Value("--dport"); dp != "" {
				ip := strings.TrimSuffix(strings.TrimSuffix(d.Value, "/32"), "/128")
				if list := a.byDest[ip+" "+strings.ToLower(p.Value)+" "+dp]; len(list) == 1 {
					return attribution{Service: list[0], How: "address"}
				}
			}
		}
	}
	if chain == kpnames.KubeNodePorts || chain == kpnames.KubeExternalServices {
		if p, ok := r.Find("-p"); ok {
			if list := a.byNode[strings.ToLower(p.Value)+" "+r.Value("--dport")]; len(list) == 1 {
				return attribution{Service: list[0], How: "address"}
			}
		}
	}
	if dest := r.Value("--to-destination"); dest != "" {
		if list := a.byEP[dest]; len(list) == 1 {
			return attribution{Service: list[0], Endpoint: dest, How: "endpoint"}
		}
	}
	return attribution{}
}

// chain attributes a per-service chain by its hash.
func (a *attributor) chain(name string) attribution {
	prefix, hash, ok := kpnames.SplitServiceChain(name)
	if !ok {
		return attribution{}
	}
	if prefix == kpnames.ChainSEP {
		if se, ok := a.bySEP[hash]; ok {
			return attribution{Service: se[0], Endpoint: se[1], How: "chain"}
		}
		return attribution{}
	}
	if s := a.byHash[hash]; s != "" {
		return attribution{Service: s, How: "chain"}
	}
	return attribution{}
}

func (a *attributor) endpointOfChain(chain string) string {
	if at := a.chain(chain); at.Endpoint != "" {
		return at.Endpoint
	}
	return ""
}
