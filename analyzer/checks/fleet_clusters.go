package checks

import (
	"fmt"
	"slices"
	"strings"
)

// A clusterGroup is the nodes of one cluster among those of a fleet:
// cross-node checks compare a node only with the nodes of its cluster.
type clusterGroup struct {
	// id is the uid of the cluster's default/kubernetes Service ("" for
	// the one group of a fleet whose nodes are not told apart).
	id    string
	nodes []*FleetNode
}

// label names the cluster in messages by its default/kubernetes Service's
// uid.
func (g clusterGroup) label() string {
	if g.id == "" {
		return "cluster not known"
	}
	return "Service default/kubernetes uid " + g.id
}

// clusterGroups sorts the nodes of a fleet by cluster, as the uid of the
// default/kubernetes Service of their exports tells it (the API server
// creates that Service with the cluster, and again only if it is
// deleted, so two uids are two clusters, or one cluster on either side
// of such a deletion). With one cluster or none known, every node is of one group,
// as nothing tells them apart. With several, each is a group, in the
// order of its first node, and the nodes whose exports do not hold the
// uid are apart: they are compared with none, as they could be of any.
func clusterGroups(nodes []*FleetNode) (groups []clusterGroup, apart []*FleetNode) {
	at := map[string]int{}
	for _, n := range nodes {
		id := n.cluster()
		if id == "" {
			continue
		}
		if _, ok := at[id]; !ok {
			at[id] = len(groups)
			groups = append(groups, clusterGroup{id: id})
		}
	}
	if len(groups) < 2 {
		return []clusterGroup{{nodes: nodes}}, nil
	}
	for _, n := range nodes {
		if i, ok := at[n.cluster()]; ok {
			groups[i].nodes = append(groups[i].nodes, n)
		} else {
			apart = append(apart, n)
		}
	}
	return groups, apart
}

// cluster returns the uid that names the node's cluster ("" when its
// exports do not say).
func (n *FleetNode) cluster() string {
	if n.print == nil {
		return ""
	}
	return n.print.cluster
}

// clustersNote says that the nodes are of several clusters and which
// nodes each holds.
func clustersNote(groups []clusterGroup) string {
	parts := make([]string, len(groups))
	for i, g := range groups {
		names := make([]string, len(g.nodes))
		for j, n := range g.nodes {
			names[j] = n.Name
		}
		parts[i] = fmt.Sprintf("%s (%s)", nodeNames(names), g.label())
	}
	return fmt.Sprintf("the inputs hold nodes of %d clusters, told apart by the uid of their Service default/kubernetes; "+
		"each node is compared only with the nodes of its cluster: %s", len(groups), strings.Join(parts, "; "))
}

// joinDrifts returns the drift of a fleet from those of its clusters
// (drifts[i] that of groups[i], nil when it has none): one
// matrix over every node, in which a row of one cluster gives the nodes of
// the others the state unknown (they were not compared), and Clusters
// lists the clusters. With one cluster it is that cluster's drift.
func joinDrifts(nodes []*FleetNode, groups []clusterGroup, drifts []*Drift) *Drift {
	if len(groups) == 1 {
		return drifts[0]
	}
	if !slices.ContainsFunc(drifts, func(d *Drift) bool { return d != nil }) {
		return nil
	}
	d := &Drift{Ports: []DriftPort{}}
	for _, n := range nodes {
		d.Nodes = append(d.Nodes, n.Name)
	}
	for _, g := range groups {
		c := DriftCluster{ID: g.id}
		for _, n := range g.nodes {
			c.Nodes = append(c.Nodes, n.Name)
		}
		d.Clusters = append(d.Clusters, c)
	}
	for gi, gd := range drifts {
		if gd == nil {
			continue
		}
		g := groups[gi]
		d.Alike += gd.Alike
		for _, row := range gd.Ports {
			cells := make([]DriftCell, len(nodes))
			for i := range cells {
				cells[i].State = CellUnknown
			}
			for j, c := range row.Cells {
				cells[g.nodes[j].index] = c
			}
			row.Cells, row.Cluster = cells, g.id
			d.Ports = append(d.Ports, row)
		}
		for _, f := range gd.Fields {
			values := make([]string, len(nodes))
			for j, v := range f.Values {
				values[g.nodes[j].index] = v
			}
			d.Fields = append(d.Fields, DriftField{Field: f.Field, Values: values, Cluster: g.id})
		}
	}
	return d
}
