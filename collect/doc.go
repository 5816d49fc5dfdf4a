// Package collect snapshots a node into a proxyscan bundle: everything
// the analyzer can use about kube-proxy's data plane, read without changing
// anything.
//
// What is read is one declarative table, [Sources]: iptables-save and
// ip6tables-save of every backend present, ipvsadm, ipset, nft (text and
// JSON), ip addr and routes, the sysctls and kernel modules kube-proxy
// depends on, conntrack statistics and a bounded sample of NATed flows,
// kube-proxy's command line, version, configuration, metrics, health and
// log tail, and — when a kubeconfig is available — the Services,
// EndpointSlices, kube-proxy ConfigMap, DaemonSet and pods and this node's
// Node object. Each source has its own timeout and output cap and runs
// best effort, concurrently with the others: a missing binary, module,
// process or credential skips that source, a failure fails only that
// source, and the bundle's manifest.json (package parsers/manifest) says
// for every source how it was read and what happened.
//
// Collection is read-only and bounded: commands run through a [Runner]
// (each in its own process group, killed with its children at its
// timeout, stdout capped), kube-proxy's HTTP endpoints are only ever
// fetched on loopback, and a source whose reading would load a kernel
// module (ipvsadm without ip_vs, conntrack without nf_conntrack, ipset
// without ip_set) is skipped instead. Where ipvsadm or nft are missing,
// IPVS and nf_tables are read over netlink (Linux only) and rendered in the
// tools' formats.
//
// A bundle is written to a temporary name and renamed into place, so that
// an interrupted run leaves no partial bundle. With redaction (package
// collect/redact) addresses and names are replaced by consistent
// pseudonyms before anything is written out.
package collect
