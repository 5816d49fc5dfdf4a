package trace

import "errors"

func traceNFT(dp *Dataplane, pkt Packet, opts Options) (*Result, error) {
	return nil, errors.New("trace: nftables mode is not traced yet")
}
