package view_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
	"github.com/proxyscan/proxyscan/parsers/ipaddr"
	"github.com/proxyscan/proxyscan/parsers/ipset"
	"github.com/proxyscan/proxyscan/parsers/ipvs"
)

// largeIPVS generates an IPVS-mode node of n ClusterIP service ports with
// per endpoints each, one in ten of them also a NodePort: the service
// ports, and the ipvsadm listing, ipset save and ip addr output kube-proxy
// leaves for them, parsed.
func largeIPVS(b *testing.B, n, per int) view.IPVSInput {
	var list, sets, addrs strings.Builder
	list.WriteString("IP Virtual Server version 1.2.1 (size=4096)\nProt LocalAddress:Port Scheduler Flags\n  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n")
	sets.WriteString("create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536\ncreate KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536\ncreate KUBE-NODE-PORT-TCP bitmap:port range 0-65535\n")
	addrs.WriteString("2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc mq state UP group default qlen 1000\n    link/ether 02:42:0a:00:00:01 brd ff:ff:ff:ff:ff:ff\n    inet 192.168.10.11/24 scope global eth0\n       valid_lft forever preferred_lft forever\n")
	addrs.WriteString("3: kube-ipvs0: <BROADCAST,NOARP> mtu 1500 qdisc noop state DOWN group default qlen 1000\n    link/ether 02:42:0a:00:00:02 brd ff:ff:ff:ff:ff:ff\n")
	node := netip.MustParseAddr("192.168.10.11")
	var ports []*model.ServicePort
	for i := 0; i < n; i++ {
		cip := netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)})
		sp := &model.ServicePort{
			Name:     model.ServicePortName{Namespace: "ns", Name: fmt.Sprintf("svc-%d", i), Port: "http"},
			Protocol: "TCP", Port: 80, ClusterIPs: []netip.Addr{cip},
		}
		vs := fmt.Sprintf("TCP  %s:80 rr\n", cip)
		var rss strings.Builder
		for j := 0; j < per; j++ {
			ep := netip.AddrFrom4([4]byte{10, byte(200 + j%50), byte(i >> 8), byte(i)})
			sp.Endpoints = append(sp.Endpoints, &model.Endpoint{IP: ep, Port: 8080, Ready: true, Serving: true, NodeName: fmt.Sprintf("node-%d", j)})
			fmt.Fprintf(&rss, "  -> %-28s Masq    1      0          0\n", ep.String()+":8080")
		}
		list.WriteString(vs + rss.String())
		if i%10 == 0 {
			sp.NodePort = int32(30000 + i/10)
			fmt.Fprintf(&list, "TCP  %s:%d rr\n%s", node, sp.NodePort, rss.String())
			fmt.Fprintf(&sets, "add KUBE-NODE-PORT-TCP %d\n", sp.NodePort)
		}
		fmt.Fprintf(&sets, "add KUBE-CLUSTER-IP %s,tcp:80\nadd KUBE-IPVS-IPS %s\n", cip, cip)
		fmt.Fprintf(&addrs, "    inet %s/32 scope global kube-ipvs0\n       valid_lft forever preferred_lft forever\n", cip)
		ports = append(ports, sp)
	}
	t, err := ipvs.Parse("node/ipvsadm.txt", []byte(list.String()))
	if err != nil {
		b.Fatal(err)
	}
	s, err := ipset.Parse("node/ipset-save.txt", []byte(sets.String()))
	if err != nil {
		b.Fatal(err)
	}
	a, err := ipaddr.Parse("node/ip-addr.txt", []byte(addrs.String()))
	if err != nil {
		b.Fatal(err)
	}
	return view.IPVSInput{Family: model.IPv4, Table: t, Sets: []*ipset.Dump{s}, Addrs: a, Ports: ports, NodeIPs: []netip.Addr{node}}
}

// BenchmarkFromIPVS builds the view of 10,000 service ports with 10
// endpoints each (11,000 virtual servers, 110,000 real servers).
func BenchmarkFromIPVS(b *testing.B) {
	in := largeIPVS(b, 10000, 10)
	b.ReportAllocs()
	b.ResetTimer()
	var v *view.View
	for b.Loop() {
		v = view.FromIPVS(in)
	}
	if len(v.Entries) != 11000 {
		b.Fatalf("%d entries, want 11000", len(v.Entries))
	}
}
