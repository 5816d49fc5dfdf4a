package klog

import (
	"regexp"
	"strings"
	"testing"
)

// hdr prefixes a payload with a klog header as kube-proxy prints it.
func hdr(sev byte, src, payload string) string {
	return string(sev) + "0302 08:15:01.123456       1 " + src + "] " + payload
}

func TestKnownPatterns(t *testing.T) {
	healthy := []string{
		hdr('I', "server_linux.go:144", `"Using iptables Proxier"`),
		hdr('I', "shared_informer.go:388", `"Caches are synced" controller="service config"`),
		hdr('I', "sysctls.go:204", `"Set sysctl" entry="net/netfilter/nf_conntrack_tcp_timeout_close_wait" value=3600`),
		hdr('I', "proxy_health.go:177", `"Starting healthz HTTP server" address="0.0.0.0:10256"`),
		hdr('I', "proxier.go:1238", `"Deleting stale nftables chains" ipFamily="IPv4" numChains=3`),
		hdr('I', "server.go:228", `"Successfully retrieved NodeIPs" NodeIPs=["10.0.0.21","fd10::21"]`),
		hdr('I', "server_others.go:185", `Using iptables Proxier.`),
		hdr('I', "conntrack.go:100", `Set sysctl 'net/netfilter/nf_conntrack_max' to 131072`),
	}
	tests := []struct {
		id       string
		positive []string
		negative []string
	}{
		{"list-watch-forbidden", []string{
			hdr('E', "reflector.go:138", `k8s.io/client-go/informers/factory.go:134: Failed to watch *v1.Service: failed to list *v1.Service: services is forbidden: User "system:serviceaccount:kube-system:kube-proxy" cannot list resource "services" in API group "" at the cluster scope`),
			hdr('E', "reflector.go:166", `"Unhandled Error" err="k8s.io/client-go/informers/factory.go:160: Failed to watch *v1.EndpointSlice: failed to list *v1.EndpointSlice: endpointslices.discovery.k8s.io is forbidden: User \"system:serviceaccount:kube-system:kube-proxy\" cannot list resource \"endpointslices\" in API group \"discovery.k8s.io\" at the cluster scope" logger="UnhandledError"`),
			hdr('E', "reflector.go:227", `"Failed to watch" err="failed to list *v1.Service: services is forbidden: User \"system:serviceaccount:kube-system:kube-proxy\" cannot list resource \"services\" in API group \"\" at the cluster scope" logger="UnhandledError" reflector="k8s.io/client-go/informers/factory.go:161" type="*v1.Service"`),
		}, []string{
			hdr('W', "reflector.go:539", `k8s.io/client-go/informers/factory.go:159: failed to list *v1.EndpointSlice: Get "https://10.0.0.10:6443/apis/discovery.k8s.io/v1/endpointslices?limit=500&resourceVersion=0": dial tcp 10.0.0.10:6443: connect: connection refused`),
		}},
		{"list-watch-tls", []string{
			hdr('E', "reflector.go:147", `k8s.io/client-go/informers/factory.go:159: Failed to watch *v1.Node: failed to list *v1.Node: Get "https://10.0.0.10:6443/api/v1/nodes?fieldSelector=metadata.name%3Dworker-1&limit=500&resourceVersion=0": tls: failed to verify certificate: x509: certificate signed by unknown authority`),
		}, []string{
			hdr('E', "event_broadcaster.go:253", `"Server rejected event (will not retry!)" err="Post \"https://10.0.0.10:6443/apis/events.k8s.io/v1/namespaces/default/events\": tls: failed to verify certificate: x509: certificate signed by unknown authority"`),
		}},
		{"list-watch-unreachable", []string{
			hdr('W', "reflector.go:539", `k8s.io/client-go/informers/factory.go:159: failed to list *v1.EndpointSlice: Get "https://10.0.0.10:6443/apis/discovery.k8s.io/v1/endpointslices?labelSelector=%21service.kubernetes.io%2Fheadless%2C%21service.kubernetes.io%2Fservice-proxy-name&limit=500&resourceVersion=0": dial tcp 10.0.0.10:6443: connect: connection refused`),
			hdr('E', "reflector.go:227", `"Failed to watch" err="failed to list *v1.Service: Get \"https://10.0.0.10:6443/api/v1/services?labelSelector=%21service.kubernetes.io%2Fheadless%2C%21service.kubernetes.io%2Fservice-proxy-name&limit=500&resourceVersion=0\": dial tcp 10.0.0.10:6443: i/o timeout" logger="UnhandledError" reflector="k8s.io/client-go/informers/factory.go:161" type="*v1.Service"`),
			hdr('E', "reflector.go:127", `k8s.io/client-go/informers/factory.go:134: Failed to list *v1beta1.EndpointSlice: Get "https://10.0.0.10:6443/apis/discovery.k8s.io/v1beta1/endpointslices?limit=500&resourceVersion=0": net/http: TLS handshake timeout`),
		}, []string{
			hdr('E', "reflector.go:138", `k8s.io/client-go/informers/factory.go:134: Failed to watch *v1.Service: failed to list *v1.Service: services is forbidden: User "system:serviceaccount:kube-system:kube-proxy" cannot list resource "services" in API group "" at the cluster scope`),
		}},
		{"list-watch-failed", []string{
			hdr('E', "reflector.go:138", `k8s.io/client-go/informers/factory.go:134: Failed to watch *v1.Service: the server could not find the requested resource`),
		}, []string{
			hdr('E', "reflector.go:138", `k8s.io/client-go/informers/factory.go:134: Failed to watch *v1.ConfigMap: unknown`),
		}},
		{"iptables-xtables-lock", []string{
			hdr('E', "proxier.go:1613", "\"Failed to execute iptables-restore\" err=<\n\texit status 4: Another app is currently holding the xtables lock. Stopped waiting after 5s.\n >"),
		}, []string{
			hdr('I', "iptables.go:212", `"Running" command="iptables-restore" arguments=["-w","5","-W","100000","--noflush","--counters"]`),
		}},
		{"iptables-option-unknown", []string{
			hdr('E', "proxier.go:1520", "\"Failed to execute iptables-restore\" err=<\n\texit status 2: iptables-restore v1.4.21: unknown option \"--xor-mark\"\n\tError occurred at line: 71\n\tTry `iptables-restore -h' or 'iptables-restore --help' for more information.\n > ipFamily=\"IPv4\""),
			hdr('E', "proxier.go:1520", `"Failed to execute iptables-restore" err="exit status 2: iptables-restore: unknown option \"--random-fully\"\nError occurred at line: 40\n"`),
		}, []string{
			hdr('E', "proxier.go:1520", `"Failed to execute iptables-restore" err="exit status 1: iptables-restore: line 71 failed"`),
		}},
		{"iptables-extension-missing", []string{
			hdr('E', "proxier.go:1520", "\"Failed to execute iptables-restore\" err=<\n\texit status 2: Warning: Extension statistic revision 0 not supported, missing kernel module?\n\tiptables-restore: line 83 failed\n >"),
			hdr('E', "proxier.go:1520", "\"Failed to execute iptables-restore\" err=<\n\texit status 2: iptables-restore v1.8.7 (legacy): Couldn't load match `recent':No such file or directory\n\tError occurred at line: 50\n >"),
		}, []string{
			hdr('E', "proxier.go:1522", "\"Failed to execute iptables-restore\" err=<\n\texit status 2: iptables-restore v1.8.9 (nf_tables): Couldn't load target `KUBE-SEP-Q3UCPZ54E6Q2R4UT':No such file or directory\n >"),
		}},
		{"nftables-feature-missing", []string{
			hdr('E', "proxier.go:1874", "\"nftables sync failed\" err=<\n\t/dev/stdin:12:1-80: Error: Could not process rule: Operation not supported\n\tadd rule ip kube-proxy services ip daddr . meta l4proto . th dport vmap @service-ips\n >"),
			hdr('E', "server.go:495", `"Error running ProxyServer" err="kube-proxy in nftables mode requires kernel 5.13 or later"`),
		}, []string{
			hdr('E', "proxier.go:1874", "\"nftables sync failed\" err=<\n\t/dev/stdin:27:1-60: Error: Could not process rule: No such file or directory\n >"),
		}},
		{"nft-command-failed", []string{
			"/dev/stdin:3:1-52: Error: Could not process rule: No such file or directory\nadd element ip kube-proxy service-ips { 10.96.0.10 . udp . 53 }\n^^^^",
			"netlink: Error: cache initialization failed: Protocol not supported",
		}, []string{
			hdr('E', "proxier.go:1874", `"Error syncing" err="x"`),
		}},
		{"iptables-restore-missing-chain", []string{
			hdr('E', "proxier.go:1522", "\"Failed to execute iptables-restore\" err=<\n\texit status 2: iptables-restore v1.8.9 (nf_tables): Couldn't load target `KUBE-SEP-Q3UCPZ54E6Q2R4UT':No such file or directory\n\t\n\tError occurred at line: 74\n\tTry `iptables-restore -h' or 'iptables-restore --help' for more information.\n > ipFamily=\"IPv4\""),
		}, []string{
			hdr('E', "proxier.go:1390", "\"Failed to execute iptables-restore\" err=<\n\texit status 2: iptables-restore v1.8.9 (nf_tables): Couldn't load target `CNI-FORWARD':No such file or directory\n >"),
		}},
		{"iptables-restore-line-failed", []string{
			"E0627 09:28:54.054930       1 proxier.go:1598] Failed to execute iptables-restore: exit status 1 (iptables-restore: line 86 failed\n)",
			hdr('E', "proxier.go:1388", `"Failed to execute iptables-restore" err="iptables-restore: input error on line 18: " ipFamily="IPv4" rules=[{"Line":15,"Data":":KUBE-SEP-IPS3Q3BZ5YTOBS5S - [0:0]"},{"Line":18,"Data":"-A KUBE-SERVICES -m comment --comment \"demo/hello:http cluster IP\" -m tcp -p tcp -d 10.43.53.45 --dport 80 -j KUBE-SVC-BAD"}]`),
		}, []string{
			hdr('I', "proxier.go:1360", `"Reloading service iptables data" numServices=16 numEndpoints=35 numFilterChains=6 numFilterRules=9 numNATChains=40 numNATRules=95`),
		}},
		{"iptables-restore-failed", []string{
			hdr('E', "proxier.go:1390", "\"Failed to execute iptables-restore\" err=<\n\texit status 111: iptables-restore v1.8.4 (legacy): iptables-restore: unable to initialize table 'nat'\n\t\n\tError occurred at line: 1\n >"),
			"E0302 08:15:01.123456       1 proxier.go:1667] Failed to execute iptables-restore: exit status 2 (iptables-restore v1.8.3 (legacy): invalid option -- '5'\n)",
		}, healthy},
		{"nftables-sync-failed", []string{
			hdr('E', "proxier.go:1874", "\"nftables sync failed\" err=<\n\t/dev/stdin:27:1-60: Error: Could not process rule: No such file or directory\n\tadd element ip kube-proxy service-ips { 10.96.0.10 . udp . 53 : goto service-FGJDYA2R-kube-system/kube-dns/udp/dns }\n\t^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n > ipFamily=\"IPv4\""),
			hdr('E', "proxier.go:1103", `"Failed to list nftables elements" err="netlink: Error: Could not process rule: Operation not permitted" containerName="service-ips" containerType="map" ipFamily="IPv6"`),
		}, healthy},
		{"nftables-cleanup-failed", []string{
			hdr('E', "proxier.go:1244", `"Unable to delete stale chains; will retry later" err="/dev/stdin:3:1-52: Error: Could not process rule: Device or resource busy" ipFamily="IPv6"`),
		}, healthy},
		{"ipvs-modules-missing", []string{
			"E0626 17:19:43.491383       1 server_others.go:127] Can't use the IPVS proxier: IPVS proxier will not be used because the following required kernel modules are not loaded: [ip_vs ip_vs_rr ip_vs_wrr ip_vs_sh]",
			hdr('E', "server_others.go:200", `"Can't use the IPVS proxier" err="IPVS proxier will not be used because the following required kernel modules are not loaded: [ip_vs_sh]"`),
			hdr('E', "run.go:74", `"command failed" err="can't use the IPVS proxier: ipvs not supported by the kernel"`),
		}, healthy},
		{"ipset-version", []string{
			hdr('E', "server.go:137", `"Error running ProxyServer" err="can't use the IPVS proxier: error getting ipset version, error: executable file not found in $PATH"`),
			hdr('E', "run.go:74", `"command failed" err="can't use the IPVS proxier: ipset version: v4.5 is less than min required version: v6.0"`),
		}, healthy},
		{"ipvs-unusable", []string{
			hdr('E', "run.go:72", `"command failed" err="can't use the IPVS proxier: netlink receive: no such file or directory"`),
		}, healthy},
		{"ipvs-sync-failed", []string{
			hdr('E', "proxier.go:1550", `"Failed to sync endpoint for service" err="IPVS virtual service does not exist" servicePortName="default/kubernetes:https" virtualServer="10.96.0.1:443/TCP"`),
			hdr('E', "proxier.go:1985", `"Failed to add IPVS service" err="file exists" serviceName="shop/cart:http"`),
			hdr('E', "proxier.go:2114", `"Failed to add destination" err="no such file or directory" newDest="10.244.1.7:8080"`),
			hdr('E', "proxier.go:2010", `"Failed to bind service address to dummy device" err="address already assigned" serviceName="shop/cart:http"`),
			"E0411 10:02:03.000001   1234 proxier.go:1180] Failed to sync endpoint for service: 10.96.0.10:53/UDP, err: IPVS virtual service does not exist",
		}, append(healthy, hdr('I', "proxier.go:1980", `"Adding new service" serviceName="shop/cart:http" virtualServer="10.96.7.7:80/TCP"`))},
		{"sysctl-failed", []string{
			hdr('E', "server.go:137", `"Error running ProxyServer" err="can't set sysctl net/ipv4/conf/all/route_localnet to 1: open /proc/sys/net/ipv4/conf/all/route_localnet: read-only file system"`),
			"F0302 08:15:01.123456       1 server.go:495] open /proc/sys/net/netfilter/nf_conntrack_max: permission denied",
			hdr('E', "run.go:74", `"command failed" err="write /sys/module/nf_conntrack/parameters/hashsize: operation not supported"`),
		}, healthy},
		{"node-info-failed", []string{
			"W0629 23:42:35.803553    3388 server.go:601] Failed to retrieve node info: nodes \"worker-3-1709\" not found",
			hdr('E', "node.go:152", `"Failed to retrieve node info" err="nodes \"worker-1\" not found"`),
			hdr('E', "node.go:133", `"Timed out waiting for node to exist" node="worker-1"`),
			hdr('E', "run.go:74", `"command failed" err="timeout waiting for PodCIDR allocation on node \"worker-1\""`),
		}, healthy},
		{"node-ip-loopback", []string{
			hdr('I', "server.go:731", `"Can't determine this node's IP, assuming loopback; if this is incorrect, please set the --bind-address flag"`),
			hdr('I', "server.go:763", `"Can't determine this node's IP, assuming 127.0.0.1; if this is incorrect, please set the --bind-address flag"`),
			"W0629 23:42:35.804527    3388 proxier.go:457] invalid nodeIP, initializing kube-proxy with 127.0.0.1 as nodeIP",
		}, healthy},
		{"conntrack-cleanup-failed", []string{
			hdr('E', "proxier.go:849", `"Failed to delete stale service connections" ip="10.96.0.10" err="error deleting connection tracking state for UDP service IP: 10.96.0.10, error: conntrack command returned: \"conntrack v1.4.6 (conntrack-tools): Operation failed: invalid parameters\\n\", error message: exit status 1"`),
			hdr('E', "cleanup.go:161", `"Failed to clear all conntrack entries" err="error deleting conntrack entries, error: operation not permitted" ipFamily="IPv4" entriesDeleted=0 took="1.207ms"`),
			hdr('E', "cleanup.go:56", `"Failed to list conntrack entries" err="netlink receive: operation not permitted"`),
		}, healthy},
		{"health-server-bind-failed", []string{
			hdr('E', "server.go:446", `"Healthz server failed" err="failed to start proxy healthz on 0.0.0.0:10256: listen tcp 0.0.0.0:10256: bind: address already in use"`),
			hdr('E', "server.go:558", `"Healthz server failed" err="failed to start proxier healthz on 0.0.0.0:10256: listen tcp 0.0.0.0:10256: bind: address already in use"`),
			hdr('E', "server.go:500", `"starting metrics server failed" err="listen tcp 127.0.0.1:10249: bind: address already in use" logger="UnhandledError"`),
		}, healthy},
		{"sync-failed", []string{
			"I0627 09:28:54.054962       1 proxier.go:879] Sync failed; retrying in 30s",
			hdr('I', "proxier.go:660", `"Sync failed" ipFamily="IPv4" retryingTime="30s"`),
		}, healthy},
		{"ipvs-deprecated", []string{
			hdr('E', "server_linux.go:196", `"The ipvs proxier is now deprecated and may be removed in a future release. Please use 'nftables' instead."`),
			hdr('E', "server_linux.go:193", `"The ipvs proxier has been deprecated and will be disabled by default in Kubernetes 1.40 and removed in Kubernetes 1.43. Migrate to the 'nftables' proxier instead."`),
		}, append([]string{hdr('I', "server_linux.go:191", `"Using ipvs Proxier"`)}, healthy...)},
		{"mode-defaulted", []string{
			hdr('E', "server_linux.go:141", `"No kube-proxy mode specified: defaulting to 'iptables'. Note that in Kubernetes 1.40 the default mode will switch to 'nftables'. If you wish to continue using 'iptables' mode, you must explicitly specify 'mode: iptables' in the kube-proxy config file, or '--proxy-mode iptables' on the kube-proxy command line."`),
		}, healthy},
		{"config-incomplete", []string{
			hdr('E', "server.go:265", "\"Kube-proxy configuration may be incomplete or incorrect\" err=\"nodePortAddresses is unset; NodePort connections will be accepted on all local IPs. Consider using `--nodeport-addresses primary`\""),
		}, healthy},
		{"apiserver-tls", []string{
			hdr('E', "event_broadcaster.go:253", `"Server rejected event (will not retry!)" err="Post \"https://10.0.0.10:6443/apis/events.k8s.io/v1/namespaces/default/events\": tls: failed to verify certificate: x509: certificate signed by unknown authority"`),
		}, healthy},
		{"apiserver-unreachable", []string{
			hdr('E', "event_broadcaster.go:270", `"Unable to write event (may retry after sleeping)" err="Post \"https://10.0.0.10:6443/apis/events.k8s.io/v1/namespaces/default/events\": dial tcp 10.0.0.10:6443: connect: connection refused"`),
		}, healthy},
		{"panic", []string{
			hdr('E', "runtime.go:79", `"Observed a panic" panic="runtime error: invalid memory address or nil pointer dereference" panicGoValue="\"invalid memory address or nil pointer dereference\""`),
			"panic: runtime error: index out of range [3] with length 3",
		}, healthy},
		{"startup-failed", []string{
			hdr('E', "run.go:74", `"command failed" err="failed complete: open /var/lib/kube-proxy/config.conf: no such file or directory"`),
			hdr('E', "server.go:137", `"Error running ProxyServer" err="unable to create proxier: failed to create nftables proxier: could not run nftables command: /bin/sh: nft: not found"`),
		}, healthy},
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		seen[tc.id] = true
		t.Run(tc.id, func(t *testing.T) {
			for _, line := range tc.positive {
				if got := matchLine(t, line); got != tc.id {
					t.Errorf("line matched %q, want %q:\n%s", got, tc.id, line)
				}
			}
			for _, line := range tc.negative {
				if got := matchLine(t, line); got == tc.id {
					t.Errorf("line matched %q, want another or none:\n%s", got, line)
				}
			}
		})
	}
	for _, p := range Known {
		if !seen[p.ID] {
			t.Errorf("pattern %s has no table row", p.ID)
		}
	}
	for _, line := range healthy {
		if got := matchLine(t, line); got != "" {
			t.Errorf("healthy line matched %q:\n%s", got, line)
		}
	}
}

