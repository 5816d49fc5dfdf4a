package kpconfig

import (
	"fmt"
	"net"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/kube-proxy/config/v1alpha1"
	netutils "k8s.io/utils/net"

	"github.com/proxyscan/proxyscan/parsers/kpversion"
)

// Ports kube-proxy serves on by default (pkg/cluster/ports).
const (
	HealthzPort = 10256
	MetricsPort = 10249
)

// OOMScoreAdj is kube-proxy's default oom_score_adj (pkg/kubelet/qos).
const OOMScoreAdj = -999

// Defaults applies to c what kube-proxy of version v applies before it
// validates and runs, and records each field it changes in c.Fields with
// OriginDefault (or OriginRuntime for what kube-proxy decides at start-up),
// keeping the line of a field that was written with a value kube-proxy
// treats as unset ("minSyncPeriod: 0s" becomes 1s).
//
// Mirrors pkg/proxy/apis/config/v1alpha1/defaults.go
// SetDefaults_KubeProxyConfiguration of v1.20–v1.37 (unchanged apart from
// localhostNodePorts 1.26+, udpIdleTimeout until 1.25, logging 1.28+ and
// the nftables section 1.29+), then cmd/kube-proxy/app platformApplyDefaults
// (server_others.go 1.28–1.30, server_linux.go 1.31–1.37; before 1.28 the
// same choices were made at start-up): mode "" is iptables, detectLocalMode
// "" is ClusterCIDR, and from 1.31 an empty nodePortAddresses in nftables
// mode is ["primary"]. An empty ipvs.scheduler in ipvs mode is "rr", which
// the ipvs proxier chooses (pkg/proxy/ipvs/proxier.go NewProxier).
//
// Defaults is idempotent; Linux only (winkernel is left alone).
func Defaults(c *Config, v kpversion.Version) { applyDefaults(c, v, true) }

// applyDefaults applies the scheme defaults, and with platform the
// start-up choices too.
func applyDefaults(c *Config, v kpversion.Version, platform bool) {
	if c.Fields == nil {
		c.Fields = map[string]*FieldInfo{}
	}
	k := &c.Config
	m := v.Minor
	if v.Major > 1 {
		m = kpversion.NewestMinor
	}
	set := func(path string, origin Origin, note string) {
		fi := c.Fields[path]
		if fi == nil {
			fi = &FieldInfo{Path: path, Pos: c.Pos}
			fi.Pos.Path = ""
			c.Fields[path] = fi
		} else if fi.Origin == OriginFile || fi.Origin == OriginFlag {
			note = fmt.Sprintf("%q is treated as unset: %s", fi.Raw, note)
		}
		fi.Origin, fi.Note = origin, note
	}
	def := func(path, note string) { set(path, OriginDefault, note) }
	durDefault := func(path string, d *metav1.Duration, val time.Duration) {
		if d.Duration == 0 {
			d.Duration = val
			def(path, "defaulted to "+d.Duration.String())
		}
	}
	int32Default := func(path string, p **int32, val int32) {
		if *p == nil {
			x := val
			*p = &x
			def(path, "defaulted to "+strconv.Itoa(int(val)))
		}
	}

	if k.BindAddress == "" {
		k.BindAddress = "0.0.0.0"
		def("bindAddress", "defaulted to 0.0.0.0")
	}
	healthz, metrics := defaultAddresses(k.BindAddress)
	if k.HealthzBindAddress == "" {
		k.HealthzBindAddress = net.JoinHostPort(healthz, strconv.Itoa(HealthzPort))
		def("healthzBindAddress", "defaulted to "+k.HealthzBindAddress)
	} else if a := AppendPortIfNeeded(k.HealthzBindAddress, HealthzPort); a != k.HealthzBindAddress {
		k.HealthzBindAddress = a
		def("healthzBindAddress", "port 10256 appended: "+a)
	}
	if k.MetricsBindAddress == "" {
		k.MetricsBindAddress = net.JoinHostPort(metrics, strconv.Itoa(MetricsPort))
		def("metricsBindAddress", "defaulted to "+k.MetricsBindAddress)
	} else if a := AppendPortIfNeeded(k.MetricsBindAddress, MetricsPort); a != k.MetricsBindAddress {
		k.MetricsBindAddress = a
		def("metricsBindAddress", "port 10249 appended: "+a)
	}
	int32Default("oomScoreAdj", &k.OOMScoreAdj, OOMScoreAdj)
	durDefault("iptables.syncPeriod", &k.IPTables.SyncPeriod, 30*time.Second)
	durDefault("iptables.minSyncPeriod", &k.IPTables.MinSyncPeriod, time.Second)
	if m >= 26 && k.IPTables.LocalhostNodePorts == nil {
		t := true
		k.IPTables.LocalhostNodePorts = &t
		def("iptables.localhostNodePorts", "defaulted to true")
	}
	durDefault("ipvs.syncPeriod", &k.IPVS.SyncPeriod, 30*time.Second)
	if m >= 29 {
		durDefault("nftables.syncPeriod", &k.NFTables.SyncPeriod, 30*time.Second)
		durDefault("nftables.minSyncPeriod", &k.NFTables.MinSyncPeriod, time.Second)
	}
	if m <= 25 && (c.UDPIdleTimeout == nil || c.UDPIdleTimeout.Duration == 0) {
		c.UDPIdleTimeout = &metav1.Duration{Duration: 250 * time.Millisecond}
		def("udpIdleTimeout", "defaulted to 250ms")
	}
	int32Default("conntrack.maxPerCore", &k.Conntrack.MaxPerCore, 32*1024)
	int32Default("conntrack.min", &k.Conntrack.Min, 128*1024)
	int32Default("iptables.masqueradeBit", &k.IPTables.MasqueradeBit, 14)
	if m >= 29 {
		int32Default("nftables.masqueradeBit", &k.NFTables.MasqueradeBit, 14)
	}
	if k.Conntrack.TCPEstablishedTimeout == nil {
		k.Conntrack.TCPEstablishedTimeout = &metav1.Duration{Duration: 24 * time.Hour}
		def("conntrack.tcpEstablishedTimeout", "defaulted to 24h0m0s")
	}
	if k.Conntrack.TCPCloseWaitTimeout == nil {
		k.Conntrack.TCPCloseWaitTimeout = &metav1.Duration{Duration: time.Hour}
		def("conntrack.tcpCloseWaitTimeout", "defaulted to 1h0m0s")
	}
	durDefault("configSyncPeriod", &k.ConfigSyncPeriod, 15*time.Minute)
	if k.ClientConnection.ContentType == "" {
		k.ClientConnection.ContentType = "application/vnd.kubernetes.protobuf"
		def("clientConnection.contentType", "defaulted to application/vnd.kubernetes.protobuf")
	}
	if k.ClientConnection.QPS == 0 {
		k.ClientConnection.QPS = 5
		def("clientConnection.qps", "defaulted to 5")
	}
	if k.ClientConnection.Burst == 0 {
		k.ClientConnection.Burst = 10
		def("clientConnection.burst", "defaulted to 10")
	}
	if k.FeatureGates == nil {
		k.FeatureGates = map[string]bool{}
	}
	if m >= 28 {
		before := k.Logging.DeepCopy()
		logsapi.SetRecommendedLoggingConfiguration(&k.Logging)
		if before.Format != k.Logging.Format {
			def("logging.format", "defaulted to "+k.Logging.Format)
		}
		if before.FlushFrequency.Duration != k.Logging.FlushFrequency.Duration {
			def("logging.flushFrequency", "defaulted to "+k.Logging.FlushFrequency.Duration.Duration.String())
		}
	}

	if platform {
		applyPlatformDefaults(c, v)
	}
}

