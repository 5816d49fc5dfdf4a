// Command mkinputs writes kpgen's hand-designed inputs: inputs/shapes (a
// dual-stack node with one Service of every shape kube-proxy handles, one
// configuration per proxy mode) and the conformance scenarios under
// scenarios/ (all but large-cluster, which cmd/bigcluster writes).
//
// Usage: mkinputs -root DIR (DIR is testdata/upstream).
//
// The objects are written with the API types, as kubectl get -o yaml prints
// them; see internal/kobj. The tables below are the source of the inputs:
// change them here and rerun regen.sh rather than editing the YAML.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	kubeproxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"

	"github.com/proxyscan/proxyscan/testdata/upstream/internal/kobj"
)

const (
	thisNode = "east-w2"
	w1, w2   = "east-w1", "east-w2"
	w3       = "east-w3"
	zoneA    = "east-1a"
	zoneB    = "east-1b"
	zoneC    = "east-1c"
	apiIP    = "172.20.8.5"
)

var zoneOf = map[string]string{w1: zoneA, w2: zoneB, w3: zoneC}

// ep is a ready Pod endpoint on a node.
func ep(ip, node string) kobj.Endpoint {
	return kobj.Endpoint{IP: ip, Node: node, Zone: zoneOf[node]}
}

// term is a terminating Pod endpoint; serving says whether it still serves.
func term(ip, node string, serving bool) kobj.Endpoint {
	e := ep(ip, node)
	e.Terminating, e.NotReady, e.NotServing = true, true, !serving
	return e
}

func tcp(name string, port, target int32) kobj.Port {
	return kobj.Port{Name: name, Port: port, Target: target, Proto: v1.ProtocolTCP}
}

func np(p kobj.Port, nodePort int32) kobj.Port { p.NodePort = nodePort; return p }

var base = time.Date(2026, 4, 14, 7, 2, 0, 0, time.UTC)

func kubernetesSvc(ips ...string) kobj.Service {
	return kobj.Service{
		Namespace: "default", Name: "kubernetes", ClusterIPs: ips, Selectorless: true,
		Ports:     []kobj.Port{tcp("https", 443, 6443)},
		Endpoints: []kobj.Endpoint{{IP: apiIP}},
		Created:   base,
	}
}

func node(dual bool) kobj.NodeSpec {
	n := kobj.NodeSpec{
		Name: thisNode, InternalIPs: []string{"172.20.8.12"}, PodCIDRs: []string{"10.88.2.0/24"},
		Zone: zoneB, Created: base.Add(-3 * time.Minute), Heartbeat: base.Add(2*time.Hour + 17*time.Minute),
		BootID: kobj.UID("boot/" + thisNode), ResourceVer: "183362",
	}
	if dual {
		n.InternalIPs = append(n.InternalIPs, "2001:db8:20::12")
		n.PodCIDRs = append(n.PodCIDRs, "fd88:0:0:2::/64")
	}
	return n
}

