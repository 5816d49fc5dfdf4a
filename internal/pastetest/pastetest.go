// Package pastetest damages clean dumps the way pasting them into a ticket
// does, for the tests of lenient reading and the fixtures of
// testdata/paste: each [Damage] is one kind of paste damage applied to a
// whole dump, which a lenient read must undo to the same model; each
// [Cut] keeps only part of a dump, which a lenient read must take as
// partial. Only tests use it.
package pastetest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/proxyscan/proxyscan/parsers/ipset"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
)

// A Damage is one kind of paste damage.
type Damage struct {
	Name string
	// Apply returns the damaged text of a clean dump.
	Apply func(clean string) string
	// Skipped and Changed are the reasons the lenient read reports for
	// the lines the damage added or changed.
	Skipped, Changed []string
}

// Damages are the kinds of paste damage that leave the dump whole.
var Damages = []Damage{
	{Name: "prompt-bracket", Skipped: []string{"shell prompt"},
		Apply: func(c string) string { return "[root@node-a ~]# iptables-save\n" + c + "[root@node-a ~]# \n" }},
	{Name: "prompt-user-host", Skipped: []string{"shell prompt"},
		Apply: func(c string) string { return "admin@node-a:~$ sudo iptables-save\n" + c }},
	{Name: "prompt-kubectl-exec", Skipped: []string{"shell prompt"},
		Apply: func(c string) string {
			return "controlplane $ kubectl -n kube-system exec kube-proxy-7xk2p -- iptables-save\n" + c + "controlplane $\n"
		}},
	{Name: "command-line", Skipped: []string{"shell command"},
		Apply: func(c string) string { return "sudo iptables-save\n" + c }},
	{Name: "code-fence", Skipped: []string{"code fence", "outside code blocks"},
		Apply: func(c string) string {
			return "The node drops traffic to shop/web, here is what it has:\n\n```text\n" + c + "```\n\nAny idea?\n"
		}},
	{Name: "quote-markers", Changed: []string{"quote marker"},
		Apply: func(c string) string {
			return eachLine(c, func(_ int, l string) string { return strings.TrimRight("> "+l, " ") })
		}},
	{Name: "line-numbers-bar", Changed: []string{"line number"},
		Apply: func(c string) string {
			return eachLine(c, func(i int, l string) string { return fmt.Sprintf("%4d | %s", i+1, l) })
		}},
	{Name: "line-numbers-colon", Changed: []string{"line number"},
		Apply: func(c string) string {
			return eachLine(c, func(i int, l string) string { return fmt.Sprintf("%d: %s", i+1, l) })
		}},
	{Name: "line-numbers-cat-n", Changed: []string{"line number"},
		Apply: func(c string) string {
			return eachLine(c, func(i int, l string) string { return fmt.Sprintf("%6d\t%s", i+1, l) })
		}},
	{Name: "crlf", Changed: []string{"carriage return"},
		Apply: func(c string) string { return strings.ReplaceAll(c, "\n", "\r\n") }},
	{Name: "colour", Changed: []string{"colour codes"},
		// grep --color=always KUBE, which marks every match.
		Apply: func(c string) string { return strings.ReplaceAll(c, "KUBE", "\x1b[01;31m\x1b[KKUBE\x1b[m\x1b[K") }},
	{Name: "trailing-blanks", Changed: []string{"trailing blanks"},
		// A terminal's copy, which pads lines to its width.
		Apply: func(c string) string {
			return eachLine(c, func(_ int, l string) string {
				if l == "" {
					return l
				}
				return l + strings.Repeat(" ", 80-len(l)%80)
			})
		}},
	{Name: "kubectl-table", Skipped: []string{"shell prompt", "kubectl table"},
		Apply: func(c string) string {
			return "controlplane $ kubectl -n kube-system get pods -o wide -l k8s-app=kube-proxy\n" +
				"NAME               READY   STATUS    RESTARTS   AGE   IP              NODE     NOMINATED NODE   READINESS GATES\n" +
				"kube-proxy-7xk2p   1/1     Running   0          3d    192.168.10.11   node-a   <none>           <none>\n" +
				"kube-proxy-q9d4s   1/1     Running   2          3d    192.168.10.12   node-b   <none>           <none>\n" +
				"controlplane $ kubectl -n kube-system exec kube-proxy-7xk2p -- iptables-save\n" + c
		}},
	{Name: "restore-logged", Skipped: []string{"kube-proxy log"},
		// kube-proxy -v=9 logs what it restores as a klog multi-line value.
		Apply: func(c string) string {
			return "I0414 09:30:00.118231       1 proxier.go:1500] \"Restoring iptables\" rules=<\n" +
				eachLine(c, func(_ int, l string) string { return "\t" + l }) + " >\n"
		}},
	{Name: "ticket", Skipped: []string{"shell prompt", "code fence", "outside code blocks"}, Changed: []string{"carriage return", "colour codes", "trailing blanks"},
		// Several at once: a prompt and coloured output in a fenced block
		// of a ticket written on Windows.
		Apply: func(c string) string {
			c = strings.ReplaceAll(c, "KUBE", "\x1b[01;31m\x1b[KKUBE\x1b[m\x1b[K")
			c = eachLine(c, func(_ int, l string) string { return l + "  " })
			c = "Output from the node:\n```\n[root@node-a ~]# iptables-save | grep --color=always KUBE\n" + c + "```\n"
			return strings.ReplaceAll(c, "\n", "\r\n")
		}},
}

