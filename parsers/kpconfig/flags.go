package kpconfig

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/kube-proxy/config/v1alpha1"
	netutils "k8s.io/utils/net"
	kjson "sigs.k8s.io/json"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/kpcmdline"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
)

type kpc = v1alpha1.KubeProxyConfiguration

// FlagKind is the type of a flag's value.
type FlagKind string

// The flag value types kube-proxy uses (pflag and its own flag.Value types).
const (
	FlagString    FlagKind = "string"
	FlagBool      FlagKind = "bool"
	FlagInt32     FlagKind = "int32"
	FlagFloat32   FlagKind = "float32"
	FlagDuration  FlagKind = "duration"
	FlagStrings   FlagKind = "strings" // pflag StringSlice: comma-separated, repeats append
	FlagGates     FlagKind = "mapStringBool"
	FlagIP        FlagKind = "ip"     // utilflag.IPVar
	FlagIPPort    FlagKind = "ipport" // utilflag.IPPortVar
	FlagPortRange FlagKind = "port-range"
	FlagLevel     FlagKind = "Level" // -v
	FlagVModule   FlagKind = "pattern=N,..."
	FlagQuantity  FlagKind = "quantity"
)

// FlagDef describes one kube-proxy flag.
type FlagDef struct {
	Name string
	// Field is the YAML path of the configuration field the flag sets; ""
	// for flags outside the configuration (--config, --master, ...).
	Field string
	Kind  FlagKind
	// Since and Until are the first and last minor (inclusive) that have the
	// flag; Until 0 means still present in 1.37.
	Since, Until int
	// Logging marks the logging flags: part of the configuration from 1.28
	// (and then copied over the file's values), klog's own before.
	Logging bool
}

