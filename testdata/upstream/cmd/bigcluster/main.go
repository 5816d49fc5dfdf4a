// Command bigcluster writes a large kpgen input directory: N Services with
// M endpoints each, spread over the nodes of a cluster, as kubectl prints
// them (see internal/kobj), plus the Node kube-proxy runs on, a
// KubeProxyConfiguration and service-cidrs.txt.
//
// Usage:
//
//	bigcluster -services N -endpoints-per M -out DIR [-nodes K] [-seed S] [-mode MODE]
//
// The mix of Services is drawn from -seed: about 76% ClusterIP, 12%
// NodePort, 6% LoadBalancer, 4% headless and 2% ExternalName; one in five
// has a second port, one in eight uses externalTrafficPolicy Local, one in
// ten ClientIP affinity, and about 2% of the endpoints are terminating. The
// kubernetes Service comes on top. The number of endpoints kube-proxy
// counts for large-cluster mode (endpoints summed over service ports, headless
// and ExternalName Services excluded) is printed on stderr.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	kubeproxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"

	"github.com/proxyscan/proxyscan/testdata/upstream/internal/kobj"
)

var (
	namespaces = []string{"checkout", "catalog", "identity", "billing", "search", "media", "ml", "ops"}
	words      = []string{"api", "worker", "gateway", "index", "store", "queue", "render", "auth", "feed", "cache", "broker", "ledger", "router", "vault", "scout"}
)

