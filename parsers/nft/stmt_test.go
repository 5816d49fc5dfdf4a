package nft

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func u32(v uint32) *uint32 { return &v }

// stmtCases pair a rule as nft 1.0.6 lists it with its JSON statements
// (as nft -j prints them) and the model both must give.
var stmtCases = []struct {
	family string
	text   string
	json   string
	want   []Stmt
}{
	{"ip", "ip daddr 10.0.0.1 tcp dport 80 accept",
		`{"match":{"op":"==","left":{"payload":{"protocol":"ip","field":"daddr"}},"right":"10.0.0.1"}},{"match":{"op":"==","left":{"payload":{"protocol":"tcp","field":"dport"}},"right":80}},{"accept":null}`,
		[]Stmt{
			&Match{Left: &Payload{"ip", "daddr"}, Op: OpEq, Right: &Value{"10.0.0.1"}},
			&Match{Left: &Payload{"tcp", "dport"}, Op: OpEq, Right: &Value{"80"}},
			&Verdict{Kind: "accept"},
		}},
	{"ip", "ip saddr != 10.0.0.0/8 th dport 53 drop",
		`{"match":{"op":"!=","left":{"payload":{"protocol":"ip","field":"saddr"}},"right":{"prefix":{"addr":"10.0.0.0","len":8}}}},{"match":{"op":"==","left":{"payload":{"protocol":"th","field":"dport"}},"right":53}},{"drop":null}`,
		[]Stmt{
			&Match{Left: &Payload{"ip", "saddr"}, Op: OpNeq, Right: &Value{"10.0.0.0/8"}},
			&Match{Left: &Payload{"th", "dport"}, Op: OpEq, Right: &Value{"53"}},
			&Verdict{Kind: "drop"},
		}},
	{"inet", `meta l4proto tcp iifname "eth0" oifname != "veth*" iif "lo" return`,
		`{"match":{"op":"==","left":{"meta":{"key":"l4proto"}},"right":"tcp"}},{"match":{"op":"==","left":{"meta":{"key":"iifname"}},"right":"eth0"}},{"match":{"op":"!=","left":{"meta":{"key":"oifname"}},"right":"veth*"}},{"match":{"op":"==","left":{"meta":{"key":"iif"}},"right":"lo"}},{"return":null}`,
		[]Stmt{
			&Match{Left: &Meta{"l4proto"}, Op: OpEq, Right: &Value{"tcp"}},
			&Match{Left: &Meta{"iifname"}, Op: OpEq, Right: &Value{`"eth0"`}},
			&Match{Left: &Meta{"oifname"}, Op: OpNeq, Right: &Value{`"veth*"`}},
			&Match{Left: &Meta{"iif"}, Op: OpEq, Right: &Value{`"lo"`}},
			&Verdict{Kind: "return"},
		}},
	{"ip", "ct state new ct status dnat jump firewall-check",
		`{"match":{"op":"in","left":{"ct":{"key":"state"}},"right":"new"}},{"match":{"op":"in","left":{"ct":{"key":"status"}},"right":"dnat"}},{"jump":{"target":"firewall-check"}}`,
		[]Stmt{
			&Match{Left: &Ct{Key: "state"}, Op: OpIn, Right: &Value{"new"}},
			&Match{Left: &Ct{Key: "status"}, Op: OpIn, Right: &Value{"dnat"}},
			&Verdict{Kind: "jump", Target: "firewall-check"},
		}},
	{"inet", "ct state established,related accept",
		`{"match":{"op":"in","left":{"ct":{"key":"state"}},"right":["established","related"]}},{"accept":null}`,
		[]Stmt{&Match{Left: &Ct{Key: "state"}, Op: OpIn, Right: &Value{"established,related"}}, &Verdict{Kind: "accept"}}},
	{"ip", "ct state == new ct state { established, new } continue",
		`{"match":{"op":"==","left":{"ct":{"key":"state"}},"right":"new"}},{"match":{"op":"==","left":{"ct":{"key":"state"}},"right":{"set":["established","new"]}}},{"continue":null}`,
		[]Stmt{
			&Match{Left: &Ct{Key: "state"}, Op: OpEq, Right: &Value{"new"}},
			&Match{Left: &Ct{Key: "state"}, Op: OpEq, Right: &AnonSet{[]Element{NewElement([]string{"established"}, nil), NewElement([]string{"new"}, nil)}}},
			&Verdict{Kind: "continue"},
		}},
	{"ip", "fib saddr type local fib daddr . iif oif 3 goto service-x",
		`{"match":{"op":"==","left":{"fib":{"result":"type","flags":["saddr"]}},"right":"local"}},{"match":{"op":"==","left":{"fib":{"result":"oif","flags":["daddr","iif"]}},"right":3}},{"goto":{"target":"service-x"}}`,
		[]Stmt{
			&Match{Left: &Fib{Flags: []string{"saddr"}, Result: "type"}, Op: OpEq, Right: &Value{"local"}},
			&Match{Left: &Fib{Flags: []string{"daddr", "iif"}, Result: "oif"}, Op: OpEq, Right: &Value{"3"}},
			&Verdict{Kind: "goto", Target: "service-x"},
		}},
	{"ip", "meta mark & 0x00004000 != 0x00000000 meta mark set meta mark ^ 0x00004000 masquerade fully-random",
		`{"match":{"op":"!=","left":{"&":[{"meta":{"key":"mark"}},16384]},"right":0}},{"mangle":{"key":{"meta":{"key":"mark"}},"value":{"^":[{"meta":{"key":"mark"}},16384]}}},{"masquerade":{"flags":"fully-random"}}`,
		[]Stmt{
			&Match{Left: &Binop{Op: "&", Left: &Meta{"mark"}, Right: &Value{"0x00004000"}}, Op: OpNeq, Right: &Value{"0x00000000"}},
			&Mangle{Key: &Meta{"mark"}, Value: &Binop{Op: "^", Left: &Meta{"mark"}, Right: &Value{"0x00004000"}}},
			&NAT{Kind: "masquerade", Flags: []string{"fully-random"}},
		}},
	{"ip", "meta mark & 0x00004000 == 0x00000000 return",
		`{"match":{"op":"==","left":{"&":[{"meta":{"key":"mark"}},16384]},"right":0}},{"return":null}`,
		[]Stmt{&Match{Left: &Binop{Op: "&", Left: &Meta{"mark"}, Right: &Value{"0x00004000"}}, Op: OpEq, Right: &Value{"0x00000000"}}, &Verdict{Kind: "return"}}},
	{"ip", "meta mark set meta mark & 0xffff0001 | 0x00000001",
		`{"mangle":{"key":{"meta":{"key":"mark"}},"value":{"|":[{"&":[{"meta":{"key":"mark"}},4294901761]},1]}}}`,
		[]Stmt{&Mangle{Key: &Meta{"mark"}, Value: &Binop{Op: "|", Left: &Binop{Op: "&", Left: &Meta{"mark"}, Right: &Value{"0xffff0001"}}, Right: &Value{"0x00000001"}}}}},
	{"ip", "ct status dnat ip saddr . ip daddr . meta l4proto . th dport @hairpin-connections masquerade fully-random",
		`{"match":{"op":"in","left":{"ct":{"key":"status"}},"right":"dnat"}},{"match":{"op":"==","left":{"concat":[{"payload":{"protocol":"ip","field":"saddr"}},{"payload":{"protocol":"ip","field":"daddr"}},{"meta":{"key":"l4proto"}},{"payload":{"protocol":"th","field":"dport"}}]},"right":"@hairpin-connections"}},{"masquerade":{"flags":"fully-random"}}`,
		[]Stmt{
			&Match{Left: &Ct{Key: "status"}, Op: OpIn, Right: &Value{"dnat"}},
			&Match{Left: &Concat{[]Expr{&Payload{"ip", "saddr"}, &Payload{"ip", "daddr"}, &Meta{"l4proto"}, &Payload{"th", "dport"}}}, Op: OpEq, Right: &SetRef{"hairpin-connections"}},
			&NAT{Kind: "masquerade", Flags: []string{"fully-random"}},
		}},
	{"ip", "ip daddr . meta l4proto . th dport vmap @service-ips",
		`{"vmap":{"key":{"concat":[{"payload":{"protocol":"ip","field":"daddr"}},{"meta":{"key":"l4proto"}},{"payload":{"protocol":"th","field":"dport"}}]},"data":"@service-ips"}}`,
		[]Stmt{&Vmap{Key: &Concat{[]Expr{&Payload{"ip", "daddr"}, &Meta{"l4proto"}, &Payload{"th", "dport"}}}, Data: &SetRef{"service-ips"}}}},
	{"ip", "numgen random mod 2 vmap { 0 : goto endpoint-a, 1 : goto endpoint-b }",
		`{"vmap":{"key":{"numgen":{"mode":"random","mod":2,"offset":0}},"data":{"set":[[0,{"goto":{"target":"endpoint-a"}}],[1,{"goto":{"target":"endpoint-b"}}]]}}}`,
		[]Stmt{&Vmap{Key: &Numgen{Mode: "random", Mod: 2}, Data: &AnonSet{[]Element{
			elemVerdict([]string{"0"}, nil, &Verdict{Kind: "goto", Target: "endpoint-a"}),
			elemVerdict([]string{"1"}, nil, &Verdict{Kind: "goto", Target: "endpoint-b"}),
		}}}}},
	{"ip", "meta l4proto udp dnat ip to numgen random mod 2 map { 0 : 10.42.1.8 . 9898, 1 : 10.42.3.8 . 9898 }",
		`{"match":{"op":"==","left":{"meta":{"key":"l4proto"}},"right":"udp"}},{"dnat":{"family":"ip","addr":{"map":{"key":{"numgen":{"mode":"random","mod":2,"offset":0}},"data":{"set":[[0,{"concat":["10.42.1.8",9898]}],[1,{"concat":["10.42.3.8",9898]}]]}}}}}`,
		[]Stmt{
			&Match{Left: &Meta{"l4proto"}, Op: OpEq, Right: &Value{"udp"}},
			&NAT{Kind: "dnat", Family: "ip", Addr: &Map{Key: &Numgen{Mode: "random", Mod: 2}, Data: &AnonSet{[]Element{
				NewElement([]string{"0"}, []string{"10.42.1.8", "9898"}),
				NewElement([]string{"1"}, []string{"10.42.3.8", "9898"}),
			}}}},
		}},
	{"ip", "meta l4proto tcp dnat to 10.0.0.1:80",
		`{"match":{"op":"==","left":{"meta":{"key":"l4proto"}},"right":"tcp"}},{"dnat":{"addr":"10.0.0.1","port":80}}`,
		[]Stmt{&Match{Left: &Meta{"l4proto"}, Op: OpEq, Right: &Value{"tcp"}}, &NAT{Kind: "dnat", Addr: &Value{"10.0.0.1"}, Port: &Value{"80"}}}},
	{"ip6", "meta l4proto tcp dnat to [fd00::1]:80",
		`{"match":{"op":"==","left":{"meta":{"key":"l4proto"}},"right":"tcp"}},{"dnat":{"addr":"fd00::1","port":80}}`,
		[]Stmt{&Match{Left: &Meta{"l4proto"}, Op: OpEq, Right: &Value{"tcp"}}, &NAT{Kind: "dnat", Addr: &Value{"fd00::1"}, Port: &Value{"80"}}}},
	{"ip", "tcp dport 80 dnat to 10.0.0.1-10.0.0.5:80-90 persistent",
		`{"match":{"op":"==","left":{"payload":{"protocol":"tcp","field":"dport"}},"right":80}},{"dnat":{"addr":{"range":["10.0.0.1","10.0.0.5"]},"port":{"range":[80,90]},"flags":"persistent"}}`,
		[]Stmt{&Match{Left: &Payload{"tcp", "dport"}, Op: OpEq, Right: &Value{"80"}}, &NAT{Kind: "dnat", Addr: &Value{"10.0.0.1-10.0.0.5"}, Port: &Value{"80-90"}, Flags: []string{"persistent"}}}},
	{"inet", `oifname "eth0" snat ip to 1.2.3.4`,
		`{"match":{"op":"==","left":{"meta":{"key":"oifname"}},"right":"eth0"}},{"snat":{"family":"ip","addr":"1.2.3.4"}}`,
		[]Stmt{&Match{Left: &Meta{"oifname"}, Op: OpEq, Right: &Value{`"eth0"`}}, &NAT{Kind: "snat", Family: "ip", Addr: &Value{"1.2.3.4"}}}},
	{"ip", "tcp dport 81 redirect to :8081",
		`{"match":{"op":"==","left":{"payload":{"protocol":"tcp","field":"dport"}},"right":81}},{"redirect":{"port":8081}}`,
		[]Stmt{&Match{Left: &Payload{"tcp", "dport"}, Op: OpEq, Right: &Value{"81"}}, &NAT{Kind: "redirect", Port: &Value{"8081"}}}},
	{"ip", "masquerade random,persistent",
		`{"masquerade":{"flags":["random","persistent"]}}`,
		[]Stmt{&NAT{Kind: "masquerade", Flags: []string{"random", "persistent"}}}},
	{"ip", "update @affinity-x { ip saddr }",
		`{"set":{"op":"update","elem":{"payload":{"protocol":"ip","field":"saddr"}},"set":"@affinity-x"}}`,
		[]Stmt{&SetUpdate{Op: "update", Set: "affinity-x", Key: &Payload{"ip", "saddr"}}}},
	{"ip", "add @s { ip saddr . tcp dport timeout 30s }",
		`{"set":{"op":"add","elem":{"elem":{"val":{"concat":[{"payload":{"protocol":"ip","field":"saddr"}},{"payload":{"protocol":"tcp","field":"dport"}}]},"timeout":30}},"set":"@s"}}`,
		[]Stmt{&SetUpdate{Op: "add", Set: "s", Key: &Concat{[]Expr{&Payload{"ip", "saddr"}, &Payload{"tcp", "dport"}}}, Timeout: 30 * time.Second}}},
	{"ip", "ip saddr != { 198.51.100.0/24, 203.0.113.0/25 } drop",
		`{"match":{"op":"!=","left":{"payload":{"protocol":"ip","field":"saddr"}},"right":{"set":[{"prefix":{"addr":"198.51.100.0","len":24}},{"prefix":{"addr":"203.0.113.0","len":25}}]}}},{"drop":null}`,
		[]Stmt{&Match{Left: &Payload{"ip", "saddr"}, Op: OpNeq, Right: &AnonSet{[]Element{NewElement([]string{"198.51.100.0/24"}, nil), NewElement([]string{"203.0.113.0/25"}, nil)}}}, &Verdict{Kind: "drop"}}},
	{"ip", "tcp dport 1000-2000 counter packets 12 bytes 3400 reject with tcp reset",
		`{"match":{"op":"==","left":{"payload":{"protocol":"tcp","field":"dport"}},"right":{"range":[1000,2000]}}},{"counter":{"packets":12,"bytes":3400}},{"reject":{"type":"tcp reset"}}`,
		[]Stmt{&Match{Left: &Payload{"tcp", "dport"}, Op: OpEq, Right: &Value{"1000-2000"}}, &Counter{Packets: 12, Bytes: 3400}, &Reject{Type: "tcp reset"}}},
	{"ip", "reject", `{"reject":{"type":"icmp","expr":"port-unreachable"}}`, []Stmt{&Reject{}}},
	{"ip6", "reject", `{"reject":{"type":"icmpv6","expr":"port-unreachable"}}`, []Stmt{&Reject{}}},
	{"inet", "reject", `{"reject":{"type":"icmpx","expr":"port-unreachable"}}`, []Stmt{&Reject{}}},
	{"inet", "reject with icmpv6 port-unreachable", `{"reject":{"type":"icmpv6","expr":"port-unreachable"}}`, []Stmt{&Reject{Type: "icmpv6", Code: "port-unreachable"}}},
	{"inet", "reject with icmpx admin-prohibited", `{"reject":{"type":"icmpx","expr":"admin-prohibited"}}`, []Stmt{&Reject{Type: "icmpx", Code: "admin-prohibited"}}},
	{"ip", `log prefix "drop: " group 2 level info flags all`,
		`{"log":{"prefix":"drop: ","group":2,"level":"info","flags":"all"}}`,
		[]Stmt{&Log{Prefix: "drop: ", Group: u32(2), Level: "info", Flags: []string{"all"}}}},
	{"ip", "log flags tcp sequence,options flags skuid", `{"log":{"flags":["tcp sequence","tcp options","skuid"]}}`,
		[]Stmt{&Log{Flags: []string{"tcp sequence", "tcp options", "skuid"}}}},
	{"ip", "log", `{"log":null}`, []Stmt{&Log{}}},
	{"ip", "limit rate 5/second burst 10 packets accept", `{"limit":{"rate":5,"burst":10,"per":"second"}},{"accept":null}`,
		[]Stmt{&Limit{Rate: 5, Per: "second", Burst: 10}, &Verdict{Kind: "accept"}}},
	{"ip", "limit rate 4/minute", `{"limit":{"rate":4,"burst":5,"per":"minute"}}`, []Stmt{&Limit{Rate: 4, Per: "minute"}}},
	{"ip", "limit rate over 1 mbytes/second drop", `{"limit":{"rate":1,"burst":0,"per":"second","inv":true,"rate_unit":"mbytes","burst_unit":"bytes"}},{"drop":null}`,
		[]Stmt{&Limit{Over: true, Rate: 1, Unit: "mbytes", Per: "second"}, &Verdict{Kind: "drop"}}},
	{"ip", "notrack", `{"notrack":null}`, []Stmt{&Notrack{}}},
	{"ip", `counter name "c1"`, `{"counter":"c1"}`, []Stmt{&Counter{Name: "c1"}}},
	{"ip", "tcp flags syn / syn,ack accept",
		`{"match":{"op":"==","left":{"&":[{"payload":{"protocol":"tcp","field":"flags"}},["syn","ack"]]},"right":"syn"}},{"accept":null}`,
		[]Stmt{&Match{Left: &Binop{Op: "&", Left: &Payload{"tcp", "flags"}, Right: &Value{"syn,ack"}}, Op: OpEq, Right: &Value{"syn"}}, &Verdict{Kind: "accept"}}},
	{"ip", "ct original ip saddr 1.2.3.4 ct mark set meta mark",
		`{"match":{"op":"==","left":{"ct":{"key":"saddr","dir":"original"}},"right":"1.2.3.4"}},{"mangle":{"key":{"ct":{"key":"mark"}},"value":{"meta":{"key":"mark"}}}}`,
		[]Stmt{&Match{Left: &Ct{Dir: "original", Family: "ip", Key: "saddr"}, Op: OpEq, Right: &Value{"1.2.3.4"}}, &Mangle{Key: &Ct{Key: "mark"}, Value: &Meta{"mark"}}}},
	{"ip", "ip daddr . tcp dport vmap { 1.2.3.4 . 80 : accept, 5.6.7.8 . 443 : drop }",
		`{"vmap":{"key":{"concat":[{"payload":{"protocol":"ip","field":"daddr"}},{"payload":{"protocol":"tcp","field":"dport"}}]},"data":{"set":[[{"concat":["1.2.3.4",80]},{"accept":null}],[{"concat":["5.6.7.8",443]},{"drop":null}]]}}}`,
		[]Stmt{&Vmap{Key: &Concat{[]Expr{&Payload{"ip", "daddr"}, &Payload{"tcp", "dport"}}}, Data: &AnonSet{[]Element{
			elemVerdict([]string{"1.2.3.4", "80"}, nil, &Verdict{Kind: "accept"}),
			elemVerdict([]string{"5.6.7.8", "443"}, nil, &Verdict{Kind: "drop"}),
		}}}}},
	{"ip", "ip length > 100 ip ttl <= 64 accept",
		`{"match":{"op":">","left":{"payload":{"protocol":"ip","field":"length"}},"right":100}},{"match":{"op":"<=","left":{"payload":{"protocol":"ip","field":"ttl"}},"right":64}},{"accept":null}`,
		[]Stmt{&Match{Left: &Payload{"ip", "length"}, Op: OpGt, Right: &Value{"100"}}, &Match{Left: &Payload{"ip", "ttl"}, Op: OpLte, Right: &Value{"64"}}, &Verdict{Kind: "accept"}}},
}

