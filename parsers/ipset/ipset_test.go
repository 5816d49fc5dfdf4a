package ipset

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
	"github.com/rogpeppe/go-internal/txtar"
)

func format(d *Dump) []byte {
	if d.Form == FormList {
		return FormatList(d)
	}
	return FormatSave(d)
}

var ignorePos = cmp.Options{
	cmpopts.IgnoreFields(Set{}, "Pos", "Raw"),
	cmpopts.IgnoreFields(Entry{}, "Pos", "Raw"),
	cmpopts.EquateComparable(netip.Addr{}, netip.Prefix{}),
}

// TestRealIpset runs the real ipset on each restore script next to the
// goldens, inside a network namespace it creates and deletes, and checks
// that the golden inputs are what ipset prints (up to what changes from
// run to run: initval, memory size, remaining timeouts, hash order). With
// -update it rewrites the golden inputs from the real tool.
func TestRealIpset(t *testing.T) {
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "ipset", "ip")
	scripts, _ := filepath.Glob(filepath.Join(parsetest.Root(t), "testdata/parsers/ipset/*.restore"))
	if len(scripts) == 0 {
		t.Fatal("no restore scripts")
	}
	for _, script := range scripts {
		name := strings.TrimSuffix(filepath.Base(script), ".restore")
		t.Run(name, func(t *testing.T) {
			ns := fmt.Sprintf("proxyscan-ipset-%d", os.Getpid())
			if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
				t.Fatalf("ip netns add: %v: %s", err, out)
			}
			defer exec.Command("ip", "netns", "del", ns).Run()
			in, err := os.ReadFile(script)
			if err != nil {
				t.Fatal(err)
			}
			run := func(args ...string) []byte {
				cmd := exec.Command("ip", append([]string{"netns", "exec", ns, "ipset"}, args...)...)
				cmd.Stdin = bytes.NewReader(in)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("ipset %v: %v: %s", args, err, stderr.Bytes())
				}
				return out
			}
			run("restore")
			save, list := run("save"), run("list")
			file := filepath.Join(parsetest.Root(t), "testdata/parsers/ipset", name+".txtar")
			a, err := txtar.ParseFile(file)
			if err != nil {
				if !*parsetest.Update {
					t.Fatal(err)
				}
				a = &txtar.Archive{Comment: []byte("Captured with " + ipsetVersion() + " (ipset restore < " + name + ".restore; ipset save; ipset list)\ninside a throw-away network namespace; regenerate with go test -update as root.\n")}
			}
			if *parsetest.Update {
				a.Files = []txtar.File{{Name: "input-save", Data: save}, {Name: "input-list", Data: list}}
				if err := os.WriteFile(file, txtar.Format(a), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, c := range []struct {
				sec  string
				real []byte
			}{{"input-save", save}, {"input-list", list}} {
				want, err := Parse(c.sec, parsetest.Section(a, c.sec))
				if err != nil {
					t.Fatalf("golden %s: %v", c.sec, err)
				}
				got, err := Parse(c.sec, c.real)
				if err != nil {
					t.Fatalf("real %s: %v", c.sec, err)
				}
				if diff := cmp.Diff(stable(want), stable(got)); diff != "" {
					t.Errorf("%s: real ipset output differs from the golden (-golden +real):\n%s", c.sec, diff)
				}
			}
		})
	}
}

func ipsetVersion() string {
	out, err := exec.Command("ipset", "version").Output()
	if err != nil {
		return "ipset"
	}
	return strings.TrimSpace(string(out))
}

// stable renders what does not change between runs of the same script.
func stable(d *Dump) []string {
	var out []string
	for _, s := range d.Sets {
		var opts []string
		for _, o := range s.Options {
			if o.Name != "initval" {
				opts = append(opts, o.Name+"="+o.Value)
			}
		}
		out = append(out, "set "+s.Name+" "+s.Type+" "+strings.Join(opts, " "))
		var es []string
		for _, e := range s.Entries {
			var eo []string
			for _, o := range e.Options {
				if o.Name == "timeout" {
					o.Value = "?"
				}
				eo = append(eo, o.Name+"="+o.Value)
			}
			es = append(es, "  "+e.Elem+" "+strings.Join(eo, " "))
		}
		sort.Strings(es)
		out = append(out, es...)
	}
	return out
}

