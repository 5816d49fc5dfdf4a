package klog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// readView is what the readers of a log (the loader, the resolver, the
// checks) read of it: the entries that match a pattern, with the cause
// each names, the hosts, the journal identifiers, the start-up lines and
// the lines cut short.
func readView(l *Log) string {
	var b strings.Builder
	for _, m := range l.Matches() {
		fmt.Fprintf(&b, "match %s:%d %s %q %s\n", m.Entry.Pos.File, m.Entry.Pos.Line, m.Pattern.ID, m.Entry.Raw, m.Entry.When(2026))
		if c, ok := l.CauseAt(m.Entry, 3); ok {
			fmt.Fprintf(&b, "  cause %s at %d: %q\n", c.Text, c.Pos.Line, c.Line)
		}
	}
	hosts, lines := l.Hosts()
	ids, bare := l.Identifiers()
	fmt.Fprintf(&b, "hosts %v %v ids %v bare %t lines %d unrecognized %d\n", hosts, lines, ids, bare > 0, l.Lines, l.Unrecognized)
	for _, e := range l.Entries {
		if startupLine(e) || e.Truncated {
			v, _ := e.Get("version")
			fmt.Fprintf(&b, "entry %d %q %q %q truncated %t\n", e.Pos.Line, e.Message, v, e.Raw, e.Truncated)
		}
	}
	return b.String()
}

