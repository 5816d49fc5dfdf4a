package model

import (
	"testing"

	"github.com/proxyscan/proxyscan/parsers/kube"
)

// TestLegacyEndpoints checks the ports of Services whose endpoints come
// from legacy Endpoints objects: ready and not-ready addresses with their
// node, the source, and a truncated object; a Service with an
// EndpointSlice ignores its Endpoints object.
func TestLegacyEndpoints(t *testing.T) {
	const export = `apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {clusterIP: 10.96.0.20, selector: {app: web}, ports: [{name: http, port: 80, targetPort: 8080}]}
---
apiVersion: v1
kind: Endpoints
metadata:
  name: web
  namespace: shop
subsets:
- addresses: [{ip: 10.244.1.5, nodeName: node-a}]
  notReadyAddresses: [{ip: 10.244.2.5, nodeName: node-b}]
  ports: [{name: http, port: 8080, protocol: TCP}]
---
apiVersion: v1
kind: Service
metadata: {name: big, namespace: shop}
spec: {clusterIP: 10.96.0.21, selector: {app: big}, ports: [{port: 80}]}
---
apiVersion: v1
kind: Endpoints
metadata:
  name: big
  namespace: shop
  annotations: {endpoints.kubernetes.io/over-capacity: truncated}
subsets:
- addresses: [{ip: 10.244.1.6}]
  ports: [{port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: sliced, namespace: shop}
spec: {clusterIP: 10.96.0.22, selector: {app: sliced}, ports: [{port: 80}]}
---
apiVersion: v1
kind: Endpoints
metadata: {name: sliced, namespace: shop}
subsets:
- addresses: [{ip: 10.244.9.9}]
  ports: [{port: 80}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: sliced-x1, namespace: shop, labels: {kubernetes.io/service-name: sliced}}
addressType: IPv4
endpoints: [{addresses: [10.244.1.7], conditions: {ready: true}}]
ports: [{port: 80, protocol: TCP}]
`
	objs, err := kube.Parse("cluster.yaml", []byte(export))
	if err != nil {
		t.Fatal(err)
	}
	ports := map[string]*ServicePort{}
	for _, sp := range BuildServicePorts(objs, BuildOptions{NodeName: "node-a"}) {
		ports[sp.String()] = sp
	}
	for _, tc := range []struct {
		port      string
		legacy    bool
		truncated bool
		endpoints string // IP:port ready local node, space-separated
	}{
		{"shop/web:http", true, false, "10.244.1.5:8080 true true node-a, 10.244.2.5:8080 false false node-b"},
		{"shop/big", true, true, "10.244.1.6:80 true false "},
		{"shop/sliced", false, false, "10.244.1.7:80 true false "},
	} {
		t.Run(tc.port, func(t *testing.T) {
			sp := ports[tc.port]
			if sp == nil {
				t.Fatalf("no port %s", tc.port)
			}
			if sp.FromLegacyEndpoints() != tc.legacy || sp.EndpointsTruncated != tc.truncated {
				t.Errorf("legacy %v truncated %v, want %v %v", sp.FromLegacyEndpoints(), sp.EndpointsTruncated, tc.legacy, tc.truncated)
			}
			got := ""
			for i, e := range sp.Endpoints {
				if i > 0 {
					got += ", "
				}
				got += e.String() + " " + boolText(e.Ready) + " " + boolText(e.Local) + " " + e.NodeName
			}
			if got != tc.endpoints {
				t.Errorf("endpoints %q, want %q", got, tc.endpoints)
			}
		})
	}
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