func shapes() *kobj.Input {
	svcs := []kobj.Service{
		kubernetesSvc("10.112.0.1"),
		{Namespace: "kube-system", Name: "kube-dns", ClusterIPs: []string{"10.112.0.10"},
			Ports:     []kobj.Port{{Name: "dns", Port: 53, Proto: v1.ProtocolUDP}, tcp("dns-tcp", 53, 53), tcp("metrics", 9153, 9153)},
			Endpoints: []kobj.Endpoint{ep("10.88.1.4", w1), ep("10.88.2.3", w2)}},
		{Namespace: "shop", Name: "storefront", Type: v1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.112.31.40"},
			Ports:        []kobj.Port{np(tcp("http", 80, 8080), 30180), np(tcp("https", 443, 8443), 30443)},
			SourceRanges: []string{"192.0.2.0/24", "172.20.0.0/16"},
			Ingress:      []kobj.Ingress{{IP: "203.0.113.10"}},
			Endpoints:    []kobj.Endpoint{ep("10.88.1.10", w1), ep("10.88.2.10", w2), ep("10.88.3.10", w3)}},
		{Namespace: "shop", Name: "checkout", Type: v1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.112.44.7"},
			Ports: []kobj.Port{np(tcp("http", 80, 8080), 31080)}, ETPLocal: true, HealthCheckPort: 32080,
			Ingress:   []kobj.Ingress{{IP: "203.0.113.11"}},
			Endpoints: []kobj.Endpoint{ep("10.88.2.14", w2), ep("10.88.3.14", w3)}},
		{Namespace: "shop", Name: "payments", Type: v1.ServiceTypeNodePort, ClusterIPs: []string{"10.112.52.9"},
			Ports: []kobj.Port{np(tcp("grpc", 9443, 9443), 30943)}, ETPLocal: true,
			Endpoints: []kobj.Endpoint{ep("10.88.1.20", w1), ep("10.88.3.20", w3)}},
		{Namespace: "shop", Name: "cart", ClusterIPs: []string{"10.112.60.61"}, AffinityTimeout: 1800,
			Ports:     []kobj.Port{tcp("http", 80, 3000)},
			Endpoints: []kobj.Endpoint{ep("10.88.1.31", w1), ep("10.88.2.31", w2), ep("10.88.3.31", w3)}},
		{Namespace: "shop", Name: "catalog", ClusterIPs: []string{"10.112.70.2"}, ITPLocal: true,
			Ports:     []kobj.Port{tcp("http", 80, 8080)},
			Endpoints: []kobj.Endpoint{ep("10.88.1.40", w1), ep("10.88.2.40", w2)}},
		{Namespace: "shop", Name: "recommender", ClusterIPs: []string{"10.112.70.9"}, ITPLocal: true,
			Ports:     []kobj.Port{tcp("http", 80, 8080)},
			Endpoints: []kobj.Endpoint{ep("10.88.3.42", w3)}},
		{Namespace: "shop", Name: "edge-proxy", Type: v1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.112.31.77"},
			Ports:     []kobj.Port{np(tcp("https", 443, 8443), 31443)},
			Ingress:   []kobj.Ingress{{IP: "203.0.113.12", Proxy: true}},
			Endpoints: []kobj.Endpoint{ep("10.88.1.12", w1), ep("10.88.3.12", w3)}},
		{Namespace: "media", Name: "stream", Type: v1.ServiceTypeNodePort, ClusterIPs: []string{"10.112.88.5"},
			Ports: []kobj.Port{np(tcp("rtsp", 554, 8554), 30554),
				{Name: "rtp", Port: 5004, Proto: v1.ProtocolUDP, NodePort: 30504}},
			Endpoints: []kobj.Endpoint{ep("10.88.2.50", w2), ep("10.88.3.50", w3)}},
		{Namespace: "media", Name: "signal", ClusterIPs: []string{"10.112.88.30"},
			Ports:     []kobj.Port{{Name: "diameter", Port: 3868, Proto: v1.ProtocolSCTP}},
			Endpoints: []kobj.Endpoint{ep("10.88.1.52", w1), ep("10.88.2.52", w2)}},
		{Namespace: "media", Name: "web", ClusterIPs: []string{"10.112.90.4", "fd00:112::5a04"},
			FamilyPolicy: v1.IPFamilyPolicyPreferDualStack, Ports: []kobj.Port{tcp("http", 80, 8080)},
			Endpoints: []kobj.Endpoint{ep("10.88.1.60", w1), ep("fd88:0:0:1::60", w1), ep("10.88.2.60", w2), ep("fd88:0:0:2::60", w2)}},
		{Namespace: "media", Name: "web6", ClusterIPs: []string{"fd00:112::5a10"},
			Ports:     []kobj.Port{tcp("http", 80, 8080)},
			Endpoints: []kobj.Endpoint{ep("fd88:0:0:2::61", w2), ep("fd88:0:0:3::61", w3)}},
		{Namespace: "data", Name: "postgres", ClusterIPs: []string{v1.ClusterIPNone},
			Ports:     []kobj.Port{tcp("postgres", 5432, 5432)},
			Endpoints: []kobj.Endpoint{ep("10.88.2.70", w2), ep("10.88.3.70", w3)}},
		{Namespace: "data", Name: "warehouse", Type: v1.ServiceTypeExternalName, ExternalName: "warehouse.data.example.com",
			Ports: []kobj.Port{tcp("redshift", 5439, 5439)}},
		{Namespace: "data", Name: "cache", ClusterIPs: []string{"10.112.100.20"},
			Ports: []kobj.Port{tcp("redis", 6379, 6379)}},
		{Namespace: "data", Name: "legacy-db", ClusterIPs: []string{"10.112.100.33"}, Selectorless: true,
			Ports:     []kobj.Port{tcp("postgres", 5432, 5432)},
			Endpoints: []kobj.Endpoint{{IP: "172.20.9.40"}}},
		{Namespace: "ops", Name: "drain", ClusterIPs: []string{"10.112.120.8"},
			Ports:     []kobj.Port{tcp("http", 80, 8080)},
			Endpoints: []kobj.Endpoint{term("10.88.1.80", w1, true), term("10.88.2.80", w2, true)}},
		{Namespace: "ops", Name: "rollout", ClusterIPs: []string{"10.112.120.15"},
			Ports: []kobj.Port{tcp("http", 80, 8080)},
			Endpoints: []kobj.Endpoint{ep("10.88.1.85", w1), ep("10.88.3.85", w3),
				term("10.88.2.85", w2, true), term("10.88.3.86", w3, false)}},
		{Namespace: "ops", Name: "status", ClusterIPs: []string{"10.112.120.40"}, ExternalIPs: []string{"172.20.8.200"},
			Ports:     []kobj.Port{tcp("http", 80, 8000)},
			Endpoints: []kobj.Endpoint{ep("10.88.1.90", w1), ep("10.88.2.90", w2)}},
	}
	return &kobj.Input{
		Node: node(true), APIServer: apiIP + ":6443",
		ServiceCIDRs: []string{"10.112.0.0/16", "fd00:112::/112"},
		Services:     svcs, Builder: kobj.NewBuilder(base, 4100),
		Config: func(c *kubeproxyv1alpha1.KubeProxyConfiguration) {
			c.ClusterCIDR = "10.88.0.0/16,fd88::/56"
			c.DetectLocalMode = "ClusterCIDR"
		},
		Modes:     []string{"iptables", "ipvs", "nftables"},
		ConfigMap: true,
	}
}

