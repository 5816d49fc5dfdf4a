package klog

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestGolden parses every testdata/parsers/klog archive into
// "entries.json" and "matches.txt" (line, pattern, severity), or "error".
func TestGolden(t *testing.T) {
	parsetest.Golden(t, "parsers/klog/*.txtar", func(t *testing.T, name string, a *txtar.Archive) map[string][]byte {
		input := parsetest.Section(a, "input")
		file := "kube-proxy/log.txt"
		l, err := Parse(file, input)
		if err != nil {
			var pe *parsers.Error
			if !errors.As(err, &pe) || pe.Pos.File != file {
				t.Fatalf("error %v is not a *parsers.Error naming %s", err, file)
			}
			return map[string][]byte{"error": []byte(err.Error() + "\n")}
		}
		if k := parsers.Detect(input); k != parsers.KindLog {
			t.Errorf("Detect says %q, want %q", k, parsers.KindLog)
		}
		lines := strings.Split(string(input), "\n")
		for _, e := range l.Entries {
			want := strings.Join(lines[e.Pos.Line-1:e.EndLine], "\n")
			if e.Raw != want {
				t.Errorf("entry at line %d: raw %q, want lines %d-%d %q", e.Pos.Line, e.Raw, e.Pos.Line, e.EndLine, want)
			}
		}
		var m bytes.Buffer
		for _, f := range l.Matches() {
			fmt.Fprintf(&m, "%s:%d %s %s\n", f.Entry.Pos.File, f.Entry.Pos.Line, f.Pattern.ID, f.Pattern.Severity)
		}
		return map[string][]byte{"entries.json": parsetest.JSON(t, l), "matches.txt": m.Bytes()}
	})
}

