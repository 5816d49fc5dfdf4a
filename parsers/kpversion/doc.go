// Package kpversion parses kube-proxy versions: the output of
// `kube-proxy --version` ("Kubernetes v1.37.2"), and the version strings
// users and distributions write ("v1.28.0", "1.30", "v1.29.3-eks-abc",
// "v1.31.0+k3s1").
//
// The rest of proxyscan takes the kube-proxy version as an explicit
// parameter; this package gives it a comparable value and names the range of
// minors proxyscan models ([Oldest] to [Newest]).
package kpversion
