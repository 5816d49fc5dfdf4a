package load

import (
	"fmt"
	"slices"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers/klog"
	"github.com/proxyscan/proxyscan/parsers/kube"
)

// splitLogHosts reads, of a kube-proxy log whose journal prefixes name
// several hosts (an excerpt of a log aggregator, journalctl of several
// machines), the lines of the node's own host: when the node's name is one
// of them (or that host's with a domain, bash and journald show the name
// up to its first dot), the entries of the other hosts are set aside and
// a note says so; otherwise every entry stays, and a note says the log's
// lines may not all be this node's. Entries without a host (lines that
// are not the journal's) stay.
func splitLogHosts(s *model.Snapshot) {
	for _, l := range s.Logs {
		hosts, lines := l.Hosts()
		if len(hosts) < 2 {
			continue
		}
		where := make([]string, len(hosts))
		for i, h := range hosts {
			where[i] = fmt.Sprintf("%s from line %d", h, lines[i])
		}
		listed := listFiles(where)
		own := ownHost(hosts, s.Node.Name)
		if own == "" {
			why := "the node's name is not known"
			if s.Node.Name != "" {
				why = "none of them is this node (" + s.Node.Name + ")"
			}
			s.Notes = append(s.Notes, fmt.Sprintf("%s holds kube-proxy's log of %d hosts (%s) and %s: its lines are all read as this node's, which they may not be; give each host's log with its node's files, or name the node (--node NAME)",
				l.File, len(hosts), listed, why))
			continue
		}
		kept := make([]*klog.Entry, 0, len(l.Entries))
		others := 0
		for _, e := range l.Entries {
			if e.Host == "" || e.Host == own {
				kept = append(kept, e)
			} else {
				others++
			}
		}
		l.Entries = kept
		entries := fmt.Sprintf("the %d entries", others)
		if others == 1 {
			entries = "the 1 entry"
		}
		s.Notes = append(s.Notes, fmt.Sprintf("%s holds kube-proxy's log of %d hosts (%s): only the lines of %s, this node's, are read; %s of the others are set aside",
			l.File, len(hosts), listed, own, entries))
	}
}

// ownHost returns the one host of hosts that names the node (see
// sameHost: the node's name, that name up to its first dot, or that name
// with a domain), "" when none or several do.
func ownHost(hosts []string, node string) string {
	if node == "" {
		return ""
	}
	own := ""
	for _, h := range hosts {
		if !sameHost(h, node) {
			continue
		}
		if own != "" {
			return ""
		}
		own = h
	}
	return own
}

// ownPod returns the exported Pod, among those a log's entries name
// (pods as Log.Pods lists them, "POD/CONTAINER"), that runs on the node,
// when the node's name is known and exactly one of them does.
func ownPod(s *model.Snapshot, pods []string) *kube.Pod {
	if s.Node.Name == "" {
		return nil
	}
	var own *kube.Pod
	for _, p := range s.Objects.Pods {
		if p.Spec.NodeName != s.Node.Name || !slices.ContainsFunc(pods, func(x string) bool { return strings.HasPrefix(x, p.Name+"/") }) {
			continue
		}
		if own != nil {
			return nil
		}
		own = p
	}
	return own
}

// proxyContainer is the name of kube-proxy's container in the DaemonSet
// kubeadm and most distributions deploy.
const proxyContainer = "kube-proxy"

// splitLogPods reads, of a log kubectl logs --prefix wrote
// ("[pod/kube-proxy-7xk2p/kube-proxy] I1205 ..."), the lines of kube-proxy's
// containers: when some of its containers are named kube-proxy and others
// not (a sidecar, kubectl logs --all-containers), the entries of the
// others are set aside and a note says so. A log of several kube-proxy
// pods (kubectl logs -l k8s-app=kube-proxy --prefix), which are pods of
// several nodes, is read whole, and a note says its lines may not all be
// this node's; so is one of several containers none of which is named
// kube-proxy. Lines without the prefix stay.
func splitLogPods(s *model.Snapshot) {
	for _, l := range s.Logs {
		pods, lines := l.Pods()
		if len(pods) < 2 {
			continue
		}
		var proxy, other []string
		for i, p := range pods {
			where := fmt.Sprintf("%s from line %d", p, lines[i])
			if _, c, _ := strings.Cut(p, "/"); c == proxyContainer {
				proxy = append(proxy, where)
			} else {
				other = append(other, where)
			}
		}
		switch {
		case len(proxy) == 0:
			s.Notes = append(s.Notes, fmt.Sprintf("%s holds the log of %d containers (%s), none of them named %s: their lines are all read as kube-proxy's on this node, which they may not be; give kube-proxy's alone (kubectl logs -n kube-system POD -c CONTAINER)",
				l.File, len(pods), listFiles(other), proxyContainer))
			continue
		case len(other) > 0:
			kept := make([]*klog.Entry, 0, len(l.Entries))
			for _, e := range l.Entries {
				if e.Pod == "" || e.Container == proxyContainer {
					kept = append(kept, e)
				}
			}
			l.Entries = kept
			s.Notes = append(s.Notes, fmt.Sprintf("%s holds the log of %d containers (%s): only the lines of %s's (%s) are read; those of the others are set aside",
				l.File, len(pods), listFiles(append(slices.Clone(proxy), other...)), proxyContainer, listFiles(proxy)))
		}
		if len(proxy) > 1 {
			if own := ownPod(s, pods); own != nil {
				kept := make([]*klog.Entry, 0, len(l.Entries))
				for _, e := range l.Entries {
					if e.Pod == "" || e.Pod == own.Name {
						kept = append(kept, e)
					}
				}
				l.Entries = kept
				s.Notes = append(s.Notes, fmt.Sprintf("%s holds kube-proxy's log of %d pods (%s): only the lines of %s, the pod the exports place on this node (%s), are read; those of the others are set aside",
					l.File, len(proxy), listFiles(proxy), own.Name, own.Pos))
				continue
			}
			s.Notes = append(s.Notes, fmt.Sprintf("%s holds kube-proxy's log of %d pods (%s): their lines are all read as this node's, which they may not all be (each kube-proxy pod runs on a node of its own); give each pod's log (kubectl logs -n kube-system POD) with its node's files, or export the kube-proxy Pods (kubectl get pods -n kube-system -o yaml) with the node's name known",
				l.File, len(proxy), listFiles(proxy)))
		}
	}
}