// A Cut keeps only part of a dump.
type Cut struct {
	Name string
	// Apply returns what is left of a clean dump.
	Apply func(clean string) string
}

// Cuts are the pastes of part of a dump.
var Cuts = []Cut{
	{Name: "cut-short", Apply: func(c string) string {
		// A paste that stopped two thirds through, in the middle of a line.
		return c[:len(c)*2/3]
	}},
	{Name: "grep-svc", Apply: func(c string) string {
		return "admin@node-a:~$ sudo iptables-save | grep SVC\n" + keep(c, func(l string) bool { return strings.Contains(l, "SVC") })
	}},
	{Name: "no-headers", Apply: func(c string) string {
		// The rules and chain headers alone, as copied from the middle of
		// a terminal: no "*table", COMMIT or comment lines.
		return keep(c, func(l string) bool { return strings.HasPrefix(l, "-") || strings.HasPrefix(l, ":") })
	}},
	{Name: "iptables-S-nat", Apply: func(c string) string { return "$ sudo iptables -t nat -S\n" + listRules(c, "nat") }},
	{Name: "restore-payload", Apply: func(c string) string {
		return "I0414 09:30:00.118231       1 proxier.go:1500] \"Restoring iptables\" rules=<\n" +
			eachLine(RestoreForm(c), func(_ int, l string) string { return "\t" + l }) + " >\n"
	}},
	{Name: "restore-failed", Apply: func(c string) string {
		return RestoreFailure(RestoreForm(c), strings.Count(RestoreForm(c), "\n")*3/4)
	}},
	{Name: "ticket-cut-short", Apply: func(c string) string {
		// The ticket's damage (see Damages) on a dump cut short.
		for _, d := range Damages {
			if d.Name == "ticket" {
				return d.Apply(c[:len(c)*2/3] + "\n")
			}
		}
		return ""
	}},
}

// eachLine applies f to every line of text (without its "\n").
func eachLine(text string, f func(i int, l string) string) string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, l := range lines {
		lines[i] = f(i, l)
	}
	return strings.Join(lines, "\n") + "\n"
}

