package ipvs

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
	"github.com/rogpeppe/go-internal/txtar"
)

// format prints d in the form it was read from.
func format(d *Dump) []byte {
	if d.Form == FormSave {
		return FormatSave(d)
	}
	return FormatList(d, d.ListOptions())
}

// ignorePos drops what a re-print cannot keep: positions and raw text.
var ignorePos = cmp.Options{
	cmpopts.IgnoreFields(Service{}, "Pos", "Raw", "Listed"),
	cmpopts.IgnoreFields(Destination{}, "Pos", "Raw"),
	cmpopts.IgnoreFields(Timeouts{}, "Pos", "Raw"),
	cmpopts.IgnoreFields(Dump{}, "HeaderPos"),
}

// roundTripView drops what the dump's own form cannot print back: the save
// form has no thresholds (ipvsadm -Sn does not write -x and -y).
func roundTripView(d *Dump) *Dump {
	if d.Form != FormSave {
		return d
	}
	out := *d
	out.Services = nil
	for _, s := range d.Services {
		c := *s
		c.Destinations = nil
		for _, dst := range s.Destinations {
			cd := *dst
			cd.UpperThreshold, cd.LowerThreshold = 0, 0
			c.Destinations = append(c.Destinations, &cd)
		}
		out.Services = append(out.Services, &c)
	}
	return &out
}

// saveView keeps what the save form carries.
func saveView(d *Dump) *Dump {
	out := &Dump{Form: FormSave, Services: []*Service{}}
	for _, s := range d.Services {
		c := &Service{VirtualServer: s.VirtualServer, Destinations: []*Destination{}}
		c.Stats = SvcStats{}
		for _, dst := range s.Destinations {
			cd := &Destination{RealServer: dst.RealServer, Tunnel: dst.Tunnel}
			cd.Stats = DstStats{}
			cd.ActiveConnections, cd.InactiveConnections = 0, 0
			cd.UpperThreshold, cd.LowerThreshold = 0, 0
			if cd.ConnectionFlags == FwdLocalNode {
				cd.ConnectionFlags = FwdDirectRoute
			}
			if cd.ConnectionFlags == FwdTunnel && cd.Tunnel == nil {
				cd.Tunnel = &Tunnel{Type: "ipip"}
			}
			c.Destinations = append(c.Destinations, cd)
		}
		out.Services = append(out.Services, c)
	}
	return out
}

// errorText renders an error for a golden: every error of a list, one a
// line.
func TestGolden(t *testing.T) {
	parsetest.Golden(t, "parsers/ipvs/*.txtar", parsetest.RoundTrip(parsetest.Codec[*Dump]{
		Parse: Parse, Format: format, InputError: parsers.IsInputError,
		Diff: func(x, y *Dump) string { return cmp.Diff(roundTripView(x), roundTripView(y), ignorePos) },
	}))
}

// TestListAndSaveAgree checks that the listing and the save form of one
// table give the same model, as far as the save form carries it.
func TestListAndSaveAgree(t *testing.T) {
	n := 0
	for _, file := range parsetest.Files(t, "parsers/ipvs/*.txtar") {
		a, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		save, list := parsetest.Section(a, "input"), parsetest.Section(a, "input-list")
		if list == nil {
			continue
		}
		n++
		ds, err := ParseSave("save", save)
		if err != nil {
			t.Fatal(err)
		}
		dl, err := ParseList("list", list)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(saveView(dl), saveView(ds), ignorePos); diff != "" {
			t.Errorf("%s: list and save forms differ (-list +save):\n%s", file, diff)
		}
		if got := FormatSave(dl); !bytes.Equal(got, save) {
			t.Errorf("%s: FormatSave(listing) differs from the save form:\n%s", file, parsetest.Diff(save, got))
		}
	}
	if n == 0 {
		t.Fatal("no golden has both forms")
	}
}

