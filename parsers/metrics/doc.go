// Package metrics parses a kube-proxy /metrics page (port 10249), the
// Prometheus text exposition format, and reads kube-proxy's own metrics off
// it.
//
// The text itself is parsed by the Prometheus text parser
// (github.com/prometheus/common/expfmt) with legacy name validation, the
// names kube-proxy's registry emits. That parser reports families and
// samples but no positions, so [Parse] locates every sample afterwards by
// scanning the text for its name and label set; each [Metric], [Bucket] and
// [Quantile] keeps the line it came from, for evidence in findings. A saved
// `curl -i` response (HTTP status line and headers before the page) is
// accepted.
//
// [Page.KubeProxy] returns the typed view the checks use: rule-sync
// latency histograms with PromQL-style quantile estimates ([Quantile]),
// last sync and last queued timestamps, restore and nftables failure
// counters, rule counts per table, Local-policy services without local
// endpoints, pending changes, health-probe counters and conntrack
// reconciler metrics. Kubernetes 1.33 added an ip_family label to most of
// them; the view groups by that label, and puts the metrics of older pages
// (no label) under the family "". A metric missing from the page is a nil
// pointer, never a zero.
//
// [ParseLenient] reads a page cut short (a grep, a paste that stops inside
// a histogram): what is complete is read, and the series cut are kept,
// marked Partial and noted.
package metrics
