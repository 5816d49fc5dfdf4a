// Package klog parses kube-proxy logs in the forms they reach a ticket:
//
//   - klog text lines, structured ("I0302 08:15:00.123456       1 server.go:650] \"Using ipvs Proxier\" ipFamily=\"IPv4\"")
//     or unstructured as older releases wrote them ("... server_others.go:185] Using iptables Proxier."),
//     including klog's multi-line values (key=<, tab-indented lines, " >")
//     and unstructured messages that run over several lines;
//   - the same wrapped in the CRI log format of /var/log/pods
//     ("2026-03-02T08:15:00.123456789Z stderr F ..."), with partial (P)
//     records joined to their final (F) record;
//   - lines prefixed by `kubectl logs --timestamps`, and by `kubectl logs
//     --prefix` ("[pod/kube-proxy-7xk2p/kube-proxy] ", before the
//     timestamp when both are given), whose pod and container each
//     entry keeps ([Log.Pods]);
//   - the JSON logging format of component-base
//     ({"ts":1740902100123.456,"caller":"app/server.go:650","msg":"...","v":0,...}).
//
// Each [Entry] keeps its line range and raw text, the severity, time,
// thread id, source location, message and key/value pairs. [Known] is a
// catalogue of kube-proxy error patterns (RBAC and API-server failures,
// iptables-restore and nftables sync failures, IPVS prerequisites, sysctl
// and conntrack failures, health server binding, deprecation warnings);
// [Match] and [Log.Matches] find them. [ParseKeptReader] reads a log of
// any size from a reader in a buffer of its own, keeping the entries
// [ParseKept] keeps.
package klog
