package load

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestFilteredDump checks that a dump pasted under a command line that
// piped it through a line filter is partial, whatever is left of its
// structure, and that the same dump under a plain command line is not.
func TestFilteredDump(t *testing.T) {
	for _, tc := range []struct {
		name, prompt, partial string
	}{
		{"grep.txt", "user@node-7:~$ sudo iptables-save | grep -E \"KUBE|\\*|COMMIT\"\n", "filtered by `grep -E \"KUBE|\\*|COMMIT\"`"},
		{"head.txt", "[root@node-1 ~]# iptables-save | head -500\n", "filtered by `head -500`"},
		{"plain.txt", "[root@node-1 ~]# iptables-save\n", ""},
		{"tee.txt", "$ iptables-save | tee /tmp/rules\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), tc.name, []byte(tc.prompt+miniDump))
			snaps, err := Load([]string{p}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range snaps[0].Inputs {
				if filepath.Base(in.Path) != tc.name {
					continue
				}
				if tc.partial == "" && in.Partial != "" || !strings.Contains(in.Partial, tc.partial) {
					t.Errorf("partial %q, want %q", in.Partial, tc.partial)
				}
				return
			}
			t.Fatalf("no input %s", tc.name)
		})
	}
}
