package load

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/nft"
	"github.com/proxyscan/proxyscan/parsers/paste"
)

// TestLenientLoad loads loose files as pasted into a ticket: each is read
// through its paste damage, with what was skipped or changed noted on its
// input; the same files read strictly are errors or unknown, as before.
func TestLenientLoad(t *testing.T) {
	comments := strings.Repeat("# taken on node-1 after the restart of kube-proxy, see the ticket\n", 2*parsers.DetectSize/64)
	for _, tc := range []struct {
		name, content string
		kind          parsers.Kind
		skipped       string // ranges, "FROM-TO reason; ..."
		changed       string // the same of lines changed, when not ""
		note          string // in the input's note
		strict        string // in the error of a strict read ("" for none)
	}{
		{name: "prompt.txt", content: "[root@node-1 ~]# iptables-save\n" + miniDump + "[root@node-1 ~]# \n",
			kind: parsers.KindIPTablesSave, skipped: "1-1 shell prompt; 8-8 shell prompt", strict: "prompt.txt:1: rule outside a table"},
		{name: "numbered.txt", content: numbered(miniDump), kind: parsers.KindIPTablesSave, strict: "nothing in these inputs is kube-proxy data"},
		{name: "comments.txt", content: comments + miniDump, kind: parsers.KindIPTablesSave},
		{name: "svc.yaml", content: "$ kubectl -n shop get svc web -o yaml\n" + miniService, kind: parsers.KindKube, skipped: "1-1 shell prompt", strict: "svc.yaml"},
		{name: "notes.md", content: "# notes\n\nThe node has\n\n```\n-A KUBE-SERVICES -j KUBE-SVC-X\n```\n\nbut nothing else of kube-proxy, and\n" +
			"the service is down since\nthe upgrade.\n", kind: parsers.KindIPTablesSave, skipped: "1-1 outside code blocks; 3-3 outside code blocks; 5-5 code fence; 7-7 code fence; 9-11 outside code blocks",
			strict: "nothing in these inputs is kube-proxy data"},
		{name: "metrics.txt", content: "$ curl -s localhost:10249/metrics | grep -A3 duration_seconds\n" +
			"# TYPE kubeproxy_sync_proxy_rules_duration_seconds histogram\n" +
			"kubeproxy_sync_proxy_rules_duration_seconds_bucket{le=\"0.001\"} 0\n" +
			"kubeproxy_sync_proxy_rules_duration_seconds_bucket{le=\"0.002\"} 3\n" +
			"kubeproxy_sync_proxy_rules_duration_seconds_bucket{le=\"+Inf\"} 5\n",
			kind: parsers.KindMetrics, skipped: "1-1 shell prompt", changed: "5-5 metrics cut short", strict: "metrics.txt:1"},
		// Words around a dump (6 lines) are text: the dump is whole.
		{name: "greeting.txt", content: "Hi, here is the output you asked for:\n\n" + miniDump + "\nThanks!\n",
			kind: parsers.KindIPTablesSave, skipped: "1-1 text, not a rule; 10-10 text, not a rule", strict: "greeting.txt:1: unexpected line"},
		// The same around an nft listing.
		{name: "greeting-nft.txt", content: "Hi, here is the nft output:\n\n" + nftListing + "\nThanks!\n",
			kind: parsers.KindNFTText, skipped: fmt.Sprintf("1-1 text, not a rule; %d-%d text, not a rule", strings.Count(nftListing, "\n")+4, strings.Count(nftListing, "\n")+4),
			strict: "greeting-nft.txt:1"},
		// Notes quoting a bit of an nft listing are no listing.
		{name: "notes-nft.txt", content: "Hi team\nthis is what we see on the node\nafter the upgrade of last week\nit looks empty to us\nplease advise\n\n" +
			"table ip kube-proxy {\n\tchain services {\n\t}\n}\n",
			kind: parsers.KindUnknown, note: "read as nft-ruleset, 5 of its lines are words and 4 are the listing's", strict: "notes-nft.txt:1"},
		// Notes quoting a rule are no dump: their words are not rules.
		{name: "notes.txt", content: "Notes from the call\nThe rule that looked odd was\n-A KUBE-SERVICES -j KUBE-SVC-X\nwe will try again tomorrow\n",
			kind: parsers.KindUnknown, note: "read as an iptables dump, 3 of its lines are not one and 1 are", strict: "nothing in these inputs is kube-proxy data"},
		{name: "prose.txt", content: "*nat\nthe service is down since\nthe upgrade yesterday and\nthe rules look wrong\n",
			kind: parsers.KindUnknown, note: "read as an iptables dump, 3 of its lines are not one and 1 are", strict: "prose.txt:2: unexpected line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := writeFile(t, dir, tc.name, []byte(tc.content))
			var paths []string
			if tc.kind != parsers.KindKube {
				paths = append(paths, p)
			} else {
				paths = append(paths, p, writeFile(t, dir, "dump.txt", []byte(miniDump)))
			}
			snaps, err := Load(paths, Options{})
			if err != nil {
				if tc.kind == parsers.KindUnknown && strings.Contains(err.Error(), "nothing in these inputs") {
					return
				}
				t.Fatal(err)
			}
			var in *inputOf
			for _, x := range snaps[0].Inputs {
				if filepath.Base(x.Path) == tc.name {
					in = &inputOf{x.Kind, x.Note, x.Skipped, x.Changed}
				}
			}
			if in == nil {
				t.Fatalf("no input %s", tc.name)
			}
			if in.kind != tc.kind {
				t.Errorf("kind %q, want %q", in.kind, tc.kind)
			}
			if got := rangesText(in.skipped); got != tc.skipped {
				t.Errorf("skipped %q, want %q", got, tc.skipped)
			}
			if got := rangesText(in.changed); tc.changed != "" && got != tc.changed {
				t.Errorf("changed %q, want %q", got, tc.changed)
			}
			if !strings.Contains(in.note, tc.note) {
				t.Errorf("note %q, want %q in it", in.note, tc.note)
			}
			_, err = Load(paths, Options{Strict: true})
			switch {
			case tc.strict == "" && err != nil:
				t.Errorf("strict: %v", err)
			case tc.strict != "" && (err == nil || !strings.Contains(err.Error(), tc.strict)):
				t.Errorf("strict: error %v, want %q in it", err, tc.strict)
			}
		})
	}
}

