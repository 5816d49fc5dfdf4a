package resolve

import "github.com/proxyscan/proxyscan/parsers/iptables"

// WaitLayoutAhead waits for the finding ReadLayoutAhead started for d, if
// any is held.
func WaitLayoutAhead(d *iptables.Dump) {
	if v, ok := layoutAhead.Load(d); ok {
		<-v.(*traitsAhead).done
	}
}