// FlagDefs are the Linux kube-proxy flags of 1.20–1.37, from AddFlags in
// cmd/kube-proxy/app/server.go (1.20–1.30) and options.go (1.31–1.37),
// logsapi.AddFlags (1.28+) and the klog flags of the global flag set.
var FlagDefs = []FlagDef{
	{Name: "config", Kind: FlagString},
	{Name: "write-config-to", Kind: FlagString},
	{Name: "cleanup", Kind: FlagBool},
	{Name: "cleanup-ipvs", Kind: FlagBool, Since: 20, Until: 20},
	{Name: "init-only", Kind: FlagBool, Since: 29},
	{Name: "master", Kind: FlagString},
	{Name: "hostname-override", Kind: FlagString},
	{Name: "healthz-port", Kind: FlagInt32},
	{Name: "metrics-port", Kind: FlagInt32},
	{Name: "feature-gates", Field: "featureGates", Kind: FlagGates},
	{Name: "kubeconfig", Field: "clientConnection.kubeconfig", Kind: FlagString},
	{Name: "kube-api-content-type", Field: "clientConnection.contentType", Kind: FlagString},
	{Name: "kube-api-burst", Field: "clientConnection.burst", Kind: FlagInt32},
	{Name: "kube-api-qps", Field: "clientConnection.qps", Kind: FlagFloat32},
	{Name: "bind-address", Field: "bindAddress", Kind: FlagIP},
	{Name: "healthz-bind-address", Field: "healthzBindAddress", Kind: FlagIPPort},
	{Name: "metrics-bind-address", Field: "metricsBindAddress", Kind: FlagIPPort},
	{Name: "bind-address-hard-fail", Field: "bindAddressHardFail", Kind: FlagBool},
	{Name: "profiling", Field: "enableProfiling", Kind: FlagBool},
	{Name: "show-hidden-metrics-for-version", Field: "showHiddenMetricsForVersion", Kind: FlagString},
	{Name: "proxy-mode", Field: "mode", Kind: FlagString},
	{Name: "proxy-port-range", Field: "portRange", Kind: FlagPortRange, Until: 30},
	{Name: "iptables-masquerade-bit", Field: "iptables.masqueradeBit", Kind: FlagInt32},
	{Name: "masquerade-all", Field: "iptables.masqueradeAll", Kind: FlagBool},
	{Name: "iptables-localhost-nodeports", Field: "iptables.localhostNodePorts", Kind: FlagBool, Since: 26},
	{Name: "iptables-sync-period", Field: "iptables.syncPeriod", Kind: FlagDuration},
	{Name: "iptables-min-sync-period", Field: "iptables.minSyncPeriod", Kind: FlagDuration},
	{Name: "ipvs-sync-period", Field: "ipvs.syncPeriod", Kind: FlagDuration},
	{Name: "ipvs-min-sync-period", Field: "ipvs.minSyncPeriod", Kind: FlagDuration},
	{Name: "ipvs-scheduler", Field: "ipvs.scheduler", Kind: FlagString},
	{Name: "ipvs-exclude-cidrs", Field: "ipvs.excludeCIDRs", Kind: FlagStrings},
	{Name: "ipvs-strict-arp", Field: "ipvs.strictARP", Kind: FlagBool},
	{Name: "ipvs-tcp-timeout", Field: "ipvs.tcpTimeout", Kind: FlagDuration},
	{Name: "ipvs-tcpfin-timeout", Field: "ipvs.tcpFinTimeout", Kind: FlagDuration},
	{Name: "ipvs-udp-timeout", Field: "ipvs.udpTimeout", Kind: FlagDuration},
	{Name: "detect-local-mode", Field: "detectLocalMode", Kind: FlagString},
	{Name: "pod-bridge-interface", Field: "detectLocal.bridgeInterface", Kind: FlagString, Since: 24},
	{Name: "pod-interface-name-prefix", Field: "detectLocal.interfaceNamePrefix", Kind: FlagString, Since: 24},
	{Name: "cluster-cidr", Field: "clusterCIDR", Kind: FlagString},
	{Name: "nodeport-addresses", Field: "nodePortAddresses", Kind: FlagStrings},
	{Name: "oom-score-adj", Field: "oomScoreAdj", Kind: FlagInt32},
	{Name: "conntrack-max-per-core", Field: "conntrack.maxPerCore", Kind: FlagInt32},
	{Name: "conntrack-min", Field: "conntrack.min", Kind: FlagInt32},
	{Name: "conntrack-tcp-timeout-established", Field: "conntrack.tcpEstablishedTimeout", Kind: FlagDuration},
	{Name: "conntrack-tcp-timeout-close-wait", Field: "conntrack.tcpCloseWaitTimeout", Kind: FlagDuration},
	{Name: "conntrack-tcp-be-liberal", Field: "conntrack.tcpBeLiberal", Kind: FlagBool, Since: 29},
	{Name: "conntrack-udp-timeout", Field: "conntrack.udpTimeout", Kind: FlagDuration, Since: 29},
	{Name: "conntrack-udp-timeout-stream", Field: "conntrack.udpStreamTimeout", Kind: FlagDuration, Since: 29},
	{Name: "config-sync-period", Field: "configSyncPeriod", Kind: FlagDuration},
	{Name: "udp-timeout", Field: "udpIdleTimeout", Kind: FlagDuration, Until: 25},
	// Logging: configuration fields from 1.28 (logsapi.AddFlags).
	{Name: "v", Field: "logging.verbosity", Kind: FlagLevel, Logging: true},
	{Name: "vmodule", Field: "logging.vmodule", Kind: FlagVModule, Logging: true},
	{Name: "log-flush-frequency", Field: "logging.flushFrequency", Kind: FlagDuration, Logging: true},
	{Name: "logging-format", Field: "logging.format", Kind: FlagString, Since: 28, Logging: true},
	{Name: "log-text-split-stream", Field: "logging.options.text.splitStream", Kind: FlagBool, Since: 28, Logging: true},
	{Name: "log-text-info-buffer-size", Field: "logging.options.text.infoBufferSize", Kind: FlagQuantity, Since: 28, Logging: true},
	{Name: "log-json-split-stream", Field: "logging.options.json.splitStream", Kind: FlagBool, Since: 28, Logging: true},
	{Name: "log-json-info-buffer-size", Field: "logging.options.json.infoBufferSize", Kind: FlagQuantity, Since: 28, Logging: true},
	// klog flags of the global flag set, removed from kube-proxy in 1.26.
	{Name: "logtostderr", Kind: FlagBool, Until: 25, Logging: true},
	{Name: "alsologtostderr", Kind: FlagBool, Until: 25, Logging: true},
	{Name: "log-dir", Kind: FlagString, Until: 25, Logging: true},
	{Name: "log-file", Kind: FlagString, Until: 25, Logging: true},
	{Name: "log-file-max-size", Kind: FlagString, Until: 25, Logging: true},
	{Name: "log-backtrace-at", Kind: FlagString, Until: 25, Logging: true},
	{Name: "stderrthreshold", Kind: FlagString, Until: 25, Logging: true},
	{Name: "skip-headers", Kind: FlagBool, Until: 25, Logging: true},
	{Name: "skip-log-headers", Kind: FlagBool, Until: 25, Logging: true},
	{Name: "add-dir-header", Kind: FlagBool, Until: 25, Logging: true},
	{Name: "one-output", Kind: FlagBool, Until: 25, Logging: true},
	// Process flags.
	{Name: "version", Kind: FlagString},
	{Name: "help", Kind: FlagBool},
	{Name: "h", Kind: FlagBool},
	{Name: "boot-id-file", Kind: FlagString},
	{Name: "machine-id-file", Kind: FlagString},
}

