package nft

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/nftables"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// ignorePosHandle ignores what differs between the text and JSON forms of
// the same ruleset by construction: positions and handles.
var ignorePosHandle = cmp.Options{
	cmpopts.IgnoreFields(Ruleset{}, "ItemLines"),
	cmpopts.IgnoreFields(Table{}, "Pos", "Handle"),
	cmpopts.IgnoreFields(Chain{}, "Where", "Line", "Handle"),
	cmpopts.IgnoreFields(Set{}, "Pos", "Handle"),
	cmpopts.IgnoreFields(Element{}, "Where", "Line"),
	cmp.AllowUnexported(Element{}),
	cmp.AllowUnexported(Element{}),
	cmpopts.IgnoreFields(Rule{}, "Where", "Line", "Handle"),
	cmpopts.IgnoreFields(Object{}, "Pos", "Handle"),
}

// ignorePos ignores positions only.
var ignorePos = cmp.Options{
	cmpopts.IgnoreFields(Ruleset{}, "ItemLines"),
	cmpopts.IgnoreFields(Table{}, "Pos"),
	cmpopts.IgnoreFields(Chain{}, "Where", "Line"),
	cmpopts.IgnoreFields(Set{}, "Pos"),
	cmpopts.IgnoreFields(Element{}, "Where", "Line"),
	cmp.AllowUnexported(Element{}),
	cmp.AllowUnexported(Element{}),
	cmpopts.IgnoreFields(Rule{}, "Where", "Line"),
	cmpopts.IgnoreFields(Object{}, "Pos"),
}

// ignoreRaw also ignores the raw rule text, which keeps non-canonical
// spellings of hand-written or fuzzed input.
var ignoreRaw = cmpopts.IgnoreFields(Rule{}, "Raw")

// jsonView removes from a model what nft 1.0.6's JSON output does not
// carry (see the package documentation) and the element expiry times,
// which count down between two listings.
func jsonView(rs *Ruleset) {
	for _, t := range rs.Tables {
		t.Comment = ""
		for _, c := range t.Chains {
			c.Comment = ""
			c.Devices = nil
		}
		for _, s := range t.Sets {
			var fl []string
			for _, f := range s.Flags {
				if f != "dynamic" {
					fl = append(fl, f)
				}
			}
			s.Flags = fl
			s.AutoMerge, s.DataInterval = false, false
			s.Typeof, s.DataTypeof = "", ""
			for i := range s.Elements {
				s.Elements[i].SetExpires(0)
			}
		}
	}
}

// checkSameRuleset checks that the models of the text and JSON listings of
// one ruleset are equal, and that the JSON model prints as the text.
func checkSameRuleset(t *testing.T, text, js []byte) *Ruleset {
	t.Helper()
	tm, err := ParseText("input.txt", text)
	if err != nil {
		t.Fatalf("text: %v", err)
	}
	if got := Format(tm); !bytes.Equal(got, text) {
		t.Errorf("Format(ParseText(input.txt)) differs from input.txt:\n%s", parsetest.Diff(text, got))
	}
	jm, err := ParseJSON("input.json", js)
	if err != nil {
		t.Fatalf("json: %v", err)
	}
	for _, tb := range jm.Tables {
		for _, c := range tb.Chains {
			for _, r := range c.Rules {
				if r.Unsupported {
					t.Errorf("%s: unsupported statement in %q", r.Pos(), r.Raw)
				}
			}
		}
	}
	view, err := ParseText("input.txt", text)
	if err != nil {
		t.Fatal(err)
	}
	jsonView(view)
	jsonView(jm)
	if d := cmp.Diff(view, jm, ignorePosHandle); d != "" {
		t.Errorf("text and JSON models differ (-text +json):\n%s", d)
	}
	if got, want := Format(jm), Format(view); !bytes.Equal(got, want) {
		t.Errorf("Format(json model) differs from the text form:\n%s", parsetest.Diff(want, got))
	}
	return tm
}

