// Package kobj builds the Kubernetes objects of kpgen's inputs (Services,
// EndpointSlices, a Node, the kube-proxy ConfigMap and its
// KubeProxyConfiguration) from compact descriptions, and writes them the
// way kubectl get -o yaml prints them: the API types marshalled to JSON and
// converted to YAML (keys sorted, zero values omitted), several objects as a
// v1 List.
//
// Everything that looks random in real objects (uids, generated name
// suffixes, pod-template hashes) is derived from a hash of the object's
// identity, so the output is reproducible.
package kobj

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	kubeproxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	proxyv1alpha1 "k8s.io/kubernetes/pkg/proxy/apis/config/v1alpha1"
	"sigs.k8s.io/yaml"
)

// Port is one Service port.
type Port struct {
	Name     string
	Port     int32
	Target   int32 // targetPort (default: Port)
	Proto    v1.Protocol
	NodePort int32
}

// Endpoint is one backend of a Service: a Pod (or, for selectorless
// Services, an address) and its conditions.
type Endpoint struct {
	IP          string
	Node        string // nodeName; "" for none
	Zone        string
	NotReady    bool // ready: false
	NotServing  bool // serving: false
	Terminating bool
}

// Ingress is one status.loadBalancer.ingress entry.
type Ingress struct {
	IP    string
	Proxy bool // ipMode: Proxy (default VIP)
}

// Service describes a Service and its endpoints.
type Service struct {
	Namespace, Name string
	Type            v1.ServiceType // default ClusterIP
	ClusterIPs      []string       // ["None"] for headless; empty for ExternalName
	FamilyPolicy    v1.IPFamilyPolicy
	Ports           []Port
	ETPLocal        bool
	HealthCheckPort int32
	ITPLocal        bool
	AffinityTimeout int32 // > 0: sessionAffinity ClientIP with this timeout
	ExternalIPs     []string
	SourceRanges    []string
	Ingress         []Ingress
	ExternalName    string
	// Selectorless Services get one hand-made EndpointSlice named after
	// the Service instead of controller-managed ones.
	Selectorless bool
	// NoSlice: no EndpointSlice at all (e.g. the controller has not
	// caught up, or a selectorless Service nobody filled).
	NoSlice   bool
	Endpoints []Endpoint
	Labels    map[string]string
	Created   time.Time
}

// Builder assigns resource versions and creation times in order.
type Builder struct {
	// Base is the time the first object was created; later objects are
	// created a few seconds apart.
	Base time.Time
	rv   int
	step int
}

// NewBuilder returns a Builder whose resourceVersions start at rv.
func NewBuilder(base time.Time, rv int) *Builder { return &Builder{Base: base, rv: rv} }

func (b *Builder) nextRV() string {
	b.rv += 7
	return fmt.Sprint(b.rv)
}

func (b *Builder) nextTime() time.Time {
	b.step++
	return b.Base.Add(time.Duration(b.step*37) * time.Second)
}

