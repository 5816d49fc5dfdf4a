// Package ipaddr parses the interface and address listing of iproute2's
// `ip addr` in its three output forms: the default text, the one-line
// form of `ip -o addr` and the JSON of `ip -j addr`. All give one model,
// a [Dump] of [Interface] values (index, name, @peer, flags, mtu, qdisc,
// state, link type and address) with their [Address] values (family,
// address, prefix length, broadcast, scope, label, flags such as
// secondary and dynamic, lifetimes). Helpers answer what the analysis
// asks: an interface by name, all local addresses, the addresses bound to
// kube-ipvs0, and the node addresses kube-proxy's IPVS mode uses for
// NodePorts.
package ipaddr
