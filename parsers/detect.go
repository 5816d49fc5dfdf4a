package parsers

import (
	"bytes"
	"regexp"
)

// Kind is the kind of an input file, recognised by content.
type Kind string

// The input kinds proxyscan recognises. The string values appear in reports
// ("inputs[].kind" in the JSON report) and are stable.
const (
	KindUnknown         Kind = "unknown"
	KindManifest        Kind = "manifest"          // bundle manifest.json
	KindIPTablesSave    Kind = "iptables-save"     // iptables-save / ip6tables-save, nft or legacy
	KindIPVSList        Kind = "ipvsadm"           // ipvsadm -Ln [--exact|--stats|--rate]
	KindIPVSSave        Kind = "ipvsadm-save"      // ipvsadm -Sn
	KindIPSetSave       Kind = "ipset-save"        // ipset save
	KindIPSetList       Kind = "ipset-list"        // ipset list
	KindNFTText         Kind = "nft-ruleset"       // nft list ruleset
	KindNFTJSON         Kind = "nft-json"          // nft -j list ruleset
	KindKube            Kind = "kube-objects"      // kubectl YAML/JSON export
	KindKubeProxyConfig Kind = "kube-proxy-config" // bare KubeProxyConfiguration
	KindMetrics         Kind = "metrics"           // kube-proxy /metrics text
	KindHealthz         Kind = "healthz"           // kube-proxy /healthz JSON
	KindLog             Kind = "kube-proxy-log"    // kube-proxy logs (klog, CRI or JSON)
	KindSysctl          Kind = "sysctl"            // sysctl -a style listing
	KindModules         Kind = "modules"           // /proc/modules or lsmod
	KindIPAddr          Kind = "ip-addr"           // ip addr
	KindIPRoute         Kind = "ip-route"          // ip route
	KindCmdline         Kind = "kube-proxy-cmdline"
	KindVersion         Kind = "kube-proxy-version"
	KindConntrack       Kind = "conntrack"       // conntrack -L
	KindConntrackStats  Kind = "conntrack-stats" // conntrack -S
)

// DetectSize is how many leading bytes of a file [Detect] looks at.
const DetectSize = 64 << 10

type detector struct {
	kind Kind
	ok   func(head []byte) bool
}