// UID returns a deterministic version-4-shaped UUID for key.
func UID(key string) string {
	h := sha256.Sum256([]byte("uid:" + key))
	h[6] = h[6]&0x0f | 0x40
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// suffix returns n characters of the alphabet Kubernetes uses for
// generated names, derived from key.
func suffix(key string, n int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	h := sha256.Sum256([]byte("name:" + key))
	var out strings.Builder
	for i := 0; i < n; i++ {
		out.WriteByte(alphabet[int(h[i])%len(alphabet)])
	}
	return out.String()
}

func ipFamily(ip string) v1.IPFamily {
	if strings.Contains(ip, ":") {
		return v1.IPv6Protocol
	}
	return v1.IPv4Protocol
}

// Objects returns the Service and its EndpointSlices.
func (b *Builder) Objects(s Service) (*v1.Service, []*discovery.EndpointSlice) {
	if s.Type == "" {
		s.Type = v1.ServiceTypeClusterIP
	}
	created := s.Created
	if created.IsZero() {
		created = b.nextTime()
	}
	labels := map[string]string{"app.kubernetes.io/name": s.Name}
	for k, v := range s.Labels {
		labels[k] = v
	}
	svcUID := UID("Service/" + s.Namespace + "/" + s.Name)
	svc := &v1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name: s.Name, Namespace: s.Namespace, Labels: labels,
			UID: typesUID(svcUID), ResourceVersion: b.nextRV(),
			CreationTimestamp: metav1.NewTime(created),
		},
		Spec: v1.ServiceSpec{Type: s.Type, SessionAffinity: v1.ServiceAffinityNone},
	}
	if s.Namespace == "default" && s.Name == "kubernetes" {
		svc.Labels = map[string]string{"component": "apiserver", "provider": "kubernetes"}
	}
	for _, p := range s.Ports {
		proto := p.Proto
		if proto == "" {
			proto = v1.ProtocolTCP
		}
		target := p.Target
		if target == 0 {
			target = p.Port
		}
		svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{
			Name: p.Name, Port: p.Port, Protocol: proto,
			TargetPort: intstr.FromInt32(target), NodePort: p.NodePort,
		})
	}
	if s.Type == v1.ServiceTypeExternalName {
		svc.Spec.ExternalName = s.ExternalName
	} else {
		svc.Spec.ClusterIP = s.ClusterIPs[0]
		svc.Spec.ClusterIPs = s.ClusterIPs
		policy := s.FamilyPolicy
		if policy == "" {
			policy = v1.IPFamilyPolicySingleStack
		}
		svc.Spec.IPFamilyPolicy = &policy
		if s.ClusterIPs[0] == v1.ClusterIPNone {
			svc.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol}
			if policy == v1.IPFamilyPolicyRequireDualStack || policy == v1.IPFamilyPolicyPreferDualStack {
				svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, v1.IPv6Protocol)
			}
		} else {
			for _, ip := range s.ClusterIPs {
				svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, ipFamily(ip))
			}
		}
		itp := v1.ServiceInternalTrafficPolicyCluster
		if s.ITPLocal {
			itp = v1.ServiceInternalTrafficPolicyLocal
		}
		svc.Spec.InternalTrafficPolicy = &itp
		if !s.Selectorless {
			svc.Spec.Selector = map[string]string{"app.kubernetes.io/name": s.Name}
		}
	}
	if s.Type == v1.ServiceTypeNodePort || s.Type == v1.ServiceTypeLoadBalancer {
		svc.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyCluster
		if s.ETPLocal {
			svc.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
		}
	}
	if s.Type == v1.ServiceTypeLoadBalancer {
		t := true
		svc.Spec.AllocateLoadBalancerNodePorts = &t
		svc.Spec.HealthCheckNodePort = s.HealthCheckPort
		svc.Spec.LoadBalancerSourceRanges = s.SourceRanges
		for _, ing := range s.Ingress {
			mode := v1.LoadBalancerIPModeVIP
			if ing.Proxy {
				mode = v1.LoadBalancerIPModeProxy
			}
			svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress,
				v1.LoadBalancerIngress{IP: ing.IP, IPMode: &mode})
		}
	}
	svc.Spec.ExternalIPs = s.ExternalIPs
	if s.AffinityTimeout > 0 {
		svc.Spec.SessionAffinity = v1.ServiceAffinityClientIP
		to := s.AffinityTimeout
		svc.Spec.SessionAffinityConfig = &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: &to}}
	}

	if s.Type == v1.ServiceTypeExternalName || s.NoSlice {
		return svc, nil
	}

	// EndpointSlices: one per address family the Service has endpoints
	// in (and one, empty, for each of its families when it has none).
	families := svc.Spec.IPFamilies
	var slices []*discovery.EndpointSlice
	for _, fam := range families {
		var eps []discovery.Endpoint
		for i, e := range s.Endpoints {
			if ipFamily(e.IP) != fam {
				continue
			}
			eps = append(eps, b.endpoint(s, e, i))
		}
		if len(eps) == 0 && s.Selectorless {
			continue
		}
		addrType := discovery.AddressTypeIPv4
		if fam == v1.IPv6Protocol {
			addrType = discovery.AddressTypeIPv6
		}
		es := &discovery.EndpointSlice{
			TypeMeta:    metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
			AddressType: addrType,
			Endpoints:   eps,
		}
		for _, p := range svc.Spec.Ports {
			name, proto, port := p.Name, p.Protocol, p.TargetPort.IntVal
			es.Ports = append(es.Ports, discovery.EndpointPort{Name: &name, Protocol: &proto, Port: &port})
		}
		esCreated := created.Add(2 * time.Second)
		if s.Selectorless {
			es.ObjectMeta = metav1.ObjectMeta{
				Name: s.Name, Namespace: s.Namespace,
				Labels:            map[string]string{discovery.LabelServiceName: s.Name},
				UID:               typesUID(UID("EndpointSlice/" + s.Namespace + "/" + s.Name)),
				ResourceVersion:   b.nextRV(),
				CreationTimestamp: metav1.NewTime(esCreated),
			}
		} else {
			name := s.Name + "-" + suffix(s.Namespace+"/"+s.Name+"/"+string(fam), 5)
			esLabels := map[string]string{
				discovery.LabelServiceName: s.Name,
				discovery.LabelManagedBy:   "endpointslice-controller.k8s.io",
			}
			for k, v := range labels {
				esLabels[k] = v
			}
			if svc.Spec.ClusterIP == v1.ClusterIPNone {
				esLabels[v1.IsHeadlessService] = ""
			}
			ctrl := true
			es.ObjectMeta = metav1.ObjectMeta{
				Name: name, Namespace: s.Namespace, GenerateName: s.Name + "-",
				Labels: esLabels,
				Annotations: map[string]string{
					"endpoints.kubernetes.io/last-change-trigger-time": esCreated.Add(41 * time.Second).UTC().Format(time.RFC3339),
				},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "Service", Name: s.Name,
					UID: svc.UID, Controller: &ctrl, BlockOwnerDeletion: &ctrl,
				}},
				UID:               typesUID(UID("EndpointSlice/" + s.Namespace + "/" + name)),
				ResourceVersion:   b.nextRV(),
				CreationTimestamp: metav1.NewTime(esCreated),
			}
		}
		slices = append(slices, es)
	}
	return svc, slices
}

