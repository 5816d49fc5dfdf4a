package load

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/ipset"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
	"github.com/proxyscan/proxyscan/parsers/kpcmdline"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// layoutKinds are the kinds of the files of a bundle written by collect,
// by their place in it (docs/contract.md, "Bundle layout"). The kind of a
// file is still recognised by its content; its place says what it was
// meant to be, so that a file there that is not understood is reported
// rather than taken for an unrelated file.
var layoutKinds = map[string]parsers.Kind{
	"manifest.json":                  parsers.KindManifest,
	"node/iptables-save.txt":         parsers.KindIPTablesSave,
	"node/ip6tables-save.txt":        parsers.KindIPTablesSave,
	"node/iptables-legacy-save.txt":  parsers.KindIPTablesSave,
	"node/ip6tables-legacy-save.txt": parsers.KindIPTablesSave,
	"node/ipvsadm.txt":               parsers.KindIPVSList,
	"node/ipvsadm-save.txt":          parsers.KindIPVSSave,
	"node/ipset-save.txt":            parsers.KindIPSetSave,
	"node/nft-ruleset.txt":           parsers.KindNFTText,
	"node/nft-ruleset.json":          parsers.KindNFTJSON,
	"node/ip-addr.txt":               parsers.KindIPAddr,
	"node/ip-route.txt":              parsers.KindIPRoute,
	"node/ip6-route.txt":             parsers.KindIPRoute,
	"node/sysctl.txt":                parsers.KindSysctl,
	"node/modules.txt":               parsers.KindModules,
	"node/modules-builtin.txt":       parsers.KindModules,
	"node/conntrack-stats.txt":       parsers.KindConntrackStats,
	"node/conntrack-dnat.txt":        parsers.KindConntrack,
	"node/conntrack6-dnat.txt":       parsers.KindConntrack,
	"kube-proxy/config.yaml":         parsers.KindKubeProxyConfig,
	"kube-proxy/cmdline.txt":         parsers.KindCmdline,
	"kube-proxy/version.txt":         parsers.KindVersion,
	"kube-proxy/metrics.txt":         parsers.KindMetrics,
	"kube-proxy/healthz.json":        parsers.KindHealthz,
	"kube-proxy/livez.json":          parsers.KindHealthz,
	"kube-proxy/log.txt":             parsers.KindLog,
}

// layoutKind returns the kind the bundle layout gives a file of a bundle,
// or "" for a file the layout does not name.
func layoutKind(name string) parsers.Kind {
	if k, ok := layoutKinds[name]; ok {
		return k
	}
	if dir, base := path.Split(name); dir == "cluster/" && strings.HasSuffix(base, ".yaml") {
		return parsers.KindKube
	}
	return ""
}

// emptyDump returns the dump of a data plane without rules that an empty
// file (or one of comments only) at a place of the bundle layout stands
// for: iptables-save, ipvsadm and ipset print nothing when there is
// nothing to print. It returns nil for the other kinds.
func emptyDump(name string, k parsers.Kind) any {
	switch k {
	case parsers.KindIPTablesSave:
		fam := iptables.IPv4
		if strings.Contains(name, "ip6tables") {
			fam = iptables.IPv6
		}
		return &iptables.Dump{Name: name, Family: fam}
	case parsers.KindIPVSSave:
		return &ipvs.Dump{Form: ipvs.FormSave}
	case parsers.KindIPVSList:
		return &ipvs.Dump{Form: ipvs.FormList}
	case parsers.KindIPSetSave:
		return &ipset.Dump{Form: ipset.FormSave}
	case parsers.KindNFTText:
		return &nft.Ruleset{}
	}
	return nil
}

// layoutCmdline reports whether f, a file of no known kind, is the
// command line of kube-proxy at its place in a bundle
// (kube-proxy/cmdline.txt), NUL-separated as collect copies it from
// /proc/PID/cmdline, that its head did not tell as one (a process found
// by its name, kube-proxy, but started under another argv[0]). When it
// is, f is made a file of that kind, to be read in full. Of the kinds of
// the bundle layout, only a command line holds NULs: the layout wins
// over the sniff for this kind alone, and only for UTF-8 text whose
// words NULs separate; any other data there is still binary, not read.
func layoutCmdline(f *file) bool {
	if f.group == "" || layoutKind(f.name) != parsers.KindCmdline || f.special ||
		!strings.HasPrefix(f.det.unread, "binary: a NUL byte") || f.length() > kpcmdline.MaxSize {
		return false
	}
	var data []byte
	switch {
	case f.skipped && int64(len(f.data)) == f.size:
		// An archive's member skipped after its head, which holds all
		// of it.
		data = f.data
	case f.skipped:
		return false
	default:
		var err error
		if data, err = f.load(parsers.KindCmdline); err != nil {
			return false // the read fails again, and says why, as it is parsed
		}
	}
	if !nulArgv(data) {
		return false
	}
	f.skipped = false
	f.kind = parsers.KindCmdline
	f.det.kind, f.det.loose, f.det.unread = parsers.KindCmdline, parsers.KindCmdline, ""
	return true
}

