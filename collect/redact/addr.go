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

// keep are the ranges mapped to themselves.
var keep = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("224.0.0.0/3"),
	netip.MustParsePrefix("::/96"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("ff00::/8"),
}

// Kept reports whether a is in a range that is never mapped.
func Kept(a netip.Addr) bool {
	a = a.Unmap()
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
