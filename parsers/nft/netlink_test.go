package nft

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

func TestFromTableChain(t *testing.T) {
	tbl := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: "kube-proxy", Flags: 1}
	if got, want := FromTable(tbl), (&Table{Family: nftables.TableFamilyIPv4, Name: "kube-proxy", Flags: []string{"dormant"}}); !cmp.Equal(got, want) {
		t.Errorf("FromTable = %+v", got)
	}
	accept := nftables.ChainPolicyAccept
	for _, tc := range []struct {
		fam  nftables.TableFamily
		hook *nftables.ChainHook
		prio nftables.ChainPriority
		want string
		name string
	}{
		{nftables.TableFamilyIPv4, nftables.ChainHookPrerouting, -110, "dstnat - 10", "prerouting"},
		{nftables.TableFamilyIPv4, nftables.ChainHookOutput, -110, "-110", "output"},
		{nftables.TableFamilyIPv4, nftables.ChainHookOutput, -90, "-90", "output"},
		{nftables.TableFamilyIPv4, nftables.ChainHookPostrouting, 100, "srcnat", "postrouting"},
		{nftables.TableFamilyIPv6, nftables.ChainHookInput, 0, "filter", "input"},
		{nftables.TableFamilyINet, nftables.ChainHookForward, 5, "filter + 5", "forward"},
		{nftables.TableFamilyBridge, nftables.ChainHookPrerouting, -300, "dstnat", "prerouting"},
		{nftables.TableFamilyNetdev, nftables.ChainHookIngress, -500, "-500", "ingress"},
		{nftables.TableFamilyIPv4, nftables.ChainHookPrerouting, -300, "raw", "prerouting"},
	} {
		c := FromChain(&nftables.Chain{Name: "c", Table: &nftables.Table{Family: tc.fam}, Hooknum: tc.hook,
			Priority: nftables.ChainPriorityRef(tc.prio), Type: nftables.ChainTypeFilter, Policy: &accept})
		if c.Priority.Text != tc.want || c.Hook != tc.name || *c.Policy != accept || c.Type != "filter" {
			t.Errorf("FromChain(%s %s %d) = hook %s priority %q", FamilyName(tc.fam), tc.name, tc.prio, c.Hook, c.Priority.Text)
		}
		if n, ok := HookNum(tc.fam, tc.name); !ok || n != *tc.hook {
			t.Errorf("HookNum(%s, %s) = %d, %v", FamilyName(tc.fam), tc.name, n, ok)
		}
	}
	if c := FromChain(&nftables.Chain{Name: "plain"}); c.IsBase() || c.Priority != nil {
		t.Errorf("regular chain converted as %+v", c)
	}
}

func be16(v uint16) []byte { b := make([]byte, 2); binary.BigEndian.PutUint16(b, v); return b }
func pad4(b []byte) []byte { return append(b, make([]byte, (4-len(b)%4)%4)...) }
func ip4(s string) []byte  { a := netip.MustParseAddr(s).As4(); return a[:] }
func ip6(s string) []byte  { a := netip.MustParseAddr(s).As16(); return a[:] }
func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, pad4(append([]byte(nil), p...))...)
	}
	return out
}

