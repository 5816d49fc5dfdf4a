package klog

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"strconv"
	"testing"
	"time"

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

// quietReader reads as quietLog's text of n bytes, generated as it is
// read: a log of any size that is never in memory.
type quietReader struct {
	n, i           int    // bytes left, entries made
	line           []byte // what is left to read of the entry made
	stamp, lineBuf []byte
}

// appendPadded appends n in width digits, zeros first.
func appendPadded(b []byte, n, width int) []byte {
	var d [20]byte
	s := strconv.AppendInt(d[:0], int64(n), 10)
	for range width - len(s) {
		b = append(b, '0')
	}
	return append(b, s...)
}

func (q *quietReader) Read(p []byte) (int, error) {
	if q.n <= 0 {
		return 0, io.EOF
	}
	for len(q.line) == 0 {
		// quietLog's lines, made without fmt: what the parse
		// allocates is what is measured.
		i := q.i
		q.i++
		ts := q.stamp[:0]
		ts = append(ts, "2026-03-02T08:"...)
		ts = appendPadded(ts, (i/60)%60, 2)
		ts = append(ts, ':')
		ts = appendPadded(ts, i%60, 2)
		ts = append(ts, '.')
		ts = appendPadded(ts, i%1000000000, 9)
		ts = append(ts, 'Z')
		q.stamp = ts
		l := q.lineBuf[:0]
		if i%1000 == 999 {
			l = append(append(l, ts...), " stderr F E0302 08:15:31.002091       1 proxier.go:1388] \"Failed to execute iptables-restore\" err=<\n"...)
			l = append(append(l, ts...), " stderr F \texit status 1: iptables-restore: line "...)
			l = append(strconv.AppendInt(l, int64(i), 10), " failed\n"...)
			l = append(append(l, ts...), " stderr F  > ipFamily=\"IPv4\"\n"...)
		} else {
			l = append(append(l, ts...), " stderr F I0302 08:15:32.663987       1 proxier.go:1573] \"SyncProxyRules complete\" ipFamily=\"IPv4\" elapsed=\""...)
			l = append(strconv.AppendInt(l, int64(i%97), 10), "ms\"\n"...)
		}
		q.line, q.lineBuf = l, l
	}
	n := copy(p[:min(len(p), q.n)], q.line)
	q.line, q.n = q.line[n:], q.n-n
	return n, nil
}

// streamedAlloc parses a streamed log of n bytes with ParseKeptReader and
// returns the bytes it allocated (the generator's own allocations
// included) and the peak heap in use seen while it ran.
func streamedAlloc(t testing.TB, n int) (alloc, peak uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	stop := make(chan struct{})
	peaks := make(chan uint64)
	go func() {
		var top uint64
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			top = max(top, s[0].Value.Uint64())
			select {
			case <-stop:
				peaks <- top
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	l, err := ParseKeptReader("log", &quietReader{n: n})
	close(stop)
	peak = <-peaks
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if l.Lines == 0 {
		t.Fatal("no line read")
	}
	return after.TotalAlloc - before.TotalAlloc, peak - min(peak, before.HeapAlloc)
}

// BenchmarkParseKeptReader200MB reads a generated log of 200 MB through
// ParseKeptReader, as the loader reads a log on disk or compressed:
// alloc-B is what it allocates in all (the generator's lines included),
// peak-heap-B the most the heap grew by while it read.
func BenchmarkParseKeptReader200MB(b *testing.B) {
	const n = 200 << 20
	b.SetBytes(n)
	var alloc, peak uint64
	for b.Loop() {
		alloc, peak = streamedAlloc(b, n)
	}
	b.ReportMetric(float64(alloc), "alloc-B")
	b.ReportMetric(float64(peak), "peak-heap-B")
}

// TestParseKeptReaderBounded: reading a log as a stream holds a buffer
// and the kept entries, not the text: it allocates less than a quarter of
// the text's size, and the heap grows by less than 8 MiB, where reading
// the text into memory first allocates all of it.
func TestParseKeptReaderBounded(t *testing.T) {
	n := 64 << 20
	if testing.Short() {
		n = 16 << 20
	}
	alloc, peak := streamedAlloc(t, n)
	if alloc > uint64(n/4) || peak > 8<<20 {
		t.Errorf("reading a streamed log of %d bytes allocated %d bytes and grew the heap by %d, want under %d and 8 MiB", n, alloc, peak, n/4)
	}
}
