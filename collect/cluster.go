package collect

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sort"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/proxyscan/proxyscan/internal/kubeapi"
)

// KubeAccess returns a client of the cluster's API, or an error saying
// why there is none ([ErrNoKubeconfig] when no credentials were found).
type KubeAccess func() (*kubeapi.Client, error)

// ErrNoKubeconfig means no kubeconfig was given or found.
var ErrNoKubeconfig = errors.New("no kubeconfig: pass --kubeconfig, set KUBECONFIG, or run collect in a pod (in-cluster)")

// Kubeconfig returns the access of a kubeconfig file: path, else the
// KUBECONFIG environment variable, else the in-cluster service account.
// The kubeconfig is only read, never copied into the bundle. Requests
// carry the user agent proxyscan-collect and are limited to 20 a second
// (bursts of 40).
func Kubeconfig(path string) KubeAccess {
	return func() (*kubeapi.Client, error) {
		var cfg *rest.Config
		var err error
		switch {
		case path != "":
			cfg, err = clientcmd.BuildConfigFromFlags("", path)
		case os.Getenv("KUBECONFIG") != "":
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
		default:
			cfg, err = rest.InClusterConfig()
			if errors.Is(err, rest.ErrNotInCluster) {
				return nil, ErrNoKubeconfig
			}
		}
		if err != nil {
			return nil, fmt.Errorf("loading the kubeconfig: %w", err)
		}
		cfg.QPS, cfg.Burst = 20, 40
		cfg.UserAgent = "proxyscan-collect"
		c, err := kubeapi.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("the client of the API server: %w", err)
		}
		return c, nil
	}
}

// kubeClient is the API client of a collection, made once.
type kubeClient struct {
	once sync.Once
	c    *kubeapi.Client
	err  error
}

func (e *env) kube() (*kubeapi.Client, error) {
	kc := &e.kc
	kc.once.Do(func() {
		if e.opts.Kube == nil {
			kc.err = ErrNoKubeconfig
			return
		}
		kc.c, kc.err = e.opts.Kube()
	})
	return kc.c, kc.err
}

// readCluster lists one kind of object from the API and writes it as
// kubectl get -o yaml prints a List.
func readCluster(ctx context.Context, e *env, s *Source, w *Writer) {
	c, err := e.kube()
	if err != nil {
		if errors.Is(err, ErrNoKubeconfig) {
			w.Skip("%v", err)
		} else {
			w.Fail("%v", err)
		}
		return
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout(s.Timeout))
	defer cancel()
	var items []any
	switch s.Name {
	case "cluster-services":
		items, err = listServices(ctx, e, c)
	case "cluster-endpointslices":
		items, err = listSlices(ctx, e, c)
	case "cluster-kube-proxy-configmap":
		items, err = getConfigMaps(ctx, c)
	case "cluster-kube-proxy-daemonset":
		var ds []*appsv1.DaemonSet
		ds, err = kubeProxyDaemonSets(ctx, c)
		for _, d := range ds {
			items = append(items, d)
		}
	case "cluster-kube-proxy-pods":
		items, err = listPods(ctx, e, c, w)
	case "cluster-node":
		items, err = getNode(ctx, e, c, w)
	case "cluster-servicecidrs":
		items, err = listServiceCIDRs(ctx, c)
		if apierrors.IsNotFound(err) {
			// Served from 1.33 (v1): an older API server has none.
			w.Skip("the API server serves no networking.k8s.io/v1 ServiceCIDRs (Kubernetes before 1.33)")
			return
		}
	default:
		err = fmt.Errorf("unknown cluster source %q", s.Name)
	}
	if err != nil {
		w.Fail("%v", err)
		return
	}
	if len(items) == 0 {
		w.Note("no objects")
		return
	}
	data, err := kubeList(items)
	if err != nil {
		w.Fail("encoding: %v", err)
		return
	}
	_, _ = w.Write(data)
	w.Note("%d objects", len(items))
}

// kubeList renders objects as a v1 List in kubectl's YAML form, without
// managedFields.
func kubeList(items []any) ([]byte, error) {
	for _, it := range items {
		if o, ok := it.(metav1.Object); ok {
			o.SetManagedFields(nil)
		}
	}
	return yaml.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}, "items": items,
	})
}

func listServices(ctx context.Context, e *env, c *kubeapi.Client) ([]any, error) {
	l, err := kubeapi.List[corev1.Service](ctx, c, kubeapi.Services, "", kubeapi.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing services: %w", err)
	}
	out := make([]any, 0, len(l))
	for i := range l {
		s := &l[i]
		e.addName("namespace", s.Namespace)
		e.addName("service", s.Name)
		out = append(out, s)
	}
	return out, nil
}

func listServiceCIDRs(ctx context.Context, c *kubeapi.Client) ([]any, error) {
	l, err := kubeapi.List[networkingv1.ServiceCIDR](ctx, c, kubeapi.ServiceCIDRs, "", kubeapi.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing servicecidrs: %w", err)
	}
	out := make([]any, 0, len(l))
	for i := range l {
		out = append(out, &l[i])
	}
	return out, nil
}

