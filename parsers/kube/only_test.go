package kube

import (
	"net/netip"
	"testing"
)

// TestOnlyKeeps checks which Services and EndpointSlices Only keeps, from
// their text: every one whose decoding may be the destination's Service
// or its endpoints, whatever the spelling (a node port in another case or
// base, an escape), and not the others.
func TestOnlyKeeps(t *testing.T) {
	const first = `{"kind":"Service","metadata":{"name":"first","namespace":"alpha"},"spec":{"clusterIP":"10.96.0.1"}}`
	for _, tc := range []struct {
		name, text string
		keep       bool
	}{
		{"its address", `{"metadata":{"name":"web","namespace":"shop"},"spec":{"clusterIP":"10.96.0.10"}}`, true},
		{"another address", `{"metadata":{"name":"web","namespace":"shop"},"spec":{"clusterIP":"10.96.0.11"}}`, false},
		{"its node port", `{"spec":{"type":"NodePort","ports":[{"port":80,"nodePort":30080}]}}`, true},
		{"another node port", `{"spec":{"type":"NodePort","ports":[{"port":80,"nodePort":30081}]}}`, false},
		{"node port in YAML", "spec:\n  ports:\n  - port: 80\n    nodePort: 30080\n", true},
		{"node port in hex", "spec:\n  ports:\n  - nodePort: 0x757a\n", true},
		{"node port with zeros", "spec:\n  ports:\n  - nodePort: 030080\n", true},
		{"node port quoted", `{"spec":{"ports":[{"nodePort":"30080"}]}}`, true},
		{"node port in capitals", `{"spec":{"ports":[{"NODEPORT":30080}]}}`, true},
		{"node port as a float", `{"spec":{"ports":[{"nodePort":3.008e4}]}}`, true},
		{"an escape", `{"spec":{"clusterIP":"10.96.0.1\u0030"}}`, true},
		{"IPv4-mapped", `{"spec":{"clusterIP":"::ffff:a60:a"}}`, true},
	} {
		o := &Only{Addr: netip.MustParseAddr("10.96.0.10"), Port: 30080}
		o.keepService([]byte(first))
		if got := o.keepService([]byte(tc.text)); got != tc.keep {
			t.Errorf("Service, %s: kept %v, want %v", tc.name, got, tc.keep)
		}
	}
	o := &Only{Addr: netip.MustParseAddr("10.96.0.10"), Port: 80}
	o.keepService([]byte(first))
	o.keepService([]byte(`{"metadata":{"name":"web","namespace":"shop"},"spec":{"clusterIP":"10.96.0.10"}}`))
	for _, tc := range []struct {
		name, text string
		keep       bool
	}{
		{"of the Service", `{"metadata":{"namespace":"shop","labels":{"kubernetes.io/service-name":"web"}}}`, true},
		{"of its namespace", `{"metadata":{"namespace":"shop","labels":{"kubernetes.io/service-name":"db"}}}`, true},
		{"of the first's namespace", "metadata:\n  namespace: alpha\n  labels:\n    kubernetes.io/service-name: db\n", true},
		{"of another", `{"metadata":{"namespace":"bank","labels":{"kubernetes.io/service-name":"db"}}}`, false},
		{"of another, in YAML", "metadata:\n  namespace: bank\n  labels:\n    kubernetes.io/service-name: db\n", false},
		{"of the cluster's", `{"metadata":{"namespace":"default","labels":{"kubernetes.io/service-name":"kubernetes"}}}`, true},
		{"without the label", `{"metadata":{"namespace":"bank"}}`, true},
		{"without a namespace", `{"metadata":{"labels":{"kubernetes.io/service-name":"db"}}}`, false}, // every Service kept has one
		{"label twice", `{"metadata":{"namespace":"bank","labels":{"kubernetes.io/service-name":"db"},"annotations":{"kubernetes.io/service-name":"x"}}}`, true},
		{"an escape", `{"metadata":{"namespace":"bank","labels":{"kubernetes.io/service-name":"d\u0062"}}}`, true},
	} {
		if got := o.keepSlice([]byte(tc.text)); got != tc.keep {
			t.Errorf("EndpointSlice, %s: kept %v, want %v", tc.name, got, tc.keep)
		}
	}
	if err := o.err(); err != nil {
		t.Fatal(err)
	}
	// A YAML object with an alias is decoded whatever it holds; a JSON one
	// is looked at.
	alias := "apiVersion: v1\nkind: Service\nmetadata:\n  name: db\n  namespace: bank\nspec:\n  clusterIP: *ip\n"
	if keep, _ := o.keep(&chunk{data: []byte(alias), apiVersion: "v1", kind: "Service"}); !keep {
		t.Errorf("a YAML Service with an alias left out")
	}
	if keep, _ := o.keep(&chunk{data: []byte(`{"metadata":{"name":"*"},"spec":{"clusterIP":"10.96.0.99"}}`), json: true, apiVersion: "v1", kind: "Service"}); keep {
		t.Errorf("a JSON Service of another address kept")
	}
	// A Service kept after a slice was left out.
	o.keepService([]byte(`{"metadata":{"name":"db","namespace":"bank"},"spec":{"clusterIP":"10.96.0.10"}}`))
	if o.err() != ErrOnlyOrder {
		t.Errorf("a Service kept after a slice left out: %v, want ErrOnlyOrder", o.err())
	}
}
