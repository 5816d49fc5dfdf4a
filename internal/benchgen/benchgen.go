// Package benchgen generates large, consistent inputs for benchmarks: a
// cluster export of N Services with their EndpointSlices (as kubectl prints
// it, JSON or YAML) and the iptables-save dump kube-proxy's iptables mode
// produces for it in large-cluster mode (more than 1000 endpoints: no
// comments on the endpoint rules), so that analysing the pair finds
// nothing and every check walks every service.
package benchgen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// Spec sizes a generated cluster.
type Spec struct {
	// Services is the number of Services; Endpoints the total number of
	// endpoints, spread as evenly as possible.
	Services, Endpoints int
	// NodePortEvery makes every n-th Service a NodePort (0: none).
	NodePortEvery int
	// Node is the node the dump belongs to; every third endpoint is local.
	Node string
	// Nodes are the names of Node objects the export holds after its
	// Services and EndpointSlices (none by default).
	Nodes []string
}

// Default is the size of the benchmarks: 10,000 Services, 55,000
// endpoints, one NodePort Service in four.
var Default = Spec{Services: 10000, Endpoints: 55000, NodePortEvery: 4, Node: "bench-node-1"}

type svc struct {
	ns, name string
	ip       netip.Addr
	nodePort int32
	eps      []netip.Addr
}

// ServiceName returns the namespace/name of the i-th Service.
func (s Spec) ServiceName(i int) string { return fmt.Sprintf("ns-%03d/svc-%05d", i%200, i) }

func (s Spec) services() []svc {
	out := make([]svc, s.Services)
	ep := 0
	for i := range out {
		n := s.Endpoints / s.Services
		if i < s.Endpoints%s.Services {
			n++
		}
		v := &out[i]
		v.ns = fmt.Sprintf("ns-%03d", i%200)
		v.name = fmt.Sprintf("svc-%05d", i)
		v.ip = netip.AddrFrom4([4]byte{10, byte(96 + i/65536), byte(i / 256 % 256), byte(i % 256)})
		if s.NodePortEvery > 0 && i%s.NodePortEvery == 0 {
			v.nodePort = int32(30000 + i/s.NodePortEvery%2700)
		}
		for j := 0; j < n; j++ {
			v.eps = append(v.eps, netip.AddrFrom4([4]byte{10, byte(128 + ep/65536), byte(ep / 256 % 256), byte(ep % 256)}))
			ep++
		}
	}
	return out
}

func spn(v svc) model.ServicePortName {
	return model.ServicePortName{Namespace: v.ns, Name: v.name, Port: "http"}
}

