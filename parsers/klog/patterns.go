package klog

import (
	"regexp"
	"strings"
)

// Pattern is a known kube-proxy log message and what it means.
type Pattern struct {
	// ID is a stable kebab-case identifier.
	ID string `json:"id"`
	// Severity is how bad a match is: "error", "warning" or "info".
	Severity string `json:"severity"`
	// Regexp matches the entry's Text (the payload after the klog header:
	// the message and the key/values as printed, quotes escaped as \").
	Regexp *regexp.Regexp `json:"-"`
	// Hints are lower-case substrings of which the lower-cased text must
	// contain at least one for the pattern to be tried: a cheap filter in
	// front of the regular expression. Empty means always try.
	Hints []string `json:"-"`
	// Meaning says in one sentence what the message tells.
	Meaning string `json:"meaning"`
	// Advice says in one or two sentences what to do about it.
	Advice string `json:"advice"`
}

// listWatch matches the informer failures of client-go's reflector in
// every form kube-proxy 1.20–1.37 prints them: "Failed to watch *v1.Service:
// failed to list *v1.Service: ..." (unstructured), "\"Failed to watch\"
// err=\"failed to list *v1.Service: ...\"" (1.31+ structured) and the
// W-level "failed to list *v1.EndpointSlice: ..." lines.
const listWatch = `(?i)failed to (?:list|watch) \*v1(?:beta1)?\.(?:Service|EndpointSlice|Endpoints|Node|ServiceCIDR)\b`