type inputOf struct {
	kind    parsers.Kind
	note    string
	skipped []parsers.LineRange
	changed []parsers.LineRange
}

func rangesText(rs []parsers.LineRange) string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%d-%d %s", r.From, r.To, r.Reason))
	}
	return strings.Join(out, "; ")
}

// numbered prefixes every line with an editor's line number.
func numbered(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = fmt.Sprintf("%3d | %s", i+1, l)
	}
	return strings.Join(lines, "\n") + "\n"
}

// TestCleanDumpEarlyParse checks that an iptables dump read leniently is
// read as paste.Clean then iptables.ParseLenient read it one after the
// other, whether the parse of the text as it is was kept (no damage) or
// not (damage, an iptables -L listing, text that is no dump).
func TestCleanDumpEarlyParse(t *testing.T) {
	listing := "Chain KUBE-SERVICES (2 references)\ntarget     prot opt source               destination\nKUBE-SVC-X  tcp  --  0.0.0.0/0            10.96.0.10           /* ns/svc:http cluster IP */ tcp dpt:80\n"
	for _, tc := range []struct {
		name, text string
		early      bool
	}{
		{"clean", miniDump, true},
		{"prompt", "[root@node-1 ~]# iptables-save\n" + miniDump, false},
		{"carriage returns", strings.ReplaceAll(miniDump, "\n", "\r\n"), false},
		{"numbered", numbered(miniDump), false},
		{"listing", listing, false},
		{"numbered listing", numbered(listing), false},
		{"prose", "*nat\nthe service is down since\nthe upgrade\n", true},
		{"empty", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.text)
			c, early, isListing, err := cleanDump("d.txt", data, false)
			if err != nil {
				t.Fatal(err)
			}
			want := paste.Clean(data, paste.All)
			if string(c.Data) != string(want.Data) || fmt.Sprint(c.Notes) != fmt.Sprint(want.Notes) {
				t.Errorf("cleaned %q %v, want %q %v", c.Data, c.Notes, want.Data, want.Notes)
			}
			if w := parsers.IsIPTablesListing(want.Data); isListing != w {
				t.Errorf("listing %v, want %v", isListing, w)
			}
			if (early != nil) != tc.early {
				t.Fatalf("parsed early: %v, want %v", early != nil, tc.early)
			}
			if early == nil {
				return
			}
			d, notes, err := iptables.ParseLenient("d.txt", want.Data)
			if !reflect.DeepEqual(d, early.d) || !reflect.DeepEqual(notes, early.notes) || fmt.Sprint(err) != fmt.Sprint(early.err) {
				t.Errorf("early parse %+v %v %v, want %+v %v %v", early.d, early.notes, early.err, d, notes, err)
			}
		})
	}
}

