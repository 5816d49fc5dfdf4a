package cmd

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// withoutConfig copies a bundle directory leaving out every kube-proxy
// configuration it holds (the --config file, the command line and the
// kube-proxy ConfigMap): the usual state of a pasted ticket.
func withoutConfig(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	parsetest.CopyTree(t, dir, out, func(rel string, data []byte) bool {
		switch {
		case rel == "kube-proxy/config.yaml", rel == "kube-proxy/cmdline.txt":
			return false
		case strings.Contains(string(data), "kind: ConfigMap") && strings.Contains(string(data), "name: kube-proxy"):
			return false
		}
		return true
	})
	return out
}

// runJSON runs the CLI and decodes its standard output as JSON into v,
// failing on an exit code other than 0 or 1.
func runJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	f, outputs := testFactory()
	code := Run(f, args)
	stdout, stderr := outputs()
	if code != 0 && code != 1 {
		t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), v); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, stdout)
	}
}

// runText runs the CLI and returns its standard output, failing on an exit
// code other than 0 or 1.
func runText(t *testing.T, args ...string) string {
	t.Helper()
	f, outputs := testFactory()
	code := Run(f, args)
	stdout, stderr := outputs()
	if code != 0 && code != 1 {
		t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	return stdout
}

// agreePort is a service port of a bundle to analyse and trace.
type agreePort struct {
	service string // ns/name
	dst     netip.AddrPort
	proto   string
}

// agreePorts returns, per family, the first active service port with a
// cluster IP of the family and an endpoint of it.
func agreePorts(s *model.Snapshot) map[model.Family]agreePort {
	out := map[model.Family]agreePort{}
	ports := s.ActivePorts()
	sort.Slice(ports, func(i, j int) bool { return ports[i].String() < ports[j].String() })
	for _, sp := range ports {
		for _, ip := range sp.ClusterIPs {
			f := model.FamilyOf(ip)
			if _, ok := out[f]; ok {
				continue
			}
			for _, e := range sp.Endpoints {
				if e.Family() == f && e.Ready {
					out[f] = agreePort{sp.Name.Service(), netip.AddrPortFrom(ip, uint16(sp.Port)), sp.ProtoLower()}
					break
				}
			}
		}
	}
	return out
}

var expectHeader = regexp.MustCompile(`(?m)^# proxyscan expect: (\S+), kube-proxy \S+ (\S+) mode(?:, (IPv4|IPv6))?, node `)

// TestCommandsAgree runs every command on every testdata bundle, with and
// without its kube-proxy configuration, and checks that they agree on the
// node's proxy mode and families with what the resolver decides, and that
// the rules kube-proxy should have programmed are the captured ones.
func TestCommandsAgree(t *testing.T) {
	dirs, err := filepath.Glob(testdata(t, "bundles", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		for _, variant := range []string{"as captured", "without configuration"} {
			t.Run(filepath.Base(dir)+"/"+variant, func(t *testing.T) {
				path := dir
				if variant != "as captured" {
					path = withoutConfig(t, dir)
				}
				snaps, err := load.Load([]string{path}, load.Options{})
				if err != nil || len(snaps) != 1 {
					t.Fatalf("load: %v (%d snapshots)", err, len(snaps))
				}
				r := resolve.Resolve(snaps[0], resolve.Options{})
				if len(r.Programmed) != 1 || r.Mode != r.Programmed[0] {
					t.Fatalf("resolved mode %s (%s), data plane shows %v", r.Mode, r.ModeSource, r.Programmed)
				}
				if variant != "as captured" && r.ModeOrigin != resolve.Inferred {
					t.Errorf("mode origin %s without a configuration, want %s", r.ModeOrigin, resolve.Inferred)
				}
				checkAgreement(t, path, r)
			})
		}
	}
}

func checkAgreement(t *testing.T, path string, r *resolve.Resolution) {
	var rep struct{ Mode, ModeSource string }
	runJSON(t, &rep, "analyze", path, "-o", "json")
	if rep.Mode != r.Mode || rep.ModeSource != r.ModeSource {
		t.Errorf("analyze: mode %s (%s), resolved %s (%s)", rep.Mode, rep.ModeSource, r.Mode, r.ModeSource)
	}

	if !r.Version.Supported() {
		return // expect models 1.20 and later; older layouts are only read
	}
	var fams []model.Family
	expected := runText(t, "expect", path)
	for _, m := range expectHeader.FindAllStringSubmatch(expected, -1) {
		if m[2] != r.Mode {
			t.Errorf("expect: %s in %s mode, resolved %s", m[1], m[2], r.Mode)
		}
		if m[3] != "" {
			fams = append(fams, model.Family(m[3]))
		}
	}
	if r.Mode == model.ModeNFTables {
		// One ruleset holds a table per family.
		for _, f := range []model.Family{model.IPv4, model.IPv6} {
			if strings.Contains(expected, "\ntable "+nftFamilyWord[f]+" kube-proxy {") {
				fams = append(fams, f)
			}
		}
	}
	if r.Mode != model.ModeIPVS && !equalFamilies(fams, r.Families) {
		// IPVS mode shares its ipset and IPVS files between the families;
		// iptables mode writes one file per family.
		t.Errorf("expect: families %v, resolved %v", fams, r.Families)
	}

	var diff struct {
		Pairs []struct{ Old, New struct{ Mode string } } `json:"nodes"`
	}
	runJSON(t, &diff, "diff", path, path, "-o", "json")
	for _, p := range diff.Pairs {
		if p.Old.Mode != r.Mode || p.New.Mode != r.Mode {
			t.Errorf("diff: modes %s and %s, resolved %s", p.Old.Mode, p.New.Mode, r.Mode)
		}
	}

	ports := agreePorts(r.Snap)
	if len(ports) == 0 {
		t.Fatal("no service port with a ready endpoint to trace")
	}
	for _, f := range r.Families {
		pt, ok := ports[f]
		if !ok {
			continue
		}
		var svc []struct {
			Mode        string
			Captured    bool
			Differences []json.RawMessage
		}
		runJSON(t, &svc, "analyze", path, "--service", pt.service, "-o", "json")
		for _, s := range svc {
			if s.Mode != r.Mode || !s.Captured {
				t.Errorf("analyze --service %s: mode %s (captured %v), resolved %s", pt.service, s.Mode, s.Captured, r.Mode)
			}
			if len(s.Differences) > 0 && r.ModeOrigin != resolve.Inferred {
				t.Errorf("analyze --service %s: %d differences on a healthy node:\n%s", pt.service, len(s.Differences), s.Differences[0])
			}
		}
		dst := pt.dst.String()
		for _, extra := range [][]string{nil, {"--expected"}} {
			var tr struct {
				Mode     string
				Expected bool
				Paths    []struct{ Verdict string }
			}
			runJSON(t, &tr, append([]string{"trace", path, "--dst", dst, "--proto", pt.proto, "-o", "json"}, extra...)...)
			if tr.Mode != r.Mode {
				t.Errorf("trace %s %v: mode %s, resolved %s", dst, extra, tr.Mode, r.Mode)
			}
			for _, p := range tr.Paths {
				if p.Verdict != "DNAT" && p.Verdict != "LOCAL" {
					t.Errorf("trace %s %v: a path ends in %s on a healthy node", dst, extra, p.Verdict)
				}
			}
		}
		var cmp struct {
			Diverged bool
			Actual   struct{ Mode string }
			Expected struct{ Mode string }
		}
		runJSON(t, &cmp, "trace", path, "--dst", dst, "--proto", pt.proto, "--compare", "-o", "json")
		if cmp.Actual.Mode != r.Mode || cmp.Expected.Mode != r.Mode {
			t.Errorf("trace --compare %s: modes %s and %s, resolved %s", dst, cmp.Actual.Mode, cmp.Expected.Mode, r.Mode)
		}
		if cmp.Diverged {
			t.Errorf("trace --compare %s: the captured and expected rules diverge on a healthy node", dst)
		}
	}
}

var nftFamilyWord = map[model.Family]string{model.IPv4: "ip", model.IPv6: "ip6"}

func equalFamilies(a, b []model.Family) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
