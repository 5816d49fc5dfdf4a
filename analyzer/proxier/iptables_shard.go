package proxier

import (
	"runtime"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/internal/fault"
)

// shardMinPorts is the number of service ports below which
// syncServicePorts writes them on one goroutine: splitting costs more than
// it saves for a small cluster (a variable for tests).
var shardMinPorts = 2000

// syncServicePorts writes the rules of every service port, in order, as
// calling write on each would. A large cluster's ports are split into
// contiguous shards written at once, each into tables of its own that
// declare the chains declared so far; the shards' tables are then merged
// in order (see ruleTable.merge), so the dump is the one the ports
// written one after the other give, byte for byte.
func (p *iptablesProxier) syncServicePorts(write func(p *iptablesProxier, sp *model.ServicePort)) {
	n := min(runtime.GOMAXPROCS(0), len(p.ports)/(shardMinPorts/2))
	if n < 2 || len(p.ports) < shardMinPorts {
		for _, sp := range p.ports {
			write(p, sp)
		}
		return
	}
	// Names computed once and kept by the ports and endpoints are
	// computed now, so that the shards only read them.
	for _, sp := range p.ports {
		_ = sp.String()
		for _, e := range sp.Endpoints {
			_ = e.String()
		}
	}
	// The shards' tables are copied before any shard writes: the first
	// writes into p's own.
	shards := make([]*iptablesProxier, n)
	shards[0] = p
	for i := 1; i < n; i++ {
		c := *p
		c.sepNames = map[*model.Endpoint]string{}
		c.mangle, c.filter, c.nat = p.mangle.emptyCopy(), p.filter.emptyCopy(), p.nat.emptyCopy()
		shards[i] = &c
	}
	g := fault.Group{Name: "proxier.syncServicePorts"}
	for i, q := range shards {
		ports := p.ports[i*len(p.ports)/n : (i+1)*len(p.ports)/n]
		// A port declares a chain per endpoint and a few of its own.
		chains := 0
		for _, sp := range ports {
			chains += len(sp.Endpoints) + 4
		}
		q.nat.reserve(chains)
		g.Go(func() error {
			for _, sp := range ports {
				write(q, sp)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		p.nat.fail(err)
		return
	}
	for _, q := range shards[1:] {
		p.mangle.merge(q.mangle)
		p.filter.merge(q.filter)
		p.nat.merge(q.nat)
	}
}
