// Package nft parses the nftables ruleset listings that proxyscan collects:
// the text of `nft list ruleset` (as printed by nft 1.0.x) and the JSON of
// `nft -j list ruleset` (libnftables JSON schema version 1). Both forms give
// the same model: a [Ruleset] of [Table]s holding [Chain]s, [Set]s (sets,
// maps and verdict maps, with their [Element]s) and [Rule]s made of typed
// statements ([Stmt]) over typed expressions ([Expr]).
//
// The model is syntax, not meaning: it knows that a rule is
// `ip daddr . meta l4proto . th dport vmap @service-ips`, not which Service
// that map belongs to.
//
// # Values
//
// Constants (addresses, prefixes, ranges, ports, protocol names, marks,
// flag lists, quoted interface names) are kept as the text nft prints for
// them ([Value], [Element.Key]). Values read from JSON are rendered the way
// nft's text form shows them, using the datatype of the expression they are
// compared with or the set they belong to: a mark 16384 becomes 0x00004000,
// an interface name eth0 becomes "eth0", a port stays 80.
//
// # Statements nobody models
//
// A statement the package does not model is never guessed at: the text from
// that statement to the end of the rule (before the rule comment) is kept in
// an [Unsupported] statement and the rule is flagged ([Rule.Unsupported]).
// For JSON input the statement's JSON is kept instead.
//
// # Text and JSON
//
// [Parse] reads either form (JSON when the input starts with '{'); [ParseText]
// and [ParseJSON] read one form. For the same ruleset both give equal models
// except for what the two forms carry differently:
//
//   - positions: text objects have a line ([parsers.Pos.Line]); JSON objects
//     have a JSON path such as $.nftables[42] ([parsers.Pos.Path]), and
//     [Ruleset.Line] gives the line on which the item of such a path starts
//     (1 for all of them in nft -j's own output, which is one line);
//   - handles: JSON always carries them, text only from `nft -a`;
//   - [Rule.Raw]: the text line for text input, the rendering of the
//     statements for JSON input (equal when the rule is fully modelled);
//   - what nft 1.0.6's JSON output omits: table and chain comments, chain
//     devices, the set flag "dynamic", "auto-merge", "typeof" declarations
//     (JSON gives the datatypes instead) and "interval" map data;
//   - element expiry times, which count down between two listings.
//
// [Format] prints a model as `nft list ruleset` prints it; for a ruleset
// parsed from nft's own text output it reproduces the input byte for byte
// (without `# handle` annotations, see [FormatOptions]).
//
// The package reads nft's JSON but never writes it; tests that need the
// JSON listing of a ruleset they have as text print it with
// internal/nftjson.
//
// nft 1.0.6 itself prints a dormant table's flags wrongly in JSON (the
// name of the table's first object instead of "dormant"); [ParseJSON] keeps
// what it finds.
//
// # Netlink
//
// [FromNetlink] converts what github.com/google/nftables reads of the
// kernel's ruleset ([NetlinkTable]: tables, counters, sets with their
// elements, chains with their rules) into the same model, so that [Format]
// prints it as `nft list ruleset` would: collect uses it on nodes without
// nft. Rules are decompiled from their netlink expressions as nft
// decompiles them, hiding the protocol dependencies nft hides; set
// elements come in nft's order. What the netlink reader does not return is
// missing (comments of tables, chains and sets; typeof declarations, shown
// as datatypes), the key types of verdict maps it loses are learned from
// the lookups that use them, and a rule holding an expression the
// decompiler does not know keeps it in an [Unsupported] statement that nft
// refuses to load. [FromTable], [FromChain] and [FromSet] convert one
// table, chain or set.
package nft