// keep returns the lines of text that f keeps.
func keep(text string, f func(string) bool) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if f(l) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// listRules returns one table of an iptables-save dump as iptables -t
// TABLE -S lists it: "-P" for the built-in chains, "-N" for the others,
// then the rules.
func listRules(save, table string) string {
	var b strings.Builder
	var rules []string
	in := false
	for _, l := range strings.Split(save, "\n") {
		switch {
		case l == "*"+table:
			in = true
		case !in:
		case l == "COMMIT":
			in = false
		case strings.HasPrefix(l, ":"):
			f := strings.Fields(l[1:])
			if f[1] == "-" {
				fmt.Fprintf(&b, "-N %s\n", f[0])
			} else {
				fmt.Fprintf(&b, "-P %s %s\n", f[0], f[1])
			}
		case strings.HasPrefix(l, "-A "):
			rules = append(rules, l)
		}
	}
	for _, r := range rules {
		b.WriteString(r + "\n")
	}
	return b.String()
}

// RestoreForm returns the tables of an iptables-save dump in kube-proxy's
// spelling of its iptables-restore input: no comment lines, the comment
// match first in each rule, "-m PROTO" before "-p PROTO", host addresses
// without their /32, one-word comments unquoted. (The jumps from the
// built-in chains, which kube-proxy ensures with separate commands, stay
// in, so that the payload stands for the node's tables.)
func RestoreForm(save string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(save, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "-A "):
			b.WriteString(restoreRule(l) + "\n")
		default:
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// restoreRule respells one rule (see RestoreForm).
func restoreRule(r string) string {
	words := split(r)
	var comment, rest []string
	for i := 2; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "-m" && i+3 < len(words) && words[i+1] == "comment" && words[i+2] == "--comment":
			c := words[i+3]
			if u := strings.Trim(c, `"`); !strings.ContainsAny(u, " \\") {
				c = u
			}
			comment = []string{"-m", "comment", "--comment", c}
			i += 3
		case (w == "-s" || w == "-d") && i+1 < len(words):
			rest = append(rest, w, strings.TrimSuffix(words[i+1], "/32"))
			i++
		case w == "-p" && i+3 < len(words) && words[i+2] == "-m" && words[i+3] == words[i+1]:
			rest = append(rest, "-m", words[i+1], "-p", words[i+1])
			i += 3
		default:
			rest = append(rest, w)
		}
	}
	return strings.Join(append(append(words[:2:2], comment...), rest...), " ")
}

// split splits a rule into words, a quoted value being one.
func split(r string) []string {
	var out []string
	for len(r) > 0 {
		r = strings.TrimLeft(r, " ")
		if r == "" {
			break
		}
		end := strings.IndexByte(r, ' ')
		if r[0] == '"' {
			end = strings.IndexByte(r[1:], '"') + 2
		}
		if end < 0 || end > len(r) {
			end = len(r)
		}
		out = append(out, r[:end])
		r = r[end:]
	}
	return out
}

// RestoreFailure returns the line kube-proxy logs when iptables-restore
// refuses its input at line n (pkg/proxy/iptables/proxier.go: the error
// and utiliptables.ExtractLines' lines around it), with the node's shell
// prompt and the kubectl logs command around it.
func RestoreFailure(payload string, n int) string {
	lines := strings.Split(payload, "\n")
	type lineData struct {
		Line int
		Data string
	}
	var around []lineData
	for i := max(n-3, 1); i <= min(n+3, len(lines)); i++ {
		around = append(around, lineData{i, lines[i-1]})
	}
	var js strings.Builder
	enc := json.NewEncoder(&js)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(around)
	return "controlplane $ kubectl -n kube-system logs kube-proxy-7xk2p | grep iptables-restore\n" +
		fmt.Sprintf("E0414 09:30:00.120458       1 proxier.go:1520] \"Failed to execute iptables-restore\" err=\"iptables-restore: input error on line %d: \" ipFamily=\"IPv4\" rules=%s\n", n, strings.TrimSuffix(js.String(), "\n"))
}

// A Listing is the output of iptables -L (or of another command that
// lists a dump's rules) as pasted: the command's arguments, run on the
// node whose tables are the clean dump, and what the paste adds around
// its output.
type Listing struct {
	Name string
	// Tool is the program the commands run, "iptables" when empty.
	Tool string
	// Commands are the commands, each the arguments of Tool, whose
	// outputs make the paste, in order.
	Commands [][]string
	// Wrap returns the paste of the commands' outputs.
	Wrap func(outputs []string) string
}