// Objects returns the Services and EndpointSlices of the cluster, in the
// order kubectl lists them.
func (s Spec) Objects() []any {
	var out []any
	ts := metav1.NewTime(metav1.Now().Rfc3339Copy().Time)
	for i, v := range s.services() {
		svcType := corev1.ServiceTypeClusterIP
		if v.nodePort != 0 {
			svcType = corev1.ServiceTypeNodePort
		}
		itp := corev1.ServiceInternalTrafficPolicyCluster
		family := corev1.IPFamilyPolicySingleStack
		service := &corev1.Service{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{
				Name: v.name, Namespace: v.ns, CreationTimestamp: ts,
				Labels:          map[string]string{"app.kubernetes.io/name": v.name, "app.kubernetes.io/part-of": "bench"},
				ResourceVersion: strconv.Itoa(100000 + i), UID: uid(0, i),
			},
			Spec: corev1.ServiceSpec{
				Type: svcType, ClusterIP: v.ip.String(), ClusterIPs: []string{v.ip.String()},
				IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, IPFamilyPolicy: &family,
				InternalTrafficPolicy: &itp, SessionAffinity: corev1.ServiceAffinityNone,
				Selector: map[string]string{"app.kubernetes.io/name": v.name},
				Ports:    []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080), NodePort: v.nodePort}},
			},
		}
		if v.nodePort != 0 {
			service.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		}
		out = append(out, service)
	}
	for i, v := range s.services() {
		name, proto, port := "http", corev1.ProtocolTCP, int32(8080)
		owner, controller := true, true
		// The EndpointSlice controller copies the Service's labels, names
		// the slice after it with a random suffix and owns it; kubectl
		// prints all of that, and each endpoint's Pod reference with its
		// uid.
		slice := &discoveryv1.EndpointSlice{
			TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
			ObjectMeta: metav1.ObjectMeta{
				GenerateName: v.name + "-", Name: v.name + "-" + suffix(i, 5), Namespace: v.ns, CreationTimestamp: ts,
				Annotations: map[string]string{"endpoints.kubernetes.io/last-change-trigger-time": ts.UTC().Format(time.RFC3339)},
				Labels: map[string]string{
					"app.kubernetes.io/name": v.name, "app.kubernetes.io/part-of": "bench",
					discoveryv1.LabelServiceName: v.name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io",
				},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "Service", Name: v.name, UID: uid(0, i),
					BlockOwnerDeletion: &owner, Controller: &controller,
				}},
				ResourceVersion: strconv.Itoa(200000 + i), UID: uid(1, i),
			},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &name, Protocol: &proto, Port: &port}},
		}
		rs := suffix(i*7+3, 10) // the ReplicaSet's pod-template hash
		for j, ip := range v.eps {
			ready, serving, term := true, true, false
			node := fmt.Sprintf("bench-node-%d", (i+j)%3+1)
			zone := "zone-a"
			slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
				Addresses:  []string{ip.String()},
				Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &term},
				NodeName:   &node, Zone: &zone,
				TargetRef: &corev1.ObjectReference{
					Kind: "Pod", Namespace: v.ns, Name: v.name + "-" + rs + "-" + suffix(i*131+j, 5),
					UID: uid(2, i*64+j),
				},
			})
		}
		out = append(out, slice)
	}
	for i, name := range s.Nodes {
		out = append(out, &corev1.Node{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
			ObjectMeta: metav1.ObjectMeta{
				Name: name, CreationTimestamp: ts,
				Labels:          map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"},
				ResourceVersion: strconv.Itoa(300000 + i), UID: uid(2, i),
			},
		})
	}
	return out
}

// uid returns a stable, well-formed object uid for object n of a kind.
func uid(kind, n int) types.UID {
	return types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", kind, n))
}

// suffix returns n letters and digits derived from i, like the random
// suffixes of generated names (slices, pods) and pod-template hashes.
func suffix(i, n int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789" // the apiserver's name generator alphabet
	b := make([]byte, n)
	x := uint64(i)*0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019
	for k := range b {
		b[k] = alphabet[x%uint64(len(alphabet))]
		x = x/uint64(len(alphabet)) ^ x<<29
	}
	return string(b)
}

// WriteJSON writes the cluster as `kubectl get -o json` prints a List.
func (s Spec) WriteJSON(w io.Writer) error { return s.writeJSON(w, "    ") }

// WriteCompactJSON writes the same List without indentation, as
// `kubectl get --raw` or an API client returns it: about half the bytes
// of WriteJSON for the same objects.
func (s Spec) WriteCompactJSON(w io.Writer) error { return s.writeJSON(w, "") }

func (s Spec) writeJSON(w io.Writer, indent string) error {
	list := map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]string{"resourceVersion": ""}, "items": s.Objects()}
	enc := json.NewEncoder(w)
	enc.SetIndent("", indent)
	return enc.Encode(list)
}

// WriteYAML writes the cluster as `kubectl get -o yaml` prints a List.
func (s Spec) WriteYAML(w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("apiVersion: v1\nitems:\n")
	for _, o := range s.Objects() {
		b, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		first := true
		for _, line := range bytes.SplitAfter(b, []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			if first {
				bw.WriteString("- ")
				first = false
			} else {
				bw.WriteString("  ")
			}
			bw.Write(line)
		}
	}
	bw.WriteString("kind: List\nmetadata:\n  resourceVersion: \"\"\n")
	return bw.Flush()
}

// probability formats 1/n as iptables-save prints what the kernel stored
// (the statistic match keeps p·2^31 as an integer).
func probability(n int) string {
	return strconv.FormatFloat(math.Round(1/float64(n)*(1<<31))/(1<<31), 'f', 11, 64)
}

