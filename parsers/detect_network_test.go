package parsers

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
	"github.com/rogpeppe/go-internal/txtar"
)

func TestDetectNetworkKinds(t *testing.T) {
	for _, tc := range []struct {
		name string
		head string
		want Kind
	}{
		{"ipvsadm -Ln", "IP Virtual Server version 1.2.1 (size=4096)\nProt LocalAddress:Port Scheduler Flags\n  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\nTCP  10.96.0.1:443 rr\n", KindIPVSList},
		{"ipvsadm -Ln -t (no version header)", "Prot LocalAddress:Port Scheduler Flags\n  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n", KindIPVSList},
		{"ipvsadm -Ln --stats", "IP Virtual Server version 1.2.1 (size=4096)\nProt LocalAddress:Port               Conns   InPkts  OutPkts  InBytes OutBytes\n  -> RemoteAddress:Port\n", KindIPVSList},
		{"ipvsadm -Ln --timeout", "Timeout (tcp tcpfin udp): 900 120 300\n", KindIPVSList},
		{"ipvsadm -Sn", "-A -t 10.96.0.1:443 -s rr\n-a -t 10.96.0.1:443 -r 192.168.49.2:6443 -m -w 1\n", KindIPVSSave},
		{"ipvsadm -Sn sctp", "-A --sctp-service 10.96.77.1:3868 -s rr\n", KindIPVSSave},
		{"ipvsadm -Sn fwmark", "-A -f 123 -s rr\n", KindIPVSSave},
		{"ipset save", "create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x55150d36\nadd KUBE-CLUSTER-IP 10.96.0.1,tcp:443\n", KindIPSetSave},
		{"ipset save bitmap first", "create KUBE-NODE-PORT-TCP bitmap:port range 0-65535\n", KindIPSetSave},
		{"ipset list", "Name: KUBE-CLUSTER-IP\nType: hash:ip,port\nRevision: 7\nHeader: family inet hashsize 1024 maxelem 65536\n", KindIPSetList},
		{"ip addr", "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default qlen 1000\n    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n", KindIPAddr},
		{"ip addr show kube-ipvs0", "2: kube-ipvs0: <BROADCAST,NOARP> mtu 1500 qdisc noop state DOWN group default\n    link/ether 3a:1f:5c:0e:77:01 brd ff:ff:ff:ff:ff:ff\n    inet 10.96.0.1/32 scope global kube-ipvs0\n", KindIPAddr},
		{"ip -o addr", "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n", KindIPAddr},
		{"ip -j addr", `[{"ifindex":1,"ifname":"lo","flags":["LOOPBACK","UP","LOWER_UP"],"mtu":65536,"addr_info":[]}]`, KindIPAddr},
		{"ip route", "default via 192.168.49.1 dev eth0 \n192.168.49.0/24 dev eth0 proto kernel scope link src 192.168.49.2 \n", KindIPRoute},
		{"ip route table all", "local 10.96.0.1 dev kube-ipvs0 table local proto kernel scope host src 10.96.0.1 \n", KindIPRoute},
		{"ip -6 route", "fd00:192:168:49::/64 dev eth0 proto kernel metric 256 pref medium\n", KindIPRoute},
		{"conntrack -L", "tcp      6 119 TIME_WAIT src=10.0.0.1 dst=10.96.0.1 sport=40010 dport=443 src=10.0.0.2 dst=10.0.0.1 sport=8443 dport=40010 [ASSURED] mark=0 use=1\n", KindConntrack},
		{"conntrack -L icmp first", "icmp     1 28 src=10.0.0.1 dst=10.0.0.2 type=8 code=0 id=4660 src=10.0.0.2 dst=10.0.0.1 type=0 code=0 id=4660 mark=0 use=1\n", KindConntrack},
		{"conntrack -L -o extended", "ipv4     2 udp      17 29 src=10.0.0.1 dst=10.96.0.10 sport=43002 dport=53 src=10.0.0.2 dst=10.0.0.1 sport=5353 dport=43002 mark=0 use=1\n", KindConntrack},
		{"conntrack -L empty", "conntrack v1.4.7 (conntrack-tools): 0 flow entries have been shown.\n", KindConntrack},
		{"conntrack -S", "cpu=0   \tfound=0 invalid=0 insert=0 insert_failed=0 drop=0 early_drop=0 error=0 search_restart=0 clash_resolve=0 chaintoolong=0 \n", KindConntrackStats},
	} {
		if got := Detect([]byte(tc.head)); got != tc.want {
			t.Errorf("%s: Detect = %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestDetectGoldens checks the detector on every well-formed golden input
// of the network parsers.
func TestDetectGoldens(t *testing.T) {
	for _, dir := range []string{"ipvs", "ipset", "ipaddr", "iproute", "conntrack"} {
		for _, file := range parsetest.Files(t, "parsers/"+dir+"/*.txtar") {
			if strings.Contains(filepath.Base(file), "error-") {
				continue
			}
			a, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range a.Files {
				if !strings.HasPrefix(f.Name, "input") {
					continue
				}
				want := map[string]Kind{"ipvs": KindIPVSList, "ipaddr": KindIPAddr, "iproute": KindIPRoute, "conntrack": KindConntrack}[dir]
				switch {
				case dir == "ipvs" && strings.HasPrefix(string(f.Data), "-A") || dir == "ipvs" && strings.Contains(filepath.Base(file), "handwritten"):
					want = KindIPVSSave
				case dir == "ipset" && strings.HasPrefix(string(f.Data), "Name:"):
					want = KindIPSetList
				case dir == "ipset":
					want = KindIPSetSave
				case f.Name == "input-stats":
					want = KindConntrackStats
				}
				if got := Detect(f.Data); got != want {
					t.Errorf("%s %s: Detect = %s, want %s", file, f.Name, got, want)
				}
			}
		}
	}
}
