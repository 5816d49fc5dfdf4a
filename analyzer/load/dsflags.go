package load

import (
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/proxyscan/proxyscan/parsers/kpcmdline"
	"github.com/proxyscan/proxyscan/parsers/kube"
)

// daemonSetCmdline returns kube-proxy's command line as the DaemonSet
// that runs it writes it (its container's command and args), for a node
// whose inputs hold no command line of the process itself
// (kube-proxy/cmdline.txt, or the one k3s logs), and the notes that say
// where it comes from and what of it was left out. Only a command line
// without --config is taken: kube-proxy then runs with its flags and
// their defaults, and no ConfigMap given is its configuration; with
// --config (kubeadm's), the file, the ConfigMap exported, is what it runs
// with. It returns nil when no DaemonSet of kube-system runs kube-proxy
// with such a command line, or several do (Windows ones aside: they do
// not run on a Linux node), as none is known to be the node's.
func daemonSetCmdline(objs *kube.Objects) (*kpcmdline.Cmdline, []string) {
	type cand struct {
		ds *kube.DaemonSet
		c  corev1.Container
	}
	var cands []cand
	for _, ds := range objs.DaemonSets {
		if !kubeProxyDaemonSet(ds) {
			continue
		}
		spec := ds.Spec.Template.Spec
		if spec.NodeSelector[corev1.LabelOSStable] == "windows" {
			continue
		}
		for _, c := range spec.Containers {
			if len(c.Command)+len(c.Args) == 0 || !kubeProxyContainer(c) || withConfig(c) {
				continue
			}
			cands = append(cands, cand{ds, c})
		}
	}
	switch {
	case len(cands) == 0:
		return nil, nil
	case len(cands) > 1:
		var names []string
		for _, c := range cands {
			names = append(names, fmt.Sprintf("container %s of DaemonSet %s/%s", c.c.Name, c.ds.Namespace, c.ds.Name))
		}
		return nil, []string{fmt.Sprintf("several DaemonSets run kube-proxy (%s): the command line of none is taken as this node's (add kube-proxy/cmdline.txt)", strings.Join(names, ", "))}
	}
	ds, c := cands[0].ds, cands[0].c
	what := fmt.Sprintf("container %s of DaemonSet %s/%s (%s)", c.Name, ds.Namespace, ds.Name, ds.Pos)
	argv, left := expandArgs(append(append([]string{}, c.Command...), c.Args...), c.Env)
	cl, err := kpcmdline.FromArgv(ds.Pos.File, argv)
	if err != nil {
		return nil, []string{fmt.Sprintf("the command line of %s could not be read: %v", what, err)}
	}
	// The flags are cited at the DaemonSet: the export does not say
	// the line of each argument.
	cl.Pos = ds.Pos
	for i := range cl.Flags {
		cl.Flags[i].Pos = ds.Pos
	}
	for i := range cl.Args {
		cl.Args[i].Pos = ds.Pos
	}
	note := "kube-proxy's flags read from the command and args of " + what + ", as no input holds the command line of the process (its pods may still run an earlier template)"
	if len(left) > 0 {
		note += "; left out, as their values come from the pod's environment: " + strings.Join(left, ", ")
	}
	return cl, []string{note}
}

// withConfig reports whether a container's command line passes kube-proxy
// a --config file.
func withConfig(c corev1.Container) bool {
	for _, a := range append(append([]string{}, c.Command...), c.Args...) {
		if a == "--config" || strings.HasPrefix(a, "--config=") || a == "-config" || strings.HasPrefix(a, "-config=") {
			return true
		}
	}
	return false
}

// kubeProxyDaemonSet reports whether ds is kube-proxy's DaemonSet: in
// kube-system, named kube-proxy... or labelled k8s-app=kube-proxy.
func kubeProxyDaemonSet(ds *kube.DaemonSet) bool {
	return ds.Namespace == "kube-system" && (ds.Labels["k8s-app"] == "kube-proxy" || strings.HasPrefix(ds.Name, "kube-proxy"))
}

// kubeProxyContainer reports whether a container runs kube-proxy: its
// command is kube-proxy, or it is named after it or runs its image with
// arguments only (the image's entrypoint).
func kubeProxyContainer(c corev1.Container) bool {
	if len(c.Command) > 0 {
		base := path.Base(c.Command[0])
		return base == "kube-proxy" || base == "hyperkube" && len(c.Command) > 1 && (c.Command[1] == "kube-proxy" || c.Command[1] == "proxy")
	}
	return c.Name == "kube-proxy" || strings.Contains(c.Image, "kube-proxy")
}

// expandArgs expands the $(VAR) references of argv as the kubelet does
// from env ($$ is a $; a reference to a variable of no literal value, as
// one from the downward API, is not known here), and leaves out the flags
// whose values hold a reference it cannot expand (returned as left).
func expandArgs(argv []string, env []corev1.EnvVar) (out, left []string) {
	vals := map[string]string{}
	for _, e := range env {
		if e.ValueFrom == nil {
			v, _ := expandRefs(e.Value, vals)
			vals[e.Name] = v
		} else {
			delete(vals, e.Name)
		}
	}
	for _, raw := range argv {
		a, unknown := expandRefs(raw, vals)
		prev := ""
		if len(out) > 1 {
			prev = out[len(out)-1]
		}
		switch {
		case !unknown:
			out = append(out, a)
		case strings.HasPrefix(a, "-"):
			left = append(left, raw)
		case strings.HasPrefix(prev, "--") && !strings.Contains(prev, "=") && !kpcmdline.BoolFlags[strings.TrimPrefix(prev, "--")]:
			// The value of the flag before it.
			left = append(left, prev+" "+raw)
			out = out[:len(out)-1]
		default:
			left = append(left, raw)
		}
	}
	return out, left
}

// expandRefs expands the $(VAR) references of s from vals, and reports
// whether one names a variable vals does not hold (left as written).
func expandRefs(s string, vals map[string]string) (string, bool) {
	if !strings.Contains(s, "$") {
		return s, false
	}
	var b strings.Builder
	unknown := false
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			j := strings.IndexByte(s[i+2:], ')')
			if j < 0 {
				b.WriteString(s[i:])
				return b.String(), unknown
			}
			if v, ok := vals[s[i+2:i+2+j]]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+j])
				unknown = true
			}
			i += 2 + j
		default:
			b.WriteByte('$')
		}
	}
	return b.String(), unknown
}

// dsName returns namespace/name of the DaemonSet whose export holds the
// command line cl (see daemonSetCmdline).
func dsName(objs *kube.Objects, cl *kpcmdline.Cmdline) string {
	for _, ds := range objs.DaemonSets {
		if ds.Pos == cl.Pos {
			return ds.Namespace + "/" + ds.Name
		}
	}
	return "kube-proxy"
}
