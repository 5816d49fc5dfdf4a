package checktest

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoadWants(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.txtar")
	data := `A scenario with both kinds of expectations.
node: worker-1
-- node/iptables-save.txt --
*nat
# want orphan-rules "chain \"X\""
# want service-missing "cluster IP"
:KUBE-SERVICES - [0:0]
COMMIT
-- want --
# comments and blank lines are skipped

node/nft-ruleset.json $.nftables[10].map.elem[1] service-missing "no entry for .* \"quoted\""
node/nft-ruleset.txt 42 endpoint-stale "forwards to"
`
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	s := Load(t, file)
	if s.Options.Node != "worker-1" {
		t.Errorf("node %q", s.Options.Node)
	}
	want := []struct{ check, loc, re string }{
		{"orphan-rules", "node/iptables-save.txt:4", `chain "X"`},
		{"service-missing", "node/iptables-save.txt:4", "cluster IP"},
		{"service-missing", "node/nft-ruleset.json:$.nftables[10].map.elem[1]", `no entry for .* "quoted"`},
		{"endpoint-stale", "node/nft-ruleset.txt:42", "forwards to"},
	}
	if len(s.Wants) != len(want) {
		t.Fatalf("%d wants: %+v", len(s.Wants), s.Wants)
	}
	for i, w := range want {
		got := s.Wants[i]
		if got.Check != w.check || got.Location() != w.loc || got.Re.String() != w.re {
			t.Errorf("want %d: %s %s %q, want %s %s %q", i, got.Check, got.Location(), got.Re, w.check, w.loc, w.re)
		}
	}
	if _, err := os.Stat(filepath.Join(s.Dir, WantSection)); !os.IsNotExist(err) {
		t.Errorf("the want section was written to the bundle: %v", err)
	}
}