// LookupFlag returns the definition of the flag in minor, or nil when that
// release has no such flag.
func LookupFlag(name string, minor int) *FlagDef {
	for i := range FlagDefs {
		f := &FlagDefs[i]
		if f.Name == name && (f.Since == 0 || minor >= f.Since) && (f.Until == 0 || minor <= f.Until) {
			return f
		}
	}
	return nil
}

// FlagValue is a configuration flag as applied.
type FlagValue struct {
	Def  *FlagDef       `json:"-"`
	Flag kpcmdline.Flag `json:"flag"`
	// Field is the YAML path the flag set ("" for none).
	Field string `json:"field,omitempty"`
}

// Flags is a kube-proxy command line interpreted for one release.
type Flags struct {
	Cmdline *kpcmdline.Cmdline `json:"-"`
	Version string             `json:"version"`
	// ConfigFile is --config; WriteConfigTo is --write-config-to.
	ConfigFile    string `json:"configFile,omitempty"`
	WriteConfigTo string `json:"writeConfigTo,omitempty"`
	Cleanup       bool   `json:"cleanup,omitempty"`
	InitOnly      bool   `json:"initOnly,omitempty"`
	Master        string `json:"master,omitempty"`
	// HostnameOverride is --hostname-override as kube-proxy uses it
	// (trimmed, lower-cased); it overrides the file.
	HostnameOverride string `json:"hostnameOverride,omitempty"`
	// Config is the configuration kube-proxy builds from its defaults and
	// the flags: the one it runs with when no --config is given.
	Config *Config `json:"config"`
	// Applied lists the configuration flags in order.
	Applied []FlagValue `json:"applied,omitempty"`

	ver         kpversion.Version
	healthzPort *int32
	metricsPort *int32
	syncFlags   map[string]time.Duration // 1.31+: applied by mode at the end
}