// TestParseKept: a log read by ParseKept reads, for every reader of it,
// as one read by Parse (its matches and their causes, hosts, identifiers,
// start-up and cut lines), keeps fewer entries, and none of them points
// into the text read: the text may be reused once it is parsed.
func TestParseKept(t *testing.T) {
	files := map[string][]byte{"generated.log": largeLog(3000)}
	for _, name := range []string{"k3s-journal.txt", "kube-proxy-journal.txt", "kubelet-journal.txt", "kubelet-journal-bare.txt"} {
		data, err := os.ReadFile(filepath.Join(parsetest.Root(t), "testdata", "logs", name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = data
	}
	files["two-hosts.log"] = []byte(strings.Join([]string{
		"Feb 17 11:12:14 node-a kube-proxy[9234]: I0217 11:12:14.100000    9234 server.go:650] \"Using iptables Proxier\"",
		"Feb 17 11:12:14 node-b kube-proxy[9234]: E0217 11:12:14.123456    9234 proxier.go:1520] \"Failed to execute iptables-restore\" err=\"exit status 1\"",
		"Feb 17 11:12:14 node-a kube-proxy[9234]: I0217 11:12:14.200000    9234 proxier.go:800] \"Syncing iptables rules\"",
		"Feb 17 11:12:14 node-a kube-proxy[9234]: I0217 11:12:14.300000    9234 proxier.go:800] \"Syncing iptables rules\"",
		"Feb 17 11:12:14 node-a kube-proxy[9234]: I0217 11:12:14.400000    9234 proxier.go:800] \"Syncing iptables rules\"",
		"Feb 17 11:12:14 node-b kube-proxy[9234]: I0217 11:12:14.500000    9234 proxier.go:800] \"Syncing iptables rules\"",
		"Feb 17 11:12:14 node-b kube-proxy[9234]: E0217 11:12:14.600000    9234 proxier.go:800] \"iptables-restore: modprobe: FATAL: Module xt_statistic not found\"",
		"Feb 17 11:12:14 node-a kube-proxy[9234]: I0217 11:12:14.700000    9234 proxier.go:800] \"Syncing iptables rules\"",
	}, "\n") + "\n")
	for name, data := range files {
		t.Run(name, func(t *testing.T) {
			all, err := Parse(name, data)
			if err != nil {
				t.Fatal(err)
			}
			buf := append([]byte(nil), data...)
			kept, err := ParseKept(name, buf)
			if err != nil {
				t.Fatal(err)
			}
			for i := range buf {
				buf[i] = 'x' // the text is reused: nothing kept may read it
			}
			want, got := readView(all), readView(kept)
			if got != want {
				t.Errorf("read as kept:\n%s\nwant, as read whole:\n%s", got, want)
			}
			if !kept.Kept() || all.Kept() {
				t.Errorf("Kept() = %t, %t; want true, false", kept.Kept(), all.Kept())
			}
			if name == "generated.log" && 2*len(kept.Entries) > len(all.Entries)+1 {
				t.Errorf("%d entries kept of %d", len(kept.Entries), len(all.Entries))
			}
		})
	}
	// The entries kept after a match of one host are those that follow it
	// once the other hosts' entries are set aside.
	kept, err := ParseKept("two-hosts.log", files["two-hosts.log"])
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	for _, e := range kept.Entries {
		lines = append(lines, e.Pos.Line)
	}
	if want := []int{1, 2, 3, 4, 5, 6, 7}; !reflect.DeepEqual(lines, want) {
		t.Errorf("kept lines %v, want %v", lines, want)
	}
}

// readerCases are logs whose lines cross the buffers of a reader: CRI
// partial records, multi-line entries, a byte order mark, a last line
// without its newline, lines over the limit, blank and unknown lines.
func readerCases(t testing.TB) map[string][]byte {
	files := map[string][]byte{"generated.log": largeLog(2000), "quiet.log": quietLog(200 << 10)}
	for _, name := range []string{"k3s-journal.txt", "kube-proxy-journal.txt", "kubelet-journal.txt", "kubelet-journal-bare.txt"} {
		data, err := os.ReadFile(filepath.Join(parsetest.Root(t), "testdata", "logs", name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = data
	}
	klogLine := "I1205 10:00:00.000000       1 proxier.go:800] \"Syncing iptables rules\"\n"
	long := strings.Repeat("x", MaxLineLength+1)
	files["bom.log"] = []byte("\xef\xbb\xbf" + klogLine + klogLine)
	files["bom-only.log"] = []byte("\xef\xbb")
	files["no-newline.log"] = []byte(klogLine + strings.TrimSuffix(klogLine, "\n"))
	files["crlf.log"] = []byte(strings.ReplaceAll(klogLine+klogLine, "\n", "\r\n"))
	files["long-line.log"] = []byte(klogLine + long + "\n" + klogLine)
	files["long-last-line.log"] = []byte(klogLine + long)
	files["longest-line.log"] = []byte(klogLine + long[1:] + "\n" + klogLine)
	files["garbage.log"] = []byte("garbage\n\n" + klogLine + "  more garbage\n\x00\xff\n")
	files["no-log.log"] = []byte("hello\nworld\n")
	files["empty.log"] = nil
	files["cri-partial.log"] = []byte("2026-03-02T08:15:31.002091000Z stderr P E0302 08:15:31.002091       1 proxier.go:1388] \"Failed to execute iptables-restore\" err=<\n" +
		"2026-03-02T08:15:31.002091000Z stderr P \texit status 1: unknown option \"--xor-mark\"\n" +
		"2026-03-02T08:15:31.002091000Z stdout F I0302 08:15:31.002091       1 proxier.go:1388] \"Syncing iptables rules\"\n" +
		"2026-03-02T08:15:31.002091000Z stderr F  > ipFamily=\"IPv4\"\n")
	return files
}

// TestParseKeptReader: a log read from a reader, whatever the size of its
// reads and of the buffer, parses as ParseKept parses its text, and fails
// as it fails; an error of the reader ends the parse.
func TestParseKeptReader(t *testing.T) {
	for name, data := range readerCases(t) {
		want, wantErr := ParseKept(name, append([]byte(nil), data...))
		for _, size := range []int{1, 7, 64, 4096, readerBuffer} {
			readers := map[string]func() io.Reader{
				"whole":    func() io.Reader { return bytes.NewReader(data) },
				"one-byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) },
				"half":     func() io.Reader { return iotest.HalfReader(bytes.NewReader(data)) },
				"data-err": func() io.Reader { return iotest.DataErrReader(bytes.NewReader(data)) },
			}
			for rn, r := range readers {
				if rn == "one-byte" && len(data) > 1<<20 {
					continue
				}
				got, err := parseKeptReader(name, r(), size)
				if fmt.Sprint(err) != fmt.Sprint(wantErr) {
					t.Fatalf("%s, buffer %d, %s reads: error %v, want %v", name, size, rn, err, wantErr)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s, buffer %d, %s reads: log differs from ParseKept's:\n%s\nwant\n%s", name, size, rn, readView(got), readView(want))
				}
			}
		}
	}
	boom := errors.New("disk on fire")
	klogLine := "I1205 10:00:00.000000       1 proxier.go:800] \"Syncing iptables rules\"\n"
	_, err := ParseKeptReader("log", io.MultiReader(strings.NewReader(klogLine+klogLine), iotest.ErrReader(boom)))
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "reading log after line 2") {
		t.Fatalf("error %v, want the reader's after line 2", err)
	}
}
