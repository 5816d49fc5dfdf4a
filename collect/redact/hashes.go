package redact

import (
	"encoding/base32"
	"net/netip"
	"regexp"

	"strings"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
)

var (
	reIPTChain = regexp.MustCompile(`KUBE-(SVC|SVL|EXT|FW|XLB|SEP)-([A-Z2-7]{16})`)
	reRuleLine = regexp.MustCompile(`^(?:\[\d+:\d+\] )?-A (\S+) (.*)$`)
	reToDest   = regexp.MustCompile(`--to-destination (\S+)`)
	reJump     = regexp.MustCompile(`-j (KUBE-SEP-[A-Z2-7]{16})`)
	reSPN      = regexp.MustCompile(`([a-z0-9][-a-z0-9]*)/([a-z0-9][-a-z0-9.]*)(?::([-a-z0-9]+))?`)
	reQuoted   = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)
	// nft per-service chains and affinity sets:
	// prefix-HASH8-ns/name/proto/port[__ip/port].
	reNFTChain = regexp.MustCompile(`\b(service|local|external|firewall|endpoint|affinity)-([A-Z2-7]{8})-([a-z0-9][-a-z0-9]*)/([a-z0-9][-a-z0-9.]*)/(tcp|udp|sctp)/([-a-z0-9]*)(?:__([0-9a-f.]+)/([0-9]+))?`)
)

// iptLearn gathers what recomputing iptables chain hashes needs.
type iptLearn struct {
	hashes  map[string]bool            // every KUBE-SVC/SVL/EXT/FW/XLB hash seen
	seps    map[string]bool            // every KUBE-SEP hash seen
	sepDest map[string]string          // SEP hash -> DNAT destination
	sepSPN  map[string]map[string]bool // SEP hash -> service port names in its comments
	parents map[string]map[string]bool // SEP hash -> hashes of chains jumping to it
}

func newIPTLearn() *iptLearn {
	return &iptLearn{hashes: map[string]bool{}, seps: map[string]bool{}, sepDest: map[string]string{},
		sepSPN: map[string]map[string]bool{}, parents: map[string]map[string]bool{}}
}

func add(m map[string]map[string]bool, k, v string) {
	if m[k] == nil {
		m[k] = map[string]bool{}
	}
	m[k][v] = true
}

// learnRules reads an iptables-save dump or nft ruleset for names (in
// comments and nft chain names) and for kube-proxy's chain hashes.
func (r *Redactor) learnRules(text string) {
	l := r.ipt
	for _, line := range strings.Split(text, "\n") {
		for _, q := range reQuoted.FindAllStringSubmatch(line, -1) {
			for _, m := range reSPN.FindAllStringSubmatch(q[1], -1) {
				r.AddServicePort(m[1], m[2], m[3])
			}
		}
		for _, m := range reNFTChain.FindAllStringSubmatch(line, -1) {
			r.AddServicePort(m[3], m[4], m[6])
		}
		if !strings.Contains(line, "KUBE-") {
			continue
		}
		rm := reRuleLine.FindStringSubmatch(line)
		r.mu.Lock()
		for _, m := range reIPTChain.FindAllStringSubmatch(line, -1) {
			if m[1] == "SEP" {
				l.seps[m[2]] = true
			} else {
				l.hashes[m[2]] = true
			}
		}
		if rm != nil {
			chain, rest := rm[1], rm[2]
			if h, ok := strings.CutPrefix(chain, "KUBE-SEP-"); ok {
				if d := reToDest.FindStringSubmatch(rest); d != nil {
					l.sepDest[h] = d[1]
				}
				for _, q := range reQuoted.FindAllStringSubmatch(rest, -1) {
					if m := reSPN.FindStringSubmatch(q[1]); m != nil {
						add(l.sepSPN, h, m[0])
					}
				}
			} else if m := reIPTChain.FindStringSubmatch(chain); m != nil {
				if j := reJump.FindStringSubmatch(rest); j != nil {
					add(l.parents, strings.TrimPrefix(j[1], "KUBE-SEP-"), m[2])
				}
			}
		}
		r.mu.Unlock()
	}
}

var protos = []string{"tcp", "udp", "sctp"}

