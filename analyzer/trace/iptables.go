package trace

import "errors"

func traceIPTables(dp *Dataplane, pkt Packet, opts Options) (*Result, error) {
	return nil, errors.New("trace: iptables mode is not traced yet")
}
