package redact

import (
	"bytes"
	"fmt"
	"net/netip"
	"path"
	"regexp"
	"strings"
)

// Format is how a file is rewritten.
type Format int

// The formats of bundle files.
const (
	// Text is free text: addresses, chain names, and names that are not
	// keywords.
	Text Format = iota
	// Rules is iptables-save or nft text: names only inside quoted strings
	// (comments) and chain names; addresses everywhere.
	Rules
	// YAML is a Kubernetes or kube-proxy YAML file: only values change.
	YAML
	// JSON is a JSON document: only string values change; names only in
	// "comment" values.
	JSON
)

// FormatOf returns the format of a bundle file.
func FormatOf(file string) Format {
	base := path.Base(file)
	switch {
	case strings.HasPrefix(file, "node/") && (strings.Contains(base, "tables") || strings.HasPrefix(base, "nft-ruleset")) && strings.HasSuffix(base, ".txt"):
		return Rules
	case strings.HasSuffix(base, ".json"):
		return JSON
	case strings.HasSuffix(base, ".yaml") || strings.HasSuffix(base, ".yml"):
		return YAML
	}
	return Text
}

// Learn reads a bundle file for names and chain hashes. Every file is
// learnt before any is rewritten.
func (r *Redactor) Learn(file string, data []byte) {
	if f := FormatOf(file); f == Rules || f == JSON && strings.HasPrefix(path.Base(file), "nft") {
		r.learnRules(string(data))
	}
}

// Resolve computes the chain hash mapping from what was learnt; Rewrite
// calls it when needed.
func (r *Redactor) Resolve() { r.resolveChains() }

// Rewrite returns the redacted content of a bundle file. Lines are kept:
// no newline is added or removed.
func (r *Redactor) Rewrite(file string, data []byte) []byte {
	switch FormatOf(file) {
	case Rules:
		return r.lines(data, r.rulesLine)
	case YAML:
		return r.lines(data, r.yamlLine)
	case JSON:
		return r.json(data)
	}
	return r.lines(data, func(s string) string { return r.span(s, namesFree) })
}

// Text redacts a free-text string (a message, a note).
func (r *Redactor) Text(s string) string { return r.span(s, namesFree) }

// Line redacts one line of a bundle file as Rewrite would.
func (r *Redactor) Line(file, s string) string { return string(r.Rewrite(file, []byte(s))) }

