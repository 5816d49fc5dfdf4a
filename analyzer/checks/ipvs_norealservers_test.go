package checks_test

import (
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/load"
)

// TestIPVSWithoutRealServers runs the three checks of missing destinations
// on the IPVS bundle with virtual servers left without real servers (or
// with every one at weight 0) although their Services have usable
// endpoints: each is reported as rejected like a port without endpoints,
// whatever its kind, never as a virtual server missing from the listing,
// which holds it. A want is "check: message"; every finding of the three
// checks must be wanted.
func TestIPVSWithoutRealServers(t *testing.T) {
	list := []*checks.Check{checks.ByID("service-missing"), checks.ByID("nodeport-missing"), checks.ByID("external-missing")}
	const (
		table = "node/ipvsadm.txt"
		save  = "node/ipvsadm-save.txt"
		rs    = "              Masq    1      0          0         \n"
	)
	for _, tc := range []struct {
		name  string
		edits []edit
		want  []string
		// note is a substring of a note of the checks.
		note string
	}{
		{name: "healthy"},
		{name: "node port",
			edits: []edit{{save, "", ""}, {table, "TCP  192.168.10.11:31080 rr\n  -> 10.244.1.6:8080" + rs, "TCP  192.168.10.11:31080 rr\n"}},
			want: []string{"nodeport-missing: node port 31080/tcp is rejected as if the Service had no endpoints, but it has 1 usable: " +
				"its virtual server is listed without real servers"}},
		{name: "load balancer IP",
			edits: []edit{{save, "", ""}, {table, "TCP  203.0.113.20:80 rr\n  -> 10.244.1.6:8080" + rs, "TCP  203.0.113.20:80 rr\n"}},
			want: []string{"external-missing: load balancer IP 203.0.113.20:80/tcp is rejected as if the Service had no endpoints, but it has 1 usable: " +
				"its virtual server is listed without real servers"}},
		{name: "external IP",
			edits: []edit{{save, "", ""}, {table, "TCP  192.168.10.100:443 rr\n  -> 10.244.2.9:8443" + rs, "TCP  192.168.10.100:443 rr\n"}},
			want: []string{"external-missing: external IP 192.168.10.100:443/tcp is rejected as if the Service had no endpoints, but it has 1 usable: " +
				"its virtual server is listed without real servers"}},
		{name: "cluster IP",
			edits: []edit{{save, "", ""}, {table, "TCP  10.96.10.60:443 rr\n  -> 10.244.2.9:8443" + rs, "TCP  10.96.10.60:443 rr\n"}},
			want: []string{"service-missing: cluster IP 10.96.10.60:443/tcp is rejected as if the Service had no endpoints, but it has 1 usable: " +
				"its virtual server is listed without real servers"}},
		// Without its banner, the listing may be of some services only
		// (ipvsadm -Ln -t VIP:PORT): the real servers may be out of it.
		{name: "node port, a listing that may be partial",
			edits: []edit{{save, "", ""}, {table, "TCP  192.168.10.11:31080 rr\n  -> 10.244.1.6:8080" + rs, "TCP  192.168.10.11:31080 rr\n"},
				{table, "IP Virtual Server version 1.2.1 (size=4096)\n", ""}},
			note: "not checked for 1 service port (shop/front:web): node/ipvsadm.txt is partial"},
		{name: "node port at weight 0",
			edits: []edit{{save, "", ""}, {table, "TCP  192.168.10.11:31080 rr\n  -> 10.244.1.6:8080              Masq    1",
				"TCP  192.168.10.11:31080 rr\n  -> 10.244.1.6:8080              Masq    0"}},
			want: []string{"nodeport-missing: node port 31080/tcp is rejected as if the Service had no endpoints, but it has 1 usable: " +
				"its virtual server is listed with every real server at weight 0"}},
		// Another node address whose virtual server has no real server.
		{name: "node port on two addresses, one at weight 0",
			edits: []edit{{save, "", ""}, {table, "TCP  192.168.10.11:31080 rr\n  -> 10.244.1.6:8080              Masq    1",
				"TCP  10.10.0.11:31080 rr\nTCP  192.168.10.11:31080 rr\n  -> 10.244.1.6:8080              Masq    0"}},
			want: []string{"nodeport-missing: node port 31080/tcp is rejected as if the Service had no endpoints, but it has 1 usable: " +
				"its virtual servers are listed without real servers or with every one at weight 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := editedBundle(t, "ipvs-healthy-mini", tc.edits)
			snaps, err := load.Load([]string{dir}, load.Options{Compact: true})
			if err != nil {
				t.Fatal(err)
			}
			res := checks.Run(snaps[0], list)
			var got []string
			for _, f := range res.Findings {
				got = append(got, f.Check+": "+f.Message)
				if len(f.Evidence) < 2 || f.Evidence[0].File != table || !strings.HasPrefix(f.Evidence[0].Text, "TCP  ") {
					t.Errorf("%s: evidence %+v, want the virtual server's line first", f.Check, f.Evidence)
				}
			}
			var notes []string
			for _, st := range res.Statuses {
				notes = append(notes, st.Notes...)
			}
			if tc.note != "" && !strings.Contains(strings.Join(notes, "\n"), tc.note) {
				t.Errorf("notes %q, want one with %q", notes, tc.note)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