// IPTablesDump returns the dump IPTablesSave writes, parsed (named
// iptables-save.txt).
func (s Spec) IPTablesDump() (*iptables.Dump, error) {
	var buf bytes.Buffer
	if err := s.IPTablesSave(&buf); err != nil {
		return nil, err
	}
	return iptables.Parse("iptables-save.txt", buf.Bytes())
}

// IPTablesSave writes the iptables-save dump of the cluster's node, with
// the rule comments kube-proxy writes outside large-cluster mode (the
// larger form of the dump).
func (s Spec) IPTablesSave(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	svcs := s.services()
	hdr := "# Generated by iptables-save v1.8.9 (nf_tables) on Sun Mar  1 12:00:00 2026\n"
	end := "COMMIT\n# Completed on Sun Mar  1 12:00:00 2026\n"
	bw.WriteString(hdr + "*mangle\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:KUBE-PROXY-CANARY - [0:0]\n" + end)
	bw.WriteString(hdr + "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:KUBE-EXTERNAL-SERVICES - [0:0]\n:KUBE-FIREWALL - [0:0]\n:KUBE-FORWARD - [0:0]\n:KUBE-NODEPORTS - [0:0]\n:KUBE-PROXY-CANARY - [0:0]\n:KUBE-PROXY-FIREWALL - [0:0]\n:KUBE-SERVICES - [0:0]\n")
	bw.WriteString(`-A INPUT -j KUBE-FIREWALL
-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A INPUT -m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS
-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES
-A OUTPUT -j KUBE-FIREWALL
-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP
-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
`)
	bw.WriteString(end)
	bw.WriteString(hdr + "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n")
	// iptables-save lists the chains sorted, the built-in ones first, and
	// each chain's rules after the headers in that order: the rules are
	// gathered by chain, then written so.
	rules := map[string][]string{}
	add := func(chain, rule string) { rules[chain] = append(rules[chain], rule) }
	add("PREROUTING", `-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES`)
	add("OUTPUT", `-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES`)
	add("POSTROUTING", `-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING`)
	add("KUBE-MARK-MASQ", `-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000`)
	for _, v := range svcs {
		if v.nodePort == 0 {
			continue
		}
		h := kpnames.PortProtoHash(spn(v).String(), "tcp")
		add("KUBE-NODEPORTS", fmt.Sprintf("-A KUBE-NODEPORTS -p tcp -m comment --comment \"%s\" -m tcp --dport %d -j %s%s", spn(v), v.nodePort, kpnames.ChainEXT, h))
	}
	add("KUBE-POSTROUTING", `-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN`)
	add("KUBE-POSTROUTING", `-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0`)
	add("KUBE-POSTROUTING", `-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully`)
	for _, v := range svcs {
		for _, ep := range v.eps {
			sep := kpnames.ChainSEP + kpnames.EndpointChainHash(spn(v).String(), "tcp", ep.String()+":8080")
			add(sep, fmt.Sprintf("-A %s -s %s/32 -m comment --comment \"%s\" -j KUBE-MARK-MASQ", sep, ep, spn(v)))
			add(sep, fmt.Sprintf("-A %s -p tcp -m comment --comment \"%s\" -m tcp -j DNAT --to-destination %s:8080", sep, spn(v), ep))
		}
	}
	for _, v := range svcs {
		h := kpnames.PortProtoHash(spn(v).String(), "tcp")
		add("KUBE-SERVICES", fmt.Sprintf("-A KUBE-SERVICES -d %s/32 -p tcp -m comment --comment \"%s cluster IP\" -m tcp --dport 80 -j %s%s", v.ip, spn(v), kpnames.ChainSVC, h))
	}
	add("KUBE-SERVICES", `-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS`)
	var chains []string
	for _, v := range svcs {
		h := kpnames.PortProtoHash(spn(v).String(), "tcp")
		svcChain := kpnames.ChainSVC + h
		chains = append(chains, svcChain)
		if v.nodePort != 0 {
			ext := kpnames.ChainEXT + h
			chains = append(chains, ext)
			add(ext, fmt.Sprintf("-A %s -m comment --comment \"masquerade traffic for %s external destinations\" -j KUBE-MARK-MASQ", ext, spn(v)))
			add(ext, fmt.Sprintf("-A %s -j %s", ext, svcChain))
		}
		add(svcChain, fmt.Sprintf("-A %s ! -s 10.128.0.0/9 -d %s/32 -p tcp -m comment --comment \"%s cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ", svcChain, v.ip, spn(v)))
		for i, ep := range v.eps {
			sep := kpnames.ChainSEP + kpnames.EndpointChainHash(spn(v).String(), "tcp", ep.String()+":8080")
			chains = append(chains, sep)
			if i < len(v.eps)-1 {
				add(svcChain, fmt.Sprintf("-A %s -m comment --comment \"%s -> %s:8080\" -m statistic --mode random --probability %s -j %s", svcChain, spn(v), ep, probability(len(v.eps)-i), sep))
			} else {
				add(svcChain, fmt.Sprintf("-A %s -m comment --comment \"%s -> %s:8080\" -j %s", svcChain, spn(v), ep, sep))
			}
		}
	}
	chains = append(chains, "KUBE-MARK-MASQ", "KUBE-NODEPORTS", "KUBE-POSTROUTING", "KUBE-PROXY-CANARY", "KUBE-SERVICES")
	sort.Strings(chains)
	for _, c := range chains {
		bw.WriteString(":" + c + " - [0:0]\n")
	}
	for _, c := range append([]string{"PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"}, chains...) {
		for _, r := range rules[c] {
			bw.WriteString(r)
			bw.WriteByte('\n')
		}
	}
	bw.WriteString(end)
	return bw.Flush()
}

