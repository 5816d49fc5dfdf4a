package collect

import (
	"bytes"
	"net/netip"
	"testing"
)

func ipvsSample() []VirtualServer {
	return []VirtualServer{
		{Protocol: 6, Addr: netip.MustParseAddr("10.96.0.1"), Port: 443, Sched: "rr", Dests: []RealServer{
			{Addr: netip.MustParseAddr("192.0.2.10"), Port: 6443, Weight: 1}}},
		{Protocol: 6, Addr: netip.MustParseAddr("192.0.2.80"), Port: 443, Sched: "rr", Dests: []RealServer{
			{Addr: netip.MustParseAddr("10.42.2.2"), Port: 8443, Weight: 1, ActiveConns: 3, InactConns: 12},
			{Addr: netip.MustParseAddr("10.42.1.3"), Port: 8443, Weight: 0}}},
		{Protocol: 17, Addr: netip.MustParseAddr("10.96.0.10"), Port: 53, Sched: "rr", Flags: svcPersistent, Timeout: 10800, Netmask: 0xffffffff,
			Dests: []RealServer{{Addr: netip.MustParseAddr("10.42.1.7"), Port: 53, Weight: 1}}},
		{Protocol: 6, Addr: netip.MustParseAddr("fd43::1"), Port: 443, Sched: "mh", Flags: svcSched2, Netmask: 128,
			Dests: []RealServer{{Addr: netip.MustParseAddr("fd00::10"), Port: 6443, Weight: 1}}},
	}
}

// TestFormatIPVS checks the rendering of netlink-read IPVS state in
// ipvsadm's formats (written by hand after ipvsadm 1.31's print_title,
// print_service_entry and the -S save form), including libipvs's order:
// addresses compared as signed differences, so 192.0.2.80 lists before
// 10.96.0.1.
func TestFormatIPVS(t *testing.T) {
	vs := ipvsSample()
	SortIPVS(vs)
	var list, save bytes.Buffer
	if err := FormatIPVSList(&list, "IP Virtual Server version 1.2.1 (size=4096)", vs); err != nil {
		t.Fatal(err)
	}
	if err := FormatIPVSSave(&save, vs); err != nil {
		t.Fatal(err)
	}
	wantList := `IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn
TCP  192.0.2.80:443 rr
  -> 10.42.1.3:8443               Masq    0      0          0         
  -> 10.42.2.2:8443               Masq    1      3          12        
TCP  10.96.0.1:443 rr
  -> 192.0.2.10:6443              Masq    1      0          0         
UDP  10.96.0.10:53 rr persistent 10800
  -> 10.42.1.7:53                 Masq    1      0          0         
TCP  [fd43::1]:443 mh (mh-port)
  -> [fd00::10]:6443              Masq    1      0          0         
`
	if list.String() != wantList {
		t.Errorf("ipvsadm -Ln form:\n%s\nwant:\n%s", list.String(), wantList)
	}
	wantSave := `-A -t 192.0.2.80:443 -s rr
-a -t 192.0.2.80:443 -r 10.42.1.3:8443 -m -w 0
-a -t 192.0.2.80:443 -r 10.42.2.2:8443 -m -w 1
-A -t 10.96.0.1:443 -s rr
-a -t 10.96.0.1:443 -r 192.0.2.10:6443 -m -w 1
-A -u 10.96.0.10:53 -s rr -p 10800
-a -u 10.96.0.10:53 -r 10.42.1.7:53 -m -w 1
-A -t [fd43::1]:443 -s mh -b mh-port
-a -t [fd43::1]:443 -r [fd00::10]:6443 -m -w 1
`
	if save.String() != wantSave {
		t.Errorf("ipvsadm -Sn form:\n%s\nwant:\n%s", save.String(), wantSave)
	}
}