// prompted returns each output after a prompt and its command.
func prompted(tool string, cmds [][]string) func([]string) string {
	return func(outs []string) string {
		var b strings.Builder
		for i, o := range outs {
			b.WriteString("[root@node-a ~]# " + tool + " " + strings.Join(cmds[i], " ") + "\n" + o)
		}
		return b.String()
	}
}

// Program returns the program a listing's commands run.
func (l Listing) Program() string {
	if l.Tool == "" {
		return "iptables"
	}
	return l.Tool
}

// Listings are the iptables -L forms of a dump.
var Listings = []Listing{
	{Name: "iptables-L-nat-nv-line-numbers", Commands: [][]string{{"-t", "nat", "-L", "-n", "-v", "--line-numbers"}}},
	{Name: "iptables-nL", Commands: [][]string{{"-nL"}}},
	{Name: "iptables-L-both-nvx", Commands: [][]string{{"-L", "-n", "-v", "-x"}, {"-t", "nat", "-L", "-n", "-v", "-x"}, {"-t", "mangle", "-L", "-n", "-v", "-x"}}},
	{Name: "iptables-L-nat-chain", Commands: [][]string{{"-t", "nat", "-L", "KUBE-SERVICES", "-n"}}},
	{Name: "iptables-L-names", Commands: [][]string{{"-t", "nat", "-L"}},
		// Without -n, in a ticket that does not show the command.
		Wrap: func(outs []string) string {
			return "kube-dns does not answer from pods; the nat table of the node:\n\n```\n" + outs[0] + "```\n"
		}},
	{Name: "nft-ruleset-iptables-nft", Tool: "nft", Commands: [][]string{{"-a", "list", "ruleset"}}},
	{Name: "nft-json-iptables-nft", Tool: "nft", Commands: [][]string{{"-j", "list", "ruleset"}}},
	{Name: "iptables-L-ticket", Commands: [][]string{{"-t", "nat", "-L", "-n", "-v"}},
		Wrap: func(outs []string) string {
			for _, d := range Damages {
				if d.Name == "ticket" {
					return d.Apply(outs[0])
				}
			}
			return ""
		}},
}

// Paste returns the paste of a listing's outputs.
func (l Listing) Paste(outs []string) string {
	if l.Wrap != nil {
		return l.Wrap(outs)
	}
	return prompted(l.Program(), l.Commands)(outs)
}

// A Form is another form in which a ticket shows what a node did with
// a dump: kube-proxy's logs of a failed sync of it, through journalctl,
// systemctl status or kubectl logs.
type Form struct {
	Name string
	// Base is the file of testdata/bundles the form is made from, ""
	// for the iptables dump of iptables-mini.
	Base string
	// Apply returns the paste, from a clean dump.
	Apply func(clean string) string
}

// IPVSBase is the bundle of the forms of an IPVS-mode node.
const IPVSBase = "ipvs-healthy-mini"

// lineOf returns the line of the restore payload (RestoreForm) of a
// dump that contains s, 0 when none does.
func lineOf(clean, s string) int {
	for i, l := range strings.Split(RestoreForm(clean), "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	return 0
}

// journal prefixes each line with the journal's prefix of kube-proxy's
// unit.
func journal(lines ...string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("Apr 14 09:30:00 node-a kube-proxy[9234]: " + l + "\n")
	}
	return b.String()
}

// ellipsised cuts each line longer than width as systemctl status does.
func ellipsised(text string, width int) string {
	return eachLine(text, func(_ int, l string) string {
		if r := []rune(l); len(r) > width {
			return string(r[:width-1]) + "…"
		}
		return l
	})
}

