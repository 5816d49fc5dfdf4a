package klog

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// largeLog builds a CRI-wrapped kube-proxy log of n lines mixing info
// lines, multi-line errors and reflector failures.
func largeLog(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() >= 0 && i < n; {
		ts := fmt.Sprintf("2026-03-02T08:%02d:%02d.%09dZ", (i/60)%60, i%60, i)
		switch i % 10 {
		case 7:
			fmt.Fprintf(&b, "%s stderr F E0302 08:15:31.002091       1 proxier.go:1388] \"Failed to execute iptables-restore\" err=<\n", ts)
			fmt.Fprintf(&b, "%s stderr F \texit status 1: iptables-restore: line %d failed\n", ts, i)
			fmt.Fprintf(&b, "%s stderr F  > ipFamily=\"IPv4\"\n", ts)
			i += 3
		case 9:
			fmt.Fprintf(&b, "%s stderr F E0302 08:15:03.171562       1 reflector.go:227] \"Failed to watch\" err=\"failed to list *v1.Service: Get \\\"https://10.0.0.10:6443/api/v1/services?limit=500&resourceVersion=0\\\": dial tcp 10.0.0.10:6443: connect: connection refused\" logger=\"UnhandledError\" reflector=\"k8s.io/client-go/informers/factory.go:161\" type=\"*v1.Service\"\n", ts)
			i++
		default:
			fmt.Fprintf(&b, "%s stderr F I0302 08:15:32.663987       1 proxier.go:1573] \"SyncProxyRules complete\" ipFamily=\"IPv4\" elapsed=\"%dms\"\n", ts, i%97)
			i++
		}
	}
	return b.Bytes()
}

func BenchmarkParse100k(b *testing.B) {
	data := largeLog(100000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("log", data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseAndMatch100k(b *testing.B) {
	data := largeLog(100000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		l, err := Parse("log", data)
		if err != nil {
			b.Fatal(err)
		}
		l.Matches()
	}
}

// BenchmarkParseLive parses a log of 100,000 lines; live-B/text-B is what
// the parsed log holds for each byte of its text, once the text is
// dropped.
func BenchmarkParseLive(b *testing.B) {
	data := largeLog(100000)
	parsetest.BenchLive(b, len(data), func() (any, error) { return Parse("log", data) })
}

// largeLogBytes builds a log of largeLog's lines of at least n bytes.
func largeLogBytes(n int) []byte {
	lines := 100000
	data := largeLog(lines)
	for len(data) < n {
		lines = lines * n / len(data) * 11 / 10
		data = largeLog(lines)
	}
	return data
}

// BenchmarkParseLive50MB parses a generated log of 50 MB, the size of a
// large journald excerpt: B/op is what the parse allocates, live-B/text-B
// what the parsed log holds for each byte of its text once the text is
// dropped.
func BenchmarkParseLive50MB(b *testing.B) {
	data := largeLogBytes(50 << 20)
	parsetest.BenchLive(b, len(data), func() (any, error) { return Parse("log", data) })
}

// BenchmarkParseKeptLive50MB is BenchmarkParseLive50MB for ParseKept,
// which the loader reads logs with.
func BenchmarkParseKeptLive50MB(b *testing.B) {
	data := largeLogBytes(50 << 20)
	parsetest.BenchLive(b, len(data), func() (any, error) { return ParseKept("log", data) })
}

// quietLog builds a CRI-wrapped kube-proxy log of at least n bytes as a
// node logs it at its default verbosity: sync lines, with a failed
// restore (three lines) every 1000 entries.
func quietLog(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		ts := fmt.Sprintf("2026-03-02T08:%02d:%02d.%09dZ", (i/60)%60, i%60, i)
		if i%1000 == 999 {
			fmt.Fprintf(&b, "%s stderr F E0302 08:15:31.002091       1 proxier.go:1388] \"Failed to execute iptables-restore\" err=<\n", ts)
			fmt.Fprintf(&b, "%s stderr F \texit status 1: iptables-restore: line %d failed\n", ts, i)
			fmt.Fprintf(&b, "%s stderr F  > ipFamily=\"IPv4\"\n", ts)
			continue
		}
		fmt.Fprintf(&b, "%s stderr F I0302 08:15:32.663987       1 proxier.go:1573] \"SyncProxyRules complete\" ipFamily=\"IPv4\" elapsed=\"%dms\"\n", ts, i%97)
	}
	return b.Bytes()
}

// BenchmarkParseLiveQuiet50MB and BenchmarkParseKeptLiveQuiet50MB are
// BenchmarkParseLive50MB and BenchmarkParseKeptLive50MB on a 50 MB log of
// quietLog's, where few entries are errors.
func BenchmarkParseLiveQuiet50MB(b *testing.B) {
	data := quietLog(50 << 20)
	parsetest.BenchLive(b, len(data), func() (any, error) { return Parse("log", data) })
}

func BenchmarkParseKeptLiveQuiet50MB(b *testing.B) {
	data := quietLog(50 << 20)
	parsetest.BenchLive(b, len(data), func() (any, error) { return ParseKept("log", data) })
}
