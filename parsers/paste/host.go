package paste

import (
	"regexp"
	"strings"
)

var (
	// reBracketHost is "[root@worker-1 ~]# cmd": user, host, directory.
	reBracketHost = regexp.MustCompile(`^\[[^\]@\s]*@([A-Za-z0-9._-]+)[^\]]*\][#$%](?: (.*)|$)`)
	// reUserHostCmd is "root@worker-1:~# cmd" or "user@worker-1 $ cmd".
	reUserHostCmd = regexp.MustCompile(`^[A-Za-z0-9._-]+@([A-Za-z0-9._-]+)(?::[^\s#$%]*)?\s?[#$%](?: (.*)|$)`)
)

// elsewhere are the programs that run a command on another host (or in a
// container or pod that may be on another node) than the one the prompt
// names.
var elsewhere = map[string]bool{
	"kubectl": true, "k": true, "oc": true, "ssh": true, "crictl": true, "docker": true, "nerdctl": true,
	"podman": true, "ctr": true, "talosctl": true, "gcloud": true, "az": true, "aws": true,
}

// PromptHost returns the host a shell prompt line names ("[root@worker-1
// ~]# iptables-save" names worker-1, as does "root@worker-1:~$ sudo
// ipvsadm -Ln" and "worker-1 $ nft list ruleset"), lower-cased; "" when
// the line is no prompt or a prompt that names no host ("# iptables-save",
// "sh-4.2# ..."). remote says the command it runs reads another host, a
// container or a pod (kubectl exec, ssh, crictl exec, ...): what follows
// it is not the prompt's host's. A host named localhost is none.
func PromptHost(line string) (host string, remote bool) {
	t := strings.TrimSpace(line)
	if classify(t) != ReasonPrompt {
		return "", false
	}
	var cmd string
	if m := reBracketHost.FindStringSubmatch(t); m != nil {
		host, cmd = m[1], m[2]
	} else if m := reUserHostCmd.FindStringSubmatch(t); m != nil {
		host, cmd = m[1], m[2]
	} else if hostPrompt(t) {
		i := strings.IndexByte(t, ' ')
		host, cmd = t[:i], strings.TrimSpace(t[i+2:])
	} else if i := strings.IndexAny(t, "#$>"); i >= 0 {
		cmd = strings.TrimSpace(t[i+1:])
	}
	remote = runsElsewhere(cmd)
	host = strings.ToLower(host)
	if host == "localhost" || strings.HasPrefix(host, "localhost.") {
		host = ""
	}
	return host, remote
}

// runsElsewhere reports whether a command line's first program (after
// sudo, env and variable assignments) runs it on another host.
func runsElsewhere(cmd string) bool {
	for _, w := range strings.Fields(cmd) {
		switch {
		case w == "sudo" || w == "env" || strings.HasPrefix(w, "-") || strings.Contains(w, "="):
			continue
		}
		return elsewhere[w]
	}
	return false
}
