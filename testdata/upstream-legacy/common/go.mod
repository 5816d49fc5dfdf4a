module github.com/proxyscan/proxyscan/testdata/upstream-legacy/common

go 1.26.0

// The Kubernetes modules come from the release module that builds this
// one: its require and replace lines pick the release.
require (
	k8s.io/api v0.20.15
	k8s.io/apimachinery v0.20.15
	k8s.io/apiserver v0.20.15
	k8s.io/klog/v2 v2.4.0
	k8s.io/kube-proxy v0.20.15
	k8s.io/kubernetes v1.20.15
	k8s.io/utils v0.0.0-20201110183641-67b214c5f920
	sigs.k8s.io/yaml v1.2.0
)