// ParseFlags interprets a kube-proxy command line for version v as
// kube-proxy's flag set does: every flag that release does not have is an
// error ("unknown flag: --x"), and so is a value its type rejects
// ("invalid argument ..."), both at the flag's position. The configuration
// it builds starts from kube-proxy's defaults (newKubeProxyConfiguration),
// as the flags are bound to a defaulted configuration.
//
// Mirrors Options.AddFlags and, for 1.31+, processV1Alpha1Flags
// (options.go): --iptables-sync-period / --iptables-min-sync-period apply
// unless the mode is ipvs, --ipvs-* sync flags only in ipvs mode, and
// --masquerade-all sets the masqueradeAll of the mode's section.
func ParseFlags(cl *kpcmdline.Cmdline, v kpversion.Version) (*Flags, error) {
	m := v.Minor
	if v.Major > 1 {
		m = kpversion.NewestMinor
	}
	name := cl.Pos.File
	cfg := &Config{Name: name, Pos: parsers.Pos{File: name, Line: 1}, Fields: map[string]*FieldInfo{}}
	applyDefaults(cfg, v, false)
	for _, fi := range cfg.Fields {
		fi.Note = "kube-proxy default"
	}
	f := &Flags{Cmdline: cl, Version: v.String(), Config: cfg, ver: v, syncFlags: map[string]time.Duration{}}
	var errs parsers.ErrorList
	changedSlices := map[string]bool{}
	changedGates := false
	for _, fl := range cl.Flags {
		def := LookupFlag(fl.Name, m)
		if def == nil {
			if fl.Dashes == 1 && len(fl.Name) == 1 && fl.Name != "v" && fl.Name != "h" {
				errs.Add(fl.Pos, "unknown shorthand flag: %q in %s", fl.Name, fl.Raw)
			} else {
				errs.Add(fl.Pos, "unknown flag: %s", fl.Spelling())
			}
			continue
		}
		val := fl.Value
		if !fl.HasValue {
			if def.Kind == FlagBool || def.Name == "version" {
				val = "true"
			} else {
				errs.Add(fl.Pos, "flag needs an argument: %s", fl.Spelling())
				continue
			}
		}
		parsed, err := parseFlagValue(def.Kind, val)
		if err != nil {
			errs.Add(fl.Pos, "invalid argument %q for %q flag: %v", val, "--"+def.Name, err)
			continue
		}
		switch def.Name {
		case "config":
			f.ConfigFile = val
		case "write-config-to":
			f.WriteConfigTo = val
		case "cleanup":
			f.Cleanup = parsed.(bool)
		case "init-only":
			f.InitOnly = parsed.(bool)
		case "master":
			f.Master = val
		case "hostname-override":
			if val != "" {
				h := strings.TrimSpace(val)
				if h == "" {
					errs.Add(fl.Pos, "empty hostname-override is invalid")
					continue
				}
				f.HostnameOverride = strings.ToLower(h)
			}
		case "healthz-port":
			p := parsed.(int32)
			f.healthzPort = &p
		case "metrics-port":
			p := parsed.(int32)
			f.metricsPort = &p
		}
		if def.Field == "" || def.Logging && m < 28 {
			continue
		}
		if (def.Kind == FlagIP || def.Kind == FlagIPPort) && val == "" {
			continue // IPVar/IPPortVar: an empty value leaves the field alone
		}
		field := def.Field
		if m >= 31 {
			switch def.Name {
			case "iptables-sync-period", "iptables-min-sync-period", "ipvs-sync-period", "ipvs-min-sync-period":
				f.syncFlags[def.Name] = parsed.(time.Duration)
				f.Applied = append(f.Applied, FlagValue{Def: def, Flag: fl})
				continue
			case "masquerade-all":
				field = "" // by mode, below
			}
		}
		switch def.Kind {
		case FlagStrings:
			list := parsed.([]string)
			if changedSlices[field] {
				var cur []string
				_ = getField(&cfg.Config, field, &cur)
				list = append(cur, list...)
			}
			changedSlices[field] = true
			parsed = list
		case FlagGates:
			gm := parsed.(map[string]bool)
			if changedGates {
				for k, b := range gm {
					cfg.Config.FeatureGates[k] = b
				}
				gm = cfg.Config.FeatureGates
			}
			changedGates = true
			parsed = gm
		}
		if field == "" {
			f.Applied = append(f.Applied, FlagValue{Def: def, Flag: fl})
			continue
		}
		if err := setField(cfg, field, parsed); err != nil {
			errs.Add(fl.Pos, "setting %s from %s: %v", field, fl.Spelling(), err)
			continue
		}
		cfg.Fields[field] = &FieldInfo{Path: field, Origin: OriginFlag, Pos: fl.Pos, Flag: fl.Spelling(), Raw: clip(val)}
		f.Applied = append(f.Applied, FlagValue{Def: def, Flag: fl, Field: field})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	// processV1Alpha1Flags (1.31+) and the Linux.MasqueradeAll conversion.
	if m >= 31 {
		for i := range f.Applied {
			a := &f.Applied[i]
			mode := string(cfg.Config.Mode)
			switch a.Def.Name {
			case "iptables-sync-period", "iptables-min-sync-period":
				if mode == "ipvs" {
					continue
				}
				sec := modeSection(mode)
				a.Field = sec + "." + strings.TrimPrefix(a.Def.Field, "iptables.")
			case "ipvs-sync-period", "ipvs-min-sync-period":
				if mode != "ipvs" {
					continue
				}
				a.Field = a.Def.Field
			case "masquerade-all":
				sec := "iptables"
				if mode == "nftables" {
					sec = "nftables"
				}
				a.Field = sec + ".masqueradeAll"
			default:
				continue
			}
			parsed, _ := parseFlagValue(a.Def.Kind, flagText(a.Flag, a.Def))
			if err := setField(cfg, a.Field, parsed); err != nil {
				return nil, parsers.Errorf(a.Flag.Pos, "setting %s from %s: %v", a.Field, a.Flag.Spelling(), err)
			}
			cfg.Fields[a.Field] = &FieldInfo{Path: a.Field, Origin: OriginFlag, Pos: a.Flag.Pos, Flag: a.Flag.Spelling(), Raw: clip(a.Flag.Value)}
		}
	}
	if f.ConfigFile == "" && f.WriteConfigTo == "" {
		k := &cfg.Config
		f.deprecatedPort("healthzBindAddress", &k.HealthzBindAddress, f.healthzPort, "--healthz-port")
		f.deprecatedPort("metricsBindAddress", &k.MetricsBindAddress, f.metricsPort, "--metrics-port")
	}
	return f, nil
}

func flagText(fl kpcmdline.Flag, def *FlagDef) string {
	if !fl.HasValue && def.Kind == FlagBool {
		return "true"
	}
	return fl.Value
}

// deprecatedPort mirrors addressFromDeprecatedFlags: port 0 disables the
// server, any other port is appended when the address has none.
func (f *Flags) deprecatedPort(path string, addr *string, port *int32, flag string) {
	if port == nil {
		return
	}
	var na string
	if *port != 0 {
		na = AppendPortIfNeeded(*addr, *port)
	}
	if na == *addr {
		return
	}
	*addr = na
	pos := f.Cmdline.Pos
	for _, fl := range f.Cmdline.Lookup(strings.TrimPrefix(flag, "--")) {
		pos = fl.Pos
	}
	f.Config.Fields[path] = &FieldInfo{Path: path, Origin: OriginFlag, Pos: pos, Flag: flag, Raw: strconv.Itoa(int(*port))}
}

// Effective returns the configuration kube-proxy of the flags' version runs
// with, defaulted: with --config, the file's configuration (file must be
// its parsed contents), where kube-proxy ignores every configuration flag
// except --hostname-override and (1.28+) the logging flags; without it, the
// configuration built from the flags. [Config.Merged] says what was
// ignored or overridden.
//
// Mirrors Options.Complete (server.go 1.20–1.30, options.go 1.31–1.37):
// the file replaces the flag-built configuration whole, copyLogsFromFlags
// (1.28+) puts changed logging flags back (--vmodule entries first), and
// processHostnameOverrideFlag applies --hostname-override last.
func Effective(f *Flags, file *Config) (*Config, error) {
	m := f.ver.Minor
	if f.ver.Major > 1 {
		m = kpversion.NewestMinor
	}
	var out *Config
	if f.ConfigFile == "" {
		// The flags are bound to an already defaulted configuration: no
		// second defaulting, only the start-up choices below.
		out = f.Config.Clone()
		if file != nil {
			out.Merged = append(out.Merged, "no --config flag: the configuration file given is not used")
		}
	} else {
		if file == nil {
			return nil, parsers.Errorf(f.Cmdline.Pos, "the command line reads its configuration from --config %s, which was not provided", f.ConfigFile)
		}
		out = file.Clone()
		// The universal decoder defaults the file as it decodes it.
		applyDefaults(out, f.ver, false)
		for _, a := range f.Applied {
			if a.Def.Logging && m >= 28 {
				continue
			}
			out.Merged = append(out.Merged, fmt.Sprintf("%s: %s is ignored: with --config, kube-proxy takes every configuration field from %s", a.Flag.Pos, a.Flag.Spelling(), f.ConfigFile))
		}
		for _, name := range []string{"healthz-port", "metrics-port"} {
			for _, fl := range f.Cmdline.Lookup(name) {
				out.Merged = append(out.Merged, fmt.Sprintf("%s: %s is ignored: with --config, kube-proxy does not use it", fl.Pos, fl.Spelling()))
			}
		}
		if m >= 28 {
			if err := copyLogging(f, out); err != nil {
				return nil, err
			}
		}
	}
	if f.HostnameOverride != "" {
		fl := f.Cmdline.Lookup("hostname-override")
		last := fl[len(fl)-1]
		if f.ConfigFile != "" && out.Config.HostnameOverride != "" && out.Config.HostnameOverride != f.HostnameOverride {
			out.Merged = append(out.Merged, fmt.Sprintf("%s: --hostname-override %q overrides hostnameOverride %q of %s", last.Pos, f.HostnameOverride, out.Config.HostnameOverride, f.ConfigFile))
		}
		out.Config.HostnameOverride = f.HostnameOverride
		out.Fields["hostnameOverride"] = &FieldInfo{Path: "hostnameOverride", Origin: OriginFlag, Pos: last.Pos, Flag: last.Spelling(), Raw: last.Value}
	}
	if f.WriteConfigTo != "" {
		out.Merged = append(out.Merged, fmt.Sprintf("--write-config-to %s: kube-proxy writes its configuration there and exits", f.WriteConfigTo))
	}
	if f.Cleanup {
		out.Merged = append(out.Merged, "--cleanup: kube-proxy removes its rules and exits")
	}
	applyPlatformDefaults(out, f.ver)
	return out, nil
}

// copyLogging mirrors copyLogsFromFlags.
func copyLogging(f *Flags, out *Config) error {
	var fromFlags []logsapi.VModuleItem
	fileVModule := out.Config.Logging.VModule
	out.Config.Logging.VModule = nil
	for _, a := range f.Applied {
		if !a.Def.Logging || a.Field == "" {
			continue
		}
		parsed, err := parseFlagValue(a.Def.Kind, flagText(a.Flag, a.Def))
		if err != nil {
			return parsers.Errorf(a.Flag.Pos, "%v", err)
		}
		if a.Def.Kind == FlagVModule {
			fromFlags = append(fromFlags, parsed.(logsapi.VModuleConfiguration)...)
		} else if err := setField(out, a.Field, parsed); err != nil {
			return parsers.Errorf(a.Flag.Pos, "setting %s from %s: %v", a.Field, a.Flag.Spelling(), err)
		}
		out.Fields[a.Field] = &FieldInfo{Path: a.Field, Origin: OriginFlag, Pos: a.Flag.Pos, Flag: a.Flag.Spelling(), Raw: a.Flag.Value}
		out.Merged = append(out.Merged, fmt.Sprintf("%s: %s overrides %s of the file", a.Flag.Pos, a.Flag.Spelling(), a.Field))
	}
	if fromFlags != nil || fileVModule != nil {
		out.Config.Logging.VModule = append(logsapi.VModuleConfiguration(fromFlags), fileVModule...)
	}
	return nil
}

// parseFlagValue parses a flag value as its flag.Value type does.
func parseFlagValue(kind FlagKind, s string) (any, error) {
	switch kind {
	case FlagString:
		return s, nil
	case FlagBool:
		return strconv.ParseBool(s)
	case FlagInt32:
		n, err := strconv.ParseInt(s, 0, 32)
		return int32(n), err
	case FlagFloat32:
		x, err := strconv.ParseFloat(s, 32)
		return float32(x), err
	case FlagDuration:
		return time.ParseDuration(s)
	case FlagStrings:
		if s == "" {
			return []string{}, nil
		}
		r := csv.NewReader(strings.NewReader(s))
		return r.Read()
	case FlagGates:
		return ParseGates(s)
	case FlagIP:
		if s != "" && netutils.ParseIPSloppy(s) == nil {
			return nil, fmt.Errorf("%q is not a valid IP address", s)
		}
		return s, nil
	case FlagIPPort:
		if s == "" || netutils.ParseIPSloppy(s) != nil {
			return s, nil
		}
		host, port, err := splitHostPort(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not in a valid format (ip or ip:port): %v", s, err)
		}
		if netutils.ParseIPSloppy(host) == nil {
			return nil, fmt.Errorf("%q is not a valid IP address", host)
		}
		if _, err := netutils.ParsePort(port, true); err != nil {
			return nil, fmt.Errorf("%q is not a valid number", port)
		}
		return s, nil
	case FlagPortRange:
		if _, err := utilnet.ParsePortRange(s); err != nil {
			return nil, fmt.Errorf("%q is not a valid port range: %v", s, err)
		}
		return s, nil
	case FlagLevel:
		n, err := strconv.ParseUint(s, 0, 31)
		return logsapi.VerbosityLevel(n), err
	case FlagVModule:
		var vm logsapi.VModuleConfiguration
		if s == "" {
			return vm, nil
		}
		for _, item := range strings.Split(s, ",") {
			pat, lvl, ok := strings.Cut(item, "=")
			if !ok {
				return nil, fmt.Errorf("%q does not have the pattern=N format", item)
			}
			n, err := strconv.ParseUint(lvl, 10, 31)
			if err != nil {
				return nil, fmt.Errorf("parsing verbosity in %q: %v", item, err)
			}
			vm = append(vm, logsapi.VModuleItem{FilePattern: pat, Verbosity: logsapi.VerbosityLevel(n)})
		}
		return vm, nil
	case FlagQuantity:
		q, err := resource.ParseQuantity(s)
		return resource.QuantityValue{Quantity: q}, err
	}
	return nil, fmt.Errorf("unknown flag kind %s", kind)
}

func splitHostPort(s string) (string, string, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", "", fmt.Errorf("address %s: missing port in address", s)
	}
	host := s[:i]
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	} else if strings.Contains(host, ":") {
		return "", "", fmt.Errorf("address %s: too many colons in address", s)
	}
	return host, s[i+1:], nil
}

