package proxier

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// servicePrefixes are the prefixes of kube-proxy's per-service chains
// (isServiceChainName, plus KUBE-XLB of 1.20-1.23).
var servicePrefixes = []string{kpnames.ChainSVC, kpnames.ChainSVL, kpnames.ChainEXT, kpnames.ChainFW, kpnames.ChainXLB, kpnames.ChainSEP}

// isServiceChain reports whether a chain name is a per-service chain.
func isServiceChain(name string) bool {
	_, _, ok := splitServiceChain(name)
	return ok
}

// splitServiceChain splits "KUBE-SVC-<hash>" into prefix and hash.
func splitServiceChain(name string) (prefix, hash string, ok bool) {
	for _, p := range servicePrefixes {
		if h, found := strings.CutPrefix(name, p); found && len(h) == 16 {
			return p, h, true
		}
	}
	return "", "", false
}

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

// commentPatterns are the kube-proxy comments that name a service port
// somewhere other than at their start.
var commentPatterns = []struct{ prefix, suffix string }{
	{"masquerade traffic for ", " external destinations"},
	{"pod traffic for ", " external destinations"},
	{"masquerade LOCAL traffic for ", " external destinations"},
	{"route LOCAL traffic for ", " external destinations"},
	{"other traffic to ", " will be dropped by KUBE-PROXY-FIREWALL"},
	{"masquerade LOCAL traffic for ", " LB IP"},
	{"route LOCAL traffic for ", " LB IP to service chain"},
}

// commentService returns the service port name a kube-proxy comment
// names ("ns/svc:port cluster IP", "ns/svc:port -> 10.0.0.1:80", "pod
// traffic for ns/svc:port external destinations", "Balancing rule 0 for
// ns/svc:port", ...) and the endpoint it names, if any.
func commentService(c string) (name, endpoint string) {
	if c == "" {
		return "", ""
	}
	for _, p := range commentPatterns {
		if rest, ok := strings.CutPrefix(c, p.prefix); ok {
			if n, ok := strings.CutSuffix(rest, p.suffix); ok {
				c = n
				break
			}
		}
	}
	if rest, ok := strings.CutPrefix(c, "Balancing rule "); ok {
		if _, n, ok := strings.Cut(rest, " for "); ok {
			c = n
		}
	}
	first, rest, _ := strings.Cut(c, " ")
	if _, ok := model.ParseServicePortName(first); !ok {
		return "", ""
	}
	if ep, ok := strings.CutPrefix(rest, "-> "); ok {
		endpoint = ep
	}
	return first, endpoint
}

// rule attributes one rule of chain.
func (a *attributor) rule(chain string, r *iptables.Rule) attribution {
	if s, ep := commentService(r.Comment()); s != "" {
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
	if chain == kubeNodePortsChain || chain == kubeExternalServicesChain {
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
	prefix, hash, ok := splitServiceChain(name)
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