func TestStatements(t *testing.T) {
	for i, tc := range stmtCases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			text := "table " + tc.family + " t {\n\tchain c {\n\t\t" + tc.text + "\n\t}\n}\n"
			rs, err := ParseText("rule", []byte(text))
			if err != nil {
				t.Fatal(err)
			}
			r := rs.Tables[0].Chains[0].Rules[0]
			if r.Unsupported {
				t.Errorf("text: unsupported: %v", r.Stmts[len(r.Stmts)-1])
			}
			if d := cmp.Diff(tc.want, r.Stmts, cmp.AllowUnexported(Element{})); d != "" {
				t.Errorf("text %q (-want +got):\n%s", tc.text, d)
			}
			if got := r.String(); got != tc.text {
				t.Errorf("String() = %q, want %q", got, tc.text)
			}
			js := `{"nftables":[{"table":{"family":"` + tc.family + `","name":"t","handle":1}},` +
				`{"chain":{"family":"` + tc.family + `","table":"t","name":"c","handle":1}},` +
				`{"rule":{"family":"` + tc.family + `","table":"t","chain":"c","handle":2,"expr":[` + tc.json + `]}}]}`
			jr, err := ParseJSON("rule.json", []byte(js))
			if err != nil {
				t.Fatal(err)
			}
			jrule := jr.Tables[0].Chains[0].Rules[0]
			if d := cmp.Diff(tc.want, jrule.Stmts, cmp.AllowUnexported(Element{})); d != "" {
				t.Errorf("json (-want +got):\n%s", d)
			}
			if jrule.Raw != tc.text {
				t.Errorf("json Raw = %q, want %q", jrule.Raw, tc.text)
			}
		})
	}
}