func (b *Builder) endpoint(s Service, e Endpoint, i int) discovery.Endpoint {
	ready, serving, term := !e.NotReady, !e.NotServing, e.Terminating
	if term && !e.NotReady {
		// A terminating Pod is never ready.
		ready = false
	}
	ep := discovery.Endpoint{
		Addresses:  []string{e.IP},
		Conditions: discovery.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &term},
	}
	if e.Node != "" {
		n := e.Node
		ep.NodeName = &n
	}
	if e.Zone != "" {
		z := e.Zone
		ep.Zone = &z
	}
	if !s.Selectorless {
		// Pods of a Deployment: <name>-<pod-template-hash>-<suffix>. A
		// dual-stack Pod has one address per family and the same name.
		podKey := fmt.Sprintf("%s/%s/%d", s.Namespace, s.Name, podIndex(s, e, i))
		pod := s.Name + "-" + suffix(s.Namespace+"/"+s.Name+"/rs", 10) + "-" + suffix(podKey, 5)
		ep.TargetRef = &v1.ObjectReference{
			Kind: "Pod", Name: pod, Namespace: s.Namespace,
			UID: typesUID(UID("Pod/" + podKey)),
		}
	}
	return ep
}

// podIndex numbers the Pods of a Service: the i-th endpoint of each
// family belongs to the i-th Pod.
func podIndex(s Service, e Endpoint, i int) int {
	n := 0
	for j := 0; j < i; j++ {
		if ipFamily(s.Endpoints[j].IP) == ipFamily(e.IP) {
			n++
		}
	}
	return n
}