var (
	reIPTablesTable = guardLine(`(?m)^\*(filter|nat|mangle|raw|security)\s*$`, `*filter`, `*nat`, `*mangle`, `*raw`, `*security`)
	reIPVSList      = guard(`(?m)^[ \t]*(IP Virtual Server version \d|Prot LocalAddress:Port\b)`, `IP Virtual Server version `, `Prot LocalAddress:Port`)
	reIPVSSave      = guardLine(`(?m)^-A (-t|-u|-f|--sctp-service|--tcp-service|--udp-service|--fwmark-service) `, `-A -`)
	reIPSetSave     = guardLine(`(?m)^create \S+ (hash|bitmap|list):\S+`, `create `)
	reIPSetList     = guardLine(`(?m)^Name: \S+\s*\nType: (hash|bitmap|list):`, `Name: `)
	reNFTTable      = guardLine(`(?m)^table (ip|ip6|inet|arp|bridge|netdev) \S+ \{`, `table `)
	reNFTJSON       = regexp.MustCompile(`^\s*\{\s*"nftables"\s*:\s*\[`)
	reKubeYAMLKind  = guardLine(`(?m)^kind: *["']?([A-Za-z]+)`, `kind:`)
	reKubeYAMLAPI   = guardLine(`(?m)^(- )?apiVersion: *\S+`, `apiVersion:`, `- apiVersion:`)
	reKubeYAMLList  = guardLine(`(?m)^items:\s*$`, `items:`)
	reDescribeHead  = guardLine(`(?m)^Name:[ \t]+\S+[ \t]*\r?\nNamespace:[ \t]+\S+`, `Name:`)
	reDescribeData  = guardLine(`(?m)^Data[ \t]*\r?\n====[ \t]*\r?$`, `Data`)
	reMetrics       = regexp.MustCompile(`(?m)^(# (HELP|TYPE) \S+ |[a-z_:][a-zA-Z0-9_:]*(\{[^}]*\})? [-+0-9.eEInfNa]+( \d+)?$)`)
	reKlog          = regexp.MustCompile(`(?m)^(` + KubectlPrefix + `)?(\d{4}-\d\d-\d\dT\S+ ((stdout|stderr) [FP] )?|` + JournalPrefix + `)?[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+ +\d+ \S+:\d+\]`)
	reNFTError      = guard(`(?m)^(?:(?:/dev/stdin|\S+\.nft|<cmdline>):\d+:\d+(?:-\d+)?: |netlink: )Error: `, `Error: `)
	reJSONLog       = guard(`(?m)^(`+KubectlPrefix+`)?(\d{4}-\d\d-\d\dT\S+ ((stdout|stderr) [FP] )?)?\{"ts":[0-9.e+]+,.*"msg":`, `{"ts":`)
	reSysctl        = guard(`(?m)^((net|kernel|vm|fs|user|dev|abi|crypto|debug)[./][A-Za-z0-9_./@+-]+( = | =$|=)|/proc/sys/[A-Za-z0-9_./@+-]+(: ?| |\t)\S)`, `=`, `/proc/sys/`)
	reProcModules   = guard(`(?m)^[A-Za-z0-9_-]+ \d+ (\d+|-) (-|[A-Za-z0-9_,-]+,?) (Live|Loading|Unloading) 0x`, ` 0x`)
	reLsmod         = guardLine(`(?m)^Module\s+Size\s+Used by`, `Module`)
	reBuiltin       = guard(`(?m)\A(#[^\n]*\n)*kernel/[A-Za-z0-9_/.-]+\.ko\s*$`, `.ko`)
	reIPAddr        = guard(`(?m)^\d+: \S+: <[A-Z_,-]*> mtu \d+`, ` mtu `)
	reIPRoute       = guard(`(?m)^((unicast|local|broadcast|multicast|anycast|nat|blackhole|unreachable|prohibit|throw) )?(default|[0-9a-f.:]+(/\d+)?) (via|dev|proto|table|metric) \S+|^(blackhole|unreachable|prohibit|throw) [0-9a-f.:]+(/\d+)? *$`, ` via `, ` dev `, ` proto `, ` table `, ` metric `, `blackhole `, `unreachable `, `prohibit `, `throw `)
	reIPAddrBrief   = regexp.MustCompile(`^\S+ +(UP|DOWN|UNKNOWN|LOWERLAYERDOWN|DORMANT|NOTPRESENT|TESTING) +([0-9a-f.:]+/\d+ +)*[0-9a-f.:]+/\d+ *\r?$`)
	reIPAddrOneline = guard(`(?m)^\d+: \S+ +inet6? [0-9a-f.:]+(/\d+)? .*\\ +valid_lft `, `valid_lft`)
	reVersion       = regexp.MustCompile(`^\s*Kubernetes v\d+\.\d+`)
	reConntrack     = guard(`(?m)^(ipv4|ipv6)?\s*\d*\s*(tcp|udp|sctp|icmp|icmpv6|dccp|gre|unknown)\s+\d+\s+\d+\s.*src=`, `src=`)
	reConntrackStat = guardLine(`(?m)^cpu=\d+\s+found=\d+`, `cpu=`)
	reConntrackEnd  = guard(`(?m)^conntrack v[0-9.]+ \(conntrack-tools\): \d+ flow entries have been shown\.`, `(conntrack-tools)`)
)

// guarded is a regexp of detection tried only on a head that holds one of
// its literals, one of which every match holds: most heads hold none of
// them, and bytes.Contains rules a head out far faster than the regexp
// fails on it (a (?m)^ pattern steps through every byte of the 64 KiB a
// head may be; heads of several kinds go through most detectors).
type guarded struct {
	re   *regexp.Regexp
	lits [][]byte
	// line: every match starts a line with one of lits ((?m)^ then the
	// literal), so a literal elsewhere in a line does not count.
	line bool
}

// guard compiles expr, to be tried only on text holding one of lits.
func guard(expr string, lits ...string) *guarded {
	g := &guarded{re: regexp.MustCompile(expr)}
	for _, l := range lits {
		g.lits = append(g.lits, []byte(l))
	}
	return g
}

// guardLine compiles expr, whose every match starts a line with one of
// lits, to be tried only on text that has a line starting so.
func guardLine(expr string, lits ...string) *guarded {
	g := guard(expr, lits...)
	g.line = true
	return g
}

func (g *guarded) may(b []byte) bool {
	for _, l := range g.lits {
		if !g.line {
			if bytes.Contains(b, l) {
				return true
			}
			continue
		}
		if bytes.HasPrefix(b, l) {
			return true
		}
		for rest := b; ; {
			i := bytes.Index(rest, l)
			if i < 0 {
				break
			}
			if i > 0 && rest[i-1] == '\n' {
				return true
			}
			rest = rest[i+1:]
		}
	}
	return false
}

// Match reports whether b holds a match of the regexp.
func (g *guarded) Match(b []byte) bool { return g.may(b) && g.re.Match(b) }