// Known is the catalogue of kube-proxy log patterns, most specific first:
// [Match] returns the first that matches.
var Known = []Pattern{
	{
		ID:       "list-watch-forbidden",
		Hints:    []string{"failed to list", "failed to watch"},
		Severity: "error",
		Regexp:   regexp.MustCompile(listWatch + `.*(?:is forbidden|Forbidden)`),
		Meaning:  "kube-proxy's service account may not list or watch Services, EndpointSlices or its Node, so it never learns about changes and its rules go stale.",
		Advice:   "Check that the kube-proxy ServiceAccount is bound to the system:node-proxier ClusterRole (kubectl get clusterrolebinding -o wide | grep node-proxier) and that the role grants list and watch on services, endpointslices and nodes.",
	},
	{
		ID:       "list-watch-tls",
		Hints:    []string{"failed to list", "failed to watch"},
		Severity: "error",
		Regexp:   regexp.MustCompile(listWatch + `.*(?:x509: |tls: |certificate)`),
		Meaning:  "kube-proxy cannot list or watch API objects because the TLS handshake with the API server fails (untrusted or expired certificate, wrong CA in the kubeconfig).",
		Advice:   "Compare the CA in kube-proxy's kubeconfig (the kube-proxy ConfigMap or --kubeconfig) with the API server's serving certificate, and check the certificate's validity dates and SANs.",
	},
	{
		ID:       "list-watch-unreachable",
		Hints:    []string{"failed to list", "failed to watch"},
		Severity: "error",
		Regexp:   regexp.MustCompile(listWatch + `.*(?:connection refused|no route to host|i/o timeout|context deadline exceeded|TLS handshake timeout|connection reset by peer|EOF|network is unreachable|server has asked for the client to provide credentials|Unauthorized)`),
		Meaning:  "kube-proxy cannot reach the API server to list or watch Services or EndpointSlices, so rule updates stop until it reconnects.",
		Advice:   "Check the API server address in kube-proxy's kubeconfig and that the node can reach it (curl -k https://APISERVER/healthz from the node); an address that points at a Service ClusterIP cannot work before kube-proxy itself has programmed it.",
	},
	{
		ID:       "list-watch-failed",
		Hints:    []string{"failed to list", "failed to watch"},
		Severity: "error",
		Regexp:   regexp.MustCompile(listWatch),
		Meaning:  "kube-proxy's informer failed to list or watch Services, EndpointSlices or its Node.",
		Advice:   "Read the error after the message: an RBAC denial, an unreachable API server or a certificate problem each need their own fix; the informer retries with back-off meanwhile.",
	},
	{
		ID:       "iptables-xtables-lock",
		Hints:    []string{"xtables lock"},
		Severity: "error",
		Regexp:   regexp.MustCompile(`(?i)Another app is currently holding the xtables lock|xtables lock.*(?:timed out|timeout)`),
		Meaning:  "iptables-restore could not take the xtables lock because another program (a CNI plugin, firewalld, a second kube-proxy) held it, so the sync failed.",
		Advice:   "Find the other writer (lsof /run/xtables.lock, ps) and stop it from holding the lock for long; raising iptables.minSyncPeriod reduces how often kube-proxy competes for it.",
	},
	{
		ID:       "iptables-option-unknown",
		Hints:    []string{"unknown option"},
		Severity: "error",
		Regexp:   regexp.MustCompile(`(?i)unknown option \\?"?--[a-z0-9-]+`),
		Meaning:  "The iptables binary kube-proxy runs does not know an option of kube-proxy's rules (such as --xor-mark or --random-fully), so every restore fails: that iptables is older than this kube-proxy needs, or another iptables stands in for the one of the kube-proxy image.",
		Advice:   "Compare iptables --version inside the kube-proxy container with what the kube-proxy release ships; use the image's own iptables rather than one mounted from the host, in the same backend (legacy or nft) as the node's.",
	},
	{
		ID:       "iptables-extension-missing",
		Hints:    []string{"couldn't load", "not supported", "no chain/target/match", "can't initialize", "protocol not supported"},
		Severity: "error",
		Regexp:   regexp.MustCompile(`(?i)Couldn't load (?:match|target) \\?[` + "`" + `'"]?(?:statistic|recent|comment|conntrack|state|mark|MARK|MASQUERADE|DNAT|SNAT|REDIRECT|addrtype|multiport|set|nfacct|REJECT|CT|tcp|udp|sctp)\b|Extension \S+ revision \d+ not supported|No chain/target/match by that name|can't initialize ip6?tables table|Failed to initialize nft: Protocol not supported`),
		Meaning:  "iptables-restore failed because a match or target of kube-proxy's rules is not available: its kernel module (xt_statistic, xt_recent, xt_comment, xt_mark, xt_MASQUERADE, nf_nat, ...) is not loaded or not built, or the iptables backend lacks it.",
		Advice:   "Load the module the error names on the node (lsmod | grep -e xt_ -e nf_; modprobe MODULE) and make it persistent in /etc/modules-load.d; with iptables-nft, check that nf_tables and nft_compat are available too.",
	},
	{
		ID:       "nftables-feature-missing",
		Hints:    []string{"nft", "/dev/stdin"},
		Severity: "error",
		Regexp:   regexp.MustCompile(`(?is)(?:nft|nftables|/dev/stdin:\d+).*(?:Error: Could not process rule: Operation not supported|syntax error, unexpected|is too old|requires kernel|not supported by the kernel)`),
		Meaning:  "An nftables transaction of kube-proxy was rejected because the kernel or the nft tool lacks a feature kube-proxy's table needs (kube-proxy's nftables mode needs kernel 5.13 or later and nft 1.0.1 or later), so the kube-proxy table was not updated.",
		Advice:   "Check uname -r and nft --version on the node against those minimums; on an older node run kube-proxy in iptables mode instead.",
	},
	{
		ID:       "iptables-restore-missing-chain",
		Hints:    []string{"kube-"},
		Severity: "warning",
		Regexp:   regexp.MustCompile(`(?i)Couldn't load target .?KUBE-|Chain .?KUBE-[A-Z0-9-]+.? does not exist|Couldn't find target .?KUBE-`),
		Meaning:  "An iptables-restore referenced a KUBE- chain that is not in the kernel, typically a partial (incremental) sync after something else deleted kube-proxy's chains; kube-proxy counts a partial restore failure and falls back to a full sync.",
		Advice:   "Check sync_proxy_rules_iptables_partial_restore_failures_total; if it keeps rising, look for another tool flushing or deleting the nat/filter tables (iptables -F scripts, firewalld reloads).",
	},
	{
		ID:       "iptables-restore-line-failed",
		Hints:    []string{"tables-restore"},
		Severity: "error",
		Regexp:   regexp.MustCompile(`(?i)ip6?tables-restore(?:-legacy|-nft)?: (?:line \d+ failed|input error on line \d+)|iptables-restore.*line \d+ failed`),
		Meaning:  "The kernel rejected one rule of kube-proxy's iptables-restore payload, so the whole transaction was discarded and the rules were not updated.",
		Advice:   "Look at the rules= lines logged with the error to see the rejected rule; a missing match or target module (xt_comment, xt_statistic, xt_recent, xt_mark) or an iptables/kernel backend mismatch (legacy vs nft) are the usual causes.",
	},
	{
		ID:       "iptables-restore-failed",
		Hints:    []string{"tables-restore"},
		Severity: "error",
		Regexp:   regexp.MustCompile(`(?i)Failed to execute ip6?tables-restore`),
		Meaning:  "kube-proxy's iptables-restore of its rules failed, so the data plane was not updated in that sync.",
		Advice:   "Read the error text (exit status and iptables output); check sync_proxy_rules_iptables_restore_failures_total to see whether it persists, and that the iptables binary in the kube-proxy image uses the same backend (nft or legacy) as the rest of the node.",
	},
	{
		ID:       "nftables-sync-failed",
		Hints:    []string{"nftables sync failed", "failed to list"},
		Severity: "error",
		Regexp:   regexp.MustCompile(`(?i)nftables sync failed|Failed to (?:list nftables elements|list existing (?:chains|sets))`),
		Meaning:  "kube-proxy's nftables transaction failed, so the kube-proxy table was not updated in that sync.",
		Advice:   "Read the nft error in err=; check that the kernel supports the nftables features kube-proxy needs (kernel 5.13+, nft 1.0.1+) and sync_proxy_rules_nftables_sync_failures_total.",
	},
	{
		ID:       "nft-command-failed",
		Hints:    []string{"error: "},
		Severity: "error",
		Regexp:   regexp.MustCompile(`(?i)^(?:(?:/dev/stdin|\S+\.nft|<cmdline>):\d+:\d+(?:-\d+)?: |netlink: )?Error: `),
		Meaning:  "nft refused a command: the error nft itself prints, with the command it refused under it (an nft older than the ruleset it reads or loads, a kernel without a feature the command uses, a table or set that does not exist).",
		Advice:   "Read the error and the command under it; compare nft --version and uname -r on the node with what kube-proxy's nftables mode needs (nft 1.0.1 or later, kernel 5.13 or later).",
	},
	{
		ID:       "nftables-cleanup-failed",
		Hints:    []string{"stale chains"},
		Severity: "warning",
		Regexp:   regexp.MustCompile(`(?i)Unable to delete stale chains; will retry later`),
		Meaning:  "kube-proxy could not delete nftables chains of removed services; they stay until a later attempt succeeds.",
		Advice:   "Usually transient; if sync_proxy_rules_nftables_cleanup_failures_total keeps rising, read the err= text for what holds the chains.",
	},
	{
		ID:       "ipvs-modules-missing",
		Hints:    []string{"kernel modules", "ipvs not supported", "dummy vs"},
		Severity: "error",
		Regexp:   regexp.MustCompile(`(?i)required kernel modules are not loaded|ipvs not supported by the kernel|Dummy VS not created|Could not create dummy VS`),
		Meaning:  "The IPVS kernel modules (ip_vs and its schedulers) are missing, so kube-proxy cannot use ipvs mode (before 1.26 it fell back to iptables; since 1.26 it exits).",
		Advice:   "Load the modules on the node (modprobe ip_vs ip_vs_rr ip_vs_wrr ip_vs_sh nf_conntrack) and make them persistent in /etc/modules-load.d, or move to nftables mode.",
	},
	{
		ID:       "ipset-version",
		Hints:    []string{"ipset version"},
		Severity: "error",
		Regexp:   regexp.MustCompile(`(?i)ipset version: \S+ is less than min required version|error getting ipset version|no ipset version found`),
		Meaning:  "The ipset tool is missing or older than 6.0, which ipvs mode requires.",
		Advice:   "Use a kube-proxy image (or node) that ships ipset 6.0 or newer.",
	},
	{
		ID:       "ipvs-unusable",
		Hints:    []string{"ipvs proxier"},
		Severity: "error",
		Regexp:   regexp.MustCompile(`(?i)can't use the IPVS proxier`),
		Meaning:  "kube-proxy was configured for ipvs mode but its start-up probe failed; before 1.26 it fell back to iptables mode, since 1.26 it refuses to start.",
		Advice:   "Read the reason after the message (modules, ipset, scheduler) and fix that, or configure another mode explicitly.",
	},
	{
		ID:       "sysctl-failed",
		Hints:    []string{"sysctl", "/proc/sys/", "hashsize"},
		Severity: "error",
		Regexp:   regexp.MustCompile(`(?i)can't set sysctl|failed to set sysctl|open /proc/sys/\S+: (?:permission denied|read-only file system|no such file)|write /sys/module/nf_conntrack/parameters/hashsize`),
		Meaning:  "kube-proxy could not set a kernel parameter it needs (route_localnet, ip_forward, conntrack limits or timeouts), usually because /proc/sys is read-only in its container or the parameter is namespaced.",
		Advice:   "Run kube-proxy privileged with the host /proc/sys writable, or set the parameter on the node yourself and tell kube-proxy not to (conntrack.maxPerCore: 0 leaves nf_conntrack_max alone).",
	},
	{
		ID:       "node-info-failed",
		Hints:    []string{"node info", "node ip", "waiting for", "node informer"},
		Severity: "error",
		Regexp:   regexp.MustCompile(`(?i)Failed to retrieve node info|Failed to retrieve node IP|Timed out waiting for node to (?:exist|be assigned IPs)|timeout waiting for (?:node \S+ to exist|PodCIDR allocation)|can not sync node informer`),
		Meaning:  "kube-proxy could not read its Node object (wrong --hostname-override, the Node not registered yet, or no API access), so it cannot learn the node IPs and pod CIDRs.",
		Advice:   "Check that the Node exists under the name kube-proxy uses (hostnameOverride, NODE_NAME) and has addresses; with detectLocalMode NodeCIDR it also needs spec.podCIDRs.",
	},
	{
		ID:       "node-ip-loopback",
		Hints:    []string{"this node's ip", "invalid nodeip"},
		Severity: "warning",
		Regexp:   regexp.MustCompile(`(?i)Can't determine this node's IP, assuming (?:loopback|127\.0\.0\.1|::1)|invalid nodeIP, initializing kube-proxy with 127\.0\.0\.1`),
		Meaning:  "kube-proxy found no node IP and uses loopback instead, which breaks NodePorts and node-IP based rules.",
		Advice:   "Set bindAddress (or --bind-address) to the node IP, or fix the Node's status.addresses.",
	},
	{
		ID:       "conntrack-cleanup-failed",
		Hints:    []string{"conntrack", "connections", "connection tracking"},
		Severity: "warning",
		Regexp:   regexp.MustCompile(`(?i)Failed to (?:delete stale service connections|delete endpoint connections|clear all conntrack entries|list conntrack entries)|error deleting conntrack entries|error deleting connection tracking state|conntrack command returned|error looking for path of conntrack`),
		Meaning:  "kube-proxy could not delete stale conntrack entries, so UDP flows (DNS above all) can keep going to endpoints that no longer exist.",
		Advice:   "Check that the conntrack netlink interface (or, before 1.29, the conntrack binary) is usable from the kube-proxy container; flush stale flows by hand with conntrack -D -p udp --orig-dst SERVICE_IP meanwhile.",
	},
	{
		ID:       "health-server-bind-failed",
		Hints:    []string{"bind"},
		Severity: "error",
		Regexp:   regexp.MustCompile(`(?i)(?:Healthz server failed|failed to start proxy(?:ier)? healthz|metrics server failed).*(?:address already in use|bind: )|(?:healthz|metrics).*bind: address already in use`),
		Meaning:  "kube-proxy's health (10256) or metrics (10249) server could not bind its port, usually because another kube-proxy or another program already listens there; probes against it then fail.",
		Advice:   "Find the listener (ss -ltnp 'sport = :10256') and stop it, or change healthzBindAddress / metricsBindAddress.",
	},
	{
		ID:       "ipvs-sync-failed",
		Hints:    []string{"ipvs", "destination", "dummy device", "sync endpoint", "sync service"},
		Severity: "error",
		Regexp:   regexp.MustCompile(`(?i)Failed to (?:add|update|get) IPVS service|Failed to (?:add|update|delete) destination|Failed to list IPVS destinations|Failed to sync (?:endpoint for )?service|Failed to bind service address to dummy device`),
		Meaning:  "The IPVS proxier could not write a virtual server, a real server or the service address on kube-ipvs0 during a sync (\"IPVS virtual service does not exist\": the virtual server went away between two calls, usually removed by another program or an ipvsadm -C); the Service misses it until a later sync succeeds.",
		Advice:   "Compare ipvsadm -Ln with the Service named in the message, look for another program changing the IPVS table, and restart kube-proxy if the message repeats at every sync.",
	},
	{
		ID:       "sync-failed",
		Hints:    []string{"sync failed"},
		Severity: "error",
		Regexp:   regexp.MustCompile(`(?i)Sync failed`),
		Meaning:  "A rule sync failed and kube-proxy will retry after the sync period.",
		Advice:   "Look at the error logged just before (iptables-restore, nftables or IPVS); repeated failures leave the data plane stale.",
	},
	{
		ID:       "ipvs-deprecated",
		Hints:    []string{"deprecated"},
		Severity: "warning",
		Regexp:   regexp.MustCompile(`(?i)The ipvs proxier (?:has been|is now) deprecated`),
		Meaning:  "ipvs mode is deprecated since Kubernetes 1.35 and is planned to be disabled by default in 1.40 and removed in 1.43.",
		Advice:   "Plan a move to nftables mode (or iptables); check that nothing depends on IPVS-specific behaviour such as schedulers or kube-ipvs0.",
	},
	{
		ID:       "mode-defaulted",
		Hints:    []string{"mode specified"},
		Severity: "warning",
		Regexp:   regexp.MustCompile(`(?i)No kube-proxy mode specified: defaulting to`),
		Meaning:  "No proxy mode is configured, so kube-proxy uses iptables; 1.37 warns that the default will become nftables in 1.40.",
		Advice:   "Set mode explicitly in the KubeProxyConfiguration (mode: iptables or mode: nftables).",
	},
	{
		ID:       "config-incomplete",
		Hints:    []string{"may be incomplete"},
		Severity: "warning",
		Regexp:   regexp.MustCompile(`(?i)Kube-proxy configuration may be incomplete or incorrect`),
		Meaning:  "kube-proxy found a configuration that works but is likely not what was meant (for example nodePortAddresses unset, or a cluster CIDR of the wrong family).",
		Advice:   "Read the err= text and set the named field explicitly.",
	},
	{
		ID:       "apiserver-tls",
		Hints:    []string{"x509", "tls:", "certificate"},
		Severity: "error",
		Regexp:   regexp.MustCompile(`(?i)x509: certificate|tls: failed to verify certificate|certificate signed by unknown authority|certificate has expired`),
		Meaning:  "A TLS connection to the API server fails certificate verification.",
		Advice:   "Check the CA bundle in kube-proxy's kubeconfig against the API server certificate, and the certificate's expiry.",
	},
	{
		ID:       "apiserver-unreachable",
		Hints:    []string{"dial tcp", "handshake timeout", "client.timeout"},
		Severity: "error",
		Regexp:   regexp.MustCompile(`(?i)dial tcp \S+: (?:connect: (?:connection refused|no route to host|network is unreachable)|i/o timeout)|net/http: TLS handshake timeout|Client\.Timeout exceeded`),
		Meaning:  "kube-proxy cannot connect to the API server.",
		Advice:   "Check the API server address in kube-proxy's kubeconfig and the network path from the node to it.",
	},
	{
		ID:       "panic",
		Hints:    []string{"panic", "goroutine"},
		Severity: "error",
		Regexp:   regexp.MustCompile(`(?i)Observed a panic|^panic: |goroutine \d+ \[running\]`),
		Meaning:  "kube-proxy panicked.",
		Advice:   "Collect the stack trace that follows and the kube-proxy version; look for a matching upstream issue or upgrade.",
	},
	{
		ID:       "startup-failed",
		Hints:    []string{"proxyserver", "command failed", "create proxier", "failed complete", "failed validate"},
		Severity: "error",
		Regexp:   regexp.MustCompile(`(?i)Error running ProxyServer|"command failed"|unable to create proxier|failed complete: |failed validate: `),
		Meaning:  "kube-proxy failed to start and exited.",
		Advice:   "Read the err= text: an invalid configuration, a missing kernel feature for the chosen mode or no API access are the usual causes; the pod restarts in CrashLoopBackOff until it is fixed.",
	},
}