// SortObjects orders Services and EndpointSlices as the API server lists
// them: by namespace, then name.
func SortObjects(svcs []*v1.Service, slices []*discovery.EndpointSlice) {
	sort.Slice(svcs, func(i, j int) bool {
		if svcs[i].Namespace != svcs[j].Namespace {
			return svcs[i].Namespace < svcs[j].Namespace
		}
		return svcs[i].Name < svcs[j].Name
	})
	sort.Slice(slices, func(i, j int) bool {
		if slices[i].Namespace != slices[j].Namespace {
			return slices[i].Namespace < slices[j].Namespace
		}
		return slices[i].Name < slices[j].Name
	})
}

// ListYAML renders objects as kubectl get -o yaml prints several: a v1 List.
func ListYAML(objs []any) ([]byte, error) {
	list := map[string]any{
		"apiVersion": "v1",
		"kind":       "List",
		"items":      objs,
		"metadata":   map[string]any{"resourceVersion": ""},
	}
	if objs == nil {
		list["items"] = []any{}
	}
	return yaml.Marshal(list)
}

// ObjectYAML renders one object as kubectl get -o yaml prints it.
func ObjectYAML(obj any) ([]byte, error) { return yaml.Marshal(obj) }

// NodeSpec describes the Node kube-proxy runs on.
type NodeSpec struct {
	Name        string
	InternalIPs []string
	PodCIDRs    []string
	Zone        string
	Created     time.Time
	Heartbeat   time.Time
	BootID      string
	ResourceVer string
}

