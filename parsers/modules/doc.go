// Package modules parses kernel module listings: /proc/modules, the output
// of lsmod, and the modules.builtin listing (/lib/modules/$(uname -r)/modules.builtin,
// one "kernel/net/netfilter/ipvs/ip_vs.ko" path a line) that names the
// modules compiled into the kernel. The three forms may be mixed in one
// file, as a collector appending them one after the other writes it.
//
// [List.Has] answers the question the IPVS checks ask: is module X usable,
// either loaded or built in. Module names are compared the way the kernel
// does, with '-' and '_' equivalent.
package modules
