package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"net"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/proxy"
	"k8s.io/kubernetes/pkg/proxy/ipvs"
	utilipset "k8s.io/kubernetes/pkg/proxy/ipvs/ipset"
	ipsettest "k8s.io/kubernetes/pkg/proxy/ipvs/ipset/testing"
	ipvstest "k8s.io/kubernetes/pkg/proxy/ipvs/testing"
	utilipvs "k8s.io/kubernetes/pkg/proxy/ipvs/util"
	ipvsutiltest "k8s.io/kubernetes/pkg/proxy/ipvs/util/testing"
	utiliptables "k8s.io/kubernetes/pkg/util/iptables"
)

type ipvsBackend struct {
	families []v1.IPFamily
	ipt      map[v1.IPFamily]*recIPT
	nl       map[v1.IPFamily]*ipvstest.FakeNetlinkHandle
	ipvs     *ipvsutiltest.FakeIPVS
	ipset    *ipsettest.FakeIPSet
	prov     proxy.Provider
}

func newIPVSBackend(ctx context.Context, in *inputs) (*ipvsBackend, error) {
	b := &ipvsBackend{
		families: in.families,
		ipt:      map[v1.IPFamily]*recIPT{},
		nl:       map[v1.IPFamily]*ipvstest.FakeNetlinkHandle{},
		// One kernel: the IPVS table and the ipsets are shared by the
		// proxiers of both families, as on a real node.
		ipvs:  ipvsutiltest.NewFake(),
		ipset: ipsettest.NewFake("7.17"),
	}
	det := localDetectors(in.config, in.podCIDRs)
	provs := map[v1.IPFamily]proxy.Provider{}
	for _, fam := range in.families {
		ipt := newRecIPT(fam)
		p, err := ipvs.NewProxier(ctx, in.config, fam, ipt, b.ipvs, b.ipset, newSysctl(in), det[fam],
			in.nodeName, in.nodeIPs[fam], recorder(), nil, false)
		if err != nil {
			return nil, fmt.Errorf("%s ipvs proxier: %w", fam, err)
		}
		nl := ipvstest.NewFakeNetlinkHandle(fam == v1.IPv6Protocol)
		var lo, eth []string
		for _, a := range nodeInterfaceAddrs(in) {
			if a.IP.IsLoopback() {
				lo = append(lo, a.IP.String())
			} else {
				eth = append(eth, a.IP.String())
			}
		}
		_ = nl.SetLocalAddresses("lo", lo...)
		_ = nl.SetLocalAddresses("eth0", eth...)
		setField(p, "netlinkHandle", ipvs.NetLinkHandle(nl))
		replaceHostHandles(p, in)
		b.ipt[fam] = ipt
		b.nl[fam] = nl
		provs[fam] = p
	}
	b.prov = joinProviders(in.families, provs)
	return b, nil
}

func (b *ipvsBackend) provider() proxy.Provider { return b.prov }

// ipvsSortChains are the chains the ipvs proxier writes in map order.
var ipvsSortChains = map[utiliptables.Table][]string{
	utiliptables.TableFilter: {"KUBE-IPVS-OUT-FILTER"},
}

func (b *ipvsBackend) write(dir string, opts options) error {
	for _, fam := range b.families {
		var sortChains map[utiliptables.Table][]string
		if opts.sort {
			sortChains = ipvsSortChains
		}
		text, err := renderRestore(b.ipt[fam], sortChains)
		if err != nil {
			return err
		}
		sfx := familySuffix(fam)
		if err := writeFile(dir, "iptables-restore."+sfx, text); err != nil {
			return err
		}
		if opts.capture {
			loadable, sed := loadableIPVSRestore(text)
			if err := writeFile(dir, "iptables-restore."+sfx+".loadable", loadable); err != nil {
				return err
			}
			if err := writeFile(dir, "ipvs-fixup."+sfx+".sed", sed); err != nil {
				return err
			}
		}
	}
	vss, err := b.virtualServers()
	if err != nil {
		return err
	}
	if err := writeFile(dir, "ipvsadm.txt", renderIPVSList(vss)); err != nil {
		return err
	}
	if err := writeFile(dir, "ipvsadm-save.txt", renderIPVSSave(vss)); err != nil {
		return err
	}
	if err := writeFile(dir, "ipset-restore.txt", renderIPSetRestore(b.ipset)); err != nil {
		return err
	}
	var addrs []net.IP
	for _, fam := range b.families {
		bound, err := b.nl[fam].ListBindAddress("kube-ipvs0")
		if err != nil {
			return err
		}
		for _, a := range bound {
			addrs = append(addrs, net.ParseIP(a))
		}
	}
	sort.Slice(addrs, func(i, j int) bool { return ipLess(addrs[i], addrs[j]) })
	var kb strings.Builder
	for _, a := range addrs {
		if a.To4() != nil {
			fmt.Fprintf(&kb, "%s/32\n", a)
		} else {
			fmt.Fprintf(&kb, "%s/128\n", a)
		}
	}
	return writeFile(dir, "kube-ipvs0.txt", kb.String())
}

