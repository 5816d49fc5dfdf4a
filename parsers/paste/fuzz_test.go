package paste

import (
	"bytes"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// FuzzClean checks that Clean never panics (nor PromptHost, whose host is
// a name the line holds), keeps the number of lines
// (so that positions stay those of the input), leaves removed lines empty
// and every line it has no note for as it was, and that Detect and Head
// never panic.
func FuzzClean(f *testing.F) {
	parsetest.Seeds(f, "parsers/iptables/*.txtar")
	for _, s := range []string{
		"[root@node-1 ~]# iptables-save\n*nat\nCOMMIT\n",
		"```\n> *nat\n```\nx\n",
		"  9 | *nat\n 10 | COMMIT\n",
		"     1\t*nat\n     2\t\r\n",
		"NAME   READY   STATUS\nkube-proxy-x   1/1   Running\n*nat\n",
		"I0414 09:30:00.1       1 proxier.go:1] \"Restoring iptables\" rules=<\n\t*nat\n >\n",
		"-A \x1b[01;31mKUBE\x1b[m-SVC-X -j Y   \r\n",
		"$ iptables-save | grep -E 'KUBE|\\*' || true | head\n*nat\n",
		"root@Worker-1:~# sudo ipvsadm -Ln\nworker-2 $ kubectl exec x -- nft list ruleset\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		Detect(data)
		for _, l := range strings.Split(string(data), "\n") {
			// A filter is a segment of the line it is found in.
			if f := LineFilter(l); f != "" && !strings.Contains(l, f) {
				t.Fatalf("LineFilter(%q) = %q, not a part of it", l, f)
			}
			// A prompt's host is a host name the line holds.
			if h, _ := PromptHost(l); h != "" && (!strings.Contains(strings.ToLower(l), h) || strings.ContainsAny(h, " \t@:[]#$")) {
				t.Fatalf("PromptHost(%q) = %q, not a host name of it", l, h)
			}
		}
		if _, err := Head(bytes.NewReader(data), 1<<10, int64(len(data))); err != nil {
			t.Fatal(err)
		}
		for _, o := range []Options{{}, All} {
			res := Clean(data, o)
			in := strings.Split(string(data), "\n")
			out := strings.Split(string(res.Data), "\n")
			if len(in) != len(out) {
				t.Fatalf("%d lines in, %d out", len(in), len(out))
			}
			noted, removed := map[int]bool{}, map[int]bool{}
			for i, n := range res.Notes {
				if n.Line < 1 || n.Line > len(in) || i > 0 && n.Line < res.Notes[i-1].Line {
					t.Fatalf("note %+v out of place", n)
				}
				noted[n.Line] = true
				removed[n.Line] = removed[n.Line] || n.Skipped
			}
			for i := range in {
				switch {
				case removed[i+1] && out[i] != "":
					t.Fatalf("line %d removed but left as %q", i+1, out[i])
				case noted[i+1]:
				case strings.TrimSpace(in[i]) == "" && o.TrailingBlanks:
				case in[i] != out[i]:
					t.Fatalf("line %d changed without a note: %q -> %q", i+1, in[i], out[i])
				}
			}
		}
	})
}
