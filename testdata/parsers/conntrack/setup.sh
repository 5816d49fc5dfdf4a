set -e
A=$1; B=$2
ip netns add $A; ip netns add $B
ip -n $A link set lo up; ip -n $B link set lo up
ip link add ct-a netns $A type veth peer name ct-b netns $B
ip -n $A addr add 10.0.0.1/24 dev ct-a; ip -n $B addr add 10.0.0.2/24 dev ct-b
ip -n $A addr add fd00:ab::1/64 dev ct-a nodad; ip -n $B addr add fd00:ab::2/64 dev ct-b nodad
ip -n $A link set ct-a up; ip -n $B link set ct-b up
ip -n $A route add 10.96.0.0/16 via 10.0.0.2
ip -n $A route add fd00:10:96::/64 via fd00:ab::2
ip netns exec $B iptables -t nat -A PREROUTING -d 10.96.0.10/32 -p udp --dport 53 -j DNAT --to-destination 10.0.0.2:5353
ip netns exec $B iptables -t nat -A PREROUTING -d 10.96.0.1/32 -p tcp --dport 443 -j DNAT --to-destination 10.0.0.2:8443
ip netns exec $B ip6tables -t nat -A PREROUTING -d fd00:10:96::a/128 -p udp --dport 53 -j DNAT --to-destination [fd00:ab::2]:5353
ip netns exec $B iptables -t raw -A PREROUTING -p udp --dport 9999 -j CT --zone 7
ip netns exec $B iptables -t mangle -A PREROUTING -p udp --dport 9999 -j CONNMARK --set-mark 0x2a
