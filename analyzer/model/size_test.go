package model

import (
	"testing"
	"unsafe"
)

// TestEndpointSize guards the room an endpoint takes: a 10,000-Service
// node has one per endpoint of every service port (about 55,000), kept
// for the whole analysis.
func TestEndpointSize(t *testing.T) {
	if n := unsafe.Sizeof(Endpoint{}); n > 88 {
		t.Errorf("an Endpoint takes %d bytes, want at most 88", n)
	}
}
