package view_test

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/proxyscan/proxyscan/analyzer/kpnames"
	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
	"github.com/proxyscan/proxyscan/parsers/ipaddr"
	"github.com/proxyscan/proxyscan/parsers/ipset"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// snapshot loads a bundle of testdata/bundles.
func snapshot(t *testing.T, bundle string) *model.Snapshot {
	t.Helper()
	snaps, err := load.Load([]string{filepath.Join(parsetest.Root(t), "testdata", "bundles", bundle)}, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return snaps[0]
}

// input returns the IPVS view input of a snapshot for a family, with the
// listing (-Ln) as the table.
func input(s *model.Snapshot, fam model.Family) view.IPVSInput {
	in := view.IPVSInput{Family: fam, Sets: s.IPSets, Addrs: s.Addrs, Ports: s.Ports, NodeIPs: s.Node.Addresses}
	for _, d := range s.IPVS {
		if d.Form == ipvs.FormList {
			in.Table = d
		}
	}
	for _, d := range s.IPTables {
		if model.Family(d.Family) == fam {
			in.IPTables = d
		}
	}
	return in
}

// describe renders the entries of a view, one line each, with their
// dispatches and backends.
func describe(v *view.View) []string {
	var out []string
	for _, e := range v.Entries {
		line := fmt.Sprintf("%s %s %s", e.Key(), e.Service, e.Action)
		if len(e.NodeIPs) > 0 {
			line += fmt.Sprintf(" on %v", e.NodeIPs)
		}
		if d := e.Dispatch[model.FromExternal]; d != nil {
			line += fmt.Sprintf(" | %s %s %s", d.Scheduler, d.Policy, d.Service)
			if d.Affinity != nil {
				line += fmt.Sprintf(" affinity %ds", d.Affinity.Timeout)
			}
			for _, b := range d.Backends {
				line += fmt.Sprintf(" %s(w%d %.2f)", b.Endpoint, b.Weight, b.Share)
			}
		}
		if e.Firewall != nil {
			line += fmt.Sprintf(" | firewall %v drop=%v", e.Firewall.Ranges, e.Firewall.DefaultDrop)
		}
		out = append(out, line)
	}
	return out
}

func TestFromIPVSMini(t *testing.T) {
	s := snapshot(t, "ipvs-healthy-mini")
	v := view.FromIPVS(input(s, model.IPv4))
	want := []string{
		"ClusterIP 10.96.0.1 tcp/443 default/kubernetes:https forward | rr Cluster default/kubernetes:https 192.168.10.10:6443(w1 1.00)",
		"ClusterIP 10.96.0.10 tcp/53 kube-system/dns:dns-tcp forward | rr Cluster kube-system/dns:dns-tcp 10.244.1.2:53(w1 0.50) 10.244.2.2:53(w1 0.50)",
		"ClusterIP 10.96.0.10 udp/53 kube-system/dns:dns forward | rr Cluster kube-system/dns:dns 10.244.1.2:53(w1 0.50) 10.244.2.2:53(w1 0.50)",
		"ClusterIP 10.96.10.10 tcp/80 shop/web:http forward | rr Cluster shop/web:http 10.244.1.5:8080(w1 0.33) 10.244.2.5:8080(w1 0.33) 10.244.3.5:8080(w1 0.33)",
		"ClusterIP 10.96.10.20 tcp/80 shop/front:web forward | rr Cluster shop/front:web 10.244.1.6:8080(w1 0.50) 10.244.2.6:8080(w1 0.50)",
		"ClusterIP 10.96.10.30 tcp/8443 shop/sessions forward | rr Cluster shop/sessions affinity 600s 10.244.1.7:8443(w1 0.50) 10.244.2.7:8443(w1 0.50)",
		"ClusterIP 10.96.10.40 tcp/80 shop/cart:http reject",
		"ClusterIP 10.96.10.50 tcp/80 shop/static:http forward | rr Local shop/static:http 10.244.1.8:8080(w1 1.00)",
		"ClusterIP 10.96.10.60 tcp/443 shop/ext:https forward | rr Cluster shop/ext:https 10.244.2.9:8443(w1 1.00)",
		"ClusterIP 10.96.10.70 tcp/50051 shop/ledger:grpc forward | rr Cluster shop/ledger:grpc 10.244.2.11:50051(w1 0.50) 10.244.3.11:50051(w1 0.50)",
		"ExternalIP 192.168.10.100 tcp/443 shop/ext:https forward | rr Cluster shop/ext:https 10.244.2.9:8443(w1 1.00)",
		"LoadBalancerIP 203.0.113.20 tcp/80 shop/front:web forward | rr Local shop/front:web 10.244.1.6:8080(w1 1.00) | firewall [198.51.100.0/24] drop=true",
		// shop/ledger: externalTrafficPolicy Local without a local endpoint
		// falls back to the cluster endpoints.
		"NodePort tcp/30051 shop/ledger:grpc forward on [192.168.10.11] | rr Cluster shop/ledger:grpc 10.244.2.11:50051(w1 0.50) 10.244.3.11:50051(w1 0.50)",
		"NodePort tcp/31080 shop/front:web forward on [192.168.10.11] | rr Local shop/front:web 10.244.1.6:8080(w1 1.00)",
	}
	if diff := cmp.Diff(want, describe(v)); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if len(v.HealthChecks) != 1 || v.HealthChecks[0].Port != 32080 || v.HealthChecks[0].Service != "shop/front:web" {
		t.Errorf("health checks: %+v", v.HealthChecks)
	}
	st := v.IPVS
	if !st.HasSets || !st.HasAddrs || !st.HasIPTables || !st.HasInterface || st.FilterReject == nil {
		t.Errorf("state: sets %v addrs %v iptables %v interface %v reject %v", st.HasSets, st.HasAddrs, st.HasIPTables, st.HasInterface, st.FilterReject)
	}
	if len(st.Bound) != 11 {
		t.Errorf("%d addresses bound to kube-ipvs0, want 11", len(st.Bound))
	}
	if ev, ok := st.Member(kpnames.SetClusterIP, kpnames.MemberKey(netip.MustParseAddr("10.96.10.10"), "tcp", 80)); !ok || ev.Line == 0 || ev.File != "node/ipset-save.txt" {
		t.Errorf("member of KUBE-CLUSTER-IP: %+v %v", ev, ok)
	}
	for _, o := range v.Objects {
		if o.Service == "" || !o.Referenced {
			t.Errorf("healthy bundle: object %s %s attributed to %q, referenced %v", o.Kind, o.Name, o.Service, o.Referenced)
		}
	}
	for _, e := range v.Entries {
		for _, ev := range e.Evidence {
			if ev.File != "node/ipvsadm.txt" || ev.Line == 0 || !strings.Contains(ev.Text, strings.ToUpper(e.Protocol)) {
				t.Errorf("%s: evidence %+v", e.Key(), ev)
			}
		}
	}
}

// TestFromIPVSShapes reads the dual-stack bundle: IPv6 virtual servers
// and the KUBE-6- sets go to the IPv6 view.
func TestFromIPVSShapes(t *testing.T) {
	s := snapshot(t, "ipvs-healthy")
	v6 := view.FromIPVS(input(s, model.IPv6))
	got := describe(v6)
	want := []string{
		"ClusterIP fd00:112::5a04 tcp/80 media/web:http forward | rr Cluster media/web:http [fd88:0:0:1::60]:8080(w1 0.50) [fd88:0:0:2::60]:8080(w1 0.50)",
		"ClusterIP fd00:112::5a10 tcp/80 media/web6:http forward | rr Cluster media/web6:http [fd88:0:0:2::61]:8080(w1 0.50) [fd88:0:0:3::61]:8080(w1 0.50)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("IPv6 entries (-want +got):\n%s", diff)
	}
	if _, ok := v6.IPVS.Member(kpnames.SetClusterIP, kpnames.MemberKey(netip.MustParseAddr("fd00:112::5a04"), "tcp", 80)); !ok {
		t.Error("fd00:112::5a04,tcp:80 not found in KUBE-6-CLUSTER-IP")
	}
	v4 := view.FromIPVS(input(s, model.IPv4))
	kinds := map[view.Kind]int{}
	for _, e := range v4.Entries {
		kinds[e.Kind]++
		if e.Service == "" {
			t.Errorf("%s is not attributed", e.Key())
		}
	}
	if kinds[view.NodePort] != 7 || kinds[view.LoadBalancerIP] != 3 || kinds[view.ExternalIP] != 1 {
		t.Errorf("IPv4 entry kinds: %v", kinds)
	}
}

func mustIPVS(t *testing.T, text string) *ipvs.Dump {
	t.Helper()
	d, err := ipvs.Parse("node/ipvsadm.txt", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestFromIPVSSchedulersAndWeights covers shares per scheduler, graceful
// real servers and the connection counts of the listing forms.
func TestFromIPVSSchedulersAndWeights(t *testing.T) {
	s := snapshot(t, "ipvs-healthy-mini")
	list := `IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn
TCP  10.96.10.10:80 wrr
  -> 10.244.1.5:8080              Masq    1      0          0
  -> 10.244.2.5:8080              Masq    3      4          1
  -> 10.244.3.5:8080              Masq    0      2          0
TCP  10.96.10.20:80 lc
  -> 10.244.1.6:8080              Masq    1      0          0
  -> 10.244.2.6:8080              Masq    1      0          0
TCP  10.96.10.30:8443 rr persistent 600
  -> 10.244.1.7:8443              Masq    0      0          0
TCP  10.96.99.1:80 rr
`
	in := input(s, model.IPv4)
	in.Table = mustIPVS(t, list)
	v := view.FromIPVS(in)
	got := map[string]string{}
	for _, e := range v.Entries {
		if d := e.Dispatch[model.FromExternal]; d != nil {
			var parts []string
			for _, b := range d.Backends {
				parts = append(parts, fmt.Sprintf("%s w%d %.2f graceful=%v conns=%d", b.Endpoint, b.Weight, b.Share, b.Graceful, b.Connections))
			}
			got[e.IP.String()] = string(e.Action) + ": " + strings.Join(parts, "; ")
		} else {
			got[e.IP.String()] = string(e.Action)
		}
	}
	want := map[string]string{
		"10.96.10.10": "forward: 10.244.1.5:8080 w1 0.25 graceful=false conns=0; 10.244.2.5:8080 w3 0.75 graceful=false conns=5; 10.244.3.5:8080 w0 0.00 graceful=true conns=2",
		"10.96.10.20": "forward: 10.244.1.6:8080 w1 -1.00 graceful=false conns=0; 10.244.2.6:8080 w1 -1.00 graceful=false conns=0",
		// Every real server at weight 0: IPVS has no destination to choose.
		"10.96.10.30": "reject: 10.244.1.7:8443 w0 0.00 graceful=true conns=0",
		"10.96.99.1":  "reject",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// The save form has no connection counts.
	save, err := ipvs.Parse("node/ipvsadm-save.txt", []byte("-A -t 10.96.10.10:80 -s rr\n-a -t 10.96.10.10:80 -r 10.244.1.5:8080 -m -w 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	in.Table = save
	v = view.FromIPVS(in)
	if e := v.Find(view.ClusterIP, netip.MustParseAddr("10.96.10.10"), "tcp", 80); e == nil || e.Dispatch[model.FromPod].Backends[0].Connections != -1 {
		t.Errorf("save form: connections should be unknown: %+v", e)
	}
}

// TestFromIPVSOrphans checks the attribution of objects nothing explains
// and the classification of virtual servers without Service.
func TestFromIPVSOrphans(t *testing.T) {
	s := snapshot(t, "ipvs-healthy-mini")
	in := input(s, model.IPv4)
	in.Table = mustIPVS(t, `IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn
TCP  10.96.88.1:80 rr
  -> 10.244.2.40:8080             Masq    1      0          0
TCP  192.168.10.11:32999 rr
  -> 10.244.2.40:8080             Masq    1      0          0
TCP  203.0.113.99:443 rr
`)
	addrs, err := ipaddr.Parse("node/ip-addr.txt", []byte(`3: kube-ipvs0: <BROADCAST,NOARP> mtu 1500 qdisc noop state DOWN group default qlen 1000
    link/ether 02:42:0a:00:00:02 brd ff:ff:ff:ff:ff:ff
    inet 10.96.88.1/32 scope global kube-ipvs0
       valid_lft forever preferred_lft forever
    inet 10.96.88.2/32 scope global kube-ipvs0
       valid_lft forever preferred_lft forever
    inet 203.0.113.99/32 scope global kube-ipvs0
       valid_lft forever preferred_lft forever
`))
	if err != nil {
		t.Fatal(err)
	}
	in.Addrs = addrs
	sets, err := ipset.Parse("node/ipset-save.txt", []byte(`create KUBE-LOAD-BALANCER hash:ip,port family inet hashsize 1024 maxelem 65536
add KUBE-LOAD-BALANCER 203.0.113.99,tcp:443
create KUBE-NODE-PORT-TCP bitmap:port range 0-65535
add KUBE-NODE-PORT-TCP 32999
add KUBE-NODE-PORT-TCP 32998
`))
	if err != nil {
		t.Fatal(err)
	}
	in.Sets = []*ipset.Dump{sets}
	v := view.FromIPVS(in)
	var entries []string
	for _, e := range v.Entries {
		entries = append(entries, fmt.Sprintf("%s %q %s", e.Key(), e.Service, e.Action))
	}
	wantEntries := []string{
		`ClusterIP 10.96.88.1 tcp/80 "" forward`,
		`LoadBalancerIP 203.0.113.99 tcp/443 "" reject`,
		`NodePort tcp/32999 "" forward`,
	}
	if diff := cmp.Diff(wantEntries, entries); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	var objs []string
	for _, o := range v.Objects {
		if !o.Referenced {
			objs = append(objs, fmt.Sprintf("%s %s", o.Kind, o.Name))
		}
	}
	sort.Strings(objs)
	wantObjs := []string{
		"ipset entry KUBE-NODE-PORT-TCP 32998",
		"kube-ipvs0 address 10.96.88.2",
	}
	if diff := cmp.Diff(wantObjs, objs); diff != "" {
		t.Errorf("unreferenced objects (-want +got):\n%s", diff)
	}
}

// TestFromIPVSNoRealServers checks the state of virtual servers listed
// without real servers, of every kind: set on the entry when none of its
// virtual servers has one, not for real servers at weight 0 nor for a node
// port with real servers on another node address.
func TestFromIPVSNoRealServers(t *testing.T) {
	s := snapshot(t, "ipvs-healthy-mini")
	in := input(s, model.IPv4)
	in.NodeIPs = append(in.NodeIPs, netip.MustParseAddr("192.168.10.12"))
	in.Table = mustIPVS(t, `IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn
TCP  192.168.10.11:30051 rr
TCP  192.168.10.12:30051 rr
  -> 10.244.2.11:50051            Masq    1      0          0
TCP  192.168.10.11:31080 rr
TCP  192.168.10.12:31080 rr
TCP  192.168.10.100:443 rr
TCP  203.0.113.20:80 rr
  -> 10.244.1.6:8080              Masq    1      0          0
TCP  10.96.10.20:80 rr
TCP  10.96.10.30:8443 rr persistent 600
  -> 10.244.1.7:8443              Masq    0      0          0
`)
	v := view.FromIPVS(in)
	got := map[string]string{}
	for _, e := range v.Entries {
		got[e.Key()] = fmt.Sprintf("%s routed=%v none=%v", e.Action, e.Routed, e.NoRealServers)
	}
	want := map[string]string{
		"NodePort tcp/30051":                 "forward routed=true none=false",
		"NodePort tcp/31080":                 "reject routed=false none=true",
		"ExternalIP 192.168.10.100 tcp/443":  "reject routed=false none=true",
		"LoadBalancerIP 203.0.113.20 tcp/80": "forward routed=true none=false",
		"ClusterIP 10.96.10.20 tcp/80":       "reject routed=false none=true",
		// Its real server is listed, at weight 0.
		"ClusterIP 10.96.10.30 tcp/8443": "reject routed=true none=false",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
