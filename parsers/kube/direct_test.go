package kube

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// directJSON returns the JSON the direct decoder reads for chunk c (the
// converted form of a YAML chunk), or nil when the fast path would not
// use it.
func directJSON(c *chunk) []byte {
	if c.json {
		if fastJSONSafe(c.data) {
			return c.data
		}
		return nil
	}
	js, _ := yamlToJSON(nil, c.data)
	return js
}

// compareDirect decodes js as a Service and as an EndpointSlice with the
// direct decoder and with encoding/json. It reports whether the direct
// decoder read either, and an error when it read one that encoding/json
// refuses or reads differently.
func compareDirect(js []byte) (taken bool, err error) {
	x := &direct{}
	for _, try := range []struct {
		fresh  func() any
		decode func(v any) bool
	}{
		{func() any { return &corev1.Service{} }, func(v any) bool { return x.service(js, v.(*corev1.Service)) }},
		{func() any { return &discoveryv1.EndpointSlice{} }, func(v any) bool { return x.endpointSlice(js, v.(*discoveryv1.EndpointSlice)) }},
	} {
		got, want := try.fresh(), try.fresh()
		if !try.decode(got) {
			continue
		}
		taken = true
		if err := json.Unmarshal(js, want); err != nil {
			return true, fmt.Errorf("%q: the direct decoder reads a %T that encoding/json refuses: %v", js, want, err)
		}
		if !reflect.DeepEqual(got, want) {
			return true, fmt.Errorf("%q: the direct decoder reads\n%+v\nencoding/json reads\n%+v", js, got, want)
		}
	}
	return taken, nil
}

