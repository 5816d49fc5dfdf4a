package kpconfig

import (
	"fmt"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
)

// FieldError is one value kube-proxy rejects.
type FieldError struct {
	// Path is kube-proxy's own field path for the error, as it prints it:
	// "KubeProxyConfiguration.KubeProxyIPTablesConfiguration.SyncPeriod".
	Path string `json:"path"`
	// Field is the YAML path of the value the error is about:
	// "iptables.syncPeriod". When kube-proxy reports a comparison on one
	// field (minSyncPeriod > syncPeriod is reported on SyncPeriod), Field is
	// the field kube-proxy names.
	Field string `json:"field"`
	// Type is the kind of error: "Invalid value", "Unsupported value",
	// "Forbidden", "Duplicate value", "Required value".
	Type field.ErrorType `json:"type"`
	// Value is the offending value as kube-proxy prints it.
	Value any `json:"value,omitempty"`
	// Message is kube-proxy's detail text.
	Message string `json:"message"`
	// Pos is the line of the field (or of its nearest written parent, or of
	// the flag that set it).
	Pos parsers.Pos `json:"pos"`
	// Startup is true for an error kube-proxy reports while starting rather
	// than from its configuration validation (detect-local-mode before 1.28).
	Startup bool `json:"startup,omitempty"`
}

// KubeProxyError returns the error as kube-proxy prints it:
// `KubeProxyConfiguration.IPTablesConfiguration.SyncPeriod: Invalid value:
// "0s": must be greater than 0`.
func (e FieldError) KubeProxyError() string {
	fe := field.Error{Type: e.Type, Field: e.Path, BadValue: e.Value, Detail: e.Message}
	if e.Type == field.ErrorTypeForbidden || e.Type == field.ErrorTypeRequired {
		fe.BadValue = nil
	}
	return fe.Error()
}

// Error implements error: the position, then kube-proxy's text.
func (e FieldError) Error() string { return e.Pos.String() + ": " + e.KubeProxyError() }

// validator holds the state of one Validate run.
type validator struct {
	c    *Config
	m    int
	errs []FieldError
}

func (v *validator) add(t field.ErrorType, path, yamlPath string, value any, msg string) {
	v.errs = append(v.errs, FieldError{Path: path, Field: yamlPath, Type: t, Value: value, Message: msg, Pos: v.c.PosOf(yamlPath)})
}

func (v *validator) invalid(path, yamlPath string, value any, msg string) {
	v.add(field.ErrorTypeInvalid, path, yamlPath, value, msg)
}

