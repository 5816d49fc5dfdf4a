package paste

import (
	"bufio"
	"bytes"
	"io"
	"strings"

	"github.com/proxyscan/proxyscan/parsers/internal/bytestr"
)

// A Session is the lines of a paste that one command printed, its command
// line above them: a terminal's transcript of several commands holds one
// per command.
type Session struct {
	// From and To are the session's first and last lines (1-based,
	// inclusive); From is the command's line, or 1 for the first session,
	// which holds the lines above the first command too.
	From, To int
	// Command is the command as pasted, without its prompt.
	Command string
}

// Sessions cuts a paste at the commands it shows: a shell prompt followed
// by a command ("[root@node-1 ~]# ipvsadm -Ln", "$ kubectl get cm ...",
// "user@host:~$ sudo nft list ruleset") or a command line alone
// ("iptables-save | grep KUBE"). A root prompt written as "# cmd" is not a
// cut: configuration files and dumps hold comments of that form. It
// returns nil when data shows fewer than two commands.
func Sessions(data []byte) []Session {
	ss, _ := ReadSessions(bytes.NewReader(data))
	return ss
}

// ReadSessions is [Sessions] of what r reads, a line at a time (a line
// may be as long as the 16 MiB of the largest paste looked at); the error
// is r's, or that of a longer line.
func ReadSessions(r io.Reader) ([]Session, error) {
	var out []Session
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		// The line is looked at in place: most lines are no command.
		if cmd := commandOf(bytestr.Of(bytes.TrimRight(sc.Bytes(), "\r"))); cmd != "" {
			cmd = strings.Clone(cmd)
			if len(out) == 0 {
				out = append(out, Session{From: 1, Command: cmd})
			} else {
				out[len(out)-1].To = line - 1
				out = append(out, Session{From: line, Command: cmd})
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) < 2 {
		return nil, nil
	}
	out[len(out)-1].To = line
	return out, nil
}

// commandOf returns the command a line shows after its prompt, or as a
// command line alone; "" for any other line, a prompt without a command
// and a root prompt's "# cmd" form.
func commandOf(l string) string {
	t := strings.TrimSpace(l)
	switch classify(t) {
	case ReasonCommand:
		return t
	case ReasonPrompt:
		if t[0] == '#' {
			return ""
		}
		if t[0] == 'P' {
			if i := strings.Index(t, "> "); i >= 0 {
				return strings.TrimSpace(t[i+2:])
			}
			return ""
		}
		i := strings.IndexAny(t, "#$%")
		for i >= 0 && i+1 < len(t) && t[i+1] != ' ' {
			j := strings.IndexAny(t[i+1:], "#$%")
			if j < 0 {
				return ""
			}
			i += 1 + j
		}
		if i < 0 || i+1 >= len(t) {
			return ""
		}
		return strings.TrimSpace(t[i+1:])
	}
	return ""
}