// Forms are the log forms of a failed sync of a dump.
var Forms = []Form{
	{Name: "log-journalctl", Apply: func(c string) string {
		n := lineOf(c, "--set-xmark 0x4000/0x0")
		return "admin@node-a:~$ journalctl -u kube-proxy --no-pager | tail\n" + journal(
			`I0414 09:29:58.101200    9234 server_linux.go:169] "Using iptables Proxier"`,
			`I0414 09:30:00.100000    9234 proxier.go:805] "Syncing iptables rules"`,
			`E0414 09:30:00.120458    9234 proxier.go:1520] "Failed to execute iptables-restore" err=<`,
			`	exit status 2: iptables-restore v1.4.21: unknown option "--xor-mark"`,
			fmt.Sprintf("	Error occurred at line: %d", n),
			"	Try `iptables-restore -h' or 'iptables-restore --help' for more information.",
			` > ipFamily="IPv4"`,
			`E0414 09:30:00.120511    9234 proxier.go:811] "Sync failed" ipFamily="IPv4" retryingTime="30s"`,
		)
	}},
	{Name: "log-systemctl-status", Apply: func(c string) string {
		n := lineOf(c, "-m statistic")
		return "[root@node-a ~]# systemctl status kube-proxy\n" +
			"● kube-proxy.service - Kubernetes Kube-Proxy Server\n" +
			"     Loaded: loaded (/etc/systemd/system/kube-proxy.service; enabled; vendor preset: enabled)\n" +
			"     Active: active (running) since Tue 2026-04-14 09:29:57 UTC; 3s ago\n" +
			"       Docs: https://github.com/kubernetes/kubernetes\n" +
			"   Main PID: 9234 (kube-proxy)\n" +
			"      Tasks: 9 (limit: 4557)\n" +
			"     Memory: 21.4M\n" +
			"     CGroup: /system.slice/kube-proxy.service\n" +
			"             └─9234 /usr/local/bin/kube-proxy --config=/var/lib/kube-proxy/config.conf --hostname-override=node-a\n\n" +
			ellipsised(journal(
				`I0414 09:29:58.101200    9234 server_linux.go:169] "Using iptables Proxier"`,
				`E0414 09:30:00.120458    9234 proxier.go:1520] "Failed to execute iptables-restore" err=<`,
				`	exit status 2: Warning: Extension statistic revision 0 not supported, missing kernel module?`,
				fmt.Sprintf("	iptables-restore: line %d failed", n),
				` > ipFamily="IPv4"`,
				`E0414 09:30:00.120511    9234 proxier.go:811] "Sync failed" ipFamily="IPv4" retryingTime="30s"`,
			), 120)
	}},
	{Name: "log-kubectl-logs", Apply: func(c string) string {
		n := lineOf(c, "-m recent")
		return "controlplane $ kubectl -n kube-system logs kube-proxy-7xk2p --tail=4\n" +
			`I0414 09:29:58.101200       1 server_linux.go:169] "Using iptables Proxier"` + "\n" +
			`E0414 09:30:00.120458       1 proxier.go:1520] "Failed to execute iptables-restore" err=<` + "\n" +
			"\texit status 2: iptables-restore v1.8.7 (legacy): Couldn't load match `recent':No such file or directory\n" +
			fmt.Sprintf("\tError occurred at line: %d\n", n) +
			` > ipFamily="IPv4"` + "\n"
	}},
	{Name: "ipvs-ipset-list-cut", Base: IPVSBase + "/node/ipset-save.txt", Apply: func(c string) string {
		// ipset list, copied from a terminal that had scrolled: cut in
		// the middle of the members of KUBE-LOOP-BACK.
		d, err := ipset.Parse("ipset-save.txt", []byte(c))
		if err != nil {
			return err.Error()
		}
		l := string(ipset.FormatList(d))
		i := strings.Index(l, "Name: KUBE-LOOP-BACK\n")
		if i < 0 {
			return ""
		}
		j := strings.Index(l[i:], "Members:\n") + i + len("Members:\n")
		lines := strings.SplitAfterN(l[j:], "\n", 4)
		return "[root@node-a ~]# ipset list\n" + l[:j] + strings.Join(lines[:3], "")
	}},
	{Name: "ipvs-ipvsadm-t", Base: IPVSBase + "/node/ipvsadm.txt", Apply: func(c string) string {
		// One service listed, which prints no version banner.
		var b strings.Builder
		b.WriteString("admin@node-a:~$ sudo ipvsadm -Ln -t 10.96.0.1:443\n")
		in := false
		for i, l := range strings.Split(strings.TrimSuffix(c, "\n"), "\n") {
			switch {
			case i == 1 || i == 2:
				b.WriteString(l + "\n")
			case strings.HasPrefix(l, "TCP  10.96.0.1:443 "):
				in = true
				b.WriteString(l + "\n")
			case in && strings.HasPrefix(l, "  ->"):
				b.WriteString(l + "\n")
			default:
				in = false
			}
		}
		return b.String()
	}},
	{Name: "ipvs-ipvsadm-stats", Base: IPVSBase + "/node/ipvsadm.txt", Apply: func(c string) string {
		// ipvsadm -Ln --stats, to see the traffic: counters instead of
		// the scheduler, persistence and weights.
		return "[root@node-a ~]# ipvsadm -Ln --stats\n" + relist(c, ipvs.ColumnsStats, func(s *ipvs.Service, i int) {
			n := uint64(1000 * (i + 1))
			s.Counters = &ipvs.Stats{Conns: ipvs.Counter{Value: n / 100}, InPkts: ipvs.Counter{Value: n}, InBytes: ipvs.Counter{Value: 60 * n}}
			for j, d := range s.Destinations {
				m := n / uint64(len(s.Destinations)) / uint64(j+1)
				d.Counters = &ipvs.Stats{Conns: ipvs.Counter{Value: m / 100}, InPkts: ipvs.Counter{Value: m}, InBytes: ipvs.Counter{Value: 60 * m}}
			}
		})
	}},
	{Name: "ipvs-ipvsadm-thresholds", Base: IPVSBase + "/node/ipvsadm.txt", Apply: func(c string) string {
		// ipvsadm -Ln --thresholds pasted from a terminal that trims the
		// blanks ipvsadm pads its title with.
		var b strings.Builder
		b.WriteString("$ sudo ipvsadm -Ln --thresholds\n")
		for _, l := range strings.SplitAfter(relist(c, ipvs.ColumnsThresholds, nil), "\n") {
			if l != "" {
				b.WriteString(strings.TrimRight(l, " \n") + "\n")
			}
		}
		return b.String()
	}},
	{Name: "ipvs-ipvsadm-L-names", Base: IPVSBase + "/node/ipvsadm.txt", Apply: func(c string) string {
		// ipvsadm -L without -n: port names, and the names the node's
		// resolver gives the addresses it knows.
		r := strings.NewReplacer(":443 ", ":https ", ":80 ", ":http ", ":53 ", ":domain ",
			"10.96.0.10:", "kube-dns.kube-system.svc.cluster.local:", "192.168.10.10:", "node-cp:")
		return "[root@node-a ~]# ipvsadm -L\n" + r.Replace(c)
	}},
	{Name: "ipvs-metrics-grep-curl", Base: IPVSBase + "/kube-proxy/metrics.txt", Apply: func(c string) string {
		// curl piped to grep on a terminal: the progress meter, on
		// stderr, among the lines grep keeps.
		return "admin@node-a:~$ curl localhost:10249/metrics | grep sync_proxy_rules\n" +
			"  % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current\n" +
			"                                 Dload  Upload   Total   Spent    Left  Speed\n" +
			keep(c, func(l string) bool { return strings.Contains(l, "sync_proxy_rules") }) +
			"100 14342    0 14342    0     0  2334k      0 --:--:-- --:--:-- --:--:-- 2334k\n"
	}},
	{Name: "ipvs-metrics-old", Base: IPVSBase + "/kube-proxy/metrics.txt", Apply: func(c string) string {
		// The page of a kube-proxy before 1.14: the sync latency in
		// microseconds, no ip_family label.
		const name = "kubeproxy_sync_proxy_rules_duration_seconds"
		var b strings.Builder
		b.WriteString("$ curl -s http://127.0.0.1:10249/metrics | grep kubeproxy\n")
		for _, l := range strings.Split(strings.TrimSuffix(c, "\n"), "\n") {
			if !strings.Contains(l, name) {
				continue
			}
			l = strings.ReplaceAll(l, name, "kubeproxy_sync_proxy_rules_latency_microseconds")
			l = strings.Replace(l, "latency in seconds", "latency", 1)
			l = strings.Replace(l, `ip_family="IPv4",`, "", 1)
			l = strings.Replace(l, `{ip_family="IPv4"}`, "", 1)
			if i := strings.Index(l, `le="`); i >= 0 {
				j := strings.IndexByte(l[i+4:], '"') + i + 4
				if v, err := strconv.ParseFloat(l[i+4:j], 64); err == nil && l[i+4:j] != "+Inf" {
					l = l[:i+4] + strconv.FormatFloat(v*1e6, 'f', -1, 64) + l[j:]
				}
			}
			if strings.HasPrefix(l, "kubeproxy_sync_proxy_rules_latency_microseconds_sum ") {
				f := strings.Fields(l)
				if v, err := strconv.ParseFloat(f[1], 64); err == nil {
					l = f[0] + " " + strconv.FormatFloat(v*1e6, 'f', -1, 64)
				}
			}
			b.WriteString(l + "\n")
		}
		return b.String()
	}},
	{Name: "ipvs-ps-ef", Apply: func(string) string {
		// kube-proxy's command line as ps -ef | grep shows it: ps's
		// header, kube-proxy's row, and grep's own.
		return "[root@node-a ~]# ps -ef | grep -E 'PID|kube-proxy'\n" +
			"UID          PID    PPID  C STIME TTY          TIME CMD\n" +
			"root        2211    2190  1 Nov28 ?        01:12:09 /usr/local/bin/kube-proxy --config=/var/lib/kube-proxy/config.conf --hostname-override=node-a --v=2\n" +
			"root       99812   99770  0 10:02 pts/0    00:00:00 grep --color=auto -E PID|kube-proxy\n"
	}},
	{Name: "ipvs-ps-aux", Apply: func(string) string {
		return "$ ps aux | grep [k]ube-proxy\n" +
			"root        2211  1.2  0.9 1290244 75412 ?       Ssl  Nov28  72:09 /usr/local/bin/kube-proxy --config=/var/lib/kube-proxy/config.conf --hostname-override=node-a\n"
	}},
	{Name: "export-kubectl-warning", Base: "iptables-mini/cluster/cluster.yaml", Apply: func(c string) string {
		// kubectl get ... -o json > export.json 2>&1: the warnings it
		// writes on stderr land above the export.
		var v any
		if err := yaml.Unmarshal([]byte(c), &v); err != nil {
			panic(err)
		}
		out, err := json.MarshalIndent(v, "", "    ")
		if err != nil {
			panic(err)
		}
		return "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice\n" +
			"Warning: short name \"ep\" is deprecated\n" + string(out) + "\n"
	}},
	{Name: "configmap-key-config", Base: "iptables-mini/cluster/kube-proxy-configmap.yaml", Apply: func(c string) string {
		// A ConfigMap whose key is "config", with the user's own
		// comments, and a mode left empty by someone who believes IPVS
		// runs.
		r := strings.NewReplacer("  config.conf: |-\n", "  config: |-\n",
			"    mode: iptables\n", "    mode: \"\" # <-- switched to IPVS last week\n",
			"      scheduler: rr\n", "      scheduler: rr # <-- round robin\n")
		return "$ kubectl -n kube-system get cm kube-proxy -o yaml\n" + r.Replace(c)
	}},
	{Name: "configmap-describe", Base: "iptables-mini/cluster/kube-proxy-configmap.yaml", Apply: func(c string) string {
		// kubectl describe of the same ConfigMap, its keys as they are
		// under their dashes, with a user's comment in the configuration.
		var b strings.Builder
		b.WriteString("[root@cp-1 ~]# kubectl -n kube-system describe configmap kube-proxy\n")
		b.WriteString("Name:         kube-proxy\nNamespace:    kube-system\nLabels:       app=kube-proxy\n")
		b.WriteString("Annotations:  kubeadm.kubernetes.io/component-config.hash: sha256:5b1e0c\n\nData\n====\n")
		inData := false
		for _, l := range strings.Split(c, "\n") {
			switch {
			case l == "data:":
				inData = true
			case !strings.HasPrefix(l, " "):
				inData = false
			case inData && strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "   "):
				b.WriteString(strings.TrimSuffix(strings.TrimSpace(l), " |-") + "\n----\n")
			case inData:
				l = strings.TrimPrefix(l, "    ")
				if l == "mode: iptables" {
					l = "mode: iptables # set back from ipvs on Monday"
				}
				b.WriteString(l + "\n")
				continue
			}
		}
		return b.String() + "\nBinaryData\n====\n\nEvents:  <none>\n"
	}},
	{Name: "nftables-cut-short", Base: "nftables-healthy/node/nft-ruleset.txt", Apply: func(c string) string {
		// nft list ruleset pasted after its prompt, cut short: the first
		// 60% of its lines, which end in table ip kube-proxy.
		lines := strings.SplitAfter(c, "\n")
		return "[root@node-a ~]# nft list ruleset\n" + strings.Join(lines[:len(lines)*60/100], "")
	}},
	{Name: "log-nft-error", Base: "nftables-healthy/node/nft-ruleset.txt", Apply: func(c string) string {
		// nft's own error when it loads a rule of kube-proxy's table that
		// the kernel does not support.
		rule := ""
		for _, l := range strings.Split(c, "\n") {
			if strings.Contains(l, "vmap @service-ips") {
				rule = strings.TrimSpace(l)
				break
			}
		}
		cmd := "add rule ip kube-proxy services " + rule
		return "[root@node-a ~]# nft -f /tmp/kube-proxy.nft\n" +
			fmt.Sprintf("/tmp/kube-proxy.nft:12:1-%d: Error: Could not process rule: Operation not supported\n", len(cmd)) +
			cmd + "\n" + strings.Repeat("^", len(cmd)) + "\n"
	}},
	{Name: "log-nftables-feature", Apply: func(c string) string {
		return "controlplane $ kubectl -n kube-system logs kube-proxy-7xk2p --timestamps\n" +
			`2026-04-14T09:29:58.101200000Z I0414 09:29:58.101200       1 server_linux.go:169] "Using nftables Proxier"` + "\n" +
			`2026-04-14T09:30:00.120458000Z E0414 09:30:00.120458       1 proxier.go:1874] "nftables sync failed" err=<` + "\n" +
			"2026-04-14T09:30:00.120458000Z \t/dev/stdin:12:1-80: Error: Could not process rule: Operation not supported\n" +
			"2026-04-14T09:30:00.120458000Z \tadd rule ip kube-proxy services ip daddr . meta l4proto . th dport vmap @service-ips\n" +
			`2026-04-14T09:30:00.120458000Z  > ipFamily="IPv4"` + "\n"
	}},
}

// relist prints the ipvsadm -Ln listing c with the columns cols, after
// edit (when not nil) changed each of its services (the i-th).
func relist(c string, cols ipvs.Columns, edit func(s *ipvs.Service, i int)) string {
	d, err := ipvs.ParseList("ipvsadm.txt", []byte(c))
	if err != nil {
		panic(fmt.Sprintf("pastetest: the base listing: %v", err))
	}
	if edit != nil {
		for i, s := range d.Services {
			edit(s, i)
		}
	}
	return string(ipvs.FormatList(d, ipvs.ListOptions{Columns: cols}))
}