func TestGolden(t *testing.T) {
	parsetest.Golden(t, "parsers/ipset/*.txtar", parsetest.RoundTrip(parsetest.Codec[*Dump]{
		Parse: Parse, Format: format, InputError: parsers.IsInputError,
		Diff: func(x, y *Dump) string { return cmp.Diff(x, y, ignorePos) },
	}))
}

// TestSaveAndListAgree checks that the save and list captures of one
// script describe the same sets.
func TestSaveAndListAgree(t *testing.T) {
	for _, file := range parsetest.Files(t, "parsers/ipset/*.txtar") {
		a, _ := txtar.ParseFile(file)
		save, list := parsetest.Section(a, "input-save"), parsetest.Section(a, "input-list")
		if save == nil || list == nil {
			continue
		}
		ds, err1 := Parse("save", save)
		dl, err2 := Parse("list", list)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v %v", file, err1, err2)
		}
		if diff := cmp.Diff(stable(ds), stable(dl)); diff != "" {
			t.Errorf("%s: save and list differ:\n%s", file, diff)
		}
	}
}

func TestProtocolNumbers(t *testing.T) {
	d, err := Parse("s", []byte("create S hash:ip,port family inet hashsize 1024 maxelem 65536\nadd S 10.96.0.10,17:53\nadd S 10.96.0.10,udp:53\nadd S 10.96.0.1,6:443\nadd S 10.96.0.2,132:3868\nadd S 10.96.0.3,8080\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		proto uint8
		port  uint16
	}{{17, 53}, {17, 53}, {6, 443}, {132, 3868}, {6, 8080}}
	for i, e := range d.Sets[0].Entries {
		if e.Proto != want[i].proto || e.Port != want[i].port {
			t.Errorf("%s: proto %d port %d, want %d %d", e.Elem, e.Proto, e.Port, want[i].proto, want[i].port)
		}
	}
	if ProtoName(17) != "udp" || ProtoName(6) != "tcp" || ProtoName(132) != "sctp" || ProtoName(200) != "200" {
		t.Error("ProtoName")
	}
}

// withoutPos returns a copy of d without positions and raw text.
func withoutPos(d *Dump) *Dump {
	c := &Dump{Form: d.Form}
	for _, s := range d.Sets {
		cs := *s
		cs.Pos, cs.Raw, cs.Entries = parsers.Pos{}, "", nil
		for _, e := range s.Entries {
			ce := *e
			ce.Pos, ce.Raw = parsers.Pos{}, ""
			cs.Entries = append(cs.Entries, &ce)
		}
		c.Sets = append(c.Sets, &cs)
	}
	return c
}

func FuzzParse(f *testing.F) {
	parsetest.Seeds(f, "parsers/ipset/*.txtar")
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse("fuzz", data)
		if err != nil {
			if !parsers.IsInputError(err) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		out := format(d)
		d2, err := Parse("fuzz", out)
		if err != nil {
			t.Fatalf("reparse: %v\n%q\n%q", err, data, out)
		}
		// reflect.DeepEqual on copies without positions is much faster
		// than cmp; cmp only explains a difference.
		if !reflect.DeepEqual(withoutPos(d), withoutPos(d2)) {
			t.Fatalf("Parse(Format(x)) != x:\n%s\n%q\n%q", cmp.Diff(d, d2, ignorePos), data, out)
		}
	})
}

