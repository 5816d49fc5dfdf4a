// Package iptables parses iptables-save and ip6tables-save output (both the
// nf_tables and the legacy flavour, with or without -c counters) and the
// iptables-restore input kube-proxy writes, and formats it back.
//
// A [Dump] holds tables, their chains (with policy and counters) and every
// rule with its raw text, its line number and its options. Options are kept
// generically, in order, as [Arg] values (name, value, negation), so any
// match module or target is represented, known or not; accessors such as
// [Rule.Value], [Rule.Target] and [Rule.Comment] answer the common
// questions without allocating.
//
// Storage is compact: rule text and option values are slices of the input,
// and the options of all rules share one arena, so that a dump of several
// hundred thousand rules stays a small multiple of its own size in memory.
//
// [Format] writes a dump as iptables-save does (rules grouped by chain in
// chain order); for iptables-save output, Format reproduces its input.
//
// Pasted forms are read into the same dumps: [ParseLenient] reads a dump
// through what a paste does to it, [ParseListing] the output of
// iptables -L, and [FromNFT] the tables of iptables-nft as nft list
// ruleset (or nft -j list ruleset) shows them.
package iptables