func TestServiceString(t *testing.T) {
	d, err := Parse("x", []byte("-A -t 10.96.0.1:443 -s rr\n-A -u [fd00::a]:53 -s rr\n-A --sctp-service 10.96.0.5:3868 -s rr\n-A -f 7 -s rr\n-A -f 8 -6 -s rr\n-a -t 10.96.0.1:443 -r 10.0.0.1:6443 -m -w 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.96.0.1:443/TCP", "[fd00::a]:53/UDP", "10.96.0.5:3868/SCTP", "FWM 7", "FWM 8 IPv6"}
	for i, s := range d.Services {
		if got := s.String(); got != want[i] {
			t.Errorf("service %d: String() = %q, want %q", i, got, want[i])
		}
	}
	if got := d.Services[0].Destinations[0].String(); got != "10.0.0.1:6443" {
		t.Errorf("destination String() = %q", got)
	}
	if d.Find(d.Services[1].Address, 53, ProtoUDP) != d.Services[1] || d.Find(d.Services[1].Address, 53, ProtoTCP) != nil {
		t.Error("Find does not find the UDP service by address, port and protocol")
	}
}

func TestCounterText(t *testing.T) {
	for _, tc := range []struct {
		v     uint64
		exact bool
		want  string
	}{
		{0, false, "0"},
		{99999999, false, "99999999"},
		{100000000, false, "100000K"},
		{999999999, false, "999999K"},
		{1000000000, false, "1000M"},
		{99999999999, false, "99999M"},
		{100000000000, false, "100G"},
		{99999999999999, false, "99999G"},
		{100000000000000, false, "100T"},
		{18446744073709551615, false, "18446744T"},
		{18446744073709551615, true, "18446744073709551615"},
	} {
		if got := FormatCounter(tc.v, tc.exact); got != tc.want {
			t.Errorf("FormatCounter(%d, %v) = %q, want %q", tc.v, tc.exact, got, tc.want)
		}
		v, abbr, msg := parseCounter(tc.want, false)
		if msg != "" {
			t.Errorf("parseCounter(%q): %s", tc.want, msg)
			continue
		}
		if abbr != (tc.v >= 1e8 && !tc.exact) {
			t.Errorf("parseCounter(%q): abbreviated = %v", tc.want, abbr)
		}
		if FormatCounter(v, tc.exact) != tc.want {
			t.Errorf("parseCounter(%q) = %d, which prints as %q", tc.want, v, FormatCounter(v, tc.exact))
		}
		if v > tc.v {
			t.Errorf("parseCounter(%q) = %d, above the true value %d", tc.want, v, tc.v)
		}
	}
}

func TestInetNtop6(t *testing.T) {
	for in, want := range map[string]string{
		"::":                   "::",
		"::1":                  "::1",
		"fd00:0:0:1::3":        "fd00:0:0:1::3",
		"2001:db8:0:1:1:1:1:1": "2001:db8:0:1:1:1:1:1",
		"1:0:0:2:0:0:0:3":      "1:0:0:2::3",
		"1:0:0:2:0:0:3:4":      "1::2:0:0:3:4",
		"::ffff:10.1.2.3":      "::ffff:10.1.2.3",
		"::10.1.2.3":           "::10.1.2.3",
		"::ffff:0:10.1.2.3":    "::ffff:0:a01:203",
		"fe80::":               "fe80::",
	} {
		_, ip, _, _, msg := parseAddrPort("["+in+"]:1", true)
		if msg != "" {
			t.Fatalf("%s: %s", in, msg)
		}
		if got := inetNtop6(ip); got != want {
			t.Errorf("inetNtop6(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestLongLine(t *testing.T) {
	in := "IP Virtual Server version 1.2.1 (size=4096)\n" + strings.Repeat("x", MaxLineLength+1) + "\n"
	_, err := Parse("ipvsadm.txt", []byte(in))
	if err == nil || err.Error() != "ipvsadm.txt:2: line too long (65537 bytes, limit 65536)" {
		t.Fatalf("got %v", err)
	}
}

func TestErrorsAreCollected(t *testing.T) {
	var b strings.Builder
	b.WriteString("-A -t 10.0.0.1:80 -s rr\n")
	for range 30 {
		b.WriteString("-a -t 10.0.0.1:80 -r 10.0.0.300:80 -m -w 1\n")
	}
	_, err := Parse("s.txt", []byte(b.String()))
	l, ok := err.(parsers.ErrorList)
	if !ok {
		t.Fatalf("want an ErrorList, got %T %v", err, err)
	}
	if len(l) != maxErrors || l[0].Pos.Line != 2 || l[9].Pos.Line != 11 {
		t.Errorf("got %d errors, first at %v, last at %v", len(l), l[0].Pos, l[len(l)-1].Pos)
	}
}

func FuzzParse(f *testing.F) {
	parsetest.Seeds(f, "parsers/ipvs/*.txtar")
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
			t.Fatalf("reparse failed: %v\ninput:\n%q\nformatted:\n%q", err, data, out)
		}
		if diff := cmp.Diff(roundTripView(d), roundTripView(d2), ignorePos); diff != "" {
			t.Fatalf("Parse(Format(x)) != x:\n%s\ninput:\n%q\nformatted:\n%q", diff, data, out)
		}
		if out2 := format(d2); !bytes.Equal(out, out2) {
			t.Fatalf("Format not idempotent:\n%q\n%q", out, out2)
		}
	})
}

// TestParseLenient reads ipvsadm -L without -n: ports printed as
// well-known service names are read as their numbers, and a service one
// of whose real servers is printed with a host name is skipped with its
// real servers (read without it, it would look as if it lacked one); a
// listing of one service, without the version banner, is partial. SCTP
// rows are read.
func TestParseLenient(t *testing.T) {
	const title = "Prot LocalAddress:Port Scheduler Flags\n  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n"
	in := "IP Virtual Server version 1.2.1 (size=4096)\n" + title +
		"TCP  10.96.0.1:https rr\n  -> 10.244.1.2:6443              Masq    1      0          0\n  -> node-cp:6443                 Masq    1      0          0\n" +
		"SCTP  10.96.0.20:3868 rr\n  -> 10.244.1.9:3868             Masq    1      0          0\n" +
		"TCP  10.96.0.30:postgresql rr\n  -> 10.244.1.3:postgresql        Masq    1      0          0\n" +
		"UDP  10.96.0.10:domain rr\n  -> 10.244.1.4:kerberos-adm      Masq    1      0          0\n"
	d, notes, err := ParseLenient("l", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range d.Services {
		got = append(got, fmt.Sprintf("%d %s:%d %d", s.Protocol, s.Address, s.Port, len(s.Destinations)))
		for _, r := range s.Destinations {
			got = append(got, fmt.Sprintf("  %s:%d %s", r.Address, r.Port, r.Raw))
		}
	}
	if w := "132 10.96.0.20:3868 1\n  10.244.1.9:3868   -> 10.244.1.9:3868             Masq    1      0          0\n" +
		"6 10.96.0.30:5432 1\n  10.244.1.3:5432   -> 10.244.1.3:postgresql        Masq    1      0          0"; strings.Join(got, "\n") != w {
		t.Errorf("services:\n%s\nwant:\n%s", strings.Join(got, "\n"), w)
	}
	want := []parsers.LineNote{
		{Line: 4, Reason: ReasonServiceName, Detail: "https (443)"},
		{Line: 4, Reason: ReasonServiceSkipped, Skipped: true, Detail: "its real server on line 6 is not read"},
		{Line: 5, Reason: ReasonServiceSkipped, Skipped: true},
		{Line: 6, Reason: ReasonUnresolved, Skipped: true, Detail: "node-cp (an address)"},
		{Line: 9, Reason: ReasonServiceName, Detail: "postgresql (5432)"},
		{Line: 10, Reason: ReasonServiceName, Detail: "postgresql (5432)"},
		{Line: 11, Reason: ReasonServiceName, Detail: "domain (53)"},
		{Line: 11, Reason: ReasonServiceSkipped, Skipped: true, Detail: "its real server on line 12 is not read"},
		{Line: 12, Reason: ReasonUnresolved, Skipped: true, Detail: "kerberos-adm (a port)"},
	}
	if diff := cmp.Diff(want, notes); diff != "" {
		t.Errorf("notes:\n%s", diff)
	}
	if !strings.Contains(d.PartialReason, "2 lines name hosts") {
		t.Errorf("partial %q", d.PartialReason)
	}
	one := title + "TCP  10.96.0.1:443 rr\n  -> 192.168.10.10:6443           Masq    1      0          0\n"
	d, notes, err = ParseLenient("t", []byte(one))
	if err != nil || len(notes) > 0 || !strings.HasPrefix(d.PartialReason, "no version banner") {
		t.Errorf("one service: %v %v %q", err, notes, d.PartialReason)
	}
	if d, _, err := ParseLenient("w", []byte("IP Virtual Server version 1.2.1 (size=4096)\n"+one)); err != nil || d.PartialReason != "" {
		t.Errorf("a whole listing: %v %q", err, d.PartialReason)
	}
}

// FuzzParseLenient checks that ParseLenient never panics, fails only
// with an input error, notes lines of the input only, and reads what
// Parse reads the same (but for why it is partial).
func FuzzParseLenient(f *testing.F) {
	parsetest.Seeds(f, "parsers/ipvs/*.txtar")
	f.Add([]byte("IP Virtual Server version 1.2.1 (size=4096)\nProt LocalAddress:Port Scheduler Flags\n  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\nTCP  a:http rr\n  -> b:80 Masq 1 0 0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, notes, err := ParseLenient("fuzz", data)
		if err != nil {
			if !parsers.IsInputError(err) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, n := range notes {
			if n.Line < 1 || n.Line > lines {
				t.Fatalf("note %+v of a %d-line input", n, lines)
			}
		}
		if strict, err := Parse("fuzz", data); err == nil {
			if len(notes) > 0 {
				t.Fatalf("Parse reads the input, ParseLenient skips %v", notes)
			}
			d.PartialReason = "" // a listing Parse reads may still be of some services only
			if diff := cmp.Diff(roundTripView(strict), roundTripView(d), ignorePos); diff != "" {
				t.Fatalf("lenient read differs:\n%s", diff)
			}
		}
	})
}

// TestTrailingBlanksLost parses every listing golden with the trailing
// blanks of its lines removed, as a paste often loses them (ipvsadm pads
// the last column title of --thresholds and --persistent-conn): the
// model is the same.
func TestTrailingBlanksLost(t *testing.T) {
	n := 0
	for _, file := range parsetest.Files(t, "parsers/ipvs/*.txtar") {
		a, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		in := parsetest.Section(a, "input")
		want, err := Parse("in", in)
		if err != nil || want.Form != FormList {
			continue
		}
		var b strings.Builder
		for _, l := range strings.SplitAfter(string(in), "\n") {
			nl := strings.HasSuffix(l, "\n")
			b.WriteString(strings.TrimRight(l, " \n"))
			if nl {
				b.WriteByte('\n')
			}
		}
		if b.String() == string(in) {
			continue
		}
		n++
		got, err := Parse("in", []byte(b.String()))
		if err != nil {
			t.Errorf("%s without trailing blanks: %v", file, err)
			continue
		}
		if diff := cmp.Diff(want, got, ignorePos); diff != "" {
			t.Errorf("%s without trailing blanks read differently (-want +got):\n%s", file, diff)
		}
	}
	if n < 2 {
		t.Fatalf("only %d listings have trailing blanks", n)
	}
}

// TestParseLenientWords: words pasted above and below a listing (a
// greeting, thanks) are skipped as text, not a rule, and the listing is
// whole; ipvsadm's own lines (its banner, the timeout line) and lines
// with addresses or numbers are never taken for words.
func TestParseLenientWords(t *testing.T) {
	listing := "IP Virtual Server version 1.2.1 (size=4096)\nProt LocalAddress:Port Scheduler Flags\n" +
		"  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n" +
		"TCP  10.96.0.1:443 rr\n  -> 192.168.10.10:6443           Masq    1      0          0\n"
	in := "Hi, here is ipvsadm from the node:\n\n" + listing + "\nThanks, let me know!\n"
	d, notes, err := ParseLenient("t", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if d.PartialReason != "" || len(d.Services) != 1 {
		t.Errorf("partial %q, %d services", d.PartialReason, len(d.Services))
	}
	var got []string
	for _, n := range notes {
		got = append(got, fmt.Sprintf("%d %s", n.Line, n.Reason))
	}
	if want := []string{"1 " + parsers.ReasonText, "9 " + parsers.ReasonText}; strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("skipped %q, want %q", got, want)
	}
	// A sentence naming an address, and a signature with a host name,
	// are neither ipvsadm's nor taken for words: skipped as not
	// understood, the listing partial for them, not the paste refused.
	in = "Hi, the VIP 10.96.0.1:443 is down since 10:30:\n\n" + listing + "\nBob (ops, 10.0.0.7)\n"
	d, notes, err = ParseLenient("t", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, n := range notes {
		got = append(got, fmt.Sprintf("%d %s", n.Line, n.Reason))
	}
	if want := []string{"1 " + ReasonNotUnderstood, "9 " + ReasonNotUnderstood}; strings.Join(got, "; ") != strings.Join(want, "; ") || len(d.Services) != 1 || d.PartialReason != "2 lines skipped (not understood, or of a service not read)" {
		t.Errorf("skipped %q, want %q; %d services, partial %q", got, want, len(d.Services), d.PartialReason)
	}
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"Hi, here is ipvsadm from the node:", true},
		{"IP Virtual Server version 1.2.1 (size=4096)", false},
		{"Timeout (tcp tcpfin udp): 900 120 300", false},
		{"TCP  10.96.0.1:443 rr", false},
		{"  -> 192.168.10.10:6443           Masq    1      0          0", false},
		{"we have 3 nodes", false},
		{"Hi team, here is what we see on worker-7:", true},
		{"It started on node-2. Any idea?", true},
		{"the VIP 2001:db8::a stopped", false},
		{"since 10:30 this morning", false},
		{"kube-dns:53 is slow", false},
	} {
		if got := isText(tc.line); got != tc.want {
			t.Errorf("isText(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}
