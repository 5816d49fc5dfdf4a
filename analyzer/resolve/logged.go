package resolve

import (
	"regexp"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/klog"
)

// reProxier matches kube-proxy's start-up line naming the proxier it runs
// ("Using ipvs Proxier", "Using iptables Proxier." before 1.21).
var reProxier = regexp.MustCompile(`^Using (iptables|ipvs|nftables|userspace|kernelspace) Proxier\.?$`)

// LoggedMode returns the proxy mode kube-proxy's last start-up line in the
// logs names ("userspace" and "kernelspace" included), with its entry, or
// "".
func LoggedMode(s *model.Snapshot) (string, *klog.Entry) {
	var mode string
	var at *klog.Entry
	for _, l := range s.Logs {
		for _, e := range l.Entries {
			if m := reProxier.FindStringSubmatch(e.Message); m != nil {
				mode, at = m[1], e
			}
		}
	}
	return mode, at
}

// loggedProxyMode returns the mode of LoggedMode when it is one the
// resolver knows (iptables, ipvs, nftables), and the source that says it.
func loggedProxyMode(s *model.Snapshot) (mode, source string) {
	m, e := LoggedMode(s)
	switch m {
	case model.ModeIPTables, model.ModeIPVS, model.ModeNFTables:
		return m, "logged by kube-proxy (\"Using " + m + " Proxier\" at " + e.Pos.String() + ")"
	}
	return "", ""
}
