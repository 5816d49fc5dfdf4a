package trace

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
)

// Target says what a packet's destination is to kube-proxy, from the
// Services of the inputs: a Service port's cluster IP, external IP, load
// balancer IP or node port; an address of a Service that has no such port
// (with the ports it has); or no Service's address at all. It is "" when
// the inputs hold no Service.
func Target(ports []*model.ServicePort, pkt Packet) string {
	if len(ports) == 0 {
		return ""
	}
	dst, port, proto := pkt.Dst.Addr().Unmap(), int32(pkt.Dst.Port()), strings.ToUpper(pkt.Proto)
	if proto == "" {
		proto = "TCP"
	}
	var same []*model.ServicePort // Services with this address
	for _, sp := range ports {
		if sp.Skip != "" {
			continue
		}
		kinds := []struct {
			what string
			ips  []netip.Addr
		}{{"cluster IP", sp.ClusterIPs}, {"external IP", sp.ExternalIPs}, {"load balancer IP", sp.LoadBalancerVIPs}}
		for _, k := range kinds {
			for _, ip := range k.ips {
				if ip != dst {
					continue
				}
				if sp.Port == port && string(sp.Protocol) == proto {
					return fmt.Sprintf("%s is the %s of %s, port %d/%s", pkt.Dst, k.what, sp, sp.Port, proto)
				}
				same = append(same, sp)
			}
		}
		if sp.NodePort == port && string(sp.Protocol) == proto {
			return fmt.Sprintf("port %d/%s is the node port of %s (on the node's addresses)", port, proto, sp)
		}
	}
	if len(same) == 0 {
		return fmt.Sprintf("%s is no Service's address in the inputs, and port %d/%s no node port: kube-proxy's rules do not handle it", dst, port, proto)
	}
	var list []string
	seen := map[string]bool{}
	for _, sp := range same {
		s := fmt.Sprintf("%d/%s (%s)", sp.Port, sp.Protocol, sp)
		if !seen[s] {
			seen[s] = true
			list = append(list, s)
		}
	}
	sort.Strings(list)
	return fmt.Sprintf("%s belongs to %s, which has no port %d/%s: its ports are %s", dst, same[0].Name.Service(), port, proto, strings.Join(list, ", "))
}