// Config is a KubeProxyConfiguration for the generated node.
func (s Spec) Config() []byte {
	return []byte("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: iptables\nclusterCIDR: 10.128.0.0/9\nhostnameOverride: " + s.Node + "\n")
}

// NodeIP is the address of the generated node (the nodeport-ips set of
// its nftables ruleset).
const NodeIP = "172.30.0.11"

// NFTRuleset writes the `nft list ruleset` output (nft 1.0.6) of the
// node's table ip kube-proxy as kube-proxy v1.37's nftables mode programs
// it for the cluster: a service-ips element and a service chain per
// Service (one dnat, or a dnat to a numgen map of its endpoints), a
// service-nodeports element and an external chain per NodePort Service,
// the cluster-ips and hairpin sets, and the fixed chains.
func (s Spec) NFTRuleset(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	svcs := s.services()
	local := func(i, j int) bool { return fmt.Sprintf("bench-node-%d", (i+j)%3+1) == s.Node }
	elements := func(items []string, perLine int) {
		if len(items) == 0 {
			return
		}
		bw.WriteString("\t\telements = { ")
		for k, it := range items {
			if k > 0 {
				if k%perLine == 0 {
					bw.WriteString(",\n\t\t\t     ")
				} else {
					bw.WriteString(", ")
				}
			}
			bw.WriteString(it)
		}
		bw.WriteString(" }\n")
	}
	set := func(kind, name, typ, comment string, items []string, perLine int) {
		fmt.Fprintf(bw, "\t%s %s {\n\t\ttype %s\n\t\tcomment %q\n", kind, name, typ, comment)
		elements(items, perLine)
		bw.WriteString("\t}\n\n")
	}
	base := func(v svc) string {
		return kpnames.NFTServiceChainBase(spn(v).Namespace, spn(v).Name, spn(v).Port, "tcp")
	}
	var cips, hairpin, svcIPs, nodePorts []string
	for i, v := range svcs {
		cips = append(cips, v.ip.String())
		for j, ep := range v.eps {
			if local(i, j) {
				hairpin = append(hairpin, ep.String()+" . "+ep.String()+" . tcp . 8080")
			}
		}
		svcIPs = append(svcIPs, v.ip.String()+" . tcp . 80 : goto service-"+base(v))
		if v.nodePort != 0 {
			nodePorts = append(nodePorts, "tcp . "+strconv.Itoa(int(v.nodePort))+" : goto external-"+base(v))
		}
	}
	bw.WriteString("table ip kube-proxy {\n\tcomment \"rules for kube-proxy\"\n")
	set("set", "cluster-ips", "ipv4_addr", "Active ClusterIPs", cips, 2)
	set("set", "hairpin-connections", "ipv4_addr . ipv4_addr . inet_proto . inet_service", "service hairpin connections", hairpin, 1)
	set("set", "nodeport-ips", "ipv4_addr", "IPs that accept NodePort traffic", []string{NodeIP}, 2)
	set("map", "firewall-ips", "ipv4_addr . inet_proto . inet_service : verdict", "destinations that are subject to LoadBalancerSourceRanges", nil, 1)
	set("map", "no-endpoint-nodeports", "inet_proto . inet_service : verdict", "vmap to drop or reject packets to service nodeports with no endpoints", nil, 1)
	set("map", "no-endpoint-services", "ipv4_addr . inet_proto . inet_service : verdict", "vmap to drop or reject packets to services with no endpoints", nil, 1)
	set("map", "service-ips", "ipv4_addr . inet_proto . inet_service : verdict", "ClusterIP, ExternalIP and LoadBalancer IP traffic", svcIPs, 1)
	fmt.Fprintf(bw, "\tmap service-nodeports {\n\t\ttype inet_proto . inet_service : verdict\n\t\tcomment \"NodePort traffic\"\n")
	elements(nodePorts, 1)
	bw.WriteString("\t}\n")
	// Chains, in the order nft lists them for kube-proxy's transaction
	// (sorted by name).
	chains := map[string]string{
		"cluster-ips-check":          "\t\tip daddr @cluster-ips reject comment \"Reject traffic to invalid ports of ClusterIPs\"\n",
		"filter-forward":             "\t\ttype filter hook forward priority filter; policy accept;\n\t\tct state new jump service-endpoints-check\n\t\tct state new jump cluster-ips-check\n",
		"filter-input":               "\t\ttype filter hook input priority filter; policy accept;\n\t\tct state new jump nodeport-endpoints-check\n\t\tct state new jump service-endpoints-check\n",
		"filter-output":              "\t\ttype filter hook output priority filter; policy accept;\n\t\tct state new jump service-endpoints-check\n\t\tct state new jump cluster-ips-check\n",
		"filter-output-pre-dnat":     "\t\ttype filter hook output priority -110; policy accept;\n\t\tct state new jump firewall-check\n",
		"filter-prerouting-pre-dnat": "\t\ttype filter hook prerouting priority dstnat - 10; policy accept;\n\t\tct state new jump firewall-check\n",
		"firewall-check":             "\t\tip daddr . meta l4proto . th dport vmap @firewall-ips\n",
		"masquerading":               "\t\tmeta mark & 0x00004000 != 0x00000000 meta mark set meta mark ^ 0x00004000 masquerade fully-random\n\t\tct status dnat ip saddr . ip daddr . meta l4proto . th dport @hairpin-connections masquerade fully-random\n",
		"nat-output":                 "\t\ttype nat hook output priority -100; policy accept;\n\t\tjump services\n",
		"nat-postrouting":            "\t\ttype nat hook postrouting priority srcnat; policy accept;\n\t\tjump masquerading\n",
		"nat-prerouting":             "\t\ttype nat hook prerouting priority dstnat; policy accept;\n\t\tjump services\n",
		"nodeport-endpoints-check":   "\t\tip daddr @nodeport-ips meta l4proto . th dport vmap @no-endpoint-nodeports\n",
		"reject-chain":               "\t\tcomment \"helper for @no-endpoint-services / @no-endpoint-nodeports\"\n\t\treject\n",
		"service-endpoints-check":    "\t\tip daddr . meta l4proto . th dport vmap @no-endpoint-services\n",
		"services": "\t\tip daddr @cluster-ips ip saddr != 10.128.0.0/9 meta mark set meta mark | 0x00004000 comment \"masquerade clusterIP traffic from outside cluster\"\n" +
			"\t\tip daddr . meta l4proto . th dport vmap @service-ips\n\t\tip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports\n",
	}
	for _, v := range svcs {
		var b strings.Builder
		if len(v.eps) == 1 {
			b.WriteString("\t\tmeta l4proto tcp dnat to " + v.eps[0].String() + ":8080\n")
		} else {
			fmt.Fprintf(&b, "\t\tmeta l4proto tcp dnat ip to numgen random mod %d map { ", len(v.eps))
			for j, ep := range v.eps {
				if j > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%d : %s . 8080", j, ep)
			}
			b.WriteString(" }\n")
		}
		chains["service-"+base(v)] = b.String()
		if v.nodePort != 0 {
			chains["external-"+base(v)] = "\t\tmeta mark set meta mark | 0x00004000 comment \"masquerade\"\n\t\tgoto service-" + base(v) + "\n"
		}
	}
	names := make([]string, 0, len(chains))
	for n := range chains {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		bw.WriteString("\n\tchain " + n + " {\n" + chains[n] + "\t}\n")
	}
	bw.WriteString("}\n")
	return bw.Flush()
}

