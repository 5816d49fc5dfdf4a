package model

import (
	"fmt"
	"strconv"
	"strings"
)

// Origin is where a packet enters the node: from a pod on it (forwarded:
// PREROUTING, FORWARD, POSTROUTING), from a process of the node itself
// (OUTPUT, POSTROUTING), or from outside (to a NodePort, an external IP or
// a load balancer IP, on the node's interface). kube-proxy treats the three
// differently for external destinations; the tracer enters the hooks by it.
type Origin uint8

// Packet origins; the zero value is FromPod.
const (
	FromPod Origin = iota
	FromNode
	FromExternal
	numOrigins
)

// NumOrigins is the number of origins, for arrays indexed by one.
const NumOrigins = int(numOrigins)

// Origins lists the origins in a fixed order.
var Origins = []Origin{FromPod, FromNode, FromExternal}

var originNames = [numOrigins]string{"pod", "node", "external"}

// String returns "pod", "node" or "external".
func (o Origin) String() string {
	if o < numOrigins {
		return originNames[o]
	}
	return "origin(" + strconv.Itoa(int(o)) + ")"
}

// ParseOrigin returns the origin named s ("pod", "node", "external", in
// any case).
func ParseOrigin(s string) (Origin, error) {
	for o, n := range originNames {
		if strings.EqualFold(n, s) {
			return Origin(o), nil
		}
	}
	return 0, fmt.Errorf("unknown packet origin %q (want pod, node or external)", s)
}

// MarshalText implements encoding.TextMarshaler: the origin's name.
func (o Origin) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler; empty text is FromPod.
func (o *Origin) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*o = FromPod
		return nil
	}
	v, err := ParseOrigin(string(b))
	*o = v
	return err
}
