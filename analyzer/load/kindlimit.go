package load

import (
	"fmt"

	"github.com/proxyscan/proxyscan/parsers"
)

// kindLimits are the largest files read of the kinds that are small by
// nature: node listings and kube-proxy's own small outputs, a few
// kilobytes to a few megabytes on the largest nodes. Their parsers keep
// each line as a value several times the line's size, so that a file of
// such a kind near the size limit of any file (a highly compressible
// archive member of 900 MiB) would take many gigabytes: past its kind's
// limit a file is an input error naming it, before it is read. kube-proxy's
// logs grow with time rather than with the cluster, and have a limit of
// their own (maxLog). The dumps, exports, route tables and conntrack
// tables grow with the cluster and are bounded by Limits alone.
var kindLimits = map[parsers.Kind]int64{
	parsers.KindSysctl:          64 << 20,
	parsers.KindModules:         16 << 20,
	parsers.KindIPAddr:          64 << 20,
	parsers.KindConntrackStats:  16 << 20,
	parsers.KindCmdline:         16 << 20,
	parsers.KindVersion:         1 << 20,
	parsers.KindHealthz:         1 << 20,
	parsers.KindKubeProxyConfig: 16 << 20,
	parsers.KindManifest:        16 << 20,
	parsers.KindMetrics:         64 << 20,
	parsers.KindLog:             maxLog,
}

// maxLog is the largest kube-proxy log read: a journald or container log
// excerpt of kube-proxy is a few megabytes for days at the default
// verbosity and tens of megabytes for a day at -v=4, where every sync logs
// its rules; past 256 MiB it is several components' logs, or weeks of
// them, of which the time of the problem is what to give.
const maxLog = 256 << 20

// kindNames name the kinds of kindLimits in errors.
var kindNames = map[parsers.Kind]string{
	parsers.KindSysctl:          "sysctl listing",
	parsers.KindModules:         "module listing",
	parsers.KindIPAddr:          "ip addr listing",
	parsers.KindConntrackStats:  "conntrack -S listing",
	parsers.KindCmdline:         "kube-proxy command line",
	parsers.KindVersion:         "kube-proxy --version output",
	parsers.KindHealthz:         "kube-proxy healthz reply",
	parsers.KindKubeProxyConfig: "kube-proxy configuration",
	parsers.KindManifest:        "bundle manifest",
	parsers.KindMetrics:         "kube-proxy metrics page",
	parsers.KindLog:             "kube-proxy log",
}

// kindLimit returns the largest file read of the kind k within the
// limits l: its kind's (Limits.MaxKind, or kindLimits when that is nil),
// or that of any file.
func kindLimit(k parsers.Kind, l Limits) int64 {
	m := l.MaxKind
	if m == nil {
		m = kindLimits
	}
	if lim, ok := m[k]; ok && lim < l.MaxFile {
		return lim
	}
	return l.MaxFile
}

// overKind says why a file of the kind k (told by its head) and of size
// bytes is not read within the limits l, or "" when it is within its
// kind's limit.
func overKind(k parsers.Kind, size int64, l Limits) string {
	lim := kindLimit(k, l)
	if size <= lim || lim == l.MaxFile {
		return ""
	}
	return kindOver(k, fmt.Sprintf("it is %d bytes", size), lim)
}

// kindOver says that a file whose head reads as the kind k is over lim,
// its kind's limit, as size says.
func kindOver(k parsers.Kind, size string, lim int64) string {
	if k == parsers.KindLog {
		return fmt.Sprintf("its head reads as a %s (%s), and %s, over the %d-byte limit of that kind (kube-proxy logs a few megabytes a day, tens at -v=4: give the time of the problem, journalctl -u kube-proxy --since ... --until ..., or check it is the file meant)",
			kindNames[k], k, size, lim)
	}
	return fmt.Sprintf("its head reads as a %s (%s), and %s, over the %d-byte limit of that kind (such a file is a few megabytes at most: is it the file meant, or several concatenated?)",
		kindNames[k], k, size, lim)
}
