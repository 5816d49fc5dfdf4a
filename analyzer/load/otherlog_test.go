package load

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestOtherProgramsLogs: a log pasted from the journal of another program
// than kube-proxy (the kubelet's: the journalctl command names its unit,
// or every line is tagged with it) is not read as kube-proxy's log: it is
// an input of unknown kind with a note saying why, which leaves the
// verdict alone (no coverage gap); kube-proxy's own journal, and that of
// a program that runs kube-proxy inside it (k3s), are read as its log.
func TestOtherProgramsLogs(t *testing.T) {
	root := parsetest.Root(t)
	dump := filepath.Join(root, "testdata", "bundles", "iptables-mini", "node", "iptables-save.txt")
	for _, tc := range []struct {
		file string
		read bool
		note string
	}{
		{"kubelet-journal.txt", false, "unknown kind of file (another program's log, not kube-proxy's: the journalctl command above it reads unit kubelet): not analysed"},
		{"kubelet-journal-bare.txt", false, "unknown kind of file (another program's log, not kube-proxy's: its journal lines are tagged kubelet): not analysed"},
		{"kube-proxy-journal.txt", true, ""},
		{"k3s-journal.txt", true, ""},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(root, "testdata", "logs", tc.file)
			snaps, err := Load([]string{dump, path}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			s := snaps[0]
			if got := len(s.Logs) == 1; got != tc.read {
				t.Errorf("%d logs read, want the file read %v", len(s.Logs), tc.read)
			}
			for _, in := range s.Inputs {
				if !strings.HasSuffix(in.Path, tc.file) {
					continue
				}
				want := parsers.KindLog
				if !tc.read {
					want = parsers.KindUnknown
				}
				if in.Kind != want || in.Note != tc.note || in.Unread != "" {
					t.Errorf("input %s: kind %s, note %q, unread %q; want kind %s, note %q", in.Path, in.Kind, in.Note, in.Unread, want, tc.note)
				}
			}
		})
	}
}

// TestExpectBoundList: the kube-ipvs0.txt that proxyscan expect --mode
// ipvs --dir writes beside the dumps is no capture and no input kind: a
// note says so and it leaves the verdict alone; the same lines under
// another name, or a file of that name holding something else, are a file
// not read (a coverage gap).
func TestExpectBoundList(t *testing.T) {
	root := parsetest.Root(t)
	dump := filepath.Join(root, "testdata", "bundles", "iptables-mini", "node", "iptables-save.txt")
	for _, tc := range []struct {
		name, text string
		note       bool
	}{
		{"kube-ipvs0.txt", "10.96.0.1/32\n10.96.0.10/32\nfd00:10:96::a/128\n", true},
		{"addresses.txt", "10.96.0.1/32\n10.96.0.10/32\n", false},
		{"kube-ipvs0.txt", "10.96.0.1/32\nsomething else\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.name)
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			snaps, err := Load([]string{dump, path}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range snaps[0].Inputs {
				if in.Path != path {
					continue
				}
				if got := in.Note == boundNote && in.Unread == ""; got != tc.note || !tc.note && in.Unread == "" {
					t.Errorf("note %q, unread %q; want the note of expect's list %v, else unread", in.Note, in.Unread, tc.note)
				}
			}
		})
	}
}