// TestWordsAndListing counts the words skipped around a listing and the
// listing's own lines: a file of more words than listing is no listing.
func TestWordsAndListing(t *testing.T) {
	text := func(lines ...int) []parsers.LineNote {
		var out []parsers.LineNote
		for _, l := range lines {
			out = append(out, parsers.LineNote{Line: l, Reason: parsers.ReasonText, Skipped: true})
		}
		return out
	}
	for _, tc := range []struct {
		data           string
		notes          []parsers.LineNote
		words, listing int
	}{
		{"Hi\n\ntable ip t {\n}\nThanks\n", text(1, 5), 2, 2},
		{"notes\nmore notes\ntable ip t {\n}\nand more\n", text(1, 2, 5), 3, 2},
		{"table ip t {\n}\n", nil, 0, 0},
	} {
		if w, l := wordsAndListing([]byte(tc.data), tc.notes); w != tc.words || l != tc.listing {
			t.Errorf("%q: %d words, %d of the listing; want %d, %d", tc.data, w, l, tc.words, tc.listing)
		}
	}
}

// TestIPSetCommand: the ipset commands that print some sets by name, and
// those that print every set or none.
func TestIPSetCommand(t *testing.T) {
	for _, tc := range []struct {
		line, cmd string
		sets      []string
	}{
		{"[root@node-a ~]# ipset save KUBE-CLUSTER-IP", "ipset save KUBE-CLUSTER-IP", []string{"KUBE-CLUSTER-IP"}},
		{"admin@node-a:~$ sudo ipset list KUBE-NODE-PORT-TCP", "ipset list KUBE-NODE-PORT-TCP", []string{"KUBE-NODE-PORT-TCP"}},
		{"# /usr/sbin/ipset -L KUBE-LOOP-BACK -o save", "/usr/sbin/ipset -L KUBE-LOOP-BACK -o save", []string{"KUBE-LOOP-BACK"}},
		{"$ ipset -S KUBE-CLUSTER-IP KUBE-EXTERNAL-IP | head", "ipset -S KUBE-CLUSTER-IP KUBE-EXTERNAL-IP", []string{"KUBE-CLUSTER-IP", "KUBE-EXTERNAL-IP"}},
		{"[root@node-a ~]# ipset save", "", nil},
		{"[root@node-a ~]# ipset list -t", "", nil},
		{"[root@node-a ~]# ipset save > /tmp/ipset.txt", "", nil},
		{"[root@node-a ~]# ipset add KUBE-CLUSTER-IP 10.96.0.1,tcp:443", "", nil},
		{"[root@node-a ~]# iptables-save", "", nil},
	} {
		cmd, sets := ipsetCommand(tc.line)
		if cmd != tc.cmd || !slices.Equal(sets, tc.sets) {
			t.Errorf("ipsetCommand(%q) = %q, %q; want %q, %q", tc.line, cmd, sets, tc.cmd, tc.sets)
		}
	}
}

