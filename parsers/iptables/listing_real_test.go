package iptables

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
	"github.com/proxyscan/proxyscan/parsers/paste"
)

// listingFormsTool is the iptables that made the listings of
// testdata/listing.
const listingFormsTool = "iptables v1.8.9 (nf_tables)"

// listingForms are the listings of testdata/listing/forms.rules kept in
// testdata/listing: each the options of iptables -L, run on each table.
var listingForms = []struct {
	name string
	args []string
}{
	{"forms-nvx", []string{"-L", "-n", "-v", "-x"}},
	{"forms-nv", []string{"-L", "-n", "-v"}}, // counters rounded: 12K, 5000M
	{"forms-v", []string{"-L", "-v"}},        // names
}

// listingFormsTables are the tables listed, in order.
var listingFormsTables = []string{"filter", "nat", "mangle", "raw"}

// TestListingFormsFixtures keeps the listings of testdata/listing equal
// to what iptables -L prints of testdata/listing/forms.rules (the matches
// and targets of kube-proxy and common CNI plugins, with counters large
// enough to be rounded) restored with their counters in a scratch
// network namespace, with the name databases of testdata/paste/forms/etc
// in place of the machine's; it also checks that iptables-save -c of the
// namespace is forms.rules. Rewritten with -update; it needs root and
// the iptables that made them.
func TestListingFormsFixtures(t *testing.T) {
	netnstest.RequireTools(t, "iptables-restore", "ipset", "unshare", "mount")
	out, err := exec.Command("iptables", "--version").Output()
	if err != nil {
		t.Skipf("iptables --version: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != listingFormsTool {
		t.Skipf("the fixtures are what %s prints, this is %s", listingFormsTool, got)
	}
	ns := netnstest.New(t)
	root := parsetest.Root(t)
	rules, err := os.ReadFile("testdata/listing/forms.rules")
	if err != nil {
		t.Fatal(err)
	}
	ns.Run(nil, "ipset", "create", "KUBE-CLUSTER-IP", "hash:ip,port")
	ns.Run(rules, "iptables-restore", "-c")
	if saved := dropComments(ns.Run(nil, "iptables-save", "-c")); tablesOrder(saved) != tablesOrder(string(rules)) {
		t.Errorf("iptables-save -c is not forms.rules:\n%s", parsetest.Diff([]byte(tablesOrder(string(rules))), []byte(tablesOrder(saved))))
	}
	etc := filepath.Join(root, "testdata", "paste", "forms", "etc")
	var binds []string
	for _, f := range []string{"hosts", "networks", "services", "nsswitch.conf"} {
		binds = append(binds, fmt.Sprintf("mount --bind %s /etc/%s", filepath.Join(etc, f), f))
	}
	for _, l := range listingForms {
		var b strings.Builder
		for _, table := range listingFormsTables {
			args := append([]string{"-t", table}, l.args...)
			script := strings.Join(binds, " && ") + " && exec iptables " + strings.Join(args, " ")
			b.WriteString("[root@node-a ~]# iptables " + strings.Join(args, " ") + "\n")
			b.Write(ns.Run(nil, "unshare", "-m", "sh", "-c", script))
		}
		parsetest.GoldenFile(t, filepath.Join("testdata", "listing", l.name+".txt"), []byte(b.String()))
	}
}

// dropComments returns a dump without its comment lines.
func dropComments(b []byte) string {
	var out []string
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

// tablesOrder returns a dump's tables in name order.
func tablesOrder(s string) string {
	tables := strings.SplitAfter(strings.TrimSuffix(s, "\n")+"\n", "COMMIT\n")
	sortStrings(tables)
	return strings.Join(tables, "")
}

// TestListingFormsRoundTrip reads the listings of testdata/listing
// (pasted after their prompts) and finds the rules of forms.rules, each
// of them: with -n -v -x their counters too, with -n -v (counters
// rounded) without counters, and without -n with the service names of
// ports read as their numbers (noted).
func TestListingFormsRoundTrip(t *testing.T) {
	rules, err := os.ReadFile("testdata/listing/forms.rules")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Parse("forms.rules", rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range listingForms {
		t.Run(l.name, func(t *testing.T) {
			listing, err := os.ReadFile(filepath.Join("testdata", "listing", l.name+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			c := paste.Clean(listing, paste.All)
			got, notes, err := ParseListing(l.name, c.Data, listing)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range notes {
				if n.Reason != ReasonServiceName || l.name != "forms-v" {
					t.Errorf("note %d: %s (%s)", n.Line, n.Reason, n.Detail)
				}
			}
			switch l.name {
			case "forms-nvx":
				if got.Partial {
					t.Errorf("partial: %s", got.PartialReason)
				}
				if a, b := countersText(want), countersText(got); a != b {
					t.Errorf("the listing is not the dump:\n%s", parsetest.Diff([]byte(a), []byte(b)))
				}
			default: // without -x, and without -n: names of well-known ports read
				if got.Partial {
					t.Errorf("partial: %s", got.PartialReason)
				}
				// The policies' counters rounded are not read.
				if a, b := noPolicyCounters(tablesText(want)), noPolicyCounters(tablesText(got)); a != b {
					t.Errorf("the listing is not the dump:\n%s", parsetest.Diff([]byte(a), []byte(b)))
				}
			}
		})
	}
}

// countersText is tablesText with the counters of rules and chains.
func countersText(d *Dump) string {
	var parts []string
	for _, l := range strings.Split(string(Format(d)), "\n") {
		if !strings.HasPrefix(l, "#") {
			parts = append(parts, l)
		}
	}
	return tablesOrder(strings.Join(parts, "\n"))
}

// rePolicyCounters is a built-in chain's line and its counters.
var rePolicyCounters = regexp.MustCompile(`(?m)^(:\S+ (?:ACCEPT|DROP)) \[\d+:\d+\]$`)

// noPolicyCounters returns a dump with its policies' counters zero.
func noPolicyCounters(s string) string { return rePolicyCounters.ReplaceAllString(s, "$1 [0:0]") }
