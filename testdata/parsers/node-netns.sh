set -e
ns=$1
ip netns add $ns
ip -n $ns link set lo up
ip -n $ns link add kube-ipvs0 type bridge
ip -n $ns link set kube-ipvs0 address 3a:1f:5c:0e:77:01
ip -n $ns addr add 10.96.0.1/32 dev kube-ipvs0
ip -n $ns addr add 10.96.0.10/32 dev kube-ipvs0
ip -n $ns addr add 10.96.45.7/32 dev kube-ipvs0
ip -n $ns addr add fd00:10:96::1/128 dev kube-ipvs0 nodad
ip -n $ns addr add fd00:10:96::a/128 dev kube-ipvs0 nodad
ip -n $ns link add eth0 type veth peer name veth-peer
ip -n $ns link set eth0 address 02:42:c0:a8:31:02
ip -n $ns link set veth-peer address 02:42:c0:a8:31:03
ip -n $ns addr add 192.168.49.2/24 brd + dev eth0
ip -n $ns addr add 192.168.49.20/24 dev eth0
ip -n $ns addr add 192.168.49.30/24 dev eth0 label eth0:vip valid_lft 3600 preferred_lft 1800
ip -n $ns addr add fd00:192:168:49::2/64 dev eth0 nodad
ip -n $ns link set eth0 up
ip -n $ns link set veth-peer up
ip -n $ns link set dev eth0 mtu 1450
ip -n $ns route add default via 192.168.49.1 dev eth0
ip -n $ns route add 10.244.1.0/24 via 192.168.49.3 dev eth0 proto static
ip -n $ns route add 10.244.2.0/24 via 192.168.49.4 dev eth0 metric 100
ip -n $ns route add blackhole 10.244.0.0/24
ip -n $ns route add 172.16.0.0/16 dev eth0 src 192.168.49.20 scope link
ip -n $ns route add default via fd00:192:168:49::1 dev eth0 metric 1024
ip -n $ns route add fd00:10:244:2::/64 via fd00:192:168:49::4 dev eth0 proto static metric 512
ip -n $ns route add unreachable fd00:dead::/32
ip -n $ns route add 10.200.0.0/16 via 192.168.49.5 dev eth0 table 100
