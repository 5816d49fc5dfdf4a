// Package parsers holds the syntax side of proxyscan: one sub-package per
// input format (iptables-save, ipvsadm, ipset, nft, kubectl exports, ...),
// each turning bytes into typed values that keep the raw text and the
// position ([Pos]) of everything they parsed.
//
// This package itself defines what the format packages share: positions,
// positioned errors ([Error], [ErrorList]) and content-based detection of an
// input's [Kind] ([Detect]).
//
// Parsers never import the analyzer: they know syntax, not meaning.
package parsers
