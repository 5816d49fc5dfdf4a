//go:build !linux

package ipvs

// VirtualServer mirrors the virtual-server value of github.com/moby/ipvs,
// which builds only on Linux.
type VirtualServer = portableService

// RealServer mirrors the destination value of github.com/moby/ipvs.
type RealServer = portableDestination

// SvcStats mirrors the statistics value of a moby/ipvs virtual server.
type SvcStats = portableSvcStats

// DstStats mirrors the statistics value of a moby/ipvs destination.
type DstStats = portableSvcStats
