package trace

// traceIPTables walks the iptables dumps of an iptables-mode data plane.
func traceIPTables(dp *Dataplane, pkt Packet, opts Options) (*Result, error) {
	return walk(dp, pkt, opts, false)
}
