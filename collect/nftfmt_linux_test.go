//go:build linux

package collect

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/nftables"

	"github.com/proxyscan/proxyscan/internal/netnstest"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestNFTablesOverNetlink loads a kube-proxy nftables ruleset with the
// real nft into a network namespace, reads it back over netlink
// (google/nftables) and compares the rendering with `nft list ruleset`:
// every rule and base chain line must be rendered as nft prints it.
func TestNFTablesOverNetlink(t *testing.T) {
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "nft")
	ns := netnstest.New(t)
	script, err := os.ReadFile(filepath.Join(parsetest.Root(t), "testdata/collect/kube-proxy-nftables.nft"))
	if err != nil {
		t.Fatal(err)
	}
	ns.Run(script, "nft", "-f", "-")
	want := ns.Run(nil, "nft", "list", "ruleset")
	f, err := os.Open(filepath.Join("/var/run/netns", ns.Name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	conn, err := nftables.New(nftables.WithNetNSFd(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	notes, err := renderNFTables(&got, conn)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("notes: %v", notes)
	// Every rule line and chain header nft prints must be in the
	// rendering; comments of tables, chains and sets are not returned by
	// the netlink library, and set element lists may wrap differently.
	have := map[string]bool{}
	for _, l := range joinElements(got.String()) {
		have[l] = true
	}
	total, missing := 0, 0
	for _, l := range joinElements(string(want)) {
		if l == "" || l == "}" || strings.HasPrefix(l, "comment ") {
			continue
		}
		total++
		if !have[l] {
			missing++
			t.Errorf("not rendered: %s", l)
		}
	}
	t.Logf("%d of %d lines of nft list ruleset rendered identically", total-missing, total)
	if t.Failed() {
		t.Logf("rendering:\n%s\nnft:\n%s", got.String(), want)
	}
}

// joinElements returns the trimmed lines of a ruleset listing with each
// set's element list on one line (nft wraps long ones).
func joinElements(s string) []string {
	var out []string
	cont := false
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if cont {
			out[len(out)-1] += " " + l
		} else {
			out = append(out, l)
		}
		if strings.HasPrefix(l, "elements = {") || cont {
			cont = !strings.HasSuffix(l, "}")
		}
	}
	// The order of a hash set's elements is the kernel's: compare them
	// sorted.
	for i, l := range out {
		if inner, ok := strings.CutPrefix(l, "elements = { "); ok {
			els := strings.Split(strings.TrimSuffix(inner, " }"), ", ")
			sort.Strings(els)
			out[i] = "elements = { " + strings.Join(els, ", ") + " }"
		}
	}
	return out
}
