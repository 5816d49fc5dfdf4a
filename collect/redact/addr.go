package redact

import (
	"crypto/aes"
	"crypto/cipher"
	"net/netip"
	"sync"
)

// pan is a prefix-preserving address permutation (Crypto-PAn): bit i of
// the output is bit i of the input flipped by a pseudo-random function of
// the first i bits.
type pan struct {
	block cipher.Block
	pad   [16]byte
	mu    sync.Mutex
	cache map[netip.Addr]netip.Addr
}

func newPAN(key []byte) *pan {
	// key is 32 bytes: an AES-128 key and the material of the pad.
	b, err := aes.NewCipher(key[:16])
	if err != nil {
		panic(err) // 16 bytes is always a valid AES key
	}
	p := &pan{block: b, cache: map[netip.Addr]netip.Addr{}}
	b.Encrypt(p.pad[:], key[16:32])
	return p
}

// keep are the ranges mapped to themselves inside the permutation: the
// loopback network, whose meaning the rules and checks rely on
// (127.0.0.0/8 in KUBE-FIREWALL, route_localnet, localhost NodePorts).
// Every range kept this way also keeps the leading bits of the addresses
// sharing a prefix with it, so there is only the one.
var keep = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// singles are addresses kept outside the permutation: the unspecified,
// broadcast and IPv6 loopback addresses. The address the permutation
// would send onto one of them takes that one's image instead, so the
// mapping stays one to one.
var singles = map[netip.Addr]bool{
	netip.MustParseAddr("0.0.0.0"): true, netip.MustParseAddr("255.255.255.255"): true,
	netip.MustParseAddr("::"): true, netip.MustParseAddr("::1"): true,
}

// Kept reports whether a is never mapped.
func Kept(a netip.Addr) bool {
	a = a.Unmap()
	if singles[a] {
		return true
	}
	for _, k := range keep {
		if k.Contains(a) {
			return true
		}
	}
	return false
}

func bit(b []byte, i int) byte { return (b[i/8] >> (7 - i%8)) & 1 }

// fixedFlip reports whether the flip at bit i of addr is forced to 0: the
// first i bits lead into a kept range, or addr is inside one.
func fixedFlip(addr []byte, i int, is4 bool) bool {
	for _, k := range keep {
		if k.Addr().Is4() != is4 {
			continue
		}
		kb := k.Addr().AsSlice()
		n := i
		if n > k.Bits() {
			n = k.Bits()
		}
		same := true
		for j := 0; j < n; j++ {
			if bit(addr, j) != bit(kb, j) {
				same = false
				break
			}
		}
		if same {
			return true
		}
	}
	return false
}

// Map returns the image of a.
func (p *pan) Map(a netip.Addr) netip.Addr {
	a = a.WithZone("")
	if singles[a] {
		return a
	}
	m := p.permute(a)
	if singles[m] {
		// a takes the image the kept address would have had.
		m = p.permute(m)
		for singles[m] {
			m = p.permute(m)
		}
	}
	return m
}

func (p *pan) permute(a netip.Addr) netip.Addr {
	if a.Is4In6() {
		v4 := p.Map(a.Unmap()).As4()
		b := a.As16()
		copy(b[12:], v4[:])
		return netip.AddrFrom16(b)
	}
	a = a.WithZone("")
	p.mu.Lock()
	if m, ok := p.cache[a]; ok {
		p.mu.Unlock()
		return m
	}
	p.mu.Unlock()
	in := a.AsSlice()
	out := append([]byte(nil), in...)
	n := len(in) * 8
	var block, enc [16]byte
	for i := 0; i < n; i++ {
		if fixedFlip(in, i, a.Is4()) {
			continue
		}
		// The first i bits of the address, then the pad.
		block = p.pad
		for j := 0; j < i; j++ {
			mask := byte(1) << (7 - j%8)
			if bit(in, j) == 1 {
				block[j/8] |= mask
			} else {
				block[j/8] &^= mask
			}
		}
		p.block.Encrypt(enc[:], block[:])
		if enc[0]&0x80 != 0 {
			out[i/8] ^= 1 << (7 - i%8)
		}
	}
	m, _ := netip.AddrFromSlice(out)
	p.mu.Lock()
	p.cache[a] = m
	p.mu.Unlock()
	return m
}
