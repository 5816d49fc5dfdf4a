package sysctl

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

func TestGolden(t *testing.T) {
	parsetest.Golden(t, "parsers/sysctl/*.txtar", func(t *testing.T, name string, a *txtar.Archive) map[string][]byte {
		file := "node/sysctl.txt"
		l, err := Parse(file, parsetest.Section(a, "input"))
		if err != nil {
			checkError(t, err, file)
			return map[string][]byte{"error": []byte(err.Error() + "\n")}
		}
		if k := parsers.Detect(parsetest.Section(a, "input")); k != parsers.KindSysctl {
			t.Errorf("Detect says %q, want %q", k, parsers.KindSysctl)
		}
		checkRoundTrip(t, l)
		return map[string][]byte{"want.json": parsetest.JSON(t, l), "format.txt": Format(l)}
	})
}

// checkError fails unless err is a positioned input error naming file.
func checkError(t *testing.T, err error, file string) {
	t.Helper()
	var pe *parsers.Error
	var el parsers.ErrorList
	switch {
	case errors.As(err, &el) && len(el) > 0:
		pe = el[0]
	case errors.As(err, &pe):
	default:
		t.Fatalf("error %v is not a *parsers.Error", err)
	}
	if pe.Pos.File != file || pe.Pos.Line == 0 && pe.Pos.Path == "" && !strings.Contains(pe.Msg, "no sysctl") {
		t.Fatalf("error %v does not name %s and a line", err, file)
	}
}

// content drops positions and raw text, which Format does not keep.
func content(l *Listing) string {
	var b bytes.Buffer
	for _, e := range l.Entries {
		fmt.Fprintf(&b, "%q=%q\n", e.Key, e.Value)
	}
	for _, n := range l.Notes {
		fmt.Fprintf(&b, "note %q\n", n.Text)
	}
	return b.String()
}

func checkRoundTrip(t *testing.T, l *Listing) {
	t.Helper()
	l2, err := Parse(l.File, Format(l))
	if err != nil {
		t.Fatalf("Parse(Format(x)): %v\n%s", err, Format(l))
	}
	if a, b := content(l), content(l2); a != b {
		t.Fatalf("Parse(Format(x)) != x:\n%s\nvs\n%s", a, b)
	}
}

func TestCanonicalKeys(t *testing.T) {
	tests := []struct{ in, key string }{
		{"net.ipv4.ip_forward = 1", "net.ipv4.ip_forward"},
		{"net/ipv4/ip_forward = 1", "net.ipv4.ip_forward"},
		{"/proc/sys/net/ipv4/ip_forward: 1", "net.ipv4.ip_forward"},
		{"/proc/sys/net/ipv4/ip_forward:1", "net.ipv4.ip_forward"},
		{"/proc/sys/net/ipv4/ip_forward 1", "net.ipv4.ip_forward"},
		{"/proc/sys/net/ipv4/conf/eth0.100/rp_filter: 1", "net.ipv4.conf.eth0/100.rp_filter"},
		{"net/ipv4/conf/eth0.100/rp_filter=1", "net.ipv4.conf.eth0/100.rp_filter"},
		{"net.ipv4.conf.eth0/100.rp_filter = 1", "net.ipv4.conf.eth0/100.rp_filter"},
		{"net.bridge.bridge-nf-call-iptables=1", "net.bridge.bridge-nf-call-iptables"},
	}
	for _, tc := range tests {
		l, err := Parse("s", []byte(tc.in))
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got := l.Entries[0].Key; got != tc.key {
			t.Errorf("%q: key %q, want %q", tc.in, got, tc.key)
		}
		for _, form := range []string{tc.key, Path(tc.key), strings.TrimPrefix(Path(tc.key), "/proc/sys/")} {
			if _, ok := l.Get(form); !ok {
				t.Errorf("%q: Get(%q) found nothing", tc.in, form)
			}
		}
	}
	if got := Path("net.ipv4.conf.eth0/100.rp_filter"); got != "/proc/sys/net/ipv4/conf/eth0.100/rp_filter" {
		t.Errorf("Path = %q", got)
	}
}

// TestRealSysctl runs sysctl and grep in a scratch network namespace with
// an interface whose name has a dot, and checks that every form parses to
// the values the kernel reports.
func TestRealSysctl(t *testing.T) {
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "ip", "sysctl", "grep")
	ns := fmt.Sprintf("proxyscan-sysctl-%d", os.Getpid())
	run := func(args ...string) []byte {
		t.Helper()
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return out
	}
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Skipf("cannot create a network namespace: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	run("ip", "-n", ns, "link", "add", "eth0.100", "type", "veth", "peer", "name", "p1")
	run("ip", "netns", "exec", ns, "sysctl", "-w", "net.ipv4.conf.eth0/100.rp_filter=2")

	all := run("ip", "netns", "exec", ns, "sysctl", "-a")
	l, err := Parse("sysctl-a", all)
	if err != nil {
		t.Fatal(err)
	}
	paths := run("ip", "netns", "exec", ns, "grep", ".", "/proc/sys/net/ipv4/conf/eth0.100/rp_filter", "/proc/sys/net/ipv4/ip_forward")
	lp, err := Parse("grep", paths)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"net.ipv4.conf.eth0/100.rp_filter", "net.ipv4.ip_forward"} {
		a, ok1 := l.Value(key)
		b, ok2 := lp.Value(key)
		raw := strings.TrimSpace(string(run("ip", "netns", "exec", ns, "cat", Path(key))))
		if !ok1 || !ok2 || a != raw || b != raw {
			t.Errorf("%s: sysctl -a %q (%v), grep %q (%v), kernel %q", key, a, ok1, b, ok2, raw)
		}
	}
	if v, _ := l.Value("net.ipv4.conf.eth0/100.rp_filter"); v != "2" {
		t.Errorf("rp_filter of eth0.100 = %q, want the 2 just set", v)
	}
	checkRoundTrip(t, l)
}