// ipLess orders IPv4 before IPv6, then by address bytes.
func ipLess(a, b net.IP) bool {
	a4, b4 := a.To4(), b.To4()
	if (a4 == nil) != (b4 == nil) {
		return a4 != nil
	}
	if a4 != nil {
		return bytes.Compare(a4, b4) < 0
	}
	return bytes.Compare(a.To16(), b.To16()) < 0
}

type vsEntry struct {
	vs  *utilipvs.VirtualServer
	rss []*utilipvs.RealServer
}

// virtualServers returns the virtual and real servers in the order
// ipvsadm -L and -S print them: libipvs sorts both lists with qsort and
// comparators that subtract unsigned 32-bit address words into a signed
// int (so 192.0.2.1 sorts before 10.0.0.1), and glibc's qsort is a merge
// sort. The kernel's listing order (its hash order) is not modelled: the
// input of the sort is put in a canonical order first, which gives
// ipvsadm's result whenever the comparator is consistent on the data.
func (b *ipvsBackend) virtualServers() ([]vsEntry, error) {
	vss, err := b.ipvs.GetVirtualServers()
	if err != nil {
		return nil, err
	}
	var out []vsEntry
	for _, vs := range vss {
		rss, err := b.ipvs.GetRealServers(vs)
		if err != nil {
			return nil, err
		}
		sort.Slice(rss, func(i, j int) bool { return canonDestLess(rss[i], rss[j]) })
		glibcMsort(rss, cmpDests)
		out = append(out, vsEntry{vs: vs, rss: rss})
	}
	sort.Slice(out, func(i, j int) bool { return canonServiceLess(out[i].vs, out[j].vs) })
	glibcMsort(out, func(a, b vsEntry) int { return cmpServices(a.vs, b.vs) })
	return out, nil
}

func afOf(ip net.IP) int {
	if ip.To4() != nil {
		return 2 // AF_INET
	}
	return 10 // AF_INET6
}

func protoNum(p string) int {
	switch strings.ToUpper(p) {
	case "TCP":
		return 6
	case "UDP":
		return 17
	case "SCTP":
		return 132
	}
	return 0
}

// cmpAddr is libipvs's address comparison: per 32-bit word in host order,
// the unsigned difference truncated to a C int.
func cmpAddr(a, b net.IP) int {
	if a4, b4 := a.To4(), b.To4(); a4 != nil && b4 != nil {
		return int(int32(binary.BigEndian.Uint32(a4) - binary.BigEndian.Uint32(b4)))
	}
	a16, b16 := a.To16(), b.To16()
	for i := 0; i < 16; i += 4 {
		if r := int(int32(binary.BigEndian.Uint32(a16[i:]) - binary.BigEndian.Uint32(b16[i:]))); r != 0 {
			return r
		}
	}
	return 0
}

// cmpServices is libipvs's ipvs_cmp_services (fwmark is always 0 here).
func cmpServices(a, b *utilipvs.VirtualServer) int {
	if r := afOf(a.Address) - afOf(b.Address); r != 0 {
		return r
	}
	if r := protoNum(a.Protocol) - protoNum(b.Protocol); r != 0 {
		return r
	}
	if r := cmpAddr(a.Address, b.Address); r != 0 {
		return r
	}
	return int(a.Port) - int(b.Port)
}

// cmpDests is libipvs's ipvs_cmp_dests.
func cmpDests(a, b *utilipvs.RealServer) int {
	if r := cmpAddr(a.Address, b.Address); r != 0 {
		return r
	}
	return int(a.Port) - int(b.Port)
}

func canonServiceLess(a, b *utilipvs.VirtualServer) bool {
	if x, y := afOf(a.Address), afOf(b.Address); x != y {
		return x < y
	}
	if x, y := protoNum(a.Protocol), protoNum(b.Protocol); x != y {
		return x < y
	}
	if c := bytes.Compare(a.Address.To16(), b.Address.To16()); c != 0 {
		return c < 0
	}
	return a.Port < b.Port
}

