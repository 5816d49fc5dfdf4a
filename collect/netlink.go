package collect

import (
	"bufio"
	"context"
	"io"
	"os"
	"strings"
)

// Netlink reads kernel state directly, for nodes without ipvsadm or nft.
type Netlink interface {
	// IPVS lists the IPVS virtual servers and their real servers.
	IPVS() ([]VirtualServer, error)
	// NFTables writes the nf_tables ruleset in `nft list ruleset` form, as
	// far as it can be rendered; the notes say what could not be.
	NFTables(w io.Writer) (notes []string, err error)
	// NFTTables lists the nf_tables tables as "family name".
	NFTTables() ([]string, error)
}

func (e *env) netlink() Netlink {
	if e.opts.Netlink != nil {
		return e.opts.Netlink
	}
	return systemNetlink{}
}

// ipvsHeader returns the first line of /proc/net/ip_vs, the header
// ipvsadm prints.
func (e *env) ipvsHeader() string {
	f, err := os.Open(e.path("/proc/net/ip_vs"))
	if err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		if sc.Scan() && strings.HasPrefix(sc.Text(), "IP Virtual Server version") {
			return sc.Text()
		}
	}
	return "IP Virtual Server version 0.0.0 (size=0)"
}

func netlinkIPVSList(ctx context.Context, e *env, w *Writer) error {
	w.Record().Path = "generic netlink family IPVS"
	vs, err := e.netlink().IPVS()
	if err != nil {
		return err
	}
	SortIPVS(vs)
	if err := FormatIPVSList(w, e.ipvsHeader(), vs); err != nil {
		return err
	}
	w.Note("rendered in ipvsadm -Ln --exact form from %d virtual servers", len(vs))
	return nil
}

func netlinkIPVSSave(ctx context.Context, e *env, w *Writer) error {
	w.Record().Path = "generic netlink family IPVS"
	vs, err := e.netlink().IPVS()
	if err != nil {
		return err
	}
	SortIPVS(vs)
	if err := FormatIPVSSave(w, vs); err != nil {
		return err
	}
	w.Note("rendered in ipvsadm -Sn form from %d virtual servers", len(vs))
	return nil
}

func netlinkNFTText(ctx context.Context, e *env, w *Writer) error {
	w.Record().Path = "netlink NETLINK_NETFILTER nf_tables"
	notes, err := e.netlink().NFTables(w)
	if err != nil {
		return err
	}
	if len(notes) > 0 {
		for _, n := range notes {
			w.Partial("%s", n)
		}
	} else {
		w.Note("rendered in nft list ruleset form")
	}
	if !strings.Contains(strings.Join(notes, " "), "JSON") {
		w.Note("nft -j (JSON) form not available over netlink")
	}
	return nil
}
