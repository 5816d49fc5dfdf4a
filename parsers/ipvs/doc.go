// Package ipvs parses and prints the IPVS virtual-server table as ipvsadm
// shows it: the listing of `ipvsadm -Ln` in all its column variants (plain,
// --stats, --rate, --thresholds, --persistent-conn, --tun-info, each with or
// without --exact), the timeout line of `ipvsadm -Ln --timeout`, and the
// save form of `ipvsadm -Sn`.
//
// Whichever form arrived, the result is one model, a [Dump] of [Service]
// values each holding its [Destination] values. A Service embeds the
// virtual-server value of github.com/moby/ipvs (an ipvs.Service, with the
// protocol as an IPPROTO number, the kernel's IP_VS_SVC_F_* flags and the
// persistence netmask as the kernel reports it) and a Destination embeds an
// ipvs.Destination, so a table read over netlink ([FromIPVS], [NewService])
// and a table read from text compare field by field. Everything parsed keeps
// its position and raw line.
//
// [FormatList] and [FormatSave] print a Dump the way ipvsadm 1.31 does, byte
// for byte, in the order of the Dump; [Sort] puts a table read over netlink
// into the order ipvsadm prints (libipvs' comparison functions run through
// glibc's merge sort, including their wrap-around on large address
// differences).
//
// An IPv4 persistence netmask is the kernel's network-order word read in
// host order, as moby/ipvs reads it: "mask 255.255.255.0" is 0x00ffffff on
// a little-endian host; an IPv6 one is the prefix length.
//
// On Linux the embedded types are the moby/ipvs types themselves. On other
// systems, where moby/ipvs does not build, they are field-for-field copies
// so that analysis code compiles everywhere.
package ipvs