// nulArgv reports whether data is text whose words NULs separate: valid
// UTF-8 holding a NUL and no control byte but NUL, tab, line feed and
// carriage return.
func nulArgv(data []byte) bool {
	if bytes.IndexByte(data, 0) < 0 || !utf8.Valid(data) {
		return false
	}
	for _, c := range data {
		if c < 0x20 && c != 0 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return false
		}
	}
	return true
}

// Reasons a file is not read, as the report gives them.
const (
	unreadEmpty    = "empty file"
	unreadBlank    = "only blank lines"
	unreadComments = "only comment lines"
)

// unreadReason says why a file whose head is head (of size bytes) was
// recognised as no kind: empty, blank, binary, or text of no known kind.
func unreadReason(head []byte, size int64) string {
	// An archive or compressed file reaches here only as a file of a
	// bundle (an archive's member, or a file of a bundle directory):
	// elsewhere it is read as a bundle, or decompressed.
	switch {
	case size == 0:
		return unreadEmpty
	case int64(len(head)) >= size && len(bytes.TrimSpace(head)) == 0:
		return unreadBlank
	}
	switch format := archiveFormat(head); format {
	case "":
	case formatTar, formatZip:
		return fmt.Sprintf("binary: a %s archive, %s", format, nestedArchive)
	default:
		return fmt.Sprintf("binary: a %s-compressed archive or file, %s", format, nestedArchive)
	}
	if i := bytes.IndexByte(head, 0); i >= 0 {
		return fmt.Sprintf("binary: a NUL byte at offset %d", i)
	}
	if int64(len(head)) >= size && commentsOnly(head) {
		return unreadComments
	}
	if !utf8.Valid(trimRune(head)) {
		return "not text: invalid UTF-8 in the first bytes"
	}
	if parsers.KubectlDescribed(head) {
		return "kind not recognised: kubectl describe output holds no objects; export them with kubectl get -o yaml"
	}
	return "kind not recognised"
}

// trimRune drops a rune cut at the end of a head.
func trimRune(b []byte) []byte {
	for i := 0; i < utf8.UTFMax && len(b) > 0; i++ {
		if utf8.Valid(b) {
			return b
		}
		b = b[:len(b)-1]
	}
	return b
}

// blankOrComments reports whether a whole file holds no line but blank
// ones and comments.
func blankOrComments(data []byte) bool {
	return len(bytes.TrimSpace(data)) == 0 || commentsOnly(data)
}

// commentsOnly reports whether every line of data is blank or a # comment.
func commentsOnly(data []byte) bool {
	for l := range bytes.SplitSeq(data, []byte("\n")) {
		t := bytes.TrimSpace(l)
		if len(t) > 0 && t[0] != '#' {
			return false
		}
	}
	return true
}

// utf16Order returns the byte order of text encoded in UTF-16 (a byte
// order mark, or ASCII text with every other byte NUL), and the length of
// its byte order mark; ok is false for other data.
func utf16Order(head []byte) (order binary.ByteOrder, bom int, ok bool) {
	switch {
	case bytes.HasPrefix(head, []byte{0xff, 0xfe}):
		return binary.LittleEndian, 2, true
	case bytes.HasPrefix(head, []byte{0xfe, 0xff}):
		return binary.BigEndian, 2, true
	}
	n := len(head) &^ 1
	if n < 4 {
		return nil, 0, false
	}
	var le, be int
	for i := 0; i < n; i += 2 {
		switch {
		case head[i] != 0 && head[i+1] == 0:
			le++
		case head[i] == 0 && head[i+1] != 0:
			be++
		}
	}
	// Text of ASCII characters: nearly every pair has its NUL on the same
	// side.
	switch pairs := n / 2; {
	case le*10 >= pairs*9:
		return binary.LittleEndian, 0, true
	case be*10 >= pairs*9:
		return binary.BigEndian, 0, true
	}
	return nil, 0, false
}

// decodeUTF16 returns data, UTF-16 text, as UTF-8 and the name of the
// encoding it was in.
func decodeUTF16(data []byte, order binary.ByteOrder, bom int) ([]byte, string) {
	name := "UTF-16LE"
	if order == binary.BigEndian {
		name = "UTF-16BE"
	}
	data = data[bom:]
	u := make([]uint16, len(data)/2)
	for i := range u {
		u[i] = order.Uint16(data[2*i:])
	}
	var out bytes.Buffer
	out.Grow(len(u))
	for _, r := range utf16.Decode(u) {
		out.WriteRune(r)
	}
	return out.Bytes(), name
}

// Unread returns an input error naming every input of snaps that was to
// be read and was not (model.Input.Unread), or nil: for a comparison,
// where an unread side would read as a side without rules.
func Unread(what string, snaps []*model.Snapshot) error {
	var out []string
	for _, s := range snaps {
		for _, in := range s.Inputs {
			if in.Unread != "" {
				out = append(out, in.Path+": "+in.Unread)
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return inputErrorf("%s: not everything was read, so no comparison is made: %s", what, strings.Join(out, "; "))
}

// nestedArchive says why an archive or a compressed file in a bundle is
// not read.
const nestedArchive = "not opened inside a bundle (to read it, give it as a PATH of its own, extracted first from the archive that holds it)"