func TestGolden(t *testing.T) {
	parsetest.Golden(t, "parsers/nft/*.txtar", func(t *testing.T, name string, a *txtar.Archive) map[string][]byte {
		text := parsetest.Section(a, "input.txt")
		js := parsetest.Section(a, "input.json")
		if strings.HasPrefix(name, "error-") {
			in, file, parse := text, "input.txt", ParseText
			if js != nil {
				in, file, parse = js, "input.json", ParseJSON
			}
			rs, err := parse(file, in)
			if err == nil {
				t.Fatalf("no error; parsed %d tables", len(rs.Tables))
			}
			if rs != nil {
				t.Errorf("a result came with the error")
			}
			if !parsers.IsInputError(err) {
				t.Errorf("error %v is not an input error", err)
			}
			return map[string][]byte{"error": []byte(err.Error() + "\n")}
		}
		var rs *Ruleset
		switch {
		case text != nil && js != nil:
			rs = checkSameRuleset(t, text, js)
		case text != nil:
			var err error
			if rs, err = ParseText("input.txt", text); err != nil {
				t.Fatal(err)
			}
			if got := Format(rs); !bytes.Equal(got, text) && !strings.HasSuffix(name, "-noncanonical") {
				t.Errorf("Format differs from input.txt:\n%s", parsetest.Diff(text, got))
			}
		case js != nil:
			var err error
			if rs, err = ParseJSON("input.json", js); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatal("no input section")
		}
		if !jsonOnly(rs) {
			checkRoundTrip(t, rs)
		}
		if h := parsetest.Section(a, "input-handles.txt"); h != nil {
			hm, err := ParseText("input-handles.txt", h)
			if err != nil {
				t.Fatal(err)
			}
			if got := FormatWith(hm, FormatOptions{Handles: true}); !bytes.Equal(got, h) {
				t.Errorf("FormatWith(handles) differs from input-handles.txt:\n%s", parsetest.Diff(h, got))
			}
			if d := cmp.Diff(rs, hm, ignorePosHandle, cmpopts.IgnoreFields(ElementAttrs{}, "Expires")); d != "" && text != nil {
				t.Errorf("listing with handles differs (-plain +handles):\n%s", d)
			}
		}
		return map[string][]byte{"want.json": parsetest.JSON(t, rs)}
	})
}

// jsonOnly reports whether rs holds parts known only as JSON, which
// Format cannot print as nft text.
func jsonOnly(rs *Ruleset) bool {
	for _, t := range rs.Tables {
		for _, o := range t.Objects {
			if o.Body == nil && o.JSON != "" {
				return true
			}
		}
		for _, c := range t.Chains {
			for _, r := range c.Rules {
				for _, s := range r.Stmts {
					if u, ok := s.(*Unsupported); ok && u.Text == "" {
						return true
					}
				}
			}
		}
	}
	return false
}

// checkRoundTrip checks Parse(Format(x)) == x and that Format is stable.
func checkRoundTrip(t *testing.T, rs *Ruleset) {
	t.Helper()
	out := Format(rs)
	again, err := ParseText("formatted", out)
	if err != nil {
		t.Fatalf("reparse of Format output: %v\n%s", err, out)
	}
	if d := cmp.Diff(rs, again, ignorePos, ignoreRaw); d != "" {
		t.Errorf("Parse(Format(x)) != x (-x +reparsed):\n%s", d)
	}
	if out2 := Format(again); !bytes.Equal(out, out2) {
		t.Errorf("Format is not stable:\n%s", parsetest.Diff(out, out2))
	}
}