func canonDestLess(a, b *utilipvs.RealServer) bool {
	if c := bytes.Compare(a.Address.To16(), b.Address.To16()); c != 0 {
		return c < 0
	}
	return a.Port < b.Port
}

// glibcMsort sorts s in place like glibc's qsort (msort_with_tmp): a
// top-down merge sort that splits n into n/2 and n-n/2 and takes from the
// left run while cmp(left, right) <= 0.
func glibcMsort[T any](s []T, cmp func(a, b T) int) {
	if len(s) <= 1 {
		return
	}
	tmp := make([]T, len(s))
	var rec func(b []T)
	rec = func(b []T) {
		n := len(b)
		if n <= 1 {
			return
		}
		n1 := n / 2
		b1, b2 := b[:n1], b[n1:]
		rec(b1)
		rec(b2)
		t := tmp[:0]
		i, j := 0, 0
		for i < len(b1) && j < len(b2) {
			if cmp(b1[i], b2[j]) <= 0 {
				t = append(t, b1[i])
				i++
			} else {
				t = append(t, b2[j])
				j++
			}
		}
		t = append(t, b1[i:]...)
		// The rest of b2 is already in place.
		copy(b, t)
	}
	rec(s)
}

func hostPort(ip net.IP, port uint16) string {
	return net.JoinHostPort(ip.String(), strconv.Itoa(int(port)))
}

// schedFlags renders the scheduler flags ipvsadm 1.31 prints for sh and mh.
func schedFlags(vs *utilipvs.VirtualServer) []string {
	var out []string
	switch vs.Scheduler {
	case "sh":
		if vs.Flags&0x08 != 0 {
			out = append(out, "sh-fallback")
		}
		if vs.Flags&0x10 != 0 {
			out = append(out, "sh-port")
		}
	case "mh":
		if vs.Flags&0x08 != 0 {
			out = append(out, "mh-fallback")
		}
		if vs.Flags&0x10 != 0 {
			out = append(out, "mh-port")
		}
	}
	return out
}

// renderIPVSList prints the table as ipvsadm -Ln does (all counters 0).
func renderIPVSList(vss []vsEntry) string {
	var b strings.Builder
	b.WriteString("IP Virtual Server version 1.2.1 (size=4096)\n")
	b.WriteString("Prot LocalAddress:Port Scheduler Flags\n")
	b.WriteString("  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n")
	for _, e := range vss {
		proto := map[string]string{"TCP": "TCP ", "UDP": "UDP ", "SCTP": "SCTP"}[strings.ToUpper(e.vs.Protocol)]
		fmt.Fprintf(&b, "%s %s %s", proto, hostPort(e.vs.Address, e.vs.Port), e.vs.Scheduler)
		if f := schedFlags(e.vs); len(f) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(f, ","))
		}
		if e.vs.Flags&utilipvs.FlagPersistent != 0 {
			fmt.Fprintf(&b, " persistent %d", e.vs.Timeout)
		}
		b.WriteString("\n")
		for _, rs := range e.rss {
			fmt.Fprintf(&b, "  -> %-28s %-7s %-6d %-10d %-10d\n", hostPort(rs.Address, rs.Port), "Masq", rs.Weight, rs.ActiveConn, rs.InactiveConn)
		}
	}
	return b.String()
}

// renderIPVSSave prints the table as ipvsadm -Sn does.
func renderIPVSSave(vss []vsEntry) string {
	var b strings.Builder
	for _, e := range vss {
		opt := map[string]string{"TCP": "-t", "UDP": "-u", "SCTP": "--sctp-service"}[strings.ToUpper(e.vs.Protocol)]
		svc := opt + " " + hostPort(e.vs.Address, e.vs.Port)
		fmt.Fprintf(&b, "-A %s -s %s", svc, e.vs.Scheduler)
		if f := schedFlags(e.vs); len(f) > 0 {
			fmt.Fprintf(&b, " -b %s", strings.Join(f, ","))
		}
		if e.vs.Flags&utilipvs.FlagPersistent != 0 {
			fmt.Fprintf(&b, " -p %d", e.vs.Timeout)
		}
		b.WriteString("\n")
		for _, rs := range e.rss {
			fmt.Fprintf(&b, "-a %s -r %s -m -w %d\n", svc, hostPort(rs.Address, rs.Port), rs.Weight)
		}
	}
	return b.String()
}