// matchLine parses line as a log and returns the ID of the first entry's
// pattern; a line in no log format is matched as text.
func matchLine(t *testing.T, line string) string {
	t.Helper()
	var e *Entry
	if l, err := Parse("log.txt", []byte(line+"\n")); err == nil {
		if len(l.Entries) != 1 {
			t.Fatalf("%d entries for one log entry:\n%s", len(l.Entries), line)
		}
		e = l.Entries[0]
	} else {
		e = &Entry{Format: FormatText, Text: line}
	}
	var id string
	if p := Match(e); p != nil {
		id = p.ID
	}
	// The hints are only a filter: the first pattern whose regexp matches
	// must be the one Match returns.
	var slow string
	for i := range Known {
		if Known[i].Regexp.MatchString(e.Text) {
			slow = Known[i].ID
			break
		}
	}
	if slow != id {
		t.Errorf("hints change the result: %q with hints, %q without:\n%s", id, slow, line)
	}
	return id
}

func TestCatalogue(t *testing.T) {
	kebab := regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	ids := map[string]bool{}
	for _, p := range Known {
		if !kebab.MatchString(p.ID) || ids[p.ID] {
			t.Errorf("ID %q is not unique kebab-case", p.ID)
		}
		ids[p.ID] = true
		switch p.Severity {
		case "error", "warning", "info":
		default:
			t.Errorf("%s: severity %q", p.ID, p.Severity)
		}
		for _, h := range p.Hints {
			if h != strings.ToLower(h) {
				t.Errorf("%s: hint %q is not lower-case", p.ID, h)
			}
		}
		for _, s := range []string{p.Meaning, p.Advice} {
			if len(s) < 10 || !strings.HasSuffix(s, ".") {
				t.Errorf("%s: %q is not a full sentence", p.ID, s)
			}
		}
	}
}