// scenario is a single-stack IPv4 input (unless dual) on east-w2 with the
// kubernetes Service plus svcs, and the default configuration adjusted by
// cfg. Its configuration leaves mode empty: kpgen -mode picks it.
func scenario(dual bool, cfg func(c *kubeproxyv1alpha1.KubeProxyConfiguration), svcs ...kobj.Service) *kobj.Input {
	kube := kubernetesSvc("10.112.0.1")
	cidrs := []string{"10.112.0.0/16"}
	cluster := "10.88.0.0/16"
	if dual {
		cidrs = append(cidrs, "fd00:112::/112")
		cluster += ",fd88::/56"
	}
	return &kobj.Input{
		Node: node(dual), APIServer: apiIP + ":6443", ServiceCIDRs: cidrs,
		Services: append([]kobj.Service{kube}, svcs...), Builder: kobj.NewBuilder(base, 9000),
		Config: func(c *kubeproxyv1alpha1.KubeProxyConfiguration) {
			c.ClusterCIDR = cluster
			c.DetectLocalMode = "ClusterCIDR"
			if cfg != nil {
				cfg(c)
			}
		},
	}
}

// svc is a ClusterIP Service "app/NAME" on port 80 -> 8080 with endpoints.
func svc(name, ip string, eps ...kobj.Endpoint) kobj.Service {
	return kobj.Service{Namespace: "app", Name: name, ClusterIPs: []string{ip},
		Ports: []kobj.Port{tcp("http", 80, 8080)}, Endpoints: eps}
}

func nodePort(s kobj.Service, port int32) kobj.Service {
	s.Type = v1.ServiceTypeNodePort
	s.Ports[0].NodePort = port
	return s
}

func loadBalancer(s kobj.Service, port int32, ips ...string) kobj.Service {
	s.Type = v1.ServiceTypeLoadBalancer
	s.Ports[0].NodePort = port
	for _, ip := range ips {
		s.Ingress = append(s.Ingress, kobj.Ingress{IP: ip})
	}
	return s
}

