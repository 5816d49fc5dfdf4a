//go:build linux

package ipvs

import mobyipvs "github.com/moby/ipvs"

// VirtualServer is the virtual-server value of github.com/moby/ipvs.
type VirtualServer = mobyipvs.Service

// RealServer is the destination (real server) value of github.com/moby/ipvs.
type RealServer = mobyipvs.Destination

// SvcStats is the statistics value of a moby/ipvs virtual server.
type SvcStats = mobyipvs.SvcStats

// DstStats is the statistics value of a moby/ipvs destination.
type DstStats = mobyipvs.DstStats