// TestUnsupportedNotGuessed checks that statements the package does not
// model are kept as text from their start, never half-read.
func TestUnsupportedNotGuessed(t *testing.T) {
	for _, tc := range []struct{ rule, unsupported string }{
		{"meta mark set jhash ip saddr mod 4 seed 0x0", "meta mark set jhash ip saddr mod 4 seed 0x0"},
		{"ip saddr 10.0.0.1 queue num 1 bypass", "queue num 1 bypass"},
		{"reject with icmp type host-unreachable", "reject with icmp type host-unreachable"},
		{"ip daddr mod 4 accept", "ip daddr mod 4 accept"},
		{"iifname eth0 accept", "iifname eth0 accept"},
		{"tcp dport ssh-alt accept", "tcp dport ssh-alt accept"},
		{"meta mark set 10.0.0.1", "meta mark set 10.0.0.1"},
		{"dnat to 10.0.0.1:http", "dnat to 10.0.0.1:http"},
		{"ip saddr { 10.0.0.1, bogus } accept", "ip saddr { 10.0.0.1, bogus } accept"},
		{"ip daddr 10.0.0.1 tcp option maxseg size set rt mtu", "tcp option maxseg size set rt mtu"},
	} {
		rs, err := ParseText("rule", []byte("table ip t {\n\tchain c {\n\t\t"+tc.rule+"\n\t}\n}\n"))
		if err != nil {
			t.Fatalf("%q: %v", tc.rule, err)
		}
		r := rs.Tables[0].Chains[0].Rules[0]
		u, ok := r.Stmts[len(r.Stmts)-1].(*Unsupported)
		if !r.Unsupported || !ok || u.Text != tc.unsupported {
			t.Errorf("%q: statements %s, want the unsupported part %q", tc.rule, string(mustJSON(t, r.Stmts)), tc.unsupported)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestStringers(t *testing.T) {
	for _, tc := range stmtCases {
		var parts []string
		for _, s := range tc.want {
			parts = append(parts, StmtString(s))
		}
		if got := strings.Join(parts, " "); got != tc.text {
			t.Errorf("StmtString: %q, want %q", got, tc.text)
		}
	}
	e := &Concat{Parts: []Expr{&Payload{"ip", "daddr"}, &Meta{"l4proto"}, &Payload{"th", "dport"}}}
	if got := ExprString(e); got != "ip daddr . meta l4proto . th dport" {
		t.Errorf("ExprString = %q", got)
	}
	// nft's parentheses: a looser operand of a tighter operator.
	b := &Binop{Op: "&", Left: &Binop{Op: "|", Left: &Meta{"mark"}, Right: &Value{"0x00000001"}}, Right: &Value{"0x000000ff"}}
	if got := ExprString(b); got != "(meta mark | 0x00000001) & 0x000000ff" {
		t.Errorf("ExprString = %q", got)
	}
}

// elemVerdict returns an element of key and data parts and verdict v.
func elemVerdict(key, data []string, v *Verdict) Element {
	e := NewElement(key, data)
	e.Verdict = v
	return e
}