// TestDirectMatchesEncodingJSON checks that wherever the direct decoder
// reads a Service or an EndpointSlice of the testdata exports, or one of
// the cases below, encoding/json reads the same object, and that it reads
// the ordinary ones.
func TestDirectMatchesEncodingJSON(t *testing.T) {
	for name, data := range exportInputs(t) {
		split := splitYAML
		if isJSON(data) {
			split = splitJSON
		}
		_ = split(name, data, func(c chunk) {
			if c.materialize(name, nil) != nil {
				return
			}
			js := directJSON(&c)
			if js == nil {
				return
			}
			if _, err := compareDirect(js); err != nil {
				t.Errorf("%s:%d: %v", name, c.line, err)
			}
		})
	}
	for _, tc := range []struct {
		in    string
		taken bool
	}{
		{`{"kind":"Service","apiVersion":"v1","metadata":{"name":"a","namespace":"b","labels":{"x":"y"},"creationTimestamp":"2024-01-01T00:00:00Z"},"spec":{"ports":[{"name":"http","protocol":"TCP","port":80,"targetPort":"http","nodePort":30000}],"clusterIP":"10.0.0.1","clusterIPs":["10.0.0.1"],"type":"NodePort","ipFamilies":["IPv4"],"ipFamilyPolicy":"SingleStack","internalTrafficPolicy":"Cluster","sessionAffinityConfig":{"clientIP":{"timeoutSeconds":10800}}},"status":{"loadBalancer":{"ingress":[{"ip":"1.2.3.4","ipMode":"VIP","ports":[{"port":80,"protocol":"TCP","error":"x"}]}]},"conditions":[{"type":"A","status":"True","lastTransitionTime":"2024-01-01T00:00:00Z","reason":"r","message":"m","observedGeneration":3}]}}`, true},
		{`{"kind":"EndpointSlice","apiVersion":"discovery.k8s.io/v1","metadata":{"name":"a-1","ownerReferences":[{"apiVersion":"v1","kind":"Service","name":"a","uid":"u","controller":true,"blockOwnerDeletion":true}]},"addressType":"IPv4","endpoints":[{"addresses":["10.0.0.1"],"conditions":{"ready":true,"serving":true,"terminating":false},"hostname":"h","targetRef":{"kind":"Pod","namespace":"b","name":"p","uid":"u2","apiVersion":"v1","resourceVersion":"1","fieldPath":"f"},"nodeName":"n","zone":"z","hints":{"forZones":[{"name":"z"}],"forNodes":[{"name":"n"}]},"deprecatedTopology":{"k":"v"}}],"ports":[{"name":"http","protocol":"TCP","port":8080,"appProtocol":"http"}]}`, true},
		{` {"metadata":null,"spec":null,"status":null} `, true},
		{`{"spec":{"ports":[],"selector":{},"clusterIPs":[],"externalIPs":null}}`, true},
		{`{"metadata":{"labels":{"a":null,"a":"2"},"annotations":{"k":"line\n\"q\" \u00e9 \/"}}}`, true},
		{`{"spec":{"ports":[null,{"port":-0,"targetPort":8080},{"targetPort":null}]}}`, true},
		{`{"endpoints":[null,{"conditions":null,"nodeName":null,"addresses":["1",null]}],"ports":[{"port":null}]}`, true},
		{`{"metadata":{"creationTimestamp":null,"deletionTimestamp":"2024-01-01T00:00:00+02:00","deletionGracePeriodSeconds":30,"generation":7}}`, true},
		{`{"metadata":{"creationTimestamp":"2024-01-01T00:00:00.123456789+05:30","deletionTimestamp":null}}`, true},
		{`{"metadata":{"creationTimestamp":"2024-01-01T00:00:00\u005a"}}`, true},
		// Outside the subset: left to the general path.
		{`{"metadata":{"creationTimestamp":"2024-13-01T00:00:00Z"}}`, false},
		{`{"metadata":{"creationTimestamp":"2024-01-01 00:00:00Z"}}`, false},
		{`{"Kind":"Service"}`, false},
		{`{"\u212aind":"X"}`, false},
		{`{"kind":"Service","kind":"Other"}`, false},
		{`{"spec":{"ports":[{"port":80}]},"spec":{}}`, false},
		{`{"spec":{"ports":[{"port":80.0}]}}`, false},
		{`{"spec":{"ports":[{"port":1e2}]}}`, false},
		{`{"spec":{"ports":[{"port":2147483648}]}}`, false},
		{`{"spec":{"ports":[{"port":"80"}]}}`, false},
		{`{"spec":{"ports":[{"targetPort":8080.5}]}}`, false},
		{`{"metadata":{"creationTimestamp":"garbage"}}`, false},
		{`{"metadata":{"managedFields":[]}}`, false},
		{`{"metadata":{"name":"a\ud800"}}`, false},
		{`{"metadata":{"name":"a\x"}}`, false},
		{`{"spec":{"unknownField":1}}`, false},
		{`{"spec":{"ports":[{"targetPort":,"port":1}]}}`, false},
		{`{"metadata":{"creationTimestamp":}}`, false},
		{`{"a":1,}`, false},
		{`{} {}`, false},
		{`{"metadata":{"name":"a"}`, false},
		{`[]`, false},
	} {
		taken, err := compareDirect([]byte(tc.in))
		if err != nil {
			t.Error(err)
		}
		if taken != tc.taken {
			t.Errorf("%s: read by the direct decoder: %v, want %v", tc.in, taken, tc.taken)
		}
	}
}

// FuzzDirect checks that whatever the direct decoder reads as a Service or
// an EndpointSlice, encoding/json reads the same.
func FuzzDirect(f *testing.F) {
	parsetest.Seeds(f, "parsers/kube/*.txtar")
	f.Add([]byte(`{"kind":"Service","metadata":{"name":"a","labels":{"x":"y"}},"spec":{"ports":[{"port":80,"targetPort":"http"}],"clusterIP":"10.0.0.1"}}`))
	f.Add([]byte(`{"kind":"EndpointSlice","addressType":"IPv4","endpoints":[{"addresses":["10.0.0.1"],"conditions":{"ready":true},"nodeName":"n","targetRef":{"kind":"Pod","name":"p"}}],"ports":[{"name":"http","port":80,"protocol":"TCP"}]}`))
	f.Add([]byte(`{"metadata":{"annotations":{"k":"a\"\\\/\b\f\n\r\t\u00e9"},"creationTimestamp":"2024-01-01T00:00:00Z"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !isJSON(data) {
			if js, ok := yamlToJSON(nil, data); ok {
				data = js
			}
		}
		if !fastJSONSafe(data) {
			return
		}
		if _, err := compareDirect(data); err != nil {
			t.Fatal(err)
		}
	})
}
