package iptables

import (
	"math/rand/v2"
	"net/netip"
	"strconv"
	"testing"
)

// TestPrefixMatch compares the address matches with netip.Prefix.Contains.
func TestPrefixMatch(t *testing.T) {
	addrs := []netip.Addr{{}, netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("10.1.255.255"), netip.MustParseAddr("0.0.0.0"),
		netip.MustParseAddr("255.255.255.255"), netip.MustParseAddr("::ffff:10.1.2.3"), netip.MustParseAddr("fd00::1"),
		netip.MustParseAddr("fd00:0:0:1::1"), netip.MustParseAddr("fe80::1%eth0"), netip.MustParseAddr("::"), netip.MustParseAddr("::1")}
	var prefixes []netip.Prefix
	for _, s := range []string{"10.1.2.3", "::ffff:10.1.2.3", "fd00::1", "::ffff:10.0.0.0", "::", "0.0.0.0", "255.255.255.255"} {
		a := netip.MustParseAddr(s)
		for bits := 0; bits <= a.BitLen(); bits++ {
			prefixes = append(prefixes, netip.PrefixFrom(a, bits).Masked())
		}
	}
	for _, p := range prefixes {
		var m Match
		m.setPrefix(p)
		for _, a := range addrs {
			if got, want := m.Contains(a), p.Contains(a); got != want {
				t.Errorf("%s contains %s: %t, want %t", p, a, got, want)
			}
		}
		a, ok := m.SingleIP()
		if want := p.IsSingleIP(); ok != want || ok && a != p.Addr() {
			t.Errorf("%s: single address %s %t, want %t", p, a, ok, want)
		}
	}
}

// joinPieces returns 20,000 strings of one to nine pieces each, drawn
// with the given seed: inputs for comparing a quick parser with the
// standard library's.
func joinPieces(seed uint64, pieces []string) []string {
	r := rand.New(rand.NewPCG(seed, seed+1))
	out := make([]string, 0, 20000)
	for range 20000 {
		var b []byte
		for range 1 + r.IntN(9) {
			b = append(b, pieces[r.IntN(len(pieces))]...)
		}
		out = append(out, string(b))
	}
	return out
}

// TestParseIPv4Prefix compares the quick reading of IPv4 prefixes with
// netip.ParsePrefix.
func TestParseIPv4Prefix(t *testing.T) {
	pieces := []string{"0", "1", "10", "255", "256", "010", "00", "1000", ".", "/", "32", "33", "0/", "-1", "+1", " ", "", "a", ":"}
	inputs := []string{"10.128.0.0/32", "10.128.0.0/9", "0.0.0.0/0", "255.255.255.255/32", "10.0.0.1/24", "10.0.0.1/032",
		"10.0.0.1/33", "1.2.3/8", "1.2.3.4.5/8", "01.2.3.4/8", "1.2.3.4/", "1.2.3.4", "1.2.3.4/8/8", "::/0", "1.2.3.256/8"}
	inputs = append(inputs, joinPieces(3, pieces)...)
	for _, s := range inputs {
		got, ok := parseIPv4Prefix(s)
		if !ok {
			continue
		}
		want, err := netip.ParsePrefix(s)
		if err != nil || got != want.Masked() {
			t.Errorf("parseIPv4Prefix(%q) = %v, ParsePrefix gives %v, %v", s, got, want.Masked(), err)
		}
	}
	for _, s := range []string{"10.128.0.0/32", "0.0.0.0/0", "10.0.0.1/24"} {
		if _, ok := parseIPv4Prefix(s); !ok {
			t.Errorf("parseIPv4Prefix(%q) leaves the usual form to ParsePrefix", s)
		}
	}
}

// TestParseProbability compares the quick reading of probabilities with
// strconv.ParseFloat.
func TestParseProbability(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	inputs := []string{"0.16666666651", "0.50000000000", "0.33333333349", "0.", "0.0", "0.999999999999999", "0.1234567890123456",
		"1", "1.0", "0.1e3", "0.x", ".5", "0.5 ", "00.5"}
	for range 100000 {
		n := 1 + r.IntN(15)
		b := []byte("0.")
		for range n {
			b = append(b, byte('0'+r.IntN(10)))
		}
		inputs = append(inputs, string(b))
	}
	for _, s := range inputs {
		got, gotErr := parseProbability(s)
		want, wantErr := strconv.ParseFloat(s, 64)
		if got != want || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("parseProbability(%q) = %v, %v; ParseFloat gives %v, %v", s, got, gotErr, want, wantErr)
		}
	}
}

// TestParseIPv4AddrPort compares the quick reading of IPv4 addresses and
// ports with netip.ParseAddrPort.
func TestParseIPv4AddrPort(t *testing.T) {
	pieces := []string{"0", "1", "10", "255", "256", "010", "00", "65535", "65536", "080", ".", ":", "[", "]", "-1", "", "a"}
	inputs := []string{"10.128.0.0:8080", "0.0.0.0:0", "255.255.255.255:65535", "10.0.0.1:080", "10.0.0.1:65536", "10.0.0.1",
		"10.0.0.1:", "[10.0.0.1]:80", "1.2.3.4:5:6"}
	inputs = append(inputs, joinPieces(7, pieces)...)
	for _, s := range inputs {
		got, ok := parseIPv4AddrPort(s)
		if !ok {
			continue
		}
		want, err := netip.ParseAddrPort(s)
		if err != nil || got != want {
			t.Errorf("parseIPv4AddrPort(%q) = %v, ParseAddrPort gives %v, %v", s, got, want, err)
		}
	}
	if _, ok := parseIPv4AddrPort("10.128.0.0:8080"); !ok {
		t.Error("the usual form is left to ParseAddrPort")
	}
}
