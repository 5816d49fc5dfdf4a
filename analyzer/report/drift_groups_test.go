package report

import (
	"fmt"
	"reflect"
	"testing"
)

func TestNodeGroups(t *testing.T) {
	many := make([]string, 100)
	for i := range many {
		many[i] = fmt.Sprintf("node-%03d", i+1)
	}
	// rows of the matrix: a title, then a cell per node; node-037 lacks
	// the port, node-050 has a stale endpoint.
	row := func(title string, odd map[int]string) []string {
		r := []string{title}
		for i := range many {
			c := "ok"
			if v, ok := odd[i+1]; ok {
				c = v
			}
			r = append(r, c)
		}
		return r
	}
	for _, c := range []struct {
		name  string
		nodes []string
		rows  [][]string
		width int
		want  []nodeGroup
	}{
		{
			name:  "few nodes side by side",
			nodes: []string{"a", "b", "c"},
			rows:  [][]string{{"shop/cart:http", "ok", "ok", "missing"}},
			width: 100,
			want:  []nodeGroup{{"a", 1}, {"b", 2}, {"c", 3}},
		},
		{
			name:  "many nodes grouped by their cells",
			nodes: many,
			rows:  [][]string{row("shop/cart:http", map[int]string{37: "missing"}), row("shop/db:sql", map[int]string{50: "+10.244.9.9:5432"})},
			width: 100,
			want: []nodeGroup{
				{"node-001, node-002, node-003 and 95 more nodes", 1},
				{"node-037", 37},
				{"node-050", 50},
			},
		},
		{
			name:  "too narrow for three nodes",
			nodes: []string{"a", "b", "c"},
			rows:  [][]string{{"shop/cart:http", "ok", "ok", "missing −ClusterIP 10.96.0.10 tcp/80"}},
			width: 20,
			want:  []nodeGroup{{"a, b", 1}, {"c", 3}},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := nodeGroups(c.nodes, c.rows, c.width); !reflect.DeepEqual(got, c.want) {
				t.Errorf("nodeGroups = %+v, want %+v", got, c.want)
			}
		})
	}
}
