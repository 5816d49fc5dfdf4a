// Package paste repairs what pasting does to a dump: the shell prompt and
// command lines around it, markdown code fences and "> " quote markers, an
// editor's line numbers, Windows line ends, terminal colour sequences,
// trailing blanks, kubectl tables and kube-proxy log lines mixed in.
//
// [Clean] is a pre-pass shared by every input kind: it returns the input
// with the damage removed and a [parsers.LineNote] for every line it
// removed or changed. The repaired text has as many lines as the input (a
// removed line is left empty), so that the line numbers of what a parser
// reads from it are those of the file the user gave.
//
// [Detect] recognises an input's kind through that damage, and recognises
// the rules of an iptables dump that lost its table headers (the output
// of iptables-save | grep).
package paste