func listSlices(ctx context.Context, e *env, c *kubeapi.Client) ([]any, error) {
	l, err := kubeapi.List[discoveryv1.EndpointSlice](ctx, c, kubeapi.EndpointSlices, "", kubeapi.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing endpointslices: %w", err)
	}
	out := make([]any, 0, len(l))
	for i := range l {
		s := &l[i]
		e.addName("namespace", s.Namespace)
		e.addName("service", s.Labels[discoveryv1.LabelServiceName])
		e.addName("object", s.Name)
		for _, ep := range s.Endpoints {
			if ep.NodeName != nil {
				e.addName("node", *ep.NodeName)
			}
			if ep.Hostname != nil {
				e.addName("pod", *ep.Hostname)
			}
			if r := ep.TargetRef; r != nil {
				e.addName("namespace", r.Namespace)
				e.addName("pod", r.Name)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// kubeProxyConfigMaps are the names kube-proxy's ConfigMap has in
// kubeadm (kube-proxy) and managed clusters (kube-proxy-config).
var kubeProxyConfigMaps = []string{"kube-proxy", "kube-proxy-config"}

func getConfigMaps(ctx context.Context, c *kubeapi.Client) ([]any, error) {
	var out []any
	for _, name := range kubeProxyConfigMaps {
		cm, err := kubeapi.Get[corev1.ConfigMap](ctx, c, kubeapi.ConfigMaps, "kube-system", name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("getting configmap kube-system/%s: %w", name, err)
		}
		out = append(out, cm)
	}
	return out, nil
}

// kubeProxyDaemonSets returns kube-system/kube-proxy, else the
// DaemonSets of kube-system whose name mentions kube-proxy.
func kubeProxyDaemonSets(ctx context.Context, c *kubeapi.Client) ([]*appsv1.DaemonSet, error) {
	ds, err := kubeapi.Get[appsv1.DaemonSet](ctx, c, kubeapi.DaemonSets, "kube-system", "kube-proxy")
	if err == nil {
		return []*appsv1.DaemonSet{ds}, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("getting daemonset kube-system/kube-proxy: %w", err)
	}
	l, err := kubeapi.List[appsv1.DaemonSet](ctx, c, kubeapi.DaemonSets, "kube-system", kubeapi.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing daemonsets in kube-system: %w", err)
	}
	var out []*appsv1.DaemonSet
	for i := range l {
		if d := &l[i]; strings.Contains(d.Name, "kube-proxy") {
			out = append(out, d)
		}
	}
	return out, nil
}

func listPods(ctx context.Context, e *env, c *kubeapi.Client, w *Writer) ([]any, error) {
	selector := "k8s-app=kube-proxy"
	if ds, err := kubeProxyDaemonSets(ctx, c); err == nil && len(ds) > 0 && ds[0].Spec.Selector != nil {
		if sel, err := metav1.LabelSelectorAsSelector(ds[0].Spec.Selector); err == nil && !sel.Empty() {
			selector = sel.String()
		}
	}
	opts := kubeapi.ListOptions{LabelSelector: selector, FieldSelector: "spec.nodeName=" + e.nodeName}
	l, err := kubeapi.List[corev1.Pod](ctx, c, kubeapi.Pods, "kube-system", opts)
	if err != nil {
		return nil, fmt.Errorf("listing kube-proxy pods: %w", err)
	}
	if len(l) == 0 {
		w.Note("no kube-proxy pod on node %q: listing every kube-proxy pod", e.nodeName)
		opts.FieldSelector = ""
		if l, err = kubeapi.List[corev1.Pod](ctx, c, kubeapi.Pods, "kube-system", opts); err != nil {
			return nil, fmt.Errorf("listing kube-proxy pods: %w", err)
		}
	}
	w.Record().Path = "pods -n kube-system -l " + selector
	var out []any
	for i := range l {
		p := &l[i]
		e.addName("pod", p.Name)
		e.addName("node", p.Spec.NodeName)
		out = append(out, p)
	}
	return out, nil
}

// getNode gets this node's Node object: by kube-proxy's node name, else
// the Node whose addresses are this host's.
func getNode(ctx context.Context, e *env, c *kubeapi.Client, w *Writer) ([]any, error) {
	n, err := kubeapi.Get[corev1.Node](ctx, c, kubeapi.Nodes, "", e.nodeName)
	if apierrors.IsNotFound(err) {
		n = nil
		var l []corev1.Node
		l, err = kubeapi.List[corev1.Node](ctx, c, kubeapi.Nodes, "", kubeapi.ListOptions{LabelSelector: corev1.LabelHostname + "=" + e.nodeName})
		if err == nil && len(l) == 1 {
			n = &l[0]
		}
	}
	if err != nil {
		return nil, fmt.Errorf("getting node %s: %w", e.nodeName, err)
	}
	if n == nil {
		w.Note("no Node named %q (kube-proxy's node name)", e.nodeName)
		return nil, nil
	}
	e.addName("node", n.Name)
	e.addName("node", n.Labels[corev1.LabelHostname])
	var addrs []netip.Addr
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP || a.Type == corev1.NodeExternalIP {
			if ip, err := netip.ParseAddr(a.Address); err == nil {
				addrs = append(addrs, ip)
			}
		}
		if a.Type == corev1.NodeHostName || a.Type == corev1.NodeInternalDNS || a.Type == corev1.NodeExternalDNS {
			e.addName("node", a.Address)
		}
	}
	sort.Slice(addrs, func(i, j int) bool { return addrs[i].Less(addrs[j]) })
	e.mu.Lock()
	e.nodeAddrs = addrs
	e.mu.Unlock()
	return []any{n}, nil
}
