package load

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"
)

// twoTables is an iptables dump of two tables, which a capture split
// after the first (iptables-save -t nat | gzip; iptables-save -t filter
// | gzip >>) holds in two streams.
const twoTables = miniDump + `*filter
:INPUT ACCEPT [0:0]
:KUBE-FIREWALL - [0:0]
-A INPUT -j KUBE-FIREWALL
COMMIT
`

// bigDictXZ returns an xz stream of data whose block header says its
// LZMA2 dictionary is 1 GiB (the header's CRC32 made again), as a
// hostile file would.
func bigDictXZ(t *testing.T, data []byte) []byte {
	t.Helper()
	b := bytes.Clone(compress(t, formatXZ, data))
	const streamHeader = 12
	h := b[streamHeader:]
	hsize := (int(h[0]) + 1) * 4
	flags := h[1]
	i := 2
	skipVarint := func() {
		_, n := binary.Uvarint(h[i:])
		i += n
	}
	if flags&0x40 != 0 {
		skipVarint() // compressed size
	}
	if flags&0x80 != 0 {
		skipVarint() // uncompressed size
	}
	if h[i] != 0x21 || h[i+1] != 1 {
		t.Fatalf("block header % x: not one LZMA2 filter", h[:hsize])
	}
	h[i+2] = 36 // 1 GiB
	binary.LittleEndian.PutUint32(h[hsize-4:], crc32.ChecksumIEEE(h[:hsize-4]))
	if dict, ok := xzDictSize(b); !ok || dict != 1<<30 {
		t.Fatalf("dictionary %d (%v), want 1 GiB", dict, ok)
	}
	return b
}

// TestCompressedStreams: a file compressed alone that holds several gzip
// or xz streams (appended one to the other) is read to its end, as zcat
// and xzcat read it, xz's stream padding passed over; data after the last
// stream that is not one, and an xz stream past the first whose
// dictionary is over the limit, are input errors naming the file.
func TestCompressedStreams(t *testing.T) {
	cut := strings.Index(twoTables, "*filter")
	first, second := []byte(twoTables[:cut]), []byte(twoTables[cut:])
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	gz := func(b []byte) []byte { return compress(t, formatGzip, b) }
	xzc := func(b []byte) []byte { return compress(t, formatXZ, b) }
	pad := make([]byte, 8)
	for _, tc := range []struct {
		name    string
		data    []byte
		wantErr string
	}{
		{name: "gzip, one stream", data: gz([]byte(twoTables))},
		{name: "gzip, two streams", data: cat(gz(first), gz(second))},
		{name: "gzip, three streams, one empty", data: cat(gz(first), gz(nil), gz(second))},
		{name: "xz, two streams", data: cat(xzc(first), xzc(second))},
		{name: "xz, two streams and padding", data: cat(xzc(first), pad, xzc(second), pad)},
		{name: "gzip, trailing garbage", data: cat(gz([]byte(twoTables)), []byte("garbage!")), wantErr: "is not a gzip stream (trailing garbage"},
		{name: "gzip, trailing zeros", data: cat(gz([]byte(twoTables)), make([]byte, 512)), wantErr: "trailing garbage"},
		{name: "xz, trailing garbage", data: cat(xzc([]byte(twoTables)), []byte("garbage!")), wantErr: "trailing garbage"},
		{name: "xz, second stream cut short", data: func() []byte { b := cat(xzc(first), xzc(second)); return b[:len(b)-8] }(), wantErr: "cut short"},
		{name: "xz, second stream's dictionary over the limit", data: cat(xzc(first), bigDictXZ(t, second)), wantErr: "LZMA2 dictionary of 1073741824 bytes, over the 67108864-byte limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "iptables-save.txt.z", tc.data)
			snaps, err := Load([]string{p}, Options{})
			if tc.wantErr != "" {
				if err == nil || !IsInputError(err) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want an input error naming %s and saying %q, got %v", p, tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(snaps) != 1 || len(snaps[0].IPTables) != 1 {
				t.Fatalf("want one node with one dump, got %d nodes", len(snaps))
			}
			d := snaps[0].IPTables[0]
			if len(d.Tables) != 2 {
				t.Fatalf("%d tables, want nat and filter: every stream read", len(d.Tables))
			}
			c := d.Tables[1].Chain("INPUT")
			if c == nil || len(c.Rules) != 1 || c.Rules[0].Line != strings.Count(twoTables[:strings.Index(twoTables, "-A INPUT")], "\n")+1 {
				t.Errorf("filter INPUT %v: want its rule at its line of the whole text", c)
			}
			if in := snaps[0].Inputs[0]; in.Bytes != int64(len(twoTables)) {
				t.Errorf("input of %d bytes, want %d (the text of every stream)", in.Bytes, len(twoTables))
			}
		})
	}
}