// ipsetInitval is the fixed initval given to each hash set, so that the
// kernel's hash order (and thus ipset save's entry order) is reproducible:
// the 32-bit FNV-1a hash of the set name.
func ipsetInitval(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return h.Sum32()
}

// renderIPSetRestore writes the sets and entries the ipvs proxier created as
// an ipset restore file: sets in name order, each with the create options
// kube-proxy passes plus a fixed initval, entries in sorted order.
func renderIPSetRestore(f *ipsettest.FakeIPSet) string {
	var names []string
	for n := range f.Sets {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		// The fake keeps the IPSet as the proxier passed it; the real
		// runner fills in these defaults before running "ipset create".
		s := *f.Sets[n]
		if s.HashSize == 0 {
			s.HashSize = 1024
		}
		if s.MaxElem == 0 {
			s.MaxElem = 65536
		}
		if s.HashFamily == "" {
			s.HashFamily = utilipset.ProtocolFamilyIPV4
		}
		if s.PortRange == "" {
			s.PortRange = utilipset.DefaultPortRange
		}
		switch s.SetType {
		case utilipset.BitmapPort:
			fmt.Fprintf(&b, "create %s %s range %s\n", s.Name, s.SetType, s.PortRange)
		default:
			fmt.Fprintf(&b, "create %s %s family %s hashsize %d maxelem %d initval 0x%08x\n",
				s.Name, s.SetType, s.HashFamily, s.HashSize, s.MaxElem, ipsetInitval(s.Name))
		}
		entries := f.Entries[n].List()
		for _, e := range entries {
			fmt.Fprintf(&b, "add %s %s\n", s.Name, e)
		}
	}
	return b.String()
}

// loadableIPVSRestore replaces each "-m ipvs ..." match of a restore file
// by a unique comment, and returns the sed -E script that turns that
// comment, as iptables-save prints it, into iptables-save 1.8.9's rendering
// of the original match (libxt_ipvs: --vproto as a number, then --vaddr
// without a full-length mask, then --vport).
func loadableIPVSRestore(restore string) (string, string) {
	var out, sed strings.Builder
	n := 0
	for _, line := range strings.SplitAfter(restore, "\n") {
		if !strings.HasPrefix(line, "-A ") || !strings.Contains(line, " -m ipvs ") {
			out.WriteString(line)
			continue
		}
		nl := strings.HasSuffix(line, "\n")
		toks := strings.Fields(line)
		for i := 0; i+1 < len(toks); i++ {
			if toks[i] != "-m" || toks[i+1] != "ipvs" {
				continue
			}
			opts := map[string]string{}
			neg := map[string]bool{}
			j := i + 2
			pendingNeg := false
			for j < len(toks) {
				t := toks[j]
				if t == "!" {
					pendingNeg = true
					j++
					continue
				}
				if !strings.HasPrefix(t, "--") {
					break
				}
				if t == "--ipvs" {
					opts[t], neg[t] = "", pendingNeg
					j++
				} else if j+1 < len(toks) {
					opts[t], neg[t] = toks[j+1], pendingNeg
					j += 2
				} else {
					break
				}
				pendingNeg = false
			}
			n++
			placeholder := fmt.Sprintf("kpgen-ipvs-%d", n)
			rendered := []string{"-m", "ipvs"}
			add := func(opt, val string) {
				if neg[opt] {
					rendered = append(rendered, "!")
				}
				rendered = append(rendered, opt)
				if val != "" {
					rendered = append(rendered, val)
				}
			}
			if _, ok := opts["--ipvs"]; ok {
				add("--ipvs", "")
			}
			if v, ok := opts["--vproto"]; ok {
				add("--vproto", strconv.Itoa(protoNum(v)))
			}
			if v, ok := opts["--vaddr"]; ok {
				v = strings.TrimSuffix(strings.TrimSuffix(v, "/32"), "/128")
				add("--vaddr", v)
			}
			for _, o := range []string{"--vport", "--vportctl", "--vdir", "--vmethod"} {
				if v, ok := opts[o]; ok {
					add(o, v)
				}
			}
			rest := append([]string{}, toks[j:]...)
			toks = append(append(toks[:i], "-m", "comment", "--comment", placeholder), rest...)
			fmt.Fprintf(&sed, "s#-m comment --comment \"?%s\"?( |$)#%s\\1#\n", placeholder, strings.Join(rendered, " "))
			break
		}
		out.WriteString(strings.Join(toks, " "))
		if nl {
			out.WriteString("\n")
		}
	}
	return out.String(), sed.String()
}