func TestParseKlogForms(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Entry
	}{
		{
			name: "structured with quoted, bare and JSON values",
			in:   `I0302 08:15:00.123456       1 server.go:228] "Successfully retrieved NodeIPs" NodeIPs=["10.0.0.21","fd10::21"] count=2 ok=true`,
			want: Entry{Format: FormatKlog, Severity: Info, Header: "0302 08:15:00.123456", PID: 1, Source: "server.go:228", Message: "Successfully retrieved NodeIPs", Structured: true,
				KV: []KV{{"NodeIPs", `["10.0.0.21","fd10::21"]`}, {"count", "2"}, {"ok", "true"}}},
		},
		{
			name: "key with a space as kube-proxy prints it",
			in:   `I0302 08:15:00.123456       1 server.go:274] "kube-proxy running in dual-stack mode" primary ipFamily="IPv4"`,
			want: Entry{Format: FormatKlog, Severity: Info, Header: "0302 08:15:00.123456", PID: 1, Source: "server.go:274", Message: "kube-proxy running in dual-stack mode", Structured: true,
				KV: []KV{{"primary ipFamily", "IPv4"}}},
		},
		{
			name: "escaped quotes in a value",
			in:   `E0302 08:15:00.123456   12345 node.go:152] "Failed to retrieve node info" err="nodes \"worker-1\" not found"`,
			want: Entry{Format: FormatKlog, Severity: Error, Header: "0302 08:15:00.123456", PID: 12345, Source: "node.go:152", Message: "Failed to retrieve node info", Structured: true,
				KV: []KV{{"err", `nodes "worker-1" not found`}}},
		},
		{
			name: "multi-line value followed by more pairs",
			in:   "E0302 08:15:00.123456       1 proxier.go:1874] \"nftables sync failed\" err=<\n\tline one\n\t\n\tline three\n > ipFamily=\"IPv4\"",
			want: Entry{Format: FormatKlog, Severity: Error, Header: "0302 08:15:00.123456", PID: 1, Source: "proxier.go:1874", Message: "nftables sync failed", Structured: true,
				KV: []KV{{"err", "line one\n\nline three"}, {"ipFamily", "IPv4"}}},
		},
		{
			name: "unstructured message over two lines",
			in:   "E0627 09:28:54.054930       1 proxier.go:1598] Failed to execute iptables-restore: exit status 1 (iptables-restore: line 86 failed\n)",
			want: Entry{Format: FormatKlog, Severity: Error, Header: "0627 09:28:54.054930", PID: 1, Source: "proxier.go:1598", Message: "Failed to execute iptables-restore: exit status 1 (iptables-restore: line 86 failed\n)"},
		},
		{
			name: "fatal",
			in:   "F0302 08:15:00.123456       1 server.go:495] open /proc/sys/net/netfilter/nf_conntrack_max: permission denied",
			want: Entry{Format: FormatKlog, Severity: Fatal, Header: "0302 08:15:00.123456", PID: 1, Source: "server.go:495", Message: "open /proc/sys/net/netfilter/nf_conntrack_max: permission denied"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Parse("log", []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Entries) != 1 {
				t.Fatalf("%d entries, want 1", len(l.Entries))
			}
			got := *l.Entries[0]
			got.Pos, got.EndLine, got.Raw, got.Text, got.Logger = parsers.Pos{}, 0, "", "", ""
			if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", tc.want) {
				t.Errorf("got  %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestCRIPartialAndWrappers(t *testing.T) {
	in := "2025-03-02T08:15:00.1Z stderr P I0302 08:15:00.120201       1 server.go:846] \"Version \n" +
		"2025-03-02T08:15:00.2Z stderr F info\" version=\"v1.28.4\"\n" +
		"2025-03-02T08:15:01.3+01:00 I0302 08:15:01.000000       1 a.go:1] \"kubectl timestamps\"\n" +
		"2025-03-02T08:15:02.4Z stdout P I0302 08:15:02.000000       1 a.go:2] \"cut"
	l, err := Parse("log", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != 3 {
		t.Fatalf("%d entries, want 3", len(l.Entries))
	}
	e := l.Entries[0]
	if e.Message != "Version info" || e.Pos.Line != 1 || e.EndLine != 2 || e.Wrapper != WrapperCRI || e.Stream != "stderr" {
		t.Errorf("partial records not joined: %+v", e)
	}
	if v, _ := e.Get("version"); v != "v1.28.4" {
		t.Errorf("version = %q", v)
	}
	if want := time.Date(2025, 3, 2, 8, 15, 0, 100000000, time.UTC); !e.Time.Equal(want) {
		t.Errorf("time %v, want %v", e.Time, want)
	}
	if e := l.Entries[1]; e.Wrapper != WrapperTimestamps || e.Time.UTC().Hour() != 7 {
		t.Errorf("kubectl timestamp: %+v", e)
	}
	if e := l.Entries[2]; !e.Partial || e.Stream != "stdout" {
		t.Errorf("final partial record not flagged: %+v", e)
	}
}

func TestJSONEntries(t *testing.T) {
	in := `{"ts":1772439300118.5,"caller":"app/server.go:228","msg":"hello","v":2,"n":3,"obj":{"a": 1}}` + "\n" +
		`{"ts":1772439300.5,"caller":"x.go:1","msg":"failed","err":"boom"}` + "\n"
	l, err := Parse("log", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	a, b := l.Entries[0], l.Entries[1]
	if a.Severity != Info || *a.Verbosity != 2 || a.Source != "app/server.go:228" || a.Message != "hello" {
		t.Errorf("info entry: %+v", a)
	}
	if v, _ := a.Get("obj"); v != `{"a":1}` {
		t.Errorf("obj = %q", v)
	}
	if want := time.UnixMilli(1772439300118).Add(500 * time.Microsecond).UTC(); !a.Time.Equal(want) {
		t.Errorf("ts %v, want %v", a.Time, want)
	}
	if b.Severity != Error || b.Time.Unix() != 1772439300 {
		t.Errorf("error entry with ts in seconds: %+v", b)
	}
	if b.Text != `"failed" err="boom"` {
		t.Errorf("text %q", b.Text)
	}
}

func TestWhen(t *testing.T) {
	e := &Entry{Header: "0302 08:15:00.123456"}
	if got := e.When(2026); !got.Equal(time.Date(2026, 3, 2, 8, 15, 0, 123456000, time.UTC)) {
		t.Errorf("When = %v", got)
	}
}

func TestRejects(t *testing.T) {
	for name, in := range map[string]string{
		"empty":        "",
		"garbage":      "hello\nworld\n",
		"almost klog":  "I0302 08:15:00 1 a.go:1] no micros\n",
		"json no msg":  `{"ts":1,"caller":"a"}` + "\n",
		"long line":    "I0302 08:15:00.123456       1 a.go:1] " + strings.Repeat("x", MaxLineLength) + "\n",
		"metrics page": "# TYPE x counter\nx 1\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("log", []byte(in))
			if !parsers.IsInputError(err) {
				t.Errorf("got %v, want an input error", err)
			}
		})
	}
}

// TestKubectlPrefix: the "[pod/NAME/CONTAINER] " kubectl logs --prefix
// writes is removed before a line is read, its pod and container kept, and
// a log of such lines is told a kube-proxy log; a line that only looks
// like one is read as it is.
func TestKubectlPrefix(t *testing.T) {
	for _, tc := range []struct {
		line                 string
		pod, container, rest string
		ok                   bool
	}{
		{`[pod/kube-proxy-7xk2p/kube-proxy] I1205 10:00:00.000000       1 proxier.go:805] "Syncing iptables rules"`,
			"kube-proxy-7xk2p", "kube-proxy", `I1205 10:00:00.000000       1 proxier.go:805] "Syncing iptables rules"`, true},
		{`[pod/kube-proxy-7xk2p/kube-proxy] 2026-12-05T10:00:00.123456789Z I1205 10:00:00.000000       1 proxier.go:805] "x"`,
			"kube-proxy-7xk2p", "kube-proxy", `2026-12-05T10:00:00.123456789Z I1205 10:00:00.000000       1 proxier.go:805] "x"`, true},
		{`[pod/kube-proxy-7xk2p/kube-proxy]`, "kube-proxy-7xk2p", "kube-proxy", "", true},
		{`[pod/kube-proxy-7xk2p/kube-proxy] `, "kube-proxy-7xk2p", "kube-proxy", "", true},
		{`[pod/kube-proxy-7xk2p] I1205 10:00:00.000000       1 proxier.go:805] "x"`, "", "", "", false},
		{`[pod//kube-proxy] x`, "", "", "", false},
		{`[pod/a/b/c] x`, "", "", "", false},
		{`[pod/a b/c] x`, "", "", "", false},
		{`[deployment/kube-proxy/kube-proxy] x`, "", "", "", false},
		{`[pod/kube-proxy-7xk2p/kube-proxy]I1205`, "", "", "", false},
		{`[root@node-1 ~]# kubectl logs`, "", "", "", false},
	} {
		pod, ctr, rest, ok := kubectlPrefix(tc.line)
		if pod != tc.pod || ctr != tc.container || rest != tc.rest || ok != tc.ok {
			t.Errorf("kubectlPrefix(%q) = %q, %q, %q, %t; want %q, %q, %q, %t", tc.line, pod, ctr, rest, ok, tc.pod, tc.container, tc.rest, tc.ok)
		}
	}
	for _, log := range []string{
		"[pod/kube-proxy-7xk2p/kube-proxy] I1205 10:00:00.000000       1 proxier.go:805] \"Syncing iptables rules\"\n",
		"[pod/kube-proxy-7xk2p/kube-proxy] 2026-12-05T10:00:00.123456789Z E1205 10:00:00.000000       1 proxier.go:805] \"x\"\ntrailing garbage\n",
		"[pod/kube-proxy-7xk2p/kube-proxy] {\"ts\":1733392800000.123,\"caller\":\"app/server.go:677\",\"msg\":\"Version info\",\"v\":0,\"version\":\"v1.31.4\"}\n",
	} {
		if k := parsers.Detect([]byte(log)); k != parsers.KindLog {
			t.Errorf("Detect(%q) = %q, want %q", log, k, parsers.KindLog)
		}
		l, err := Parse("log", []byte(log))
		if err != nil {
			t.Fatalf("Parse(%q): %v", log, err)
		}
		if e := l.Entries[0]; e.Pod != "kube-proxy-7xk2p" || e.Container != "kube-proxy" || e.Format == FormatText || e.Raw != strings.Split(log, "\n")[0] {
			t.Errorf("Parse(%q): first entry %+v", log, e)
		}
	}
}
