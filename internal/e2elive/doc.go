// Package e2elive runs the real kube-proxy against a fake API server in
// network namespaces, breaks its data plane in known ways, and checks what
// `proxyscan collect` and `proxyscan analyze` make of each node.
//
// Its test is built only with the e2elive build tag: go test ./... never
// runs it. `make e2e-live` (as root) builds kube-proxy from the
// k8s.io/kubernetes module of testdata/upstream and proxyscan, then runs
// it with E2E_KUBE_PROXY and E2E_PROXYSCAN naming the two binaries.
//
// Each case gets its own network namespace, holding the node's interface
// (the Node's InternalIPs), the fake API server (serving the cluster of
// testdata/upstream/inputs/shapes: Services, EndpointSlices, the Node,
// ServiceCIDRs, the kube-proxy ConfigMap and DaemonSet) and kube-proxy
// itself, started with the configuration of the mode from the same inputs
// (kubeadm's), its kubeconfig and content type aside. Nothing runs in the
// host's network namespace; kube-proxy is killed when a case ends, and the
// namespace deleted.
package e2elive
