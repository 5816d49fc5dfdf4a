package resolve

import "github.com/proxyscan/proxyscan/parsers/iptables"

// WaitLayoutAhead waits for the finding ReadLayoutAhead started for d, if
// any is held.
func WaitLayoutAhead(d *iptables.Dump) {
	layoutAhead.Wait(d)
}