func etpLocal(s kobj.Service, hcnp int32) kobj.Service {
	s.ETPLocal = true
	s.HealthCheckPort = hcnp
	return s
}

// standard is a small mix used by the configuration scenarios.
func standard() []kobj.Service {
	return []kobj.Service{
		svc("web", "10.112.10.10", ep("10.88.1.10", w1), ep("10.88.2.10", w2)),
		nodePort(etpLocal(svc("ingress", "10.112.10.20", ep("10.88.2.20", w2), ep("10.88.3.20", w3)), 0), 30080),
		etpLocal(loadBalancer(svc("public", "10.112.10.30", ep("10.88.1.30", w1), ep("10.88.2.30", w2)), 30090, "203.0.113.30"), 32090),
		svc("empty", "10.112.10.40"),
	}
}

func scenarios() map[string]*kobj.Input {
	s := map[string]*kobj.Input{}

	s["clusterip-basic"] = scenario(false, nil,
		svc("web", "10.112.10.10", ep("10.88.1.10", w1), ep("10.88.2.10", w2), ep("10.88.3.10", w3)),
		kobj.Service{Namespace: "app", Name: "api", ClusterIPs: []string{"10.112.10.11"},
			Ports: []kobj.Port{tcp("", 8080, 8080)}, Endpoints: []kobj.Endpoint{ep("10.88.3.11", w3)}},
		kobj.Service{Namespace: "app", Name: "metrics", ClusterIPs: []string{"10.112.10.12"},
			Ports:     []kobj.Port{tcp("http", 80, 9090), tcp("grpc", 9091, 9091)},
			Endpoints: []kobj.Endpoint{ep("10.88.2.12", w2), ep("10.88.1.12", w1)}},
	)

	s["nodeport-etp-local"] = scenario(false, nil,
		nodePort(etpLocal(svc("np-local", "10.112.20.10", ep("10.88.2.10", w2), ep("10.88.3.10", w3)), 0), 30010),
		nodePort(etpLocal(svc("np-remote", "10.112.20.11", ep("10.88.1.11", w1), ep("10.88.3.11", w3)), 0), 30011),
		etpLocal(loadBalancer(svc("lb-local", "10.112.20.12", ep("10.88.2.12", w2), ep("10.88.1.12", w1)), 30012, "203.0.113.12"), 32012),
		etpLocal(loadBalancer(svc("lb-remote", "10.112.20.13", ep("10.88.1.13", w1)), 30013, "203.0.113.13"), 32013),
		nodePort(svc("np-cluster", "10.112.20.14", ep("10.88.1.14", w1), ep("10.88.2.14", w2)), 30014),
	)

	withRanges := func(sv kobj.Service, ranges ...string) kobj.Service { sv.SourceRanges = ranges; return sv }
	proxyMode := loadBalancer(svc("lb-proxy-mode", "10.112.30.14", ep("10.88.1.14", w1)), 30034)
	proxyMode.Ingress = []kobj.Ingress{{IP: "203.0.113.44", Proxy: true}}
	proxyMode.SourceRanges = []string{"192.0.2.0/24"}
	s["loadbalancer-sourceranges"] = scenario(false, nil,
		withRanges(loadBalancer(svc("lb-allow-node", "10.112.30.10", ep("10.88.1.10", w1), ep("10.88.2.10", w2)), 30030, "203.0.113.40"), "172.20.8.0/24", "192.0.2.0/24"),
		withRanges(loadBalancer(svc("lb-ranges", "10.112.30.11", ep("10.88.1.11", w1), ep("10.88.3.11", w3)), 30031, "203.0.113.41"), "192.0.2.0/25", " 198.18.0.0/15 "),
		withRanges(etpLocal(loadBalancer(svc("lb-ranges-local", "10.112.30.12", ep("10.88.2.12", w2)), 30032, "203.0.113.42"), 32032), "192.0.2.128/25"),
		loadBalancer(svc("lb-plain", "10.112.30.13", ep("10.88.3.13", w3)), 30033, "203.0.113.43"),
		proxyMode,
		withRanges(loadBalancer(svc("lb-two-ips", "10.112.30.15", ep("10.88.1.15", w1)), 30035, "203.0.113.45", "203.0.113.46"), "192.0.2.0/24"),
	)

	itp := func(sv kobj.Service) kobj.Service { sv.ITPLocal = true; return sv }
	s["itp-local"] = scenario(false, nil,
		itp(svc("itp-local", "10.112.40.10", ep("10.88.2.10", w2), ep("10.88.1.10", w1))),
		itp(svc("itp-remote", "10.112.40.11", ep("10.88.1.11", w1), ep("10.88.3.11", w3))),
		nodePort(itp(svc("itp-nodeport", "10.112.40.12", ep("10.88.1.12", w1))), 30040),
		nodePort(etpLocal(itp(svc("itp-etp-local", "10.112.40.13", ep("10.88.2.13", w2), ep("10.88.3.13", w3))), 0), 30041),
	)

	aff := func(sv kobj.Service, t int32) kobj.Service { sv.AffinityTimeout = t; return sv }
	s["session-affinity"] = scenario(false, nil,
		aff(svc("sticky-default", "10.112.50.10", ep("10.88.1.10", w1), ep("10.88.2.10", w2)), 10800),
		aff(svc("sticky-short", "10.112.50.11", ep("10.88.1.11", w1), ep("10.88.2.11", w2), ep("10.88.3.11", w3)), 60),
		aff(nodePort(svc("sticky-nodeport", "10.112.50.12", ep("10.88.2.12", w2)), 30050), 600),
		aff(etpLocal(loadBalancer(svc("sticky-lb-local", "10.112.50.13", ep("10.88.2.13", w2), ep("10.88.3.13", w3)), 30051, "203.0.113.50"), 32051), 3600),
	)

	notReady := ep("10.88.2.13", w2)
	notReady.NotReady, notReady.NotServing = true, true
	s["terminating-endpoints"] = scenario(false, nil,
		svc("ready-and-terminating", "10.112.60.10", ep("10.88.1.10", w1), term("10.88.2.10", w2, true), ep("10.88.3.10", w3)),
		svc("only-terminating", "10.112.60.11", term("10.88.1.11", w1, true), term("10.88.2.11", w2, true)),
		svc("only-nonserving", "10.112.60.12", term("10.88.1.12", w1, false), term("10.88.2.12", w2, false)),
		svc("not-ready", "10.112.60.13", notReady),
		nodePort(etpLocal(svc("etp-local-terminating", "10.112.60.14", term("10.88.2.14", w2, true), ep("10.88.3.14", w3)), 0), 30060),
	)

	s["dualstack"] = scenario(true, nil,
		svc("v4-only", "10.112.70.10", ep("10.88.1.10", w1), ep("10.88.2.10", w2)),
		kobj.Service{Namespace: "app", Name: "v6-only", ClusterIPs: []string{"fd00:112::46:11"},
			Ports: []kobj.Port{tcp("http", 80, 8080)}, Endpoints: []kobj.Endpoint{ep("fd88:0:0:1::11", w1), ep("fd88:0:0:2::11", w2)}},
		kobj.Service{Namespace: "app", Name: "require-dual", ClusterIPs: []string{"10.112.70.12", "fd00:112::46:12"},
			FamilyPolicy: v1.IPFamilyPolicyRequireDualStack, Ports: []kobj.Port{tcp("http", 80, 8080)},
			Endpoints: []kobj.Endpoint{ep("10.88.2.12", w2), ep("fd88:0:0:2::12", w2), ep("10.88.3.12", w3), ep("fd88:0:0:3::12", w3)}},
		kobj.Service{Namespace: "app", Name: "v6-first", ClusterIPs: []string{"fd00:112::46:13", "10.112.70.13"},
			FamilyPolicy: v1.IPFamilyPolicyPreferDualStack, Type: v1.ServiceTypeNodePort,
			Ports:     []kobj.Port{np(tcp("http", 80, 8080), 30070)},
			Endpoints: []kobj.Endpoint{ep("fd88:0:0:1::13", w1), ep("10.88.1.13", w1)}},
		kobj.Service{Namespace: "app", Name: "dual-lb", ClusterIPs: []string{"10.112.70.14", "fd00:112::46:14"},
			FamilyPolicy: v1.IPFamilyPolicyRequireDualStack, Type: v1.ServiceTypeLoadBalancer, ETPLocal: true, HealthCheckPort: 32071,
			Ports:        []kobj.Port{np(tcp("https", 443, 8443), 30071)},
			Ingress:      []kobj.Ingress{{IP: "203.0.113.70"}, {IP: "2001:db8:ff::70"}},
			SourceRanges: []string{"192.0.2.0/24", "2001:db8:aa::/48"},
			ExternalIPs:  []string{"172.20.8.201", "2001:db8:20::201"},
			Endpoints:    []kobj.Endpoint{ep("10.88.2.14", w2), ep("fd88:0:0:2::14", w2), ep("10.88.3.14", w3), ep("fd88:0:0:3::14", w3)}},
		kobj.Service{Namespace: "app", Name: "dual-empty", ClusterIPs: []string{"10.112.70.15", "fd00:112::46:15"},
			FamilyPolicy: v1.IPFamilyPolicyRequireDualStack, Ports: []kobj.Port{tcp("http", 80, 8080)}},
	)

	noSlice := svc("no-slice", "10.112.80.13")
	noSlice.NoSlice = true
	withExt := func(sv kobj.Service, ips ...string) kobj.Service { sv.ExternalIPs = ips; return sv }
	s["no-endpoints"] = scenario(false, nil,
		svc("empty", "10.112.80.10"),
		nodePort(svc("empty-nodeport", "10.112.80.11"), 30080),
		withExt(loadBalancer(svc("empty-lb", "10.112.80.12"), 30081, "203.0.113.80"), "172.20.8.210"),
		noSlice,
		etpLocal(loadBalancer(svc("empty-lb-local", "10.112.80.14"), 30082, "203.0.113.81"), 32082),
	)

	s["externalips"] = scenario(false, nil,
		withExt(svc("ext-two", "10.112.90.10", ep("10.88.1.10", w1), ep("10.88.2.10", w2)), "172.20.8.220", "198.18.5.20"),
		withExt(svc("ext-node-ip", "10.112.90.11", ep("10.88.3.11", w3)), "172.20.8.12"),
		withExt(nodePort(etpLocal(svc("ext-local", "10.112.90.12", ep("10.88.2.12", w2), ep("10.88.1.12", w1)), 0), 30090), "172.20.8.222"),
		withExt(nodePort(etpLocal(svc("ext-local-remote", "10.112.90.13", ep("10.88.3.13", w3)), 0), 30091), "172.20.8.223"),
	)

	s["masquerade-all"] = scenario(false, func(c *kubeproxyv1alpha1.KubeProxyConfiguration) {
		c.IPTables.MasqueradeAll = true
		c.NFTables.MasqueradeAll = true
	}, standard()...)

	s["nodeport-addresses"] = scenario(false, func(c *kubeproxyv1alpha1.KubeProxyConfiguration) {
		c.NodePortAddresses = []string{"172.20.8.0/24"}
	}, standard()...)

	s["detect-local-nodecidr"] = scenario(false, func(c *kubeproxyv1alpha1.KubeProxyConfiguration) {
		c.DetectLocalMode = "NodeCIDR"
	}, standard()...)

	s["detect-local-bridge"] = scenario(false, func(c *kubeproxyv1alpha1.KubeProxyConfiguration) {
		c.DetectLocalMode = "BridgeInterface"
		c.DetectLocal.BridgeInterface = "cbr0"
	}, standard()...)

	s["detect-local-ifprefix"] = scenario(false, func(c *kubeproxyv1alpha1.KubeProxyConfiguration) {
		c.DetectLocalMode = "InterfaceNamePrefix"
		c.DetectLocal.InterfaceNamePrefix = "veth"
	}, standard()...)

	return s
}

func main() {
	root := flag.String("root", ".", "testdata/upstream directory")
	flag.Parse()
	if err := run(*root); err != nil {
		fmt.Fprintln(os.Stderr, "mkinputs:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	dir := filepath.Join(root, "inputs", "shapes")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := shapes().Write(dir); err != nil {
		return err
	}
	for name, in := range scenarios() {
		dir := filepath.Join(root, "scenarios", name)
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if err := in.Write(dir); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}
