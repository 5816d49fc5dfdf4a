// Package ipset parses and prints the two text forms of the kernel's IP
// sets: `ipset save` (create and add lines, also an `ipset restore`
// script) and `ipset list` (Name/Type/Revision/Header/Size in
// memory/References/Number of entries/Members blocks).
//
// Both give one model, a [Dump] of [Set] values with their [Entry] values.
// An entry keeps its raw text and position, the element text, the parts
// the set type defines (address, protocol and port, second address or
// network) and its options (timeout, packets/bytes counters, comment,
// skbinfo, nomatch). Protocols are accepted as names or numbers
// ("udp:53" and "17:53" are the same entry).
package ipset
