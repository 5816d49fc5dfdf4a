package parsers

import (
	"bytes"
	"regexp"
	"strings"
)

// The lines of iptables -L's output that say what it is: a chain's
// header ("Chain NAME (policy ACCEPT)", "Chain NAME (2 references)", with
// -v the policy's counters, rounded to K, M, G or T without -x) and the column header under it ("target
// prot opt source destination", with --line-numbers "num" first, with -v
// the counters and interfaces).
var (
	ReListingChain  = regexp.MustCompile(`^Chain (\S+) \((?:policy (ACCEPT|DROP)(?: (\d+[KMGT]?) packets, (\d+[KMGT]?) bytes)?|(\d+) references?)\)\s*$`)
	ReListingHeader = regexp.MustCompile(`^(?:num +)?(?:pkts +bytes +)?target +prot +opt +(?:in +out +)?source +destination\s*$`)
)

// IsIPTablesListing reports whether data is the output of iptables -L:
// it holds at least one chain header followed by the column header.
func IsIPTablesListing(data []byte) bool {
	if !bytes.HasPrefix(data, []byte("Chain ")) && !bytes.Contains(data, []byte("\nChain ")) {
		return false // an iptables-save dump, which may be large, costs one scan
	}
	prevChain := false
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimRight(l, "\r \t")
		if prevChain && ReListingHeader.MatchString(strings.TrimLeft(l, " ")) {
			return true
		}
		prevChain = ReListingChain.MatchString(l)
	}
	return false
}
