// Package sysctl parses kernel parameter listings as a node collector or a
// ticket carries them: the output of `sysctl -a` or `sysctl KEY...`
// ("net.ipv4.ip_forward = 1"), bare "key=value" lines, and /proc/sys path
// listings ("/proc/sys/net/ipv4/ip_forward: 1", "/proc/sys/net/ipv4/ip_forward 1",
// or the "path:value" form grep prints).
//
// Every key is turned into the canonical dotted form sysctl(8) prints:
// the components of the /proc/sys path joined by dots, where a dot inside a
// component (an interface name such as eth0.100) is written as a slash, so
// /proc/sys/net/ipv4/conf/eth0.100/rp_filter and net.ipv4.conf.eth0/100.rp_filter
// name the same entry. Values are kept as strings, exactly as printed
// (multi-field values such as ip_local_port_range keep their tab).
//
// Diagnostic lines sysctl writes to stderr ("sysctl: permission denied on
// key ...") are kept as notes rather than rejected, so a listing captured
// with 2>&1 still loads.
package sysctl