// setFromText parses a one-set table for comparison.
func setFromText(t *testing.T, decl string) *Set {
	t.Helper()
	rs, err := ParseText("set", []byte("table ip t {\n"+decl+"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return rs.Tables[0].Sets[0]
}

func TestFromSet(t *testing.T) {
	svc := nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeInetProto, nftables.TypeInetService)
	s, err := FromSet(&nftables.Set{Name: "service-ips", IsMap: true, KeyType: svc, DataType: nftables.TypeVerdict,
		Comment: "ClusterIP, ExternalIP and LoadBalancer IP traffic"}, []nftables.SetElement{
		{Key: cat(ip4("10.200.0.10"), []byte{17}, be16(53)), VerdictData: &expr.Verdict{Kind: expr.VerdictGoto, Chain: "service-R2D4L6QA-kube-system/dns/udp/dns"}},
		{Key: cat(ip4("10.200.77.5"), []byte{6}, be16(9000)), VerdictData: &expr.Verdict{Kind: expr.VerdictDrop}, Comment: "shop/empty:api"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// In nft's order: a concatenation is sorted as one number in host
	// byte order (on this little-endian machine, by its last byte first).
	want := setFromText(t, "\tmap service-ips {\n\t\ttype ipv4_addr . inet_proto . inet_service : verdict\n"+
		"\t\tcomment \"ClusterIP, ExternalIP and LoadBalancer IP traffic\"\n"+
		"\t\telements = { 10.200.77.5 . tcp . 9000 comment \"shop/empty:api\" : drop,\n"+
		"\t\t\t     10.200.0.10 . udp . 53 : goto service-R2D4L6QA-kube-system/dns/udp/dns }\n\t}\n")
	if d := cmp.Diff(want, s, ignorePos); d != "" {
		t.Errorf("verdict map (-text +netlink):\n%s", d)
	}

	// Interval set as the kernel holds it: start elements and exclusive
	// end elements, the first end at zero.
	s, err = FromSet(&nftables.Set{Name: "allowed", KeyType: nftables.TypeIPAddr, Interval: true}, []nftables.SetElement{
		{Key: ip4("192.168.1.21"), IntervalEnd: true},
		{Key: ip4("192.168.1.10")},
		{Key: ip4("172.16.0.2"), IntervalEnd: true},
		{Key: ip4("172.16.0.1")},
		{Key: ip4("11.0.0.0"), IntervalEnd: true},
		{Key: ip4("10.0.0.0")},
		{Key: ip4("0.0.0.0"), IntervalEnd: true},
		{Key: ip4("224.0.0.0")},
	})
	if err != nil {
		t.Fatal(err)
	}
	want = setFromText(t, "\tset allowed {\n\t\ttype ipv4_addr\n\t\tflags interval\n"+
		"\t\telements = { 10.0.0.0/8, 172.16.0.1,\n\t\t\t     192.168.1.10-192.168.1.20, 224.0.0.0/3 }\n\t}\n")
	if d := cmp.Diff(want, s, ignorePos); d != "" {
		t.Errorf("interval set (-text +netlink):\n%s", d)
	}

	mark := binaryutil.NativeEndian.PutUint32(0x4000)
	s, err = FromSet(&nftables.Set{Name: "m", IsMap: true, KeyType: nftables.TypeMark, DataType: nftables.MustConcatSetType(nftables.TypeIP6Addr, nftables.TypeInetService)},
		[]nftables.SetElement{{Key: mark, Val: cat(ip6("fd00::7"), be16(53))}})
	if err != nil {
		t.Fatal(err)
	}
	if e := s.Elements[0]; e.Key()[0] != "0x00004000" || e.Data()[0] != "fd00::7" || e.Data()[1] != "53" {
		t.Errorf("data map element = %+v", e)
	}

	s, err = FromSet(&nftables.Set{Name: "affinity", KeyType: nftables.TypeIPAddr, Dynamic: true, HasTimeout: true, Timeout: 3 * time.Hour, Size: 65535},
		[]nftables.SetElement{{Key: ip4("10.0.0.9"), Timeout: 3 * time.Hour, Expires: time.Hour, Counter: &expr.Counter{Packets: 2, Bytes: 120}}})
	if err != nil {
		t.Fatal(err)
	}
	want = setFromText(t, "\tset affinity {\n\t\ttype ipv4_addr\n\t\tsize 65535\n\t\tflags dynamic,timeout\n\t\ttimeout 3h\n"+
		"\t\telements = { 10.0.0.9 counter packets 2 bytes 120 timeout 3h expires 1h }\n\t}\n")
	if d := cmp.Diff(want, s, ignorePos); d != "" {
		t.Errorf("dynamic set (-text +netlink):\n%s", d)
	}

	// Verdicts as the library leaves them in Val: NFTA_VERDICT_CODE and
	// NFTA_VERDICT_CHAIN attributes.
	attr := func(typ uint16, payload []byte) []byte {
		b := append(binaryutil.NativeEndian.PutUint16(uint16(4+len(payload))), binaryutil.NativeEndian.PutUint16(typ)...)
		return pad4(append(b, payload...))
	}
	code := binary.BigEndian.AppendUint32(nil, uint32(0xfffffffc)) // NFT_GOTO
	val := append(attr(1, code), attr(2, []byte("service-x\x00"))...)
	s, err = FromSet(&nftables.Set{Name: "vm", IsMap: true, KeyType: nftables.TypeInetService, DataType: nftables.TypeVerdict},
		[]nftables.SetElement{{Key: be16(80), Val: val}})
	if err != nil {
		t.Fatal(err)
	}
	if v := s.Elements[0].Verdict; v == nil || v.Kind != "goto" || v.Target != "service-x" {
		t.Errorf("verdict from Val = %+v", v)
	}
	if _, err := FromSet(&nftables.Set{Name: "vm", IsMap: true, KeyType: nftables.TypeVerdict}, nil); err == nil {
		t.Errorf("map with a verdict key type accepted")
	}

	if _, err := FromSet(&nftables.Set{Name: "bad", KeyType: nftables.TypeIPAddr}, []nftables.SetElement{{Key: []byte{1}}}); err == nil {
		t.Errorf("short key accepted")
	}
}

// checkNetlink reads the ruleset of network namespace ns over netlink with
// github.com/google/nftables, converts it with FromNetlink, and compares
// it with the model of the text listing, less what the netlink reader
// does not return (comments of tables, chains and sets; typeof
// declarations) and the element expiry times. Rules that are not
// decompiled must be marked unsupported; only allowUnsupported of them
// may be.
func checkNetlink(t *testing.T, ns string, want *Ruleset, allowUnsupported int) {
	t.Helper()
	f, err := os.Open("/var/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	conn, err := nftables.New(nftables.WithNetNSFd(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	tables, err := conn.ListTables()
	if err != nil {
		t.Fatal(err)
	}
	chains, err := conn.ListChains()
	if err != nil {
		t.Fatal(err)
	}
	var nts []NetlinkTable
	for _, tb := range tables {
		nt := NetlinkTable{Table: tb}
		if nt.Objects, err = conn.GetObjects(tb); err != nil {
			t.Fatal(err)
		}
		sets, err := conn.GetSets(tb)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sets {
			els, err := conn.GetSetElements(s)
			if err != nil {
				t.Fatal(err)
			}
			if s.IsMap && s.KeyType.Name == TypeVerdictName {
				// The library's reading of verdict maps (see FromSet).
				if _, err := FromSet(s, els); err == nil {
					t.Errorf("FromSet(%s) accepted a verdict key type", s.Name)
				}
			}
			nt.Sets = append(nt.Sets, NetlinkSet{Set: s, Elements: els})
		}
		for _, c := range chains {
			if c.Table.Name == tb.Name && c.Table.Family == tb.Family {
				rules, err := conn.GetRules(tb, c)
				if err != nil {
					t.Fatal(err)
				}
				nt.Chains = append(nt.Chains, NetlinkChain{Chain: c, Rules: rules})
			}
		}
		nts = append(nts, nt)
	}
	got, notes := FromNetlink(nts, map[uint32]string{1: "lo"})
	t.Logf("notes: %q", notes)
	view := *want
	view.Tables = nil
	unsupported := 0
	for ti, wt := range want.Tables {
		vt := *wt
		vt.Comment = ""
		vt.Sets, vt.Chains = nil, nil
		for _, s := range wt.Sets {
			vs := *s
			vs.Comment, vs.Typeof, vs.DataTypeof = "", "", ""
			vs.Elements = append([]Element(nil), s.Elements...)
			for i := range vs.Elements {
				vs.Elements[i].SetExpires(0)
			}
			vt.Sets = append(vt.Sets, &vs)
		}
		for ci, c := range wt.Chains {
			vc := *c
			vc.Comment = ""
			vc.Rules = append([]*Rule(nil), c.Rules...)
			if ti < len(got.Tables) && ci < len(got.Tables[ti].Chains) {
				for ri, r := range got.Tables[ti].Chains[ci].Rules {
					if r.Unsupported && ri < len(vc.Rules) {
						vc.Rules[ri] = r
						unsupported++
					}
				}
			}
			vt.Chains = append(vt.Chains, &vc)
		}
		view.Tables = append(view.Tables, &vt)
	}
	for _, tb := range got.Tables {
		for _, s := range tb.Sets {
			for i := range s.Elements {
				s.Elements[i].SetExpires(0)
			}
		}
	}
	if unsupported > allowUnsupported {
		t.Errorf("%d rules not decompiled, want at most %d", unsupported, allowUnsupported)
	}
	if d := cmp.Diff(&view, got, ignorePosHandle, ignoreRaw, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("netlink model (-text +netlink):\n%s", d)
	}
	if g, w := Format(got), Format(&view); !bytes.Equal(g, w) {
		t.Errorf("Format(netlink model) differs from the text listing:\n%s", parsetest.Diff(w, g))
	}
}

// TestFromNetlink converts a table as github.com/google/nftables reads it,
// with what the reader loses: the key types of verdict maps are learned
// from the lookups that use them (or guessed from the key length), and a
// rule with an expression the decompiler does not know keeps, from the
// statement it failed on, the names of its expressions. The live
// comparisons with nft run in TestCapture and collect's tests (root).
func TestFromNetlink(t *testing.T) {
	tbl := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: "t"}
	goTo := func(c string) *expr.Verdict { return &expr.Verdict{Kind: expr.VerdictGoto, Chain: c} }
	vmap := func(name string, anon bool) *nftables.Set {
		// The library reads a verdict map's data type into KeyType.
		return &nftables.Set{Table: tbl, Name: name, IsMap: true, Anonymous: anon, Constant: anon, KeyType: nftables.TypeVerdict}
	}
	host := func(v uint32) []byte { return binaryutil.NativeEndian.PutUint32(v) }
	nt := NetlinkTable{Table: tbl,
		Sets: []NetlinkSet{
			{Set: vmap("service-ips", false), Elements: []nftables.SetElement{
				{Key: cat(ip4("10.0.0.2"), []byte{6}, be16(80)), VerdictData: goTo("svc-b")},
				{Key: cat(ip4("10.0.0.1"), []byte{6}, be16(443)), VerdictData: goTo("svc-a")},
			}},
			{Set: vmap("unused", false), Elements: []nftables.SetElement{{Key: cat([]byte{17}, be16(53)), VerdictData: &expr.Verdict{Kind: expr.VerdictDrop}}}},
			{Set: vmap("__map0", true), Elements: []nftables.SetElement{
				{Key: host(1), VerdictData: goTo("ep-b")},
				{Key: host(0), VerdictData: goTo("ep-a")},
			}},
		},
		Chains: []NetlinkChain{{Chain: &nftables.Chain{Name: "services", Table: tbl}, Rules: []*nftables.Rule{
			{Exprs: []expr.Any{
				&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
				&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 9},
				&expr.Payload{DestRegister: 10, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
				&expr.Lookup{SourceRegister: 1, SetName: "service-ips", IsDestRegSet: true},
			}},
			{Exprs: []expr.Any{
				&expr.Numgen{Register: 1, Modulus: 2, Type: 1},
				&expr.Lookup{SourceRegister: 1, SetName: "__map0", IsDestRegSet: true},
			}},
			{Exprs: []expr.Any{
				&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{6}},
				&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
				&expr.Match{Name: "foo"},
				&expr.Counter{},
			}},
		}}},
	}
	rs, notes := FromNetlink([]NetlinkTable{nt}, nil)
	want := "table ip t {\n" +
		"\tmap service-ips {\n\t\ttype ipv4_addr . inet_proto . inet_service : verdict\n" +
		"\t\telements = { 10.0.0.2 . tcp . 80 : goto svc-b,\n\t\t\t     10.0.0.1 . tcp . 443 : goto svc-a }\n\t}\n\n" +
		"\tmap unused {\n\t\ttype inet_proto . inet_service : verdict\n\t\telements = { udp . 53 : drop }\n\t}\n\n" +
		"\tchain services {\n" +
		"\t\tip daddr . meta l4proto . th dport vmap @service-ips\n" +
		"\t\tnumgen random mod 2 vmap { 0 : goto ep-a, 1 : goto ep-b }\n" +
		"\t\tunsupported netlink expressions: meta cmp payload match:foo counter\n" +
		"\t}\n}\n"
	if got := Format(rs); string(got) != want {
		t.Errorf("Format(FromNetlink) differs:\n%s", parsetest.Diff([]byte(want), got))
	}
	if r := rs.Tables[0].Chains[0].Rules[2]; !r.Unsupported {
		t.Errorf("rule not marked unsupported: %+v", r)
	}
	for _, n := range []string{"1 rules hold netlink expressions that are not decompiled", "the key types of 1 verdict maps"} {
		if !strings.Contains(strings.Join(notes, "\n"), n) {
			t.Errorf("notes %q lack %q", notes, n)
		}
	}
	// What the text parser reads back is the same model.
	back, err := ParseText("netlink", []byte(want))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(back, rs, ignorePos, ignoreRaw, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("ParseText(Format(x)) != x (-text +netlink):\n%s", d)
	}
}
