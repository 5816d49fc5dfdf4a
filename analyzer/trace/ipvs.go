package trace

import "errors"

func traceIPVS(dp *Dataplane, pkt Packet, opts Options) (*Result, error) {
	return nil, errors.New("trace: IPVS mode is not traced yet")
}
