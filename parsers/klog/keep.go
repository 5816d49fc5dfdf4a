package klog

import (
	"strings"
	"unicode/utf8"
	"unsafe"
)

// followKept is how many entries after one that matches a pattern
// ParseKept keeps: those Log.CauseAt reads for the cause of a failed sync
// (checks read the three that follow).
const followKept = 3

// keeper decides, entry by entry in file order, which entries ParseKept
// keeps, and detaches those from the parsed text.
type keeper struct {
	follow int // entries still kept after the last match
	// followHost: entries of each host (or pod's container) still kept
	// after its last match.
	followHost map[source]int
	hosts      map[source]bool // the hosts and pods' containers of the entries kept
	ids        map[string]bool // the journal identifiers of the entries kept
	bare       bool            // an entry without the journal's prefix is kept
	lowerBuf   []byte
}

// source is where an entry comes from: the host the journal's prefix
// names, or the pod and container kubectl logs --prefix names.
type source struct{ host, pod, container string }

func (e *Entry) source() source { return source{e.Host, e.Pod, e.Container} }

// clone returns a copy of s that holds no text of a line.
func (s source) clone() source {
	return source{strings.Clone(s.host), strings.Clone(s.pod), strings.Clone(s.container)}
}

// add reports whether e is kept, and if so detaches it.
func (k *keeper) add(e *Entry) bool {
	keep := false
	// The entries that follow a match: the next ones of the log, and
	// those of the match's host (and without a host), which follow it
	// once the loader set the other hosts' entries aside.
	if k.follow > 0 {
		keep = true
		k.follow--
	}
	src := e.source()
	for h, n := range k.followHost {
		if n > 0 && (src == h || src == source{}) {
			keep = true
			k.followHost[h] = n - 1
		}
	}
	if k.matches(e) {
		keep, k.follow = true, followKept
		if src != (source{}) {
			if k.followHost == nil {
				k.followHost = map[source]int{}
			}
			if _, ok := k.followHost[src]; ok {
				k.followHost[src] = followKept
			} else {
				// The keys outlive the line (see ParseKeptReader).
				k.followHost[src.clone()] = followKept
			}
		}
	}
	keep = startupLine(e) || e.Truncated || keep
	if src != (source{}) && !k.hosts[src] {
		if k.hosts == nil {
			k.hosts = map[source]bool{}
		}
		k.hosts[src.clone()], keep = true, true
	}
	if e.Wrapper == WrapperJournal {
		line, _, _ := strings.Cut(e.Raw, "\n")
		if id := journalIdentifier(reJournal.FindString(line)); id != "" && !k.ids[id] {
			if k.ids == nil {
				k.ids = map[string]bool{}
			}
			k.ids[strings.Clone(id)], keep = true, true
		}
	} else if !k.bare {
		k.bare, keep = true, true
	}
	if keep {
		e.detach()
	}
	return keep
}

// matches reports whether a pattern of Known matches e, as Match does,
// lower-casing its text into a buffer of k's rather than a new string.
func (k *keeper) matches(e *Entry) bool {
	var lower string
	if ascii(e.Text) {
		k.lowerBuf = k.lowerBuf[:0]
		for i := 0; i < len(e.Text); i++ {
			c := e.Text[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			k.lowerBuf = append(k.lowerBuf, c)
		}
		// Read by matchLower only, before the buffer is written again.
		lower = unsafe.String(unsafe.SliceData(k.lowerBuf), len(k.lowerBuf))
	} else {
		lower = strings.ToLower(e.Text)
	}
	return matchLower(e, lower) != nil
}

// ascii reports whether s is all ASCII (where lower-casing its bytes is
// what strings.ToLower does).
func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// startupLine reports whether e is a line kube-proxy (or k3s) logs as it
// starts that readers of the log look for: its version ("Version info"
// with version=..., "Version: v1.x"), the proxier it uses ("Using
// iptables Proxier"), the command line k3s logs (msg="Running kube-proxy
// ...").
func startupLine(e *Entry) bool {
	m := e.Message
	return m == "Version info" || strings.HasPrefix(m, "Version: v") ||
		strings.HasPrefix(m, "Using ") && strings.Contains(m, "Proxier") ||
		strings.Contains(e.Raw, `msg="Running kube-proxy `)
}

// detach gives e copies of its strings, which point into the parsed text
// until then: one allocation holds them all. (Stream is one of two
// constants and Pos.File the caller's name: neither is in the text.)
func (e *Entry) detach() {
	fields := []*string{&e.Raw, &e.Text, &e.Message, &e.Header, &e.Source, &e.Logger, &e.Host, &e.Pod, &e.Container}
	n := 0
	for _, f := range fields {
		n += len(*f)
	}
	for _, x := range e.KV {
		n += len(x.Key) + len(x.Value)
	}
	buf := make([]byte, 0, n)
	cp := func(s string) string {
		if s == "" {
			return ""
		}
		at := len(buf)
		buf = append(buf, s...)
		return unsafe.String(&buf[at], len(s))
	}
	for _, f := range fields {
		*f = cp(*f)
	}
	if e.KV != nil {
		kv := make([]KV, len(e.KV))
		for i, x := range e.KV {
			kv[i] = KV{Key: cp(x.Key), Value: cp(x.Value)}
		}
		e.KV = kv
	}
}