// TestCapture loads the transaction scripts next to the goldens into a
// fresh network namespace with the real nft, lists the ruleset as text and
// JSON and checks that both give the same model. With -update (or
// PROXYSCAN_NFT_CAPTURE=1) it rewrites the input sections of the goldens.
func TestCapture(t *testing.T) {
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "nft", "ip")
	update := *parsetest.Update || os.Getenv("PROXYSCAN_NFT_CAPTURE") == "1"
	scripts, err := filepath.Glob(filepath.Join(parsetest.Root(t), "testdata/parsers/nft/*.nft"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no transaction scripts: %v", err)
	}
	for _, script := range scripts {
		name := strings.TrimSuffix(filepath.Base(script), ".nft")
		t.Run(name, func(t *testing.T) {
			ns := "proxyscan-nft-" + name
			if len(ns) > 30 {
				ns = ns[:30]
			}
			run := func(args ...string) []byte {
				t.Helper()
				var stderr bytes.Buffer
				cmd := exec.Command(args[0], args[1:]...)
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, stderr.Bytes())
				}
				return out
			}
			_ = exec.Command("ip", "netns", "del", ns).Run()
			run("ip", "netns", "add", ns)
			t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
			run("ip", "netns", "exec", ns, "nft", "-f", script)
			text := run("ip", "netns", "exec", ns, "nft", "list", "ruleset")
			js := run("ip", "netns", "exec", ns, "nft", "-j", "list", "ruleset")
			handles := run("ip", "netns", "exec", ns, "nft", "-a", "list", "ruleset")
			version := strings.TrimSpace(string(run("nft", "--version")))
			// github.com/google/nftables does not read the source
			// register of `ct mark set meta mark` (host-firewall).
			checkNetlink(t, ns, checkSameRuleset(t, text, js), 1)
			hm, err := ParseText("handles", handles)
			if err != nil {
				t.Fatal(err)
			}
			if got := FormatWith(hm, FormatOptions{Handles: true}); !bytes.Equal(got, handles) {
				t.Errorf("FormatWith(handles) differs from nft -a output:\n%s", parsetest.Diff(handles, got))
			}
			if !update {
				return
			}
			golden := strings.TrimSuffix(script, ".nft") + ".txtar"
			a := &txtar.Archive{Comment: []byte("Captured with " + version + " in a scratch network namespace:\n" +
				"  ip netns exec NS nft -f " + filepath.Base(script) + "\n" +
				"  ip netns exec NS nft list ruleset     > input.txt\n" +
				"  ip netns exec NS nft -j list ruleset  > input.json\n" +
				"  ip netns exec NS nft -a list ruleset  > input-handles.txt\n" +
				"Regenerate (as root): go test ./parsers/nft -run TestCapture -update\n")}
			if old, err := txtar.ParseFile(golden); err == nil {
				for _, f := range old.Files {
					if !strings.HasPrefix(f.Name, "input") {
						a.Files = append(a.Files, f)
					}
				}
			}
			a.Files = append([]txtar.File{{Name: "input.txt", Data: text}, {Name: "input.json", Data: js}, {Name: "input-handles.txt", Data: handles}}, a.Files...)
			if err := os.WriteFile(golden, txtar.Format(a), 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestAccessors(t *testing.T) {
	rs, err := Parse("x", []byte("table ip kube-proxy {\n\tset s {\n\t\ttype ipv4_addr\n\t}\n\n\tchain c {\n\t\taccept\n\t}\n}\ntable ip6 kube-proxy {\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tb := rs.Table(nftables.TableFamilyIPv6, "kube-proxy")
	if tb == nil || tb.Family != nftables.TableFamilyIPv6 {
		t.Fatalf("Table(ip6, kube-proxy) = %v", tb)
	}
	if rs.Table(nftables.TableFamilyIPv4, "nat") != nil {
		t.Errorf("Table(ip, nat) found a table")
	}
	t4 := rs.Table(nftables.TableFamilyIPv4, "kube-proxy")
	if t4.Chain("c") == nil || t4.Chain("s") != nil || t4.Set("s") == nil || t4.Set("c") != nil {
		t.Errorf("Chain/Set lookups wrong")
	}
	if v := t4.Chain("c").Rules[0].Verdict(); v == nil || v.Kind != "accept" {
		t.Errorf("Verdict() = %v", v)
	}
	if c := t4.Chain("c").Rules[0].Counter(); c != nil {
		t.Errorf("Counter() = %v, want nil", c)
	}
}

func TestParseDispatch(t *testing.T) {
	_, err := Parse("x.json", []byte(` {"nftables": [{"metainfo": {"json_schema_version": 2}}]}`))
	var pe *parsers.Error
	if !errors.As(err, &pe) || pe.Pos.Path != "$.nftables[0].metainfo.json_schema_version" {
		t.Fatalf("Parse of JSON: %v", err)
	}
	rs, err := Parse("empty", nil)
	if err != nil || len(rs.Tables) != 0 {
		t.Fatalf("Parse(empty) = %v, %v", rs, err)
	}
}

func TestDetect(t *testing.T) {
	for _, f := range parsetest.Files(t, "parsers/nft/*.txtar") {
		a, err := txtar.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(f, "error-") {
			continue
		}
		if in := parsetest.Section(a, "input.txt"); in != nil {
			if k := parsers.Detect(in); k != parsers.KindNFTText {
				t.Errorf("%s: Detect(input.txt) = %s", filepath.Base(f), k)
			}
		}
		if in := parsetest.Section(a, "input.json"); in != nil {
			if k := parsers.Detect(in); k != parsers.KindNFTJSON {
				t.Errorf("%s: Detect(input.json) = %s", filepath.Base(f), k)
			}
		}
	}
}

// TestElementsPacked checks that the elements of named sets and maps and of
// anonymous maps are held in slices made to their length, keys and data
// included, and that an element's parts are its own: appending to one
// element's key leaves the next one alone.
func TestElementsPacked(t *testing.T) {
	const text = `table ip t {
	set s {
		type ipv4_addr
		elements = { 10.0.0.1, 10.0.0.2, 10.0.0.3 }
	}
	map m {
		type ipv4_addr . inet_proto . inet_service : verdict
		elements = { 10.96.0.1 . tcp . 80 : goto a,
			     10.96.0.2 . udp . 53 : goto b,
			     10.96.0.3 . tcp . 443 : goto a }
	}
	chain a {
	}
	chain b {
		meta l4proto tcp dnat ip to numgen random mod 3 map { 0 : 10.0.0.1 . 8080, 1 : 10.0.0.2 . 8080, 2 : 10.0.0.3 . 8080 }
	}
}
`
	rs, err := ParseText("rules.nft", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	tbl := rs.Tables[0]
	var lists [][]Element
	for _, s := range tbl.Sets {
		lists = append(lists, s.Elements)
	}
	for _, c := range tbl.Chains {
		for _, r := range c.Rules {
			for _, st := range r.Stmts {
				if n, ok := st.(*NAT); ok {
					if m, ok := n.Addr.(*Map); ok {
						lists = append(lists, m.Data.(*AnonSet).Elements)
					}
				}
			}
		}
	}
	if len(lists) != 3 {
		t.Fatalf("%d element lists, want 3", len(lists))
	}
	for _, els := range lists {
		if len(els) != 3 || cap(els) != len(els) {
			t.Errorf("elements of length %d and capacity %d, want 3 and 3", len(els), cap(els))
		}
		for i, e := range els {
			if e.NumParts() != len(e.Key())+len(e.Data()) || e.NumKey() != len(e.Key()) {
				t.Errorf("element %v: %d parts and %d of key, for a key of %d and data of %d", e.Key(), e.NumParts(), e.NumKey(), len(e.Key()), len(e.Data()))
			}
			if i+1 < len(els) {
				next := els[i+1].Key()[0]
				_ = append(e.Key(), "x")
				_ = append(e.Data(), "x")
				if els[i+1].Key()[0] != next {
					t.Errorf("appending to element %d's key changed the next one's: %v", i, els[i+1].Key())
				}
			}
		}
	}
	if got := lists[1][1]; got.Key()[2] != "53" || got.Verdict == nil || got.Verdict.Target != "b" || got.Line != 9 || got.Data() != nil {
		t.Errorf("second element of m: %+v", got)
	}
	if got := lists[2][2]; len(got.Data()) != 2 || got.Data()[0] != "10.0.0.3" || got.Data()[1] != "8080" || got.Key()[0] != "2" {
		t.Errorf("third element of the numgen map: %+v", got)
	}
}

// TestElementSize guards the room an element takes: the sets and maps of
// a 10,000-Service node hold about 100,000, kept for the whole analysis.
func TestElementSize(t *testing.T) {
	if n := unsafe.Sizeof(Element{}); n > 48 {
		t.Errorf("an Element takes %d bytes, want at most 48", n)
	}
	rs, err := ParseText("x", []byte("table ip t {\n\tmap m {\n\t\ttype ipv4_addr : verdict\n\t\telements = { 10.0.0.1 : drop, 10.0.0.2 timeout 1s : accept,\n\t\t\t     10.0.0.3 comment \"c\" : drop }\n\t}\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	els := rs.Tables[0].Set("m").Elements
	if len(els) != 3 || els[0].Attrs != nil || els[1].Timeout() != time.Second || els[0].Pos().Line != 4 || els[0].Pos().File != "x" {
		t.Errorf("elements %+v", els)
	}
	if len(els) == 3 && (els[2].Comment() != "c" || els[1].Comment() != "" || els[2].Timeout() != 0 || els[2].Pos().Line != 5) {
		t.Errorf("third element: comment %q, timeout %v, line %d", els[2].Comment(), els[2].Timeout(), els[2].Pos().Line)
	}
	if got := string(appendElement(nil, &els[2])); got != `10.0.0.3 comment "c" : drop` {
		t.Errorf("third element prints as %q", got)
	}
}

// TestElementParts checks that an element's key and data are its parts
// split after its key's, that appending to either leaves the other as it
// is, and that parts holding the separators nft prints between them
// (which a split of the joined text would cut) read back as they were.
func TestElementParts(t *testing.T) {
	set := NewElement([]string{"10.0.0.1", "tcp", "80"}, nil)
	if k, d := set.Key(), set.Data(); len(k) != 3 || k[2] != "80" || d != nil || set.HasData() {
		t.Errorf("set element: key %q, data %q", k, d)
	}
	m := NewElement([]string{"0"}, []string{"10.0.0.1", "8080"})
	k, d := m.Key(), m.Data()
	if len(k) != 1 || k[0] != "0" || len(d) != 2 || d[0] != "10.0.0.1" || d[1] != "8080" || m.NumKey() != 1 || m.NumParts() != 3 || !m.HasData() {
		t.Fatalf("map element: key %q, data %q", k, d)
	}
	if m.Part(0) != "0" || m.Part(2) != "8080" || m.Part(3) != "" || m.Part(-1) != "" {
		t.Errorf("map element's parts: %q %q %q", m.Part(0), m.Part(2), m.Part(3))
	}
	_ = append(k, "x")
	if d := m.Data(); d[0] != "10.0.0.1" {
		t.Errorf("appending to the key changed the data: %q", d)
	}
	_ = append(d, "y")
	if m.NumParts() != 3 || m.Data()[1] != "8080" {
		t.Errorf("appending to the data changed the parts: %q", m.Data())
	}
	var buf [4]string
	if got := m.AppendData(m.AppendKey(buf[:0])); !slices.Equal(got, []string{"0", "10.0.0.1", "8080"}) {
		t.Errorf("appended parts %q", got)
	}
	for _, tc := range []struct{ key, data []string }{
		{[]string{`"a . b"`, "c"}, []string{"x : y"}},
		{[]string{"a .", "b"}, nil},
		{[]string{"a", ". b"}, []string{"c"}},
		{[]string{"a :"}, []string{" c", ""}},
		{[]string{"", ""}, []string{""}},
		{[]string{"a"}, []string{"b : c", "d . e"}},
		{nil, []string{"d"}},
		{nil, nil},
	} {
		e := NewElement(tc.key, tc.data)
		if k, d := e.Key(), e.Data(); !slices.Equal(k, tc.key) || !slices.Equal(d, tc.data) || e.NumParts() != len(tc.key)+len(tc.data) {
			t.Errorf("element of %q and %q reads back as %q and %q (%d parts)", tc.key, tc.data, k, d, e.NumParts())
		}
	}
}

// TestElementText checks that the elements of a text listing keep their
// text in it rather than copies, when it is their parts as nft prints
// them, and copy it otherwise.
func TestElementText(t *testing.T) {
	text := "table ip t {\n\tset s {\n\t\ttype ipv4_addr . inet_proto . inet_service\n\t\telements = { 10.0.0.1 . tcp . 80, 10.0.0.2 .  tcp . 81 }\n\t}\n" +
		"\tchain c {\n\t\tdnat ip to numgen random mod 2 map { 0 : 10.1.0.1 . 8080, 1 : 10.1.0.2 . 8080 }\n\t}\n}\n"
	data := []byte(text)
	rs, err := ParseText("x", data)
	if err != nil {
		t.Fatal(err)
	}
	in := func(s string) bool { // s is in the listing, not a copy
		base := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
		at := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		return at >= base && at < base+uintptr(len(data))
	}
	tb := rs.Tables[0]
	els := tb.Set("s").Elements
	if len(els) != 2 || !in(els[0].Part(0)) || !in(els[0].Part(2)) || in(els[1].Part(0)) || els[1].Part(1) != "tcp" {
		t.Errorf("set elements: %+v", els)
	}
	m := tb.Chains[0].Rules[0].Stmts[0].(*NAT).Addr.(*Map).Data.(*AnonSet).Elements
	for _, e := range m {
		if !in(e.Part(0)) || !in(e.Part(2)) || e.Part(2) != "8080" {
			t.Errorf("map element %q not in the listing", e.Key())
		}
	}
}

// TestSharedStatements checks that rules that repeat a short statement
// share it, in one family only, and that each rule still reads as it is
// written.
func TestSharedStatements(t *testing.T) {
	text := "table ip a {\n\tchain x {\n\t\tmeta l4proto tcp goto y\n\t\tmeta l4proto tcp  goto z\n\t\tmeta l4proto udp goto y\n\t}\n\tchain y {\n\t}\n\tchain z {\n\t}\n" +
		"\tchain w {\n\t\ttcp dport { 80, 443 } counter packets 1 bytes 60 accept\n\t\ttcp dport { 80, 443 } counter packets 1 bytes 60 accept\n\t\ttcp dport { 80, 8443 } counter packets 2 bytes 60 accept\n\t}\n}\n" +
		"table ip6 b {\n\tchain x {\n\t\tmeta l4proto tcp goto y\n\t}\n\tchain y {\n\t}\n}\n"
	rs, err := ParseText("x", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	a, b := rs.Tables[0].Chain("x").Rules, rs.Tables[1].Chain("x").Rules
	if len(a) != 3 || len(b) != 1 {
		t.Fatalf("rules %d and %d, want 3 and 1", len(a), len(b))
	}
	if a[0].Stmts[0] != a[1].Stmts[0] {
		t.Errorf("the two `meta l4proto tcp` of table a are not shared")
	}
	if a[0].Stmts[0] == a[2].Stmts[0] || a[0].Stmts[1] == a[1].Stmts[1] {
		t.Errorf("different statements shared")
	}
	if a[0].Stmts[1] != a[2].Stmts[1] {
		t.Errorf("the two `goto y` of table a are not shared")
	}
	if a[0].Stmts[0] == b[0].Stmts[0] {
		t.Errorf("a statement of an ip table is shared with an ip6 table")
	}
	// Statements compared on their printed forms: a match of an
	// anonymous set, a counter.
	w := rs.Tables[0].Chain("w").Rules
	if len(w) != 3 || w[0].Stmts[0] != w[1].Stmts[0] || w[0].Stmts[1] != w[1].Stmts[1] || w[0].Stmts[0] == w[2].Stmts[0] || w[0].Stmts[1] == w[2].Stmts[1] {
		t.Errorf("the rules of chain w do not share their alike statements alone")
	}
	if len(w) == 3 && w[2].String() != "tcp dport { 80, 8443 } counter packets 2 bytes 60 accept" {
		t.Errorf("third rule of w prints as %q", w[2].String())
	}
	for i, want := range []string{"meta l4proto tcp goto y", "meta l4proto tcp goto z", "meta l4proto udp goto y"} {
		if got := a[i].String(); got != want {
			t.Errorf("rule %d prints as %q, want %q", i, got, want)
		}
	}
}

// TestChainRuleSize guards the room a chain and a rule take (a
// 10,000-Service node has 12,500 chains and 17,500 rules), and that the
// chains and rules of a text ruleset share their file.
func TestChainRuleSize(t *testing.T) {
	if n := unsafe.Sizeof(Chain{}); n > 176 {
		t.Errorf("a Chain takes %d bytes, want at most 176", n)
	}
	if n := unsafe.Sizeof(Rule{}); n > 80 {
		t.Errorf("a Rule takes %d bytes, want at most 80", n)
	}
	rs, err := ParseText("x", []byte("table ip t {\n\tchain a {\n\t\tcounter\n\t\taccept\n\t}\n\tchain b {\n\t\tdrop\n\t}\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := rs.Tables[0].Chains[0], rs.Tables[0].Chains[1]
	want := []parsers.Pos{{File: "x", Line: 2}, {File: "x", Line: 3}, {File: "x", Line: 4}, {File: "x", Line: 6}, {File: "x", Line: 7}}
	got := []parsers.Pos{a.Pos(), a.Rules[0].Pos(), a.Rules[1].Pos(), b.Pos(), b.Rules[0].Pos()}
	if !slices.Equal(got, want) {
		t.Errorf("positions %v, want %v", got, want)
	}
	if a.Where != b.Rules[0].Where || a.Rules[0].Where != a.Rules[1].Where {
		t.Errorf("the chains and rules do not share their file")
	}
	var r Rule
	r.SetPos(parsers.Pos{File: "f", Path: "$.nftables[3]"})
	if p := r.Pos(); p != (parsers.Pos{File: "f", Path: "$.nftables[3]"}) {
		t.Errorf("JSON position %v", p)
	}
	if r.SetPos(parsers.Pos{}); r.Where != nil || r.Pos() != (parsers.Pos{}) {
		t.Errorf("zero position kept as %v", r.Where)
	}
}