// resolveChains computes the new hash of every kube-proxy chain hash met:
// from the service port (and endpoint) it was computed from, with the
// names and addresses redacted. Hashes of unknown origin get a keyed
// pseudonym.
func (r *Redactor) resolveChains() {
	l := r.ipt
	r.mu.Lock()
	spns := make([]string, 0, len(r.spns))
	for s := range r.spns {
		spns = append(spns, s)
	}
	r.mu.Unlock()
	type origin struct{ spn, proto string }
	byHash := map[string]origin{}
	for _, s := range spns {
		for _, p := range protos {
			h := kpnames.PortProtoHash(s, p)
			if l.hashes[h] {
				byHash[h] = origin{s, p}
			}
		}
	}
	out := map[string]string{}
	for h := range l.hashes {
		if o, ok := byHash[h]; ok {
			out[h] = kpnames.PortProtoHash(r.spn(o.spn), o.proto)
		} else {
			out[h] = r.pseudoHash(h)
		}
	}
	for h := range l.seps {
		dest := l.sepDest[h]
		var cands []origin
		for p := range l.parents[h] {
			if o, ok := byHash[p]; ok {
				cands = append(cands, o)
			}
		}
		for s := range l.sepSPN[h] {
			for _, p := range protos {
				cands = append(cands, origin{s, p})
			}
		}
		out[h] = r.pseudoHash(h)
		for _, o := range cands {
			if dest != "" && kpnames.EndpointChainHash(o.spn, o.proto, dest) == h {
				out[h] = kpnames.EndpointChainHash(r.spn(o.spn), o.proto, r.endpoint(dest))
				break
			}
		}
	}
	r.mu.Lock()
	for k, v := range out {
		r.chains[k] = v
	}
	r.mu.Unlock()
}

// pseudoHash is the keyed replacement of a hash of unknown origin.
func (r *Redactor) pseudoHash(h string) string {
	return base32.StdEncoding.EncodeToString(r.mac("hash", h))[:len(h)]
}

// spn redacts a service port name "ns/name:port".
func (r *Redactor) spn(s string) string {
	ns, rest, _ := strings.Cut(s, "/")
	name, port, hasPort := strings.Cut(rest, ":")
	out := r.Name(ns) + "/" + r.Name(name)
	if hasPort {
		out += ":" + r.Name(port)
	}
	return out
}

// endpoint redacts "IP:port" or "[IPv6]:port".
func (r *Redactor) endpoint(ep string) string {
	host, port := ep, ""
	if i := strings.LastIndex(ep, ":"); i > 0 {
		host, port = ep[:i], ep[i:]
	}
	bracket := strings.HasPrefix(host, "[")
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil {
		return ep
	}
	h := r.Addr(a).String()
	if bracket {
		h = "[" + h + "]"
	}
	return h + port
}

// iptChain maps one kube-proxy iptables chain name.
func (r *Redactor) iptChain(m []string) string {
	r.mu.Lock()
	h, ok := r.chains[m[2]]
	r.mu.Unlock()
	if !ok {
		h = r.pseudoHash(m[2])
	}
	return "KUBE-" + m[1] + "-" + h
}

// nftChain maps one nft per-service chain or affinity set name,
// recomputing its hash from the redacted parts.
func (r *Redactor) nftChain(m []string) string {
	base := m[3] + "/" + m[4] + "/" + m[5] + "/" + m[6]
	nbase := r.Name(m[3]) + "/" + r.Name(m[4]) + "/" + m[5] + "/" + r.Name(m[6])
	if m[7] != "" {
		ip := m[7]
		v6 := false
		if _, err := netip.ParseAddr(ip); err != nil {
			ip, v6 = strings.ReplaceAll(ip, ".", ":"), true
		}
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return m[1] + "-" + r.pseudoHash(m[2]) + "-" + nbase
		}
		mapped := r.Addr(a).String()
		if v6 {
			mapped = strings.ReplaceAll(mapped, ":", ".")
		}
		base += "__" + m[7] + "/" + m[8]
		nbase += "__" + mapped + "/" + m[8]
	}
	orig := kpnames.NFTHashAndTruncate(base)
	if orig[:8] != m[2] {
		// Not kube-proxy's hash of these parts: keep the hash keyed.
		out := m[1] + "-" + r.pseudoHash(m[2]) + "-" + nbase
		r.noteChain(m[0], out)
		return out
	}
	out := m[1] + "-" + kpnames.NFTHashAndTruncate(nbase)
	r.noteChain(m[0], out)
	return out
}

func (r *Redactor) noteChain(old, new string) {
	r.mu.Lock()
	r.chains[old] = new
	r.mu.Unlock()
}
