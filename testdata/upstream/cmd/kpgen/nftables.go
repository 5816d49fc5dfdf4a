package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/proxy"
	"k8s.io/kubernetes/pkg/proxy/nftables"
	"sigs.k8s.io/knftables"
)

type nftablesBackend struct {
	families []v1.IPFamily
	nft      map[v1.IPFamily]*knftables.Fake
	prov     proxy.Provider
}

func newNFTablesBackend(ctx context.Context, in *inputs) (*nftablesBackend, error) {
	b := &nftablesBackend{families: in.families, nft: map[v1.IPFamily]*knftables.Fake{}}
	det := localDetectors(in.config, in.podCIDRs)
	provs := map[v1.IPFamily]proxy.Provider{}
	for _, fam := range in.families {
		p, err := nftables.NewProxier(ctx, in.config, fam, det[fam],
			in.nodeName, in.nodeIPs[fam], recorder(), nil, false)
		if err != nil {
			return nil, fmt.Errorf("%s nftables proxier: %w", fam, err)
		}
		nftFamily := knftables.IPv4Family
		if fam == v1.IPv6Protocol {
			nftFamily = knftables.IPv6Family
		}
		fake := knftables.NewFake(nftFamily, "kube-proxy")
		setField(p, "nftables", knftables.Interface(fake))
		replaceHostHandles(p, in)
		b.nft[fam] = fake
		provs[fam] = p
	}
	b.prov = joinProviders(in.families, provs)
	return b, nil
}

func (b *nftablesBackend) provider() proxy.Provider { return b.prov }

func (b *nftablesBackend) write(dir string, opts options) error {
	for _, fam := range b.families {
		dump := b.nft[fam].Dump()
		if opts.sort {
			dump = sortElements(dump)
		}
		if err := writeFile(dir, "nft-dump."+familySuffix(fam), dump); err != nil {
			return err
		}
	}
	return nil
}

// sortElements sorts the "add element" lines of each set and map of a
// knftables.Fake dump. The fake keeps elements in insertion order, which is
// the proxier's map iteration order; the kernel's listing does not depend
// on it, so sorting only makes the dump itself reproducible.
func sortElements(dump string) string {
	lines := strings.SplitAfter(dump, "\n")
	setOf := func(l string) string {
		if !strings.HasPrefix(l, "add element ") {
			return ""
		}
		f := strings.Fields(l)
		if len(f) < 5 {
			return ""
		}
		return f[2] + " " + f[3] + " " + f[4]
	}
	for i := 0; i < len(lines); {
		set := setOf(lines[i])
		if set == "" {
			i++
			continue
		}
		j := i
		for j < len(lines) && setOf(lines[j]) == set {
			j++
		}
		sort.Strings(lines[i:j])
		i = j
	}
	return strings.Join(lines, "")
}
