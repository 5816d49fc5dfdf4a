// Package model holds the data proxyscan analyses: the [Snapshot] of one
// node (its inputs, the Kubernetes objects, the kube-proxy configuration and
// version, and the captured data plane) and the derived view of Services the
// way kube-proxy sees them: [ServicePort] values with their [Endpoint]s,
// categorised by [Categorize] exactly as kube-proxy selects endpoints.
//
// The model owns meaning; the parsers own syntax. Parsed dumps are embedded
// as they are, so that evidence can always point at a file and line.
package model
