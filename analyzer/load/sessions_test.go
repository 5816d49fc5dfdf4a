package load

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
	"github.com/proxyscan/proxyscan/parsers/paste"
)

// TestSessions reads terminal transcripts of several commands, as tickets
// paste them in one file: the outputs of commands of different kinds are
// read as one input each, at their own lines of the file, and the outputs
// of commands of one kind (iptables-save, then ip6tables-save) as one
// input, as before.
func TestSessions(t *testing.T) {
	root := parsetest.Root(t)
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(root, "testdata", "bundles", p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ipvsadm := read("ipvs-healthy-mini/node/ipvsadm.txt")
	cm := read("ipvs-healthy-mini/cluster/kube-proxy-configmap.yaml")
	save4, save6 := read("iptables-healthy/node/iptables-save.txt"), read("iptables-healthy/node/ip6tables-save.txt")
	lines := func(s string) int { return strings.Count(s, "\n") }

	t.Run("outputs of several kinds", func(t *testing.T) {
		text := "Hi team, here is what we see on worker-7:\n\n" +
			"[root@worker-7 ~]# ipvsadm -Ln\n" + ipvsadm + "\n" +
			"[root@worker-7 ~]# uname -r\n6.8.0-45-generic\n\n" +
			"[root@worker-7 ~]# kubectl -n kube-system get cm kube-proxy -o yaml\n" + cm + "\nThanks\n"
		p, snaps := loadText(t, "ticket.txt", text)
		if len(snaps) != 1 {
			t.Fatalf("%d snapshots", len(snaps))
		}
		s := snaps[0]
		ipvsFrom, unameFrom := 3, 3+lines(ipvsadm)+2
		cmFrom := unameFrom + 3
		last := cmFrom + lines(cm) + 2
		var got []string
		for _, in := range s.Inputs {
			got = append(got, fmt.Sprintf("%s %s: %s", filepath.Base(in.Path), in.Kind, in.Note))
		}
		want := []string{
			fmt.Sprintf("ticket.txt ipvsadm: lines 1-%d (`ipvsadm -Ln`); lines %d-%d (`uname -r`) left out: output of no kind proxyscan reads", unameFrom-1, unameFrom, cmFrom-1),
			fmt.Sprintf("ticket.txt kube-objects: lines %d-%d (`kubectl -n kube-system get cm kube-proxy -o yaml`)", cmFrom, last),
		}
		// The words below the ConfigMap are skipped as words.
		if k := s.Inputs[1]; len(k.Skipped) == 0 || k.Skipped[len(k.Skipped)-1] != (parsers.LineRange{From: last, To: last, Reason: parsers.ReasonText}) {
			t.Errorf("the words below the export: skipped %v, want line %d skipped as words", k.Skipped, last)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("inputs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if s.Config == nil || string(s.Config.Mode) != "ipvs" {
			t.Errorf("the ConfigMap's configuration is not read: %+v", s.Config)
		}
		if len(s.IPVS) != 1 || len(s.IPVS[0].Services) == 0 {
			t.Fatal("the ipvsadm listing is not read")
		}
		// Evidence cites the file's own lines.
		first := s.IPVS[0].Services[0]
		if first.Pos.Line != ipvsFrom+4 || first.Pos.File != p {
			t.Errorf("first IPVS service at %s:%d, want %s:%d", first.Pos.File, first.Pos.Line, p, ipvsFrom+4)
		}
		for _, in := range s.Inputs {
			for _, r := range in.Skipped {
				if r.Reason != paste.ReasonPrompt && r.Reason != parsers.ReasonText {
					t.Errorf("%s: lines %d-%d skipped: %s", in.Kind, r.From, r.To, r.Reason)
				}
			}
			if in.Partial != "" {
				t.Errorf("%s partial: %s", in.Kind, in.Partial)
			}
		}
	})

	t.Run("dumps of two families", func(t *testing.T) {
		for name, text := range map[string]string{
			"after their commands": "$ sudo iptables-save\n" + save4 + "$ sudo ip6tables-save\n" + save6,
			"one after the other":  save4 + save6,
		} {
			_, snaps := loadText(t, "dumps.txt", text)
			s := snaps[0]
			var got []string
			for _, in := range s.Inputs {
				got = append(got, in.Lines)
			}
			v4 := lines(save4)
			if name == "after their commands" {
				v4++
			}
			if want := []string{fmt.Sprintf("1-%d", v4), fmt.Sprintf("%d-%d", v4+1, strings.Count(text, "\n"))}; strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("%s: inputs of lines %q, want %q", name, got, want)
			}
			if len(s.IPTables) != 2 || s.IPTables[0].Family == s.IPTables[1].Family {
				t.Errorf("%s: %d dumps, want one IPv4 and one IPv6", name, len(s.IPTables))
			}
			for _, in := range s.Inputs {
				for _, r := range in.Skipped {
					if r.Reason != paste.ReasonPrompt {
						t.Errorf("%s: lines %d-%d skipped: %s", name, r.From, r.To, r.Reason)
					}
				}
			}
		}
	})

	t.Run("a dump, then a listing", func(t *testing.T) {
		// The head of an iptables dump under a prompt reads as a dump:
		// the commands below it are looked for all the same.
		text := "[root@worker-7 ~]# iptables-save\n" + save4 + "[root@worker-7 ~]# ipvsadm -Ln\n" + ipvsadm
		_, snaps := loadText(t, "ticket.txt", text)
		var got []string
		for _, in := range snaps[0].Inputs {
			got = append(got, string(in.Kind)+" "+in.Lines)
		}
		v4 := lines(save4) + 1
		if want := []string{fmt.Sprintf("iptables-save 1-%d", v4), fmt.Sprintf("ipvsadm %d-%d", v4+1, strings.Count(text, "\n"))}; strings.Join(got, ", ") != strings.Join(want, ", ") {
			t.Errorf("inputs %q, want %q", got, want)
		}
	})

	t.Run("dumps of two backends", func(t *testing.T) {
		legacy := "# Generated by iptables-save v1.8.7 (legacy) on Thu Dec  3 10:00:00 2026\n*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n-A PREROUTING -j KUBE-SERVICES\nCOMMIT\n"
		_, snaps := loadText(t, "dumps.txt", save4+legacy)
		s := snaps[0]
		if len(s.IPTables) != 2 || s.IPTables[0].Family != s.IPTables[1].Family || s.IPTables[0].Backend == s.IPTables[1].Backend {
			t.Errorf("%d dumps, want two IPv4 dumps of two backends", len(s.IPTables))
		}
	})

	t.Run("outputs of one kind", func(t *testing.T) {
		var svc, sep []string
		for _, l := range strings.Split(save4, "\n") {
			switch {
			case strings.Contains(l, "KUBE-SVC-"):
				svc = append(svc, l)
			case strings.Contains(l, "KUBE-SEP-"):
				sep = append(sep, l)
			}
		}
		text := "$ iptables-save | grep KUBE-SVC-\n" + strings.Join(svc, "\n") + "\n$ iptables-save | grep KUBE-SEP-\n" + strings.Join(sep, "\n") + "\n"
		_, snaps := loadText(t, "greps.txt", text)
		if n := len(snaps[0].Inputs); n != 1 || snaps[0].Inputs[0].Lines != "" {
			t.Errorf("%d inputs (%+v), want the file read as one", n, snaps[0].Inputs)
		}
	})
}

// loadText writes text to a file of the name in a directory of its own
// and loads it, as a file given alone on the command line.
func loadText(t *testing.T, name, text string) (string, []*model.Snapshot) {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	snaps, err := Load([]string{p}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p, snaps
}

// TestYAMLWords: words pasted above or below a YAML export given as a
// file on disk ("Thanks, Alice", which its decoding as a stream refuses;
// "Hi team, here is the config:", which it would read as a key of no
// value, in silence) are skipped as words when the file is read as a
// paste, and the export is read; a bundle's export read strictly is still
// refused when it is not YAML.
func TestYAMLWords(t *testing.T) {
	cm, err := os.ReadFile(filepath.Join(parsetest.Root(t), "testdata", "bundles", "ipvs-healthy-mini", "cluster", "kube-proxy-configmap.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(string(cm), "\n")
	for _, tc := range []struct {
		name, above, below string
		want               []parsers.LineRange
		strictRefused      bool
	}{
		{name: "thanks below", below: "\nThanks, Alice\n",
			want: []parsers.LineRange{{From: lines + 2, To: lines + 2, Reason: parsers.ReasonText}}, strictRefused: true},
		{name: "greeting with a colon above", above: "Hi team, here is the config from prod:\n",
			want: []parsers.LineRange{{From: 1, To: 1, Reason: parsers.ReasonText}}},
		{name: "greeting above, blank line", above: "Hello\n\n",
			want: []parsers.LineRange{{From: 1, To: 1, Reason: parsers.ReasonText}}, strictRefused: true},
		{name: "both", above: "# from worker-3\nAs asked:\n", below: "Regards\n",
			want: []parsers.LineRange{{From: 2, To: 2, Reason: parsers.ReasonText}, {From: lines + 3, To: lines + 3, Reason: parsers.ReasonText}}, strictRefused: true},
		{name: "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := tc.above + string(cm) + tc.below
			p, snaps := loadText(t, "cm.yaml", text)
			s := snaps[0]
			if s.Config == nil || string(s.Config.Mode) != "ipvs" {
				t.Fatalf("the ConfigMap is not read: %+v", s.Config)
			}
			if got := s.Inputs[0].Skipped; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("skipped %v, want %v", got, tc.want)
			}
			if _, err := Load([]string{p}, Options{Strict: true}); (err != nil) != tc.strictRefused {
				t.Errorf("read strictly: error %v, want refused %v", err, tc.strictRefused)
			}
		})
	}
}