// FindSubmatch is the regexp's FindSubmatch.
func (g *guarded) FindSubmatch(b []byte) [][]byte {
	if !g.may(b) {
		return nil
	}
	return g.re.FindSubmatch(b)
}

// KubectlPrefix is what kubectl logs --prefix prints before each line:
// "[pod/kube-proxy-7xk2p/kube-proxy] ".
const KubectlPrefix = `\[pod/[^/\]\s]+/[^/\]\s]+\] `

// JournalPrefix is what journalctl and systemctl status print before each
// line a service logged: "Feb 17 11:12:14 node-a kube-proxy[9234]: " (or
// the time in ISO form).
const JournalPrefix = `(?:[A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?) \S+ [A-Za-z0-9_.@/-]+(?:\[\d+\])?: ?`

// detectors is the ordered list of content detectors: the first that
// accepts the head wins, so more specific formats come first.
var detectors = []detector{
	{KindNFTJSON, func(h []byte) bool { return reNFTJSON.Match(h) }},
	{KindManifest, func(h []byte) bool {
		return jsonObjectWithKey(h, `"schema"`) && bytes.Contains(h, []byte(`"sources"`))
	}},
	{KindHealthz, func(h []byte) bool {
		b := httpBody(h)
		return jsonObjectWithKey(b, `"lastUpdated"`) && bytes.Contains(b, []byte(`"currentTime"`)) &&
			!bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte(`{"ts":`))
	}},
	{KindKube, func(h []byte) bool {
		return jsonObjectWithKey(h, `"apiVersion"`) && bytes.Contains(h, []byte(`"kind"`)) &&
			!bytes.Contains(h, []byte(`"KubeProxyConfiguration"`))
	}},
	// kubectl describe configmap (its data may hold a KubeProxyConfiguration).
	{KindKube, func(h []byte) bool { return KubectlDescribed(h) && DescribedData(h) }},
	{KindKubeProxyConfig, func(h []byte) bool {
		if jsonObjectWithKey(h, `"apiVersion"`) {
			return bytes.Contains(h, []byte(`"KubeProxyConfiguration"`))
		}
		m := reKubeYAMLKind.FindSubmatch(h)
		return m != nil && string(m[1]) == "KubeProxyConfiguration"
	}},
	{KindIPTablesSave, func(h []byte) bool {
		return reIPTablesTable.Match(h) || bytes.HasPrefix(h, []byte("# Generated by iptables-save")) ||
			bytes.HasPrefix(h, []byte("# Generated by ip6tables-save"))
	}},
	{KindIPVSList, func(h []byte) bool {
		return reIPVSList.Match(h) || bytes.HasPrefix(bytes.TrimLeft(h, " \t\r\n"), []byte("Timeout (tcp tcpfin udp):"))
	}},
	{KindIPVSSave, func(h []byte) bool { return reIPVSSave.Match(h) }},
	{KindIPSetSave, func(h []byte) bool { return reIPSetSave.Match(h) }},
	{KindIPSetList, func(h []byte) bool { return reIPSetList.Match(h) }},
	{KindNFTText, func(h []byte) bool { return reNFTTable.Match(h) }},
	{KindKube, func(h []byte) bool {
		return reKubeYAMLAPI.Match(h) && (reKubeYAMLKind.Match(h) || reKubeYAMLList.Match(h))
	}},
	{KindVersion, func(h []byte) bool { return reVersion.Match(h) && bytes.Count(h, []byte("\n")) <= 2 }},
	{KindCmdline, isCmdline},
	{KindConntrackStats, func(h []byte) bool { return reConntrackStat.Match(h) }},
	{KindConntrack, func(h []byte) bool { return reConntrack.Match(h) || reConntrackEnd.Match(h) }},
	{KindLog, func(h []byte) bool { return reKlog.Match(h) || reJSONLog.Match(h) || reNFTError.Match(h) }},
	{KindMetrics, func(h []byte) bool {
		return bytes.Contains(h, []byte("kubeproxy_")) && reMetrics.Match(h)
	}},
	{KindSysctl, func(h []byte) bool { return reSysctl.Match(h) }},
	{KindModules, func(h []byte) bool {
		return reProcModules.Match(h) || reLsmod.Match(h) || reBuiltin.Match(h) || headerlessLsmod(h)
	}},
	{KindIPAddr, func(h []byte) bool {
		return reIPAddr.Match(h) || reIPAddrOneline.Match(h) || briefAddr(h) ||
			jsonObjectWithKey(h, `"ifindex"`) && bytes.Contains(h, []byte(`"ifname"`))
	}},
	{KindIPRoute, func(h []byte) bool { return reIPRoute.Match(h) }},
}

