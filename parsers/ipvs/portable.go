package ipvs

import "net"

// portableService has the fields of moby/ipvs' Service, in its order; a
// Linux test keeps the two in step.
type portableService struct {
	Address       net.IP
	Protocol      uint16
	Port          uint16
	FWMark        uint32
	SchedName     string
	Flags         uint32
	Timeout       uint32
	Netmask       uint32
	AddressFamily uint16
	PEName        string
	Stats         portableSvcStats
}

// portableSvcStats has the fields of moby/ipvs' SvcStats.
type portableSvcStats struct {
	Connections uint32
	PacketsIn   uint32
	PacketsOut  uint32
	BytesIn     uint64
	BytesOut    uint64
	CPS         uint32
	BPSOut      uint32
	PPSIn       uint32
	PPSOut      uint32
	BPSIn       uint32
}

// portableDestination has the fields of moby/ipvs' Destination.
type portableDestination struct {
	Address             net.IP
	Port                uint16
	Weight              int
	ConnectionFlags     uint32
	AddressFamily       uint16
	UpperThreshold      uint32
	LowerThreshold      uint32
	ActiveConnections   int
	InactiveConnections int
	Stats               portableSvcStats
}