func BenchmarkParseSave10k(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString("create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x1234abcd\n")
	for i := range 7000 {
		fmt.Fprintf(&buf, "add KUBE-CLUSTER-IP 10.96.%d.%d,tcp:80\n", i>>8, i&255)
	}
	buf.WriteString("create KUBE-NODE-PORT-TCP bitmap:port range 0-65535\n")
	for i := range 3000 {
		fmt.Fprintf(&buf, "add KUBE-NODE-PORT-TCP %d\n", 30000+i)
	}
	buf.WriteString("create KUBE-LOOP-BACK hash:ip,port,ip family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x1234abcd\n")
	for i := range 10000 {
		fmt.Fprintf(&buf, "add KUBE-LOOP-BACK 10.244.%d.%d,tcp:8080,10.244.%d.%d\n", i>>8, i&255, i>>8, i&255)
	}
	buf.WriteString("create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x1234abcd\n")
	for i := range 7000 {
		fmt.Fprintf(&buf, "add KUBE-IPVS-IPS 10.96.%d.%d\n", i>>8, i&255)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("bench", data); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParseLenientCut reads an ipset listing cut in the middle of a set's
// members: the set is partial, with how many of its entries it lists,
// which Parse refuses.
func TestParseLenientCut(t *testing.T) {
	in := "Name: KUBE-CLUSTER-IP\nType: hash:ip,port\nRevision: 6\nHeader: family inet hashsize 1024 maxelem 65536\nSize in memory: 400\nReferences: 2\nNumber of entries: 3\nMembers:\n10.96.0.1,tcp:443\n10.96.0.10,udp:53\n"
	if _, err := Parse("l", []byte(in)); err == nil {
		t.Fatal("Parse reads a set cut short")
	}
	d, err := ParseLenient("l", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if s := d.Sets[0]; s.Partial != "2 of its 3 entries" || len(s.Entries) != 2 {
		t.Errorf("set partial %q with %d entries", s.Partial, len(s.Entries))
	}
	if want := "set KUBE-CLUSTER-IP lists 2 of its 3 entries, and the listing ends there: sets after it are not listed"; d.PartialReason != want {
		t.Errorf("reason %q, want %q", d.PartialReason, want)
	}
	whole := strings.Replace(in, "entries: 3", "entries: 2", 1)
	if d, err := ParseLenient("l", []byte(whole)); err != nil || d.PartialReason != "" || d.Sets[0].Partial != "" {
		t.Errorf("a whole listing: %v, %+v", err, d)
	}
}

// FuzzParseLenient checks that ParseLenient never panics, fails only with
// an input error, and reads what Parse reads the same, not partial (but
// for a save whose last line lacks its newline, which may be cut there).
func FuzzParseLenient(f *testing.F) {
	parsetest.Seeds(f, "parsers/ipset/*.txtar")
	f.Add([]byte("Name: S\nType: hash:ip\nRevision: 6\nHeader: family inet hashsize 1024 maxelem 65536\nSize in memory: 1\nReferences: 0\nNumber of entries: 9\nMembers:\n10.0.0.1\n"))
	f.Add([]byte("create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseLenient("fuzz", data)
		if err != nil {
			if !parsers.IsInputError(err) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		if strict, err := Parse("fuzz", data); err == nil {
			// A save whose last line has no newline may be cut there: read
			// leniently it is partial, and otherwise the same.
			if d.PartialReason != "" && len(data) > 0 && data[len(data)-1] != '\n' && strings.HasPrefix(d.PartialReason, "cut short: its last line") {
				d.PartialReason = ""
			}
			if d.PartialReason != "" || !reflect.DeepEqual(withoutPos(strict), withoutPos(d)) {
				t.Fatalf("lenient read differs (partial %q):\n%s", d.PartialReason, cmp.Diff(strict, d, ignorePos))
			}
		}
	})
}

// TestParseLenientSaveCut checks that an ipset save cut in its last line,
// which still reads as a valid range or member, is partial, and that the
// whole one, and one cut at a line end, are not.
func TestParseLenientSaveCut(t *testing.T) {
	save := "create KUBE-NODE-PORT-TCP bitmap:port range 0-65535\nadd KUBE-NODE-PORT-TCP 30080\ncreate KUBE-NODE-PORT-UDP bitmap:port range 0-65535\n"
	for _, tc := range []struct {
		name, data, want string
	}{
		{"whole", save, ""},
		{"cut at a line end", save[:strings.Index(save, "create KUBE-NODE-PORT-UDP")], ""},
		{"cut in the range", strings.TrimSuffix(save, "5\n"), "cut short: its last line (3) ends without the newline"},
		{"cut in a member", save[:strings.Index(save, "30080")+4], "cut short: its last line (2) ends without the newline"},
	} {
		d, err := ParseLenient("ipset-save.txt", []byte(tc.data))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tc.want == "" && d.PartialReason != "" || !strings.Contains(d.PartialReason, tc.want) {
			t.Errorf("%s: partial %q, want %q", tc.name, d.PartialReason, tc.want)
		}
		if _, err := Parse("ipset-save.txt", []byte(tc.data)); err != nil {
			t.Errorf("%s: the strict parser refuses it: %v", tc.name, err)
		}
	}
}

// TestParseLenientHeaders reads listings whose sets lack their
// "Members:" line: `ipset list -t` prints none (the sets are read without
// members, partial when they have entries), and a listing cut inside a
// set's header ends there (the set is read when its header is whole but
// for "Members:", left out when not); Parse refuses them all.
func TestParseLenientHeaders(t *testing.T) {
	const (
		ip   = "Name: KUBE-CLUSTER-IP\nType: hash:ip,port\nRevision: 6\nHeader: family inet hashsize 1024 maxelem 65536\nSize in memory: 400\nReferences: 2\nNumber of entries: 3\n"
		lb   = "Name: KUBE-LOAD-BALANCER\nType: hash:ip,port\nRevision: 6\nHeader: family inet hashsize 1024 maxelem 65536\nSize in memory: 400\nReferences: 1\nNumber of entries: 0\n"
		port = "Name: KUBE-NODE-PORT-TCP\nType: bitmap:port\nRevision: 3\nHeader: range 0-65535\nSize in memory: 8264\nReferences: 1\n"
	)
	type set struct{ name, partial string }
	for _, tc := range []struct {
		name, in string
		sets     []set
		reason   string
	}{
		{"terse", ip + "\n" + lb + "\n" + port, []set{
			{"KUBE-CLUSTER-IP", "none of its 3 entries: ipset list -t lists no members"},
			{"KUBE-LOAD-BALANCER", ""},
			{"KUBE-NODE-PORT-TCP", "none of its entries: ipset list -t lists no members"},
		}, "a terse listing (ipset list -t): it lists no members of its sets"},
		{"terse, of empty sets only", lb + "\n" + strings.Replace(lb, "BALANCER", "BALANCER-FW", 1), []set{{"KUBE-LOAD-BALANCER", ""}, {"KUBE-LOAD-BALANCER-FW", ""}}, ""},
		// One set without "Members:" at the end: `ipset list -t SET`, or
		// a listing cut there.
		{"a set's header, then the end", ip, []set{{"KUBE-CLUSTER-IP", "none of its entries: the listing ends in its header"}},
			`the listing ends with the header of set KUBE-CLUSTER-IP (line 7), without its "Members:" line (cut there, or ipset list -t, which lists no members): its members are not listed, nor the sets after it`},
		{"cut after a whole header", lb + "Members:\n\n" + port, []set{
			{"KUBE-LOAD-BALANCER", ""},
			{"KUBE-NODE-PORT-TCP", "none of its entries: the listing ends in its header"},
		}, `the listing ends with the header of set KUBE-NODE-PORT-TCP (line 15), without its "Members:" line (cut there, or ipset list -t, which lists no members): its members are not listed, nor the sets after it`},
		{"cut after an empty set's header", lb, []set{{"KUBE-LOAD-BALANCER", ""}},
			`the listing ends with the header of set KUBE-LOAD-BALANCER (line 7), without its "Members:" line (cut there, or ipset list -t, which lists no members): the sets after it are not listed`},
		{"cut in the header", lb + "Members:\n\n" + port[:strings.Index(port, "Size")], []set{{"KUBE-LOAD-BALANCER", ""}},
			"the listing ends in the header of set KUBE-NODE-PORT-TCP (line 13): that set and those after it are not listed"},
		{"cut after the name", lb + "Members:\n\nName: KUBE-NODE-PORT-TCP\n", []set{{"KUBE-LOAD-BALANCER", ""}},
			"the listing ends in the header of set KUBE-NODE-PORT-TCP (line 10): that set and those after it are not listed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse("l", []byte(tc.in)); err == nil {
				t.Error("Parse reads it")
			}
			d, err := ParseLenient("l", []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			var got []set
			for _, s := range d.Sets {
				got = append(got, set{s.Name, s.Partial})
				if len(s.Entries) != 0 {
					t.Errorf("set %s: %d entries", s.Name, len(s.Entries))
				}
			}
			if !reflect.DeepEqual(got, tc.sets) {
				t.Errorf("sets %q, want %q", got, tc.sets)
			}
			if d.PartialReason != tc.reason {
				t.Errorf("reason %q, want %q", d.PartialReason, tc.reason)
			}
		})
	}
	// A header without "Members:" in the middle of a set's lines is
	// still an error.
	if _, err := ParseLenient("l", []byte(strings.Replace(ip, "Number of entries: 3\n", "Number of entries: 3\n10.96.0.1,tcp:443\n", 1))); err == nil {
		t.Error("a member line without Members: is read")
	}
}