// NFTConfig is the KubeProxyConfiguration of the generated node in
// nftables mode.
func (s Spec) NFTConfig() []byte {
	return []byte("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: nftables\nclusterCIDR: 10.128.0.0/9\nhostnameOverride: " + s.Node + "\n")
}

// WriteBundle writes the node's bundle into dir, as a directory that
// `proxyscan analyze` reads as one node: node/iptables-save.txt,
// cluster/cluster.json and kube-proxy/config.yaml (naming the node).
func (s Spec) WriteBundle(dir string) error {
	for name, write := range map[string]func(io.Writer) error{
		"node/iptables-save.txt": s.IPTablesSave,
		"cluster/cluster.json":   s.WriteJSON,
		"kube-proxy/config.yaml": func(w io.Writer) error { _, err := w.Write(s.Config()); return err },
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		err = write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", p, err)
		}
	}
	return nil
}

// WriteFleet writes the bundles of n nodes into dir, one directory each
// (node-0001, node-0002...), each under its own node name: the same
// cluster and data plane, generated once. The export holds the fleet's
// Nodes (unless s names others), so that each node is one it knows; the
// endpoints run on other nodes, so that the nodes are alike.
func (s Spec) WriteFleet(dir string, n int) error {
	if len(s.Nodes) == 0 {
		for i := 1; i <= n; i++ {
			s.Nodes = append(s.Nodes, fmt.Sprintf("node-%04d", i))
		}
	}
	first := filepath.Join(dir, "node-0001")
	s.Node = "node-0001"
	if err := s.WriteBundle(first); err != nil {
		return err
	}
	for i := 2; i <= n; i++ {
		node := fmt.Sprintf("node-%04d", i)
		s.Node = node
		for _, name := range []string{"node/iptables-save.txt", "cluster/cluster.json", "kube-proxy/config.yaml"} {
			p := filepath.Join(dir, node, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if name == "kube-proxy/config.yaml" {
				if err := os.WriteFile(p, s.Config(), 0o644); err != nil {
					return err
				}
				continue
			}
			if err := os.Link(filepath.Join(first, name), p); err != nil {
				return fmt.Errorf("linking %s: %w", p, err)
			}
		}
	}
	return nil
}

// WriteNodes writes a bundle for each node name into dir (node-0001,
// node-0002...), each with its own data plane (the endpoints local to it)
// and the export of the first, byte for byte, changed by edit when not
// nil: nodes of one cluster whose exports are alike, as bundles collected
// at one time hold them. It returns the bundles' paths.
func (s Spec) WriteNodes(dir string, nodes []string, edit func(export []byte) []byte) ([]string, error) {
	var bundles []string
	var export []byte
	for i, node := range nodes {
		b := filepath.Join(dir, fmt.Sprintf("node-%04d", i+1))
		s.Node = node
		if err := s.WriteBundle(b); err != nil {
			return nil, err
		}
		p := filepath.Join(b, "cluster", "cluster.json")
		if export == nil {
			data, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			if edit != nil {
				data = edit(data)
			}
			export = data
		}
		if err := os.WriteFile(p, export, 0o644); err != nil {
			return nil, err
		}
		bundles = append(bundles, b)
	}
	return bundles, nil
}