// applyPlatformDefaults applies platformApplyDefaults and the start-up
// choices, and marks c as defaulted for v.
func applyPlatformDefaults(c *Config, v kpversion.Version) {
	k := &c.Config
	m := v.Minor
	if v.Major > 1 {
		m = kpversion.NewestMinor
	}
	set := func(path string, origin Origin, note string) {
		fi := c.Fields[path]
		if fi == nil {
			fi = &FieldInfo{Path: path, Pos: c.Pos}
			fi.Pos.Path = ""
			c.Fields[path] = fi
		} else if fi.Origin == OriginFile || fi.Origin == OriginFlag {
			note = fmt.Sprintf("%q is treated as unset: %s", fi.Raw, note)
		}
		fi.Origin, fi.Note = origin, note
	}
	if k.Mode == "" {
		k.Mode = v1alpha1.ProxyMode("iptables")
		set("mode", OriginRuntime, "defaulted to iptables")
	}
	if k.DetectLocalMode == "" {
		k.DetectLocalMode = v1alpha1.LocalMode("ClusterCIDR")
		set("detectLocalMode", OriginRuntime, "defaulted to ClusterCIDR")
	}
	if m >= 31 && k.Mode == "nftables" && len(k.NodePortAddresses) == 0 {
		k.NodePortAddresses = []string{"primary"}
		set("nodePortAddresses", OriginRuntime, `defaulted to ["primary"] in nftables mode`)
	}
	if k.Mode == "ipvs" && k.IPVS.Scheduler == "" {
		k.IPVS.Scheduler = "rr"
		set("ipvs.scheduler", OriginRuntime, "the ipvs proxier uses rr when unset")
	}
	c.DefaultedFor = v.MinorString()
}

// defaultAddresses mirrors getDefaultAddresses (defaults.go): the IPv4
// wildcard and loopback when bindAddress is an IPv4 address, the IPv6 pair
// otherwise (an unparsable bindAddress included).
func defaultAddresses(bindAddress string) (healthz, metrics string) {
	if netutils.ParseIPSloppy(bindAddress).To4() != nil {
		return "0.0.0.0", "127.0.0.1"
	}
	return "::", "::1"
}

// AppendPortIfNeeded mirrors pkg/proxy/util AppendPortIfNeeded: an address
// that already has a port, or is not an IP, is returned unchanged;
// otherwise the port is appended ("[ip]:port" for IPv6).
func AppendPortIfNeeded(addr string, port int32) string {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	if netutils.ParseIPSloppy(addr) == nil {
		return addr
	}
	return net.JoinHostPort(addr, strconv.Itoa(int(port)))
}