// TestNFTListCommand: the nft commands that list part of a table, and
// those that list whole tables.
func TestNFTListCommand(t *testing.T) {
	for _, tc := range []struct{ line, cmd, what string }{
		{"root@east-w2:~# nft list map ip kube-proxy service-ips", "nft list map ip kube-proxy service-ips", "map service-ips"},
		{"[root@node-a ~]# sudo nft -a list chain ip kube-proxy services", "nft -a list chain ip kube-proxy services", "chain services"},
		{"$ nft list set ip kube-proxy cluster-ips | head -20", "nft list set ip kube-proxy cluster-ips", "set cluster-ips"},
		{"# nft list chains", "nft list chains", "the chains"},
		{"root@east-w2:~# nft list ruleset", "", ""},
		{"root@east-w2:~# nft list table ip kube-proxy", "", ""},
		{"root@east-w2:~# nft -j list ruleset > /tmp/r.json", "", ""},
		{"root@east-w2:~# iptables-save", "", ""},
	} {
		if cmd, what := nftListCommand(tc.line); cmd != tc.cmd || what != tc.what {
			t.Errorf("nftListCommand(%q) = %q, %q; want %q, %q", tc.line, cmd, what, tc.cmd, tc.what)
		}
	}
}

// TestUndeclaredSets: a rule of a kube-proxy table that looks up a set or
// map the table does not declare (names with slashes, as kube-proxy's
// are), but not a name in a comment.
func TestUndeclaredSets(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"table ip kube-proxy {\n\tchain services {\n\t\tip daddr . meta l4proto . th dport vmap @service-ips\n\t}\n}\n", "map service-ips"},
		{"table ip kube-proxy {\n\tset affinity-X-shop/web/tcp/http {\n\t\ttype ipv4_addr\n\t}\n\tchain c {\n\t\tip saddr @affinity-X-shop/web/tcp/http goto d\n\t}\n\tchain d {\n\t}\n}\n", ""},
		{"table ip kube-proxy {\n\tchain c {\n\t\tcounter comment \"mail admin@example.com\"\n\t}\n}\n", ""},
		{"table ip kube-proxy {\n\tchain c {\n\t\tip saddr @allowed accept\n\t}\n}\n", "set allowed"},
	} {
		rs, err := nft.ParseText("t", []byte(tc.text))
		if err != nil {
			t.Fatalf("%q: %v", tc.text, err)
		}
		if got := undeclaredSets(rs.Tables[0]); got != tc.want {
			t.Errorf("undeclaredSets(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

// TestCutBeforeKind: a paste of an object cut before its kind: line (a
// ConfigMap cut in its data) is told cut short; a whole object, words,
// or one cut after its kind: line are not.
func TestCutBeforeKind(t *testing.T) {
	const head = "apiVersion: v1\ndata:\n  config.conf: |-\n    apiVersion: kubeproxy.config.k8s.io/v1alpha1\n    mode: ip"
	for _, tc := range []struct {
		data string
		want bool
	}{
		{head, true},                            // cut in the middle of a line
		{"\n" + head + "vs\n    ipvs:\n", true}, // cut on a key without a value
		{head + "vs\n", false},                  // ends with a newline, on a value: not told
		{head + "vs\nkind: ConfigMap\nmetadata:\n  name: kube-proxy\n", false},
		{"Hi, here is the config:\n" + head, false},
	} {
		if got := cutBeforeKind([]byte(tc.data)) != ""; got != tc.want {
			t.Errorf("cutBeforeKind(%q) = %q, want cut %t", tc.data, cutBeforeKind([]byte(tc.data)), tc.want)
		}
	}
}