// Validate returns what kube-proxy of version ver rejects in c, in the
// order kube-proxy reports it. It validates a defaulted copy of c (see
// [Defaults]), as kube-proxy validates after defaulting, unless c was
// already defaulted for that version (by [Defaults] or [Effective], whose
// flag values must not be defaulted again); c is not changed.
//
// Mirrors pkg/proxy/apis/config/validation/validation.go Validate of each
// release (read at v1.20.x–v1.30.3 and v1.37.2; 1.31–1.36 follow the 1.31
// restructuring of PR #126293 and the nodePortAddresses "primary" rule of
// PR #123105, and 1.37 adds the keywords of PR #138427):
//
//   - iptables.masqueradeBit in [0, 31], always.
//   - 1.20–1.30: iptables.syncPeriod > 0, iptables.minSyncPeriod >= 0 and
//     <= syncPeriod (reported on SyncPeriod) in every mode; ipvs.* only in
//     ipvs mode; nftables.* only in nftables mode (1.29–1.30).
//   - 1.31–1.37: the sync periods of the mode's own section only, reported
//     as KubeProxyConfiguration.SyncPeriod / MinSyncPeriod;
//     nftables.masqueradeBit in nftables mode.
//   - ipvs mode: timeouts >= 0, excludeCIDRs are CIDRs, scheduler in the
//     list of 1.20–1.26 (no "mh"); any scheduler from 1.27.
//   - conntrack counts and timeouts >= 0 (udpTimeout, udpStreamTimeout
//     from 1.29); oomScoreAdj in [-1000, 1000]; configSyncPeriod > 0;
//     clientConnection.burst >= 0; udpIdleTimeout > 0 (1.20–1.25).
//   - mode: the values of that release (userspace until 1.25, nftables from
//     1.29 with NFTablesProxyMode, by default from 1.31, always from 1.33,
//     ipvs in 1.37 only with KubeProxyIPVS).
//   - bindAddress is an IP; healthzBindAddress (if set) and
//     metricsBindAddress are IP:port with a port in 1–65535.
//   - clusterCIDR: one CIDR or a dual-stack pair (1.20–1.22 a pair only
//     with IPv6DualStack; 1.20 also wants EndpointSlice with it); from 1.31
//     only checked with detectLocalMode ClusterCIDR.
//   - portRange parses (1.20–1.30); nodePortAddresses are CIDRs, "primary"
//     alone (1.31–1.36), or the keywords primary, localhost, all, each once
//     (1.37); showHiddenMetricsForVersion is empty or the previous minor.
//   - detectLocalMode is one of the known values (a start-up error before
//     1.28, validated from 1.28); the interface of BridgeInterface /
//     InterfaceNamePrefix is not empty (1.24+).
//   - featureGates are known to the release and locked gates keep their
//     value (table [Gates]); logging (1.28+) as component-base/logs/api/v1
//     Validate.
//
// Linux only: Windows modes and winkernel are not validated.
func Validate(c *Config, ver kpversion.Version) []FieldError {
	d := c.Clone()
	if c.DefaultedFor != ver.MinorString() {
		Defaults(d, ver)
	}
	v := &validator{c: d, m: ver.Minor}
	if ver.Major > 1 {
		v.m = kpversion.NewestMinor
	}
	v.run(ver)
	return v.errs
}

const root = "KubeProxyConfiguration"