// setField sets the field at a YAML path to a parsed flag value.
func setField(c *Config, path string, v any) error {
	var raw []byte
	var err error
	switch x := v.(type) {
	case time.Duration:
		raw, err = json.Marshal(x.String())
	case logsapi.VerbosityLevel:
		raw, err = json.Marshal(uint32(x))
	default:
		raw, err = json.Marshal(x)
	}
	if err != nil {
		return err
	}
	if path == "udpIdleTimeout" {
		var d metav1.Duration
		if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &d); err != nil {
			return err
		}
		c.UDPIdleTimeout = &d
		return nil
	}
	fv, err := fieldByPath(reflect.ValueOf(&c.Config).Elem(), path)
	if err != nil {
		return err
	}
	p := reflect.New(fv.Type())
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, p.Interface()); err != nil {
		return err
	}
	fv.Set(p.Elem())
	return nil
}

func getField(k *kpc, path string, out any) error {
	fv, err := fieldByPath(reflect.ValueOf(k).Elem(), path)
	if err != nil {
		return err
	}
	b, err := json.Marshal(fv.Interface())
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

func fieldByPath(rv reflect.Value, path string) (reflect.Value, error) {
	for _, part := range strings.Split(path, ".") {
		if rv.Kind() != reflect.Struct {
			return reflect.Value{}, fmt.Errorf("no field %s", path)
		}
		f, ok := jsonFields(rv.Type())[part]
		if !ok {
			return reflect.Value{}, fmt.Errorf("no field %s", path)
		}
		rv = rv.FieldByIndex(f.index)
	}
	return rv, nil
}

// ParseGates parses the value of a --feature-gates flag
// ("A=true,B=false"), as component-base's mapStringBool does: spaces
// around names and values are ignored, and a value is any that
// strconv.ParseBool accepts.
func ParseGates(s string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, kv := range strings.Split(s, ",") {
		if len(kv) == 0 {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("malformed pair, expect string=bool")
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("invalid value of %s: %s, err: %v", k, v, err)
		}
		out[k] = b
	}
	return out, nil
}
