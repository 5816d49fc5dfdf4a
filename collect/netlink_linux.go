//go:build linux

package collect

import (
	"fmt"
	"io"
	"net/netip"

	"github.com/google/nftables"
	"github.com/moby/ipvs"
)

// systemNetlink reads this node's IPVS (github.com/moby/ipvs) and
// nf_tables (github.com/google/nftables) over netlink.
type systemNetlink struct{}

// IPVS implements Netlink.
func (systemNetlink) IPVS() ([]VirtualServer, error) {
	h, err := ipvs.New("")
	if err != nil {
		return nil, fmt.Errorf("opening the IPVS netlink family: %w", err)
	}
	defer h.Close()
	svcs, err := h.GetServices()
	if err != nil {
		return nil, fmt.Errorf("listing IPVS services: %w", err)
	}
	out := make([]VirtualServer, 0, len(svcs))
	for _, s := range svcs {
		a, _ := netip.AddrFromSlice(s.Address)
		if s.Address.To4() != nil {
			a = a.Unmap()
		}
		v := VirtualServer{Protocol: s.Protocol, Addr: a, Port: s.Port, FWMark: s.FWMark, Sched: s.SchedName,
			Flags: s.Flags, Timeout: s.Timeout, Netmask: s.Netmask, PE: s.PEName}
		dests, err := h.GetDestinations(s)
		if err != nil {
			return nil, fmt.Errorf("listing the real servers of %s: %w", hostPort(a, s.Port), err)
		}
		for _, d := range dests {
			da, _ := netip.AddrFromSlice(d.Address)
			if d.Address.To4() != nil {
				da = da.Unmap()
			}
			v.Dests = append(v.Dests, RealServer{Addr: da, Port: d.Port, Fwd: d.ConnectionFlags & ipvs.ConnFwdMask, Weight: d.Weight,
				UpperThreshold: d.UpperThreshold, LowerThreshold: d.LowerThreshold,
				ActiveConns: d.ActiveConnections, InactConns: d.InactiveConnections})
		}
		out = append(out, v)
	}
	return out, nil
}

// NFTTables implements Netlink.
func (systemNetlink) NFTTables() ([]string, error) {
	c, err := nftables.New()
	if err != nil {
		return nil, fmt.Errorf("opening nf_tables netlink: %w", err)
	}
	tables, err := c.ListTables()
	if err != nil {
		return nil, fmt.Errorf("listing nf_tables tables: %w", err)
	}
	var out []string
	for _, t := range tables {
		out = append(out, familyName(t.Family)+" "+t.Name)
	}
	return out, nil
}

// NFTables implements Netlink.
func (systemNetlink) NFTables(w io.Writer) ([]string, error) {
	return renderNFTables(w, nil)
}
