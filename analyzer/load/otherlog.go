package load

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/klog"
)

// journalUnit returns the unit the first journalctl command of a prompt
// or command line the paste repairs removed from data names (journalctl
// -u kubelet, --unit=kubelet.service), without its .service suffix; ""
// when there is none.
func journalUnit(data []byte, notes []parsers.LineNote) string {
	unit := ""
	promptLines(data, notes, func(_ int, text string) bool {
		f := strings.Fields(text)
		i := slices.IndexFunc(f, func(w string) bool { return w == "journalctl" || strings.HasSuffix(w, "/journalctl") })
		if i < 0 {
			return true
		}
		for j := i + 1; j < len(f) && f[j] != "|"; j++ {
			switch w := f[j]; {
			case (w == "-u" || w == "--unit") && j+1 < len(f):
				unit = f[j+1]
			case strings.HasPrefix(w, "--unit="):
				unit = strings.TrimPrefix(w, "--unit=")
			case strings.HasPrefix(w, "-u") && len(w) > 2 && w[2] != '-':
				unit = w[2:]
			}
			if unit != "" {
				break
			}
		}
		unit = strings.TrimSuffix(strings.Trim(unit, `"'`), ".service")
		return false
	})
	return unit
}

// otherComponents are the programs of a node whose logs are read for
// kube-proxy's when pasted, none of which runs kube-proxy: what their
// journal's lines are tagged with, and the units journalctl -u names.
var otherComponents = []string{
	"kubelet", "containerd", "dockerd", "docker", "crio", "cri-o", "kube-apiserver", "kube-controller-manager",
	"kube-scheduler", "cloud-controller-manager", "etcd", "kernel", "systemd",
}

// otherLog returns, for a log that is another program's than kube-proxy's,
// what says so: the journalctl command above it names the unit of another
// program, or every line carries the journal's prefix and every
// identifier in them is one of another program (otherComponents). ""
// when nothing says so (a program embedding kube-proxy, such as k3s, logs
// under its own name, which is not among them).
func otherLog(l *klog.Log, unit string) string {
	if unit != "" && slices.Contains(otherComponents, unit) {
		return fmt.Sprintf("the journalctl command above it reads unit %s", unit)
	}
	ids, bare := l.Identifiers()
	if len(ids) == 0 || bare > 0 {
		return ""
	}
	for _, id := range ids {
		if !slices.Contains(otherComponents, id) {
			return ""
		}
	}
	return "its journal lines are tagged " + strings.Join(ids, ", ")
}

// boundFile is the name of the list of the addresses kube-proxy binds to
// kube-ipvs0 that proxyscan expect --mode ipvs --dir writes beside the
// dumps (proxier's ipvsFileBound).
const boundFile = "kube-ipvs0.txt"

// boundNote is the note of that list given to analyze: it is what
// kube-proxy would bind, not what the node has bound, and no input kind.
const boundNote = "unknown kind of file (the addresses proxyscan expect lists as bound to kube-ipvs0, not a capture of the node: " +
	"ip addr show dev kube-ipvs0 gives those): not analysed"

// prefixLines reports whether every line of head (of a file of size
// bytes; a last line cut by the head's end aside) is an address prefix,
// and there is one at least.
func prefixLines(head []byte, size int64) bool {
	if int64(len(head)) < size {
		if i := bytes.LastIndexByte(head, '\n'); i >= 0 {
			head = head[:i]
		}
	}
	n := 0
	for _, l := range bytes.Split(bytes.TrimRight(head, "\n"), []byte("\n")) {
		if _, err := netip.ParsePrefix(string(bytes.TrimSpace(l))); err != nil {
			return false
		}
		n++
	}
	return n > 0
}