// Node returns a Node as a v1.37 kubelet on a kubeadm cluster reports it.
func Node(n NodeSpec) *v1.Node {
	node := &v1.Node{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{
			Name: n.Name,
			Annotations: map[string]string{
				"kubeadm.alpha.kubernetes.io/cri-socket":                 "unix:///run/containerd/containerd.sock",
				"node.alpha.kubernetes.io/ttl":                           "0",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
			},
			Labels: map[string]string{
				"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
				"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux",
				"kubernetes.io/hostname": n.Name,
			},
			UID:               typesUID(UID("Node/" + n.Name)),
			ResourceVersion:   n.ResourceVer,
			CreationTimestamp: metav1.NewTime(n.Created),
		},
		Spec: v1.NodeSpec{PodCIDRs: n.PodCIDRs},
	}
	if len(n.PodCIDRs) > 0 {
		node.Spec.PodCIDR = n.PodCIDRs[0]
	}
	if n.Zone != "" {
		node.Labels["topology.kubernetes.io/zone"] = n.Zone
		node.Labels["topology.kubernetes.io/region"] = regionOf(n.Zone)
	}
	for _, ip := range n.InternalIPs {
		node.Status.Addresses = append(node.Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}
	node.Status.Addresses = append(node.Status.Addresses, v1.NodeAddress{Type: v1.NodeHostName, Address: n.Name})
	res := func(cpu, mem, eph string) v1.ResourceList {
		return v1.ResourceList{
			v1.ResourceCPU: mustQ(cpu), v1.ResourceMemory: mustQ(mem), v1.ResourceEphemeralStorage: mustQ(eph),
			v1.ResourcePods: mustQ("110"), "hugepages-1Gi": mustQ("0"), "hugepages-2Mi": mustQ("0"),
		}
	}
	node.Status.Capacity = res("8", "32863156Ki", "203056560Ki")
	node.Status.Allocatable = res("8", "32760756Ki", "187136367407")
	hb := metav1.NewTime(n.Heartbeat)
	started := metav1.NewTime(n.Created)
	readyAt := metav1.NewTime(n.Created.Add(71 * time.Second))
	node.Status.Conditions = []v1.NodeCondition{
		{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, LastHeartbeatTime: hb, LastTransitionTime: started, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: v1.NodeDiskPressure, Status: v1.ConditionFalse, LastHeartbeatTime: hb, LastTransitionTime: started, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: v1.NodePIDPressure, Status: v1.ConditionFalse, LastHeartbeatTime: hb, LastTransitionTime: started, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: hb, LastTransitionTime: readyAt, Reason: "KubeletReady", Message: "kubelet is posting ready status"},
	}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = 10250
	sgp := true
	node.Status.Features = &v1.NodeFeatures{SupplementalGroupsPolicy: &sgp}
	node.Status.NodeInfo = v1.NodeSystemInfo{
		Architecture: "amd64", BootID: n.BootID, ContainerRuntimeVersion: "containerd://2.1.5",
		KernelVersion: "6.12.48+deb13-amd64", KubeProxyVersion: "", KubeletVersion: "v1.37.2",
		MachineID: strings.ReplaceAll(UID("machine/"+n.Name), "-", ""), OperatingSystem: "linux",
		OSImage: "Debian GNU/Linux 13 (trixie)", SystemUUID: UID("system/" + n.Name),
		Swap: &v1.NodeSwapStatus{Capacity: ptr(int64(0))},
	}
	return node
}

func regionOf(zone string) string {
	if i := strings.LastIndex(zone, "-"); i > 0 {
		return zone[:i]
	}
	return zone
}

func ptr[T any](v T) *T { return &v }

// ProxyConfig returns a KubeProxyConfiguration with kube-proxy's defaults
// (as kubeadm writes it), modified by fn, rendered as YAML.
func ProxyConfig(fn func(c *kubeproxyv1alpha1.KubeProxyConfiguration)) ([]byte, error) {
	c := &kubeproxyv1alpha1.KubeProxyConfiguration{}
	c.APIVersion = "kubeproxy.config.k8s.io/v1alpha1"
	c.Kind = "KubeProxyConfiguration"
	c.ClientConnection.Kubeconfig = "/var/lib/kube-proxy/kubeconfig.conf"
	c.IPVS.Scheduler = "rr"
	fn(c)
	mode := c.Mode
	proxyv1alpha1.SetObjectDefaults_KubeProxyConfiguration(c)
	// Defaulting leaves mode alone; keep what fn chose.
	c.Mode = mode
	return yaml.Marshal(c)
}

// ConfigMap returns the kube-system/kube-proxy ConfigMap kubeadm creates,
// with config.conf = config and a kubeconfig.conf pointing at apiServer.
func ConfigMap(config []byte, apiServer string, created time.Time) ([]byte, error) {
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
    server: https://%s
  name: default
contexts:
- context:
    cluster: default
    namespace: default
    user: default
  name: default
current-context: default
users:
- name: default
  user:
    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
`, apiServer)
	h := sha256.Sum256(config)
	cm := &v1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "kube-proxy", Namespace: "kube-system",
			Labels:            map[string]string{"app": "kube-proxy"},
			Annotations:       map[string]string{"kubeadm.kubernetes.io/component-config.hash": fmt.Sprintf("sha256:%x", h)},
			UID:               typesUID(UID("ConfigMap/kube-system/kube-proxy")),
			ResourceVersion:   "247",
			CreationTimestamp: metav1.NewTime(created),
		},
		Data: map[string]string{"config.conf": string(config), "kubeconfig.conf": kubeconfig},
	}
	return yaml.Marshal(cm)
}

// HostIP returns the i-th (1-based) address of cidr as a string; it
// panics on bad input, which only comes from the generators' own tables.
func HostIP(cidr string, i uint64) string {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		panic(err)
	}
	ip := n.IP.To16()
	if v4 := n.IP.To4(); v4 != nil {
		x := binary.BigEndian.Uint32(v4) + uint32(i)
		out := make(net.IP, 4)
		binary.BigEndian.PutUint32(out, x)
		return out.String()
	}
	out := make(net.IP, 16)
	copy(out, ip)
	lo := binary.BigEndian.Uint64(out[8:]) + i
	binary.BigEndian.PutUint64(out[8:], lo)
	return out.String()
}

func typesUID(s string) types.UID { return types.UID(s) }

func mustQ(s string) resource.Quantity { return resource.MustParse(s) }