// Match returns the first pattern of [Known] that matches the entry, or
// nil. Entries of unknown format are matched too, so that the
// continuation of a stack trace or a pasted error still counts.
func Match(e *Entry) *Pattern { return matchLower(e, strings.ToLower(e.Text)) }

// matchLower is Match with the entry's text lower-cased.
func matchLower(e *Entry, lower string) *Pattern {
	for i := range Known {
		p := &Known[i]
		if !p.hinted(lower) {
			continue
		}
		if p.Regexp.MatchString(e.Text) {
			return p
		}
	}
	return nil
}

func (p *Pattern) hinted(lower string) bool {
	if len(p.Hints) == 0 {
		return true
	}
	for _, h := range p.Hints {
		if strings.Contains(lower, h) {
			return true
		}
	}
	return false
}

// Finding is an entry that matched a known pattern.
type Finding struct {
	// Pattern is the first pattern of [Known] that matched.
	Pattern *Pattern `json:"pattern"`
	// Entry is the matching entry.
	Entry *Entry `json:"entry"`
}

// Matches returns the entries of l that match a known pattern, in file
// order, each with the first pattern it matches.
func (l *Log) Matches() []Finding {
	var out []Finding
	for _, e := range l.Entries {
		if p := Match(e); p != nil {
			out = append(out, Finding{Pattern: p, Entry: e})
		}
	}
	return out
}