func main() {
	var (
		nSvc   = flag.Int("services", 40, "number of Services (besides kubernetes)")
		perSvc = flag.Int("endpoints-per", 25, "endpoints per Service")
		nNodes = flag.Int("nodes", 20, "number of nodes the endpoints are spread over")
		seed   = flag.Uint64("seed", 1, "seed of the Service mix")
		mode   = flag.String("mode", "", "mode field of the KubeProxyConfiguration")
		out    = flag.String("out", "", "output directory")
	)
	flag.Parse()
	if *out == "" || *nSvc < 0 || *perSvc < 0 || *nNodes < 1 || *nNodes > 1024 {
		fmt.Fprintln(os.Stderr, "usage: bigcluster -services N -endpoints-per M -out DIR [-nodes K (1-1024)] [-seed S] [-mode MODE]")
		os.Exit(2)
	}
	in, count, err := build(*nSvc, *perSvc, *nNodes, *seed, *mode)
	if err == nil {
		err = in.Write(*out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bigcluster:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "bigcluster: %d Services, %d endpoints counted for large-cluster mode (threshold 1000)\n", *nSvc+1, count)
}

func nodeName(i int) string { return fmt.Sprintf("pool-a-%02d", i+1) }

// podCIDR of node i: a /20 of 10.64.0.0/10.
func podCIDR(i int) string { return fmt.Sprintf("10.%d.%d.0/20", 64+i/16, (i%16)*16) }

func build(nSvc, perSvc, nNodes int, seed uint64, mode string) (*kobj.Input, int, error) {
	r := rand.New(rand.NewPCG(seed, 0x6b70))
	base := time.Date(2026, 5, 6, 11, 40, 0, 0, time.UTC)
	local := 0
	podsOnNode := make([]int, nNodes)
	const maxPods = 4094
	nextNodePort := int32(30000)
	nextLB := 0
	count := 1 // the kubernetes Service's endpoint

	svcs := []kobj.Service{{
		Namespace: "default", Name: "kubernetes", ClusterIPs: []string{"10.96.0.1"}, Selectorless: true,
		Ports:     []kobj.Port{{Name: "https", Port: 443, Target: 6443, Proto: v1.ProtocolTCP}},
		Endpoints: []kobj.Endpoint{{IP: "10.20.0.10"}}, Created: base,
	}}
	for i := 0; i < nSvc; i++ {
		s := kobj.Service{
			Namespace:  namespaces[r.IntN(len(namespaces))],
			Name:       fmt.Sprintf("%s-%s-%d", words[r.IntN(len(words))], words[r.IntN(len(words))], i),
			ClusterIPs: []string{kobj.HostIP("10.96.0.0/12", uint64(16+i))},
			Ports:      []kobj.Port{{Name: "http", Port: 80, Target: 8000 + int32(r.IntN(100)), Proto: v1.ProtocolTCP}},
			Created:    base.Add(time.Duration(i) * 3 * time.Second),
		}
		if r.IntN(5) == 0 {
			s.Ports = append(s.Ports, kobj.Port{Name: "grpc", Port: 9090, Target: 9090, Proto: v1.ProtocolTCP})
		}
		counted := true
		switch p := r.IntN(100); {
		case p < 2:
			s.Type = v1.ServiceTypeExternalName
			s.ExternalName = s.Name + ".ext.example.com"
			s.ClusterIPs = nil
			counted = false
		case p < 6:
			s.ClusterIPs = []string{v1.ClusterIPNone}
			counted = false
		case p < 12 && nextNodePort+int32(len(s.Ports)) <= 32767:
			s.Type = v1.ServiceTypeLoadBalancer
			nextLB++
			s.Ingress = []kobj.Ingress{{IP: kobj.HostIP("198.18.0.0/15", uint64(nextLB))}}
		case p < 24 && nextNodePort+int32(len(s.Ports)) <= 32767:
			s.Type = v1.ServiceTypeNodePort
		}
		if s.Type == v1.ServiceTypeNodePort || s.Type == v1.ServiceTypeLoadBalancer {
			for j := range s.Ports {
				s.Ports[j].NodePort = nextNodePort
				nextNodePort++
			}
			if r.IntN(8) == 0 {
				s.ETPLocal = true
				if s.Type == v1.ServiceTypeLoadBalancer && nextNodePort <= 32767 {
					s.HealthCheckPort = nextNodePort
					nextNodePort++
				}
			}
		}
		if r.IntN(10) == 0 && s.Type != v1.ServiceTypeExternalName {
			s.AffinityTimeout = 10800
		}
		if s.Type != v1.ServiceTypeExternalName {
			first := r.IntN(nNodes)
			for j := 0; j < perSvc; j++ {
				n := (first + j) % nNodes
				if podsOnNode[n] >= maxPods {
					return nil, 0, fmt.Errorf("more than %d endpoints on node %s: use more -nodes", maxPods, nodeName(n))
				}
				podsOnNode[n]++
				e := kobj.Endpoint{IP: kobj.HostIP(podCIDR(n), uint64(podsOnNode[n]+1)), Node: nodeName(n), Zone: zoneOf(n)}
				if r.IntN(50) == 0 {
					e.Terminating, e.NotReady = true, true
				}
				s.Endpoints = append(s.Endpoints, e)
			}
		}
		if counted {
			count += len(s.Ports) * perSvc
		}
		svcs = append(svcs, s)
	}

	in := &kobj.Input{
		Node: kobj.NodeSpec{
			Name: nodeName(local), InternalIPs: []string{"10.20.1.11"}, PodCIDRs: []string{podCIDR(local)},
			Zone: zoneOf(local), Created: base.Add(-20 * time.Minute), Heartbeat: base.Add(5 * time.Hour),
			BootID: kobj.UID("boot/" + nodeName(local)), ResourceVer: "902114",
		},
		APIServer: "10.20.0.10:6443", ServiceCIDRs: []string{"10.96.0.0/12"},
		Services: svcs, Builder: kobj.NewBuilder(base, 20000),
		Config: func(c *kubeproxyv1alpha1.KubeProxyConfiguration) {
			c.ClusterCIDR = "10.64.0.0/10"
			c.DetectLocalMode = "ClusterCIDR"
			c.Mode = kubeproxyv1alpha1.ProxyMode(mode)
		},
	}
	return in, count, nil
}

func zoneOf(node int) string { return []string{"west-2a", "west-2b", "west-2c"}[node%3] }
