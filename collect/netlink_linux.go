//go:build linux

package collect

import (
	"fmt"
	"io"
	"net"
	"net/netip"

	"github.com/google/nftables"
	"github.com/moby/ipvs"

	"github.com/proxyscan/proxyscan/parsers/nft"
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
		out = append(out, nft.FamilyName(t.Family)+" "+t.Name)
	}
	return out, nil
}

// NFTables implements Netlink.
func (systemNetlink) NFTables(w io.Writer) ([]string, error) {
	c, err := nftables.New()
	if err != nil {
		return nil, fmt.Errorf("opening nf_tables netlink: %w", err)
	}
	return writeNFTables(w, c)
}

// writeNFTables reads the ruleset over conn and writes it in `nft list
// ruleset` form: package nft converts what the netlink reader returns into
// its model (decompiling the rules as nft does) and formats it. The notes
// say what could not be carried over.
func writeNFTables(w io.Writer, conn *nftables.Conn) ([]string, error) {
	tables, notes, err := readNFTables(conn)
	if err != nil {
		return nil, err
	}
	ifnames := map[uint32]string{}
	if ifs, err := net.Interfaces(); err == nil {
		for _, i := range ifs {
			ifnames[uint32(i.Index)] = i.Name
		}
	}
	rs, more := nft.FromNetlink(tables, ifnames)
	if _, err := w.Write(nft.Format(rs)); err != nil {
		return nil, err
	}
	return append(notes, more...), nil
}

// readNFTables reads every table with its objects, sets (with their
// elements), chains and rules.
func readNFTables(conn *nftables.Conn) ([]nft.NetlinkTable, []string, error) {
	tables, err := conn.ListTables()
	if err != nil {
		return nil, nil, fmt.Errorf("listing tables: %w", err)
	}
	chains, err := conn.ListChains()
	if err != nil {
		return nil, nil, fmt.Errorf("listing chains: %w", err)
	}
	var out []nft.NetlinkTable
	var notes []string
	for _, t := range tables {
		name := nft.FamilyName(t.Family) + " " + t.Name
		nt := nft.NetlinkTable{Table: t}
		// Objects are optional: the netlink reader fails on the kinds it
		// does not know.
		if nt.Objects, err = conn.GetObjects(t); err != nil {
			notes = append(notes, fmt.Sprintf("the stateful objects of table %s could not be read: %v", name, err))
		}
		sets, err := conn.GetSets(t)
		if err != nil {
			return nil, nil, fmt.Errorf("listing sets of table %s: %w", name, err)
		}
		for _, s := range sets {
			elems, err := conn.GetSetElements(s)
			if err != nil {
				return nil, nil, fmt.Errorf("listing elements of set %s of table %s: %w", s.Name, name, err)
			}
			nt.Sets = append(nt.Sets, nft.NetlinkSet{Set: s, Elements: elems})
		}
		for _, c := range chains {
			if c.Table.Name != t.Name || c.Table.Family != t.Family {
				continue
			}
			rules, err := conn.GetRules(t, c)
			if err != nil {
				return nil, nil, fmt.Errorf("listing rules of chain %s of table %s: %w", c.Name, name, err)
			}
			nt.Chains = append(nt.Chains, nft.NetlinkChain{Chain: c, Rules: rules})
		}
		out = append(out, nt)
	}
	return out, notes, nil
}