func (v *validator) run(ver kpversion.Version) {
	k := &v.c.Config
	m := v.m
	gates := k.FeatureGates

	v.featureGates()

	ipt := root + ".KubeProxyIPTablesConfiguration"
	if k.IPTables.MasqueradeBit != nil && (*k.IPTables.MasqueradeBit < 0 || *k.IPTables.MasqueradeBit > 31) {
		v.invalid(ipt+".MasqueradeBit", "iptables.masqueradeBit", k.IPTables.MasqueradeBit, "must be within the range [0, 31]")
	}
	if m <= 30 {
		v.syncPeriods(ipt, "iptables", k.IPTables.SyncPeriod, k.IPTables.MinSyncPeriod)
	}
	switch k.Mode {
	case "ipvs":
		p := root + ".KubeProxyIPVSConfiguration"
		if m <= 30 {
			v.syncPeriods(p, "ipvs", k.IPVS.SyncPeriod, k.IPVS.MinSyncPeriod)
		}
		v.nonNegative(p+".TCPTimeout", "ipvs.tcpTimeout", k.IPVS.TCPTimeout)
		v.nonNegative(p+".TCPFinTimeout", "ipvs.tcpFinTimeout", k.IPVS.TCPFinTimeout)
		v.nonNegative(p+".UDPTimeout", "ipvs.udpTimeout", k.IPVS.UDPTimeout)
		if m <= 26 {
			v.scheduler(p+".Scheduler.Scheduler", k.IPVS.Scheduler)
		}
		for i, cidr := range k.IPVS.ExcludeCIDRs {
			if _, _, err := netutils.ParseCIDRSloppy(cidr); err != nil {
				v.invalid(fmt.Sprintf("%s.ExcludeCidrs[%d]", p, i), fmt.Sprintf("ipvs.excludeCIDRs[%d]", i), cidr, "must be a valid CIDR")
			}
		}
	case "nftables":
		if m >= 29 {
			p := root + ".KubeProxyNFTablesConfiguration"
			if k.NFTables.MasqueradeBit != nil && (*k.NFTables.MasqueradeBit < 0 || *k.NFTables.MasqueradeBit > 31) {
				v.invalid(p+".MasqueradeBit", "nftables.masqueradeBit", k.NFTables.MasqueradeBit, "must be within the range [0, 31]")
			}
			if m <= 30 {
				v.syncPeriods(p, "nftables", k.NFTables.SyncPeriod, k.NFTables.MinSyncPeriod)
			}
		}
	}

	ct := root + ".KubeProxyConntrackConfiguration"
	oom := root + ".OOMScoreAdj"
	if m >= 31 {
		ct = root + ".KubeProxyLinuxConfiguration.KubeProxyConntrackConfiguration"
		oom = root + ".KubeProxyLinuxConfiguration.OOMScoreAdj"
	}
	if p := k.Conntrack.MaxPerCore; p != nil && *p < 0 {
		v.invalid(ct+".MaxPerCore", "conntrack.maxPerCore", p, "must be greater than or equal to 0")
	}
	if p := k.Conntrack.Min; p != nil && *p < 0 {
		v.invalid(ct+".Min", "conntrack.min", p, "must be greater than or equal to 0")
	}
	if p := k.Conntrack.TCPEstablishedTimeout; p != nil && p.Duration < 0 {
		v.invalid(ct+".TCPEstablishedTimeout", "conntrack.tcpEstablishedTimeout", p, "must be greater than or equal to 0")
	}
	if p := k.Conntrack.TCPCloseWaitTimeout; p != nil && p.Duration < 0 {
		v.invalid(ct+".TCPCloseWaitTimeout", "conntrack.tcpCloseWaitTimeout", p, "must be greater than or equal to 0")
	}
	if m >= 29 {
		v.nonNegative(ct+".UDPTimeout", "conntrack.udpTimeout", k.Conntrack.UDPTimeout)
		v.nonNegative(ct+".UDPStreamTimeout", "conntrack.udpStreamTimeout", k.Conntrack.UDPStreamTimeout)
	}
	if m >= 31 {
		v.oomScoreAdj(oom)
	}

	v.mode(gates)

	if k.ClientConnection.Burst < 0 {
		v.invalid(root+".ClientConnection.Burst", "clientConnection.burst", int64(k.ClientConnection.Burst), "must be greater than or equal to 0")
	}
	if m <= 30 {
		v.oomScoreAdj(oom)
		if m <= 25 && v.c.UDPIdleTimeout != nil && v.c.UDPIdleTimeout.Duration <= 0 {
			v.invalid(root+".UDPIdleTimeout", "udpIdleTimeout", *v.c.UDPIdleTimeout, "must be greater than 0")
		}
	}
	if k.ConfigSyncPeriod.Duration <= 0 {
		v.invalid(root+".ConfigSyncPeriod", "configSyncPeriod", k.ConfigSyncPeriod, "must be greater than 0")
	}
	if m >= 31 {
		sec := modeSection(string(k.Mode))
		sync, minSync := sectionPeriods(k, sec)
		if sync.Duration <= 0 {
			v.invalid(root+".SyncPeriod", sec+".syncPeriod", sync, "must be greater than 0")
		}
		if minSync.Duration < 0 {
			v.invalid(root+".MinSyncPeriod", sec+".minSyncPeriod", minSync, "must be greater than or equal to 0")
		}
		if minSync.Duration > sync.Duration {
			v.invalid(root+".SyncPeriod", sec+".syncPeriod", minSync, "must be greater than or equal to "+root+".MinSyncPeriod")
		}
	}
	if netutils.ParseIPSloppy(k.BindAddress) == nil {
		v.invalid(root+".BindAddress", "bindAddress", k.BindAddress, "not a valid textual representation of an IP address")
	}
	if k.HealthzBindAddress != "" {
		v.hostPort(root+".HealthzBindAddress", "healthzBindAddress", k.HealthzBindAddress)
	}
	v.hostPort(root+".MetricsBindAddress", "metricsBindAddress", k.MetricsBindAddress)

	if m <= 30 {
		if m == 20 && GateEnabled(gates, "IPv6DualStack", m) && !GateEnabled(gates, "EndpointSlice", m) {
			v.invalid(root+".FeatureGates", "featureGates", gates, "EndpointSlice feature flag must be turned on when turning on DualStack")
		}
		v.clusterCIDRLegacy(gates)
		if m >= 24 && m <= 27 {
			v.interfaces(root+".InterfaceName", root+".InterfacePrefix")
		}
		if _, err := utilnet.ParsePortRange(k.PortRange); err != nil {
			v.invalid(root+".PortRange", "portRange", k.PortRange, "must be a valid port range (e.g. 300-2000)")
		}
	}
	v.nodePortAddresses()
	v.showHiddenMetrics(ver)
	if m >= 24 && m <= 27 {
		// Mirrors getDetectLocalMode (server_others.go): checked at start-up.
		v.detectLocalModeStartup()
	}
	if m <= 23 {
		v.detectLocalModeStartup()
	}
	if m >= 28 {
		valid := []string{"ClusterCIDR", "NodeCIDR", "BridgeInterface", "InterfaceNamePrefix", ""}
		if !contains(valid, string(k.DetectLocalMode)) {
			fe := field.NotSupported(field.NewPath(root, "DetectLocalMode"), string(k.DetectLocalMode), valid)
			v.add(fe.Type, fe.Field, "detectLocalMode", string(k.DetectLocalMode), fe.Detail)
		}
		if m <= 30 {
			v.interfaces(root+".InterfaceName", root+".InterfacePrefix")
		} else {
			v.interfaces(root+".DetectLocalConfiguration.InterfaceName", root+".DetectLocalConfiguration.InterfacePrefix")
			if k.DetectLocalMode == "ClusterCIDR" && k.ClusterCIDR != "" {
				v.dualStackCIDRs(strings.Split(k.ClusterCIDR, ","))
			}
		}
		v.logging(gates)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func modeSection(mode string) string {
	switch mode {
	case "ipvs", "nftables":
		return mode
	}
	return "iptables"
}

func sectionPeriods(k *kpc, sec string) (metav1.Duration, metav1.Duration) {
	switch sec {
	case "ipvs":
		return k.IPVS.SyncPeriod, k.IPVS.MinSyncPeriod
	case "nftables":
		return k.NFTables.SyncPeriod, k.NFTables.MinSyncPeriod
	}
	return k.IPTables.SyncPeriod, k.IPTables.MinSyncPeriod
}

func (v *validator) syncPeriods(p, sec string, sync, minSync metav1.Duration) {
	if sync.Duration <= 0 {
		v.invalid(p+".SyncPeriod", sec+".syncPeriod", sync, "must be greater than 0")
	}
	if minSync.Duration < 0 {
		v.invalid(p+".MinSyncPeriod", sec+".minSyncPeriod", minSync, "must be greater than or equal to 0")
	}
	if minSync.Duration > sync.Duration {
		v.invalid(p+".SyncPeriod", sec+".syncPeriod", minSync, "must be greater than or equal to "+p+".MinSyncPeriod")
	}
}

func (v *validator) nonNegative(p, yamlPath string, d metav1.Duration) {
	if d.Duration < 0 {
		v.invalid(p, yamlPath, d, "must be greater than or equal to 0")
	}
}

func (v *validator) oomScoreAdj(p string) {
	if o := v.c.Config.OOMScoreAdj; o != nil && (*o < -1000 || *o > 1000) {
		v.invalid(p, "oomScoreAdj", *o, "must be within the range [-1000, 1000]")
	}
}

// IPVSSchedulers are the schedulers kube-proxy 1.20–1.26 accepts
// (validateIPVSSchedulerMethod; "" means rr). From 1.27 any name is
// accepted and the kernel decides.
var IPVSSchedulers = []string{"rr", "wrr", "lc", "wlc", "lblc", "lblcr", "sh", "dh", "sed", "nq", ""}

func (v *validator) scheduler(p, s string) {
	if contains(IPVSSchedulers, s) {
		return
	}
	v.invalid(p, "ipvs.scheduler", s, fmt.Sprintf("must be in %v, blank means the default algorithm method (currently rr)", IPVSSchedulers))
}

// Modes returns the proxy modes kube-proxy of that minor accepts on Linux
// with the given feature gates ("" is always accepted too).
func Modes(minor int, gates map[string]bool) []string {
	var modes []string
	switch {
	case minor <= 25:
		modes = []string{"iptables", "ipvs", "userspace"}
	case minor <= 28:
		modes = []string{"iptables", "ipvs"}
	case minor <= 36:
		modes = []string{"iptables", "ipvs"}
		if minor >= 33 || GateEnabled(gates, "NFTablesProxyMode", minor) {
			modes = append(modes, "nftables")
		}
	default:
		modes = []string{"iptables", "nftables"}
		if GateEnabled(gates, "KubeProxyIPVS", minor) {
			modes = append(modes, "ipvs")
		}
	}
	sort.Strings(modes)
	return modes
}

func (v *validator) mode(gates map[string]bool) {
	mode := string(v.c.Config.Mode)
	modes := Modes(v.m, gates)
	if mode == "" || contains(modes, mode) {
		return
	}
	sep := ", "
	if v.m <= 27 {
		sep = ","
	}
	v.invalid(root+".Mode.ProxyMode", "mode", mode, fmt.Sprintf("must be %s or blank (blank means the best-available proxy [currently iptables])", strings.Join(modes, sep)))
}

func (v *validator) hostPort(p, yamlPath, input string) {
	host, port, err := net.SplitHostPort(input)
	if err != nil {
		v.invalid(p, yamlPath, input, "must be IP:port")
		return
	}
	if netutils.ParseIPSloppy(host) == nil {
		v.invalid(p, yamlPath, host, "must be a valid IP")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		v.invalid(p, yamlPath, port, "must be a valid port")
	}
}

// clusterCIDRLegacy mirrors the clusterCIDR check of 1.20–1.30.
func (v *validator) clusterCIDRLegacy(gates map[string]bool) {
	cc := v.c.Config.ClusterCIDR
	if cc == "" {
		return
	}
	p := root + ".ClusterCIDR"
	cidrs := strings.Split(cc, ",")
	dual := v.m >= 23 || GateEnabled(gates, "IPv6DualStack", v.m)
	switch {
	case dual && len(cidrs) > 2:
		v.invalid(p, "clusterCIDR", cc, "only one CIDR allowed or a valid DualStack CIDR (e.g. 10.100.0.0/16,fde4:8dba:82e1::/48)")
	case dual && len(cidrs) == 2:
		isDual, err := netutils.IsDualStackCIDRStrings(cidrs)
		if err != nil || !isDual {
			v.invalid(p, "clusterCIDR", cc, "must be a valid DualStack CIDR (e.g. 10.100.0.0/16,fde4:8dba:82e1::/48)")
		}
	case !dual && len(cidrs) > 1:
		v.invalid(p, "clusterCIDR", cc, "only one CIDR allowed (e.g. 10.100.0.0/16 or fde4:8dba:82e1::/48)")
	default:
		if _, _, err := netutils.ParseCIDRSloppy(cc); err != nil {
			v.invalid(p, "clusterCIDR", cc, "must be a valid CIDR block (e.g. 10.100.0.0/16 or fde4:8dba:82e1::/48)")
		}
	}
}

// dualStackCIDRs mirrors validateDualStackCIDRStrings (1.31+).
func (v *validator) dualStackCIDRs(cidrs []string) {
	p := root + ".DetectLocalConfiguration.ClusterCIDRs"
	const pair = "must be a either a single CIDR or dual-stack pair of CIDRs (e.g. [10.100.0.0/16, fde4:8dba:82e1::/48]"
	switch {
	case len(cidrs) > 2:
		v.invalid(p, "clusterCIDR", cidrs, pair)
	default:
		for i, s := range cidrs {
			if _, _, err := netutils.ParseCIDRSloppy(s); err != nil {
				v.invalid(fmt.Sprintf("%s[%d]", p, i), "clusterCIDR", s, "must be a valid CIDR block (e.g. 10.100.0.0/16 or fde4:8dba:82e1::/48)")
			}
		}
		if len(cidrs) == 2 {
			if isDual, err := netutils.IsDualStackCIDRStrings(cidrs); err == nil && !isDual {
				v.invalid(p, "clusterCIDR", cidrs, pair)
			}
		}
	}
}

func (v *validator) interfaces(bridgePath, prefixPath string) {
	k := &v.c.Config
	empty := func(p, yamlPath string) {
		v.invalid(p, yamlPath, "", "must not be empty")
		if !v.c.IsSet(yamlPath) {
			// Point at the mode that needs the interface.
			v.errs[len(v.errs)-1].Pos = v.c.PosOf("detectLocalMode")
		}
	}
	switch k.DetectLocalMode {
	case "BridgeInterface":
		if k.DetectLocal.BridgeInterface == "" {
			empty(bridgePath, "detectLocal.bridgeInterface")
		}
	case "InterfaceNamePrefix":
		if k.DetectLocal.InterfaceNamePrefix == "" {
			empty(prefixPath, "detectLocal.interfaceNamePrefix")
		}
	}
}

func (v *validator) detectLocalModeStartup() {
	mode := string(v.c.Config.DetectLocalMode)
	valid := []string{"ClusterCIDR", "NodeCIDR"}
	if v.m >= 24 {
		valid = append(valid, "BridgeInterface", "InterfaceNamePrefix")
	}
	if contains(valid, mode) || strings.TrimSpace(mode) == "" {
		return
	}
	v.errs = append(v.errs, FieldError{Path: root + ".DetectLocalMode", Field: "detectLocalMode", Type: field.ErrorTypeNotSupported,
		Value: mode, Message: "unknown detect-local-mode: " + mode, Pos: v.c.PosOf("detectLocalMode"), Startup: true})
}

func (v *validator) nodePortAddresses() {
	addrs := v.c.Config.NodePortAddresses
	p := root + ".NodePortAddresses"
	at := func(i int) (string, string) {
		return fmt.Sprintf("%s[%d]", p, i), fmt.Sprintf("nodePortAddresses[%d]", i)
	}
	switch {
	case v.m <= 30:
		for i, a := range addrs {
			if _, _, err := netutils.ParseCIDRSloppy(a); err != nil {
				kp, yp := at(i)
				v.invalid(kp, yp, a, "must be a valid CIDR")
			}
		}
	case v.m <= 36:
		for i, a := range addrs {
			kp, yp := at(i)
			if a == "primary" {
				if i != 0 || len(addrs) != 1 {
					v.invalid(kp, yp, a, "can't use both 'primary' and CIDRs")
				}
				break
			}
			if _, _, err := netutils.ParseCIDRSloppy(a); err != nil {
				v.invalid(kp, yp, a, "must be a valid CIDR")
			}
		}
	default:
		seen := map[string]bool{}
		for i, a := range addrs {
			kp, yp := at(i)
			switch a {
			case "primary", "localhost", "all":
				if seen[a] {
					v.add(field.ErrorTypeDuplicate, kp, yp, a, "")
				}
				seen[a] = true
				continue
			}
			if _, _, err := netutils.ParseCIDRSloppy(a); err != nil {
				v.invalid(kp, yp, a, "must be a valid CIDR or one of the keywords 'primary', 'localhost', 'all'")
			}
		}
	}
}

// showHiddenMetrics mirrors component-base/metrics ValidateShowHiddenMetricsVersion
// (the message of 1.20–1.30; from 1.31 the metrics configuration API's).
func (v *validator) showHiddenMetrics(ver kpversion.Version) {
	s := v.c.Config.ShowHiddenMetricsForVersion
	if s == "" {
		return
	}
	want := fmt.Sprintf("%d.%d", ver.Major, v.m-1)
	if s == want {
		return
	}
	msg := fmt.Sprintf("--show-hidden-metrics-for-version must be omitted or have the value '%v'. Only the previous minor version is allowed", want)
	if v.m >= 31 {
		msg = fmt.Sprintf("invalid showHiddenMetricsForVersion: showHiddenMetricsForVersion: Invalid value: %q: must be omitted or have the value '%v'; only the previous minor version is allowed", s, want)
	}
	v.invalid(root+".ShowHiddenMetricsForVersion", "showHiddenMetricsForVersion", s, msg)
}

func (v *validator) featureGates() {
	gates := v.c.Config.FeatureGates
	names := make([]string, 0, len(gates))
	for n := range gates {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if msg := gateError(n, gates[n], v.m); msg != "" {
			v.errs = append(v.errs, FieldError{Path: root + ".featureGates", Field: "featureGates." + n, Type: field.ErrorTypeInvalid,
				Value: gates, Message: msg, Pos: v.c.PosOf("featureGates." + n)})
		}
	}
}

// logging mirrors component-base/logs/api/v1 Validate (1.28+): the text and
// json formats (json needs LoggingBetaOptions), vmodule only with text, the
// alpha output-routing options only with LoggingAlphaOptions.
func (v *validator) logging(gates map[string]bool) {
	l := &v.c.Config.Logging
	p := root + ".logging"
	if l.FlushFrequency.Duration.Duration <= 0 {
		v.invalid(p+".flushFrequency", "logging.flushFrequency", l.FlushFrequency, "Must be greater than zero")
	}
	switch l.Format {
	case "text":
	case "json":
		if !GateEnabled(gates, "LoggingBetaOptions", v.m) {
			v.add(field.ErrorTypeForbidden, p+".format", "logging.format", nil, "Log format json is disabled, see LoggingBetaOptions feature")
		}
	default:
		v.invalid(p+".format", "logging.format", l.Format, "Unsupported log format")
	}
	if uint64(l.Verbosity) > math.MaxInt32 {
		v.invalid(p+".verbosity", "logging.verbosity", l.Verbosity, fmt.Sprintf("Must be <= %d", math.MaxInt32))
	}
	if len(l.VModule) > 0 && l.Format != "" && l.Format != "text" {
		v.add(field.ErrorTypeForbidden, p+".vmodule", "logging.vmodule", nil, "Only supported for text log format")
	}
	for i, item := range l.VModule {
		kp, yp := fmt.Sprintf("%s.vmodule[%d]", p, i), fmt.Sprintf("logging.vmodule[%d]", i)
		if item.FilePattern == "" {
			v.add(field.ErrorTypeRequired, kp, yp, nil, "File pattern must not be empty")
		}
		if strings.ContainsAny(item.FilePattern, "=,") {
			v.invalid(kp, yp, item.FilePattern, "File pattern must not contain equal sign or comma")
		}
		if uint64(item.Verbosity) > math.MaxInt32 {
			v.invalid(kp, yp, item.Verbosity, fmt.Sprintf("Must be <= %d", math.MaxInt32))
		}
	}
	alpha := GateEnabled(gates, "LoggingAlphaOptions", v.m)
	for _, f := range []struct {
		name  string
		split bool
		size  int64
	}{
		{"text", l.Options.Text.SplitStream, l.Options.Text.InfoBufferSize.Value()},
		{"json", l.Options.JSON.SplitStream, l.Options.JSON.InfoBufferSize.Value()},
	} {
		if f.split && !alpha {
			v.add(field.ErrorTypeForbidden, p+".options."+f.name+".splitStream", "logging.options."+f.name+".splitStream", nil, "Feature LoggingAlphaOptions is disabled")
		}
		if f.size != 0 && !alpha {
			v.add(field.ErrorTypeForbidden, p+".options."+f.name+".infoBufferSize", "logging.options."+f.name+".infoBufferSize", nil, "Feature LoggingAlphaOptions is disabled")
		}
	}
}
