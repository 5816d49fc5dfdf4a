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
// limit a file is an input error naming it, before it is read. The dumps,
// exports, logs, route tables and conntrack tables grow with the cluster
// and are bounded by Limits alone.
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
}

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
	return fmt.Sprintf("its head reads as a %s (%s), and %s, over the %d-byte limit of that kind (such a file is a few megabytes at most: is it the file meant, or several concatenated?)",
		kindNames[k], k, size, lim)
}