func (r *Redactor) lines(data []byte, fn func(string) string) []byte {
	var out bytes.Buffer
	out.Grow(len(data))
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		var line []byte
		if i < 0 {
			line, data = data, nil
		} else {
			line, data = data[:i], data[i+1:]
		}
		out.WriteString(fn(string(line)))
		if i >= 0 {
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}

// nameMode says which names a span maps.
type nameMode int

const (
	namesNone nameMode = iota // addresses and chains only
	namesFree                 // names that are not keywords
	namesAll                  // every known name
)

func (r *Redactor) rulesLine(s string) string {
	// Quoted strings are comments: every name in them is one.
	var b strings.Builder
	last := 0
	for _, q := range reQuoted.FindAllStringIndex(s, -1) {
		b.WriteString(r.span(s[last:q[0]], namesNone))
		b.WriteString(r.span(s[q[0]:q[1]], namesAll))
		last = q[1]
	}
	b.WriteString(r.span(s[last:], namesNone))
	return b.String()
}

var reYAMLKey = regexp.MustCompile(`^(\s*(?:- +)*)("[^"]*"|'[^']*'|[^\s#'"{\[][^:#]*?):( +|$)`)

// yamlNameKeys are the YAML keys whose values are names.
var yamlNameKeys = wordSet(`name namespace nodeName hostname generateName serviceName hostnameOverride
	kubernetes.io/service-name kubernetes.io/hostname app app.kubernetes.io/name app.kubernetes.io/instance
	k8s-app statefulset.kubernetes.io/pod-name`)

func (r *Redactor) yamlLine(s string) string {
	m := reYAMLKey.FindStringSubmatchIndex(s)
	if m == nil {
		return r.span(s, namesFree)
	}
	key := strings.Trim(s[m[4]:m[5]], `"'`)
	mode := namesFree
	if yamlNameKeys[key] {
		mode = namesAll
	}
	return s[:m[1]] + r.span(s[m[1]:], mode)
}

// json rewrites the string values of a JSON document.
func (r *Redactor) json(data []byte) []byte {
	var out bytes.Buffer
	out.Grow(len(data))
	lastKey := ""
	i := 0
	for i < len(data) {
		c := data[i]
		if c != '"' {
			out.WriteByte(c)
			i++
			continue
		}
		j := i + 1
		for j < len(data) && data[j] != '"' {
			if data[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(data) {
			out.Write(data[i:])
			break
		}
		str := string(data[i+1 : j])
		k := j + 1
		for k < len(data) && (data[k] == ' ' || data[k] == '\n' || data[k] == '\t' || data[k] == '\r') {
			k++
		}
		if k < len(data) && data[k] == ':' {
			lastKey = str
			out.WriteString(`"` + str + `"`)
		} else {
			mode := namesNone
			if lastKey == "comment" {
				mode = namesAll
			}
			v := r.span(str, mode)
			if lastKey == "addr" {
				v = r.maskJSONPrefix(str, v, data[k:])
			}
			out.WriteString(`"` + v + `"`)
		}
		i = j + 1
	}
	return out.Bytes()
}

var reJSONLen = regexp.MustCompile(`^\s*,\s*"len"\s*:\s*(\d+)`)

// maskJSONPrefix masks the image of a {"addr": A, "len": N} prefix when
// A was masked.
func (r *Redactor) maskJSONPrefix(orig, mapped string, rest []byte) string {
	m := reJSONLen.FindSubmatch(rest)
	if m == nil {
		return mapped
	}
	var n int
	fmt.Sscan(string(m[1]), &n)
	a, err1 := netip.ParseAddr(orig)
	b, err2 := netip.ParseAddr(mapped)
	if err1 != nil || err2 != nil || n > a.BitLen() {
		return mapped
	}
	if p := netip.PrefixFrom(a, n); p.Masked().Addr() == a {
		return netip.PrefixFrom(b, n).Masked().Addr().String()
	}
	return mapped
}

// span rewrites a piece of text: chain names first (they embed names and
// addresses), then addresses and names left to right.
func (r *Redactor) span(s string, mode nameMode) string {
	if s == "" {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range spanChains(s) {
		b.WriteString(r.plain(s[last:m.start], mode))
		b.WriteString(m.repl(r))
		last = m.end
	}
	b.WriteString(r.plain(s[last:], mode))
	return b.String()
}

type chainMatch struct {
	start, end int
	groups     []string
	nft        bool
}

func (m chainMatch) repl(r *Redactor) string {
	if m.nft {
		return r.nftChain(m.groups)
	}
	return r.iptChain(m.groups)
}

func spanChains(s string) []chainMatch {
	var out []chainMatch
	if strings.Contains(s, "KUBE-") {
		for _, ix := range reIPTChain.FindAllStringSubmatchIndex(s, -1) {
			out = append(out, chainMatch{ix[0], ix[1], groups(s, ix), false})
		}
	}
	if strings.Contains(s, "/") {
		for _, ix := range reNFTChain.FindAllStringSubmatchIndex(s, -1) {
			out = append(out, chainMatch{ix[0], ix[1], groups(s, ix), true})
		}
	}
	if len(out) > 1 {
		// Sort by start; the two patterns never overlap.
		for i := 1; i < len(out); i++ {
			for j := i; j > 0 && out[j].start < out[j-1].start; j-- {
				out[j], out[j-1] = out[j-1], out[j]
			}
		}
	}
	return out
}

func groups(s string, ix []int) []string {
	g := make([]string, len(ix)/2)
	for i := range g {
		if ix[2*i] >= 0 {
			g[i] = s[ix[2*i]:ix[2*i+1]]
		}
	}
	return g
}

func isTok(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// plain rewrites addresses, MAC addresses and names in text without
// chain names.
func (r *Redactor) plain(s string, mode nameMode) string {
	var b strings.Builder
	i := 0
	for i < len(s) {
		c := s[i]
		prevTok := i > 0 && (isTok(s[i-1]) || s[i-1] == ':')
		if !prevTok && (isHex(c) || c == ':') {
			if n, repl, ok := r.addrAt(s[i:]); ok {
				b.WriteString(repl)
				i += n
				continue
			}
		}
		if !prevTok && isTok(c) && c != '-' && c != '.' {
			j := i
			for j < len(s) && isTok(s[j]) {
				j++
			}
			tok := s[i:j]
			trimmed := strings.TrimRight(tok, ".-")
			b.WriteString(r.token(trimmed, mode))
			b.WriteString(tok[len(trimmed):])
			i = j
			continue
		}
		b.WriteByte(c)
		i++
	}
	return b.String()
}

// addrAt reads an IPv4 or IPv6 address (with an optional /prefix) or a
// MAC address at the start of s.
func (r *Redactor) addrAt(s string) (int, string, bool) {
	j := 0
	colons := 0
	for j < len(s) && (isHex(s[j]) || s[j] == ':' || s[j] == '.') {
		if s[j] == ':' {
			colons++
		}
		j++
	}
	run := s[:j]
	// The run must end at a boundary.
	if j < len(s) && (isTok(s[j]) && s[j] != '.' && s[j] != '-') {
		return 0, "", false
	}
	for len(run) > 0 && (run[len(run)-1] == '.' || run[len(run)-1] == ':' && !strings.HasSuffix(run, "::")) {
		run = run[:len(run)-1]
	}
	if run == "" {
		return 0, "", false
	}
	if colons == 5 && len(run) == 17 && isMAC(run) {
		return len(run), r.macAddr(run), true
	}
	if i := strings.IndexByte(run, ':'); i > 0 && strings.Count(run[:i], ".") == 3 {
		// IPv4 address with a port.
		run, colons = run[:i], 0
	}
	if colons < 2 && strings.Count(run, ".") != 3 {
		return 0, "", false
	}
	if colons == 0 && !isDigit(run[0]) {
		return 0, "", false
	}
	a, err := netip.ParseAddr(run)
	if err != nil {
		return 0, "", false
	}
	n := len(run)
	rest := s[n:]
	if len(rest) > 1 && rest[0] == '/' && isDigit(rest[1]) {
		k := 1
		for k < len(rest) && isDigit(rest[k]) {
			k++
		}
		if k < len(rest) && isTok(rest[k]) && rest[k] != '.' && rest[k] != '-' {
			return n, r.Addr(a).String(), true
		}
		if p, err := netip.ParsePrefix(run + rest[:k]); err == nil {
			return n + k, r.Prefix(p).String(), true
		}
	}
	return n, r.Addr(a).String(), true
}

func isMAC(s string) bool {
	for i := 0; i < 17; i++ {
		if i%3 == 2 {
			if s[i] != ':' {
				return false
			}
		} else if !isHex(s[i]) {
			return false
		}
	}
	return true
}

// macAddr maps a MAC address to a locally administered unicast one;
// the all-zero and broadcast addresses are kept.
func (r *Redactor) macAddr(s string) string {
	low := strings.ToLower(s)
	if low == "00:00:00:00:00:00" || low == "ff:ff:ff:ff:ff:ff" {
		return s
	}
	h := r.mac("mac", low)
	h[0] = h[0]&0xfc | 0x02
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", h[0], h[1], h[2], h[3], h[4], h[5])
}

var reDashedIP = regexp.MustCompile(`(^|[^0-9])(\d{1,3})-(\d{1,3})-(\d{1,3})-(\d{1,3})($|[^0-9])`)

// token maps a name token: a known name as a whole, else its dot-separated
// parts; an IPv4 address written with dashes (ip-10-0-1-5) is mapped too.
func (r *Redactor) token(tok string, mode nameMode) string {
	if tok == "" || system[tok] {
		return tok
	}
	names := r.nameMap()
	if mode != namesNone {
		if p, ok := names[tok]; ok && (mode == namesAll || !reserved[tok]) {
			return p
		}
	}
	if strings.Contains(tok, ".") && mode != namesNone {
		parts := strings.Split(tok, ".")
		changed := false
		for i, p := range parts {
			if q, ok := names[p]; ok && !system[p] && (mode == namesAll || !reserved[p]) {
				parts[i], changed = q, true
			}
		}
		if changed {
			return strings.Join(parts, ".")
		}
	}
	if strings.Count(tok, "-") >= 3 {
		return reDashedIP.ReplaceAllStringFunc(tok, func(m string) string {
			g := reDashedIP.FindStringSubmatch(m)
			a, err := netip.ParseAddr(g[2] + "." + g[3] + "." + g[4] + "." + g[5])
			if err != nil {
				return m
			}
			return g[1] + strings.ReplaceAll(r.Addr(a).String(), ".", "-") + g[6]
		})
	}
	return tok
}