// briefAddr reports whether h starts with a line of `ip -br addr` that
// holds an address (the loopback's, the first, always does).
func briefAddr(h []byte) bool {
	for len(h) > 0 {
		var line []byte
		line, h, _ = bytes.Cut(h, []byte("\n"))
		if len(bytes.TrimSpace(line)) > 0 {
			return reIPAddrBrief.Match(line)
		}
	}
	return false
}

// reLsmodLine is a line of lsmod: name, size, reference count, users and
// an optional marker.
var reLsmodLine = regexp.MustCompile(`^[A-Za-z0-9_-]+\s+\d+\s+\d+(\s+[A-Za-z0-9_,-]+)?(\s+\[[a-z]+\])?\s*$`)

// netfilterModule matches the names of the netfilter and IPVS modules
// kube-proxy depends on.
var netfilterModule = regexp.MustCompile(`(?m)^(ip_vs|nf_|nft_|xt_|iptable_|ip6table_|ip_tables|ip6_tables|x_tables|br_netfilter|nfnetlink)`)

// headerlessLsmod reports whether h is lsmod output without its "Module
// Size Used by" header, as `lsmod | grep ip_vs` prints it: every whole
// line (blank lines and comments aside) an lsmod line, one of them a
// netfilter or IPVS module.
func headerlessLsmod(h []byte) bool {
	lines := bytes.Split(h, []byte("\n"))
	if len(lines) > 1 && len(h) >= DetectSize {
		lines = lines[:len(lines)-1] // cut in the head
	}
	n, netfilter := 0, false
	for _, l := range lines {
		l = bytes.TrimRight(l, "\r")
		if len(bytes.TrimSpace(l)) == 0 || l[0] == '#' {
			continue
		}
		if !reLsmodLine.Match(l) {
			return false
		}
		n++
		netfilter = netfilter || netfilterModule.Match(l)
	}
	return n > 0 && netfilter
}

// Detect returns the kind of an input from its first bytes (at most
// [DetectSize] are looked at), or [KindUnknown].
func Detect(head []byte) Kind {
	if len(head) > DetectSize {
		head = head[:DetectSize]
	}
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")) // UTF-8 BOM
	if len(bytes.TrimSpace(head)) == 0 || bytes.IndexByte(head, 0) >= 0 && !isCmdline(head) {
		return KindUnknown
	}
	for _, d := range detectors {
		if d.ok(head) {
			return d.kind
		}
	}
	return KindUnknown
}

// httpBody returns what follows the status line and headers of a saved
// HTTP response (`curl -i`), or h itself when it does not start with one.
func httpBody(h []byte) []byte {
	if !bytes.HasPrefix(h, []byte("HTTP/")) {
		return h
	}
	if i := bytes.Index(h, []byte("\r\n\r\n")); i >= 0 {
		return h[i+4:]
	}
	if i := bytes.Index(h, []byte("\n\n")); i >= 0 {
		return h[i+2:]
	}
	return nil
}

// jsonObjectWithKey reports whether h looks like a JSON object (or a JSON
// array of objects) containing key.
func jsonObjectWithKey(h []byte, key string) bool {
	t := bytes.TrimLeft(h, " \t\r\n")
	if len(t) == 0 || (t[0] != '{' && t[0] != '[') {
		return false
	}
	return bytes.Contains(t, []byte(key))
}

// isCmdline recognises a kube-proxy command line: /proc/PID/cmdline
// (NUL-separated) or the same on one line separated by spaces.
func isCmdline(h []byte) bool {
	t := bytes.ReplaceAll(h, []byte("\\\n"), []byte{' '}) // shell line continuations
	t = bytes.TrimSpace(bytes.ReplaceAll(t, []byte{0}, []byte{' '}))
	if bytes.Count(t, []byte("\n")) > 0 || len(t) == 0 {
		return false
	}
	fields := bytes.Fields(t)
	first := fields[0]
	if bytes.HasSuffix(first, []byte("hyperkube")) && len(fields) > 1 &&
		(string(fields[1]) == "kube-proxy" || string(fields[1]) == "proxy") {
		return true
	}
	return bytes.HasSuffix(first, []byte("kube-proxy")) || bytes.HasPrefix(t, []byte("--")) && bytes.Contains(t, []byte("--proxy-mode")) ||
		bytes.HasPrefix(t, []byte("--")) && bytes.Contains(t, []byte("--config"))
}

// KubectlDescribed reports whether head holds the header kubectl describe
// prints of an object (a Name line, then its Namespace).
func KubectlDescribed(head []byte) bool { return reDescribeHead.Match(head) }

// DescribedData reports whether head holds the Data section kubectl
// describe prints of a ConfigMap.
func DescribedData(head []byte) bool { return reDescribeData.Match(head) }
