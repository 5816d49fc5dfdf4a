package kube

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
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
		if IsJSON(data) {
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
		{`{"metadata":{"name":"a\ud800","annotations":{"k":"\ud83d\ude00 \ude00\ud83d"}}}`, true}, // surrogates as encoding/json reads them
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
		if !IsJSON(data) {
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

// shapeGen builds JSON objects shaped like Services and EndpointSlices
// from fuzz input: keys of the types (now and then misspelled, repeated
// or unknown) with values from a pool of edge cases, so that FuzzDirectShapes
// reaches deep into what the direct decoder accepts.
type shapeGen struct {
	in  []byte
	out []byte
}

func (g *shapeGen) pick(n int) int {
	if len(g.in) == 0 {
		return 0
	}
	b := g.in[0]
	g.in = g.in[1:]
	return int(b) % n
}

var shapeScalars = []string{
	`null`, `""`, `"a"`, `"TCP"`, `"a\"b\\c\/d\n"`, `"\u00e9\u0041"`, `"é"`, `"\t"`, `0`, `-0`, `1`, `80`, `-1`,
	`2147483647`, `2147483648`, `-2147483648`, `-2147483649`, `9223372036854775807`, `1.0`, `1e2`, `08`, `true`,
	`false`, `[]`, `{}`, `"2024-01-01T00:00:00Z"`, `"2024-01-01T00:00:00.5+02:00"`, `"garbage"`, `"8080"`, `[1]`, `{"a":1}`,
}

// shapeFields lists the keys of each object shape and the shape of their
// values ("" for a scalar, "[x" for an array of x, "{" for a string map).
var shapeFields = map[string][][2]string{
	"service":   {{"kind", ""}, {"apiVersion", ""}, {"metadata", "meta"}, {"spec", "spec"}, {"status", "status"}},
	"slice":     {{"kind", ""}, {"apiVersion", ""}, {"metadata", "meta"}, {"addressType", ""}, {"endpoints", "[endpoint"}, {"ports", "[eport"}},
	"meta":      {{"name", ""}, {"namespace", ""}, {"uid", ""}, {"generation", ""}, {"creationTimestamp", ""}, {"deletionTimestamp", ""}, {"deletionGracePeriodSeconds", ""}, {"labels", "{"}, {"annotations", "{"}, {"ownerReferences", "[owner"}, {"finalizers", "["}, {"resourceVersion", ""}},
	"owner":     {{"apiVersion", ""}, {"kind", ""}, {"name", ""}, {"uid", ""}, {"controller", ""}, {"blockOwnerDeletion", ""}},
	"spec":      {{"ports", "[port"}, {"selector", "{"}, {"clusterIP", ""}, {"clusterIPs", "["}, {"type", ""}, {"externalIPs", "["}, {"sessionAffinity", ""}, {"externalTrafficPolicy", ""}, {"healthCheckNodePort", ""}, {"publishNotReadyAddresses", ""}, {"sessionAffinityConfig", "affinity"}, {"ipFamilies", "["}, {"ipFamilyPolicy", ""}, {"allocateLoadBalancerNodePorts", ""}, {"internalTrafficPolicy", ""}, {"trafficDistribution", ""}},
	"affinity":  {{"clientIP", "clientIP"}},
	"clientIP":  {{"timeoutSeconds", ""}},
	"port":      {{"name", ""}, {"protocol", ""}, {"appProtocol", ""}, {"port", ""}, {"targetPort", ""}, {"nodePort", ""}},
	"status":    {{"loadBalancer", "lb"}, {"conditions", "[condition"}},
	"lb":        {{"ingress", "[ingress"}},
	"ingress":   {{"ip", ""}, {"hostname", ""}, {"ipMode", ""}, {"ports", "[pstatus"}},
	"pstatus":   {{"port", ""}, {"protocol", ""}, {"error", ""}},
	"condition": {{"type", ""}, {"status", ""}, {"observedGeneration", ""}, {"lastTransitionTime", ""}, {"reason", ""}, {"message", ""}},
	"endpoint":  {{"addresses", "["}, {"conditions", "conds"}, {"hostname", ""}, {"targetRef", "ref"}, {"nodeName", ""}, {"zone", ""}, {"hints", "hints"}, {"deprecatedTopology", "{"}},
	"conds":     {{"ready", ""}, {"serving", ""}, {"terminating", ""}},
	"ref":       {{"kind", ""}, {"namespace", ""}, {"name", ""}, {"uid", ""}, {"apiVersion", ""}, {"fieldPath", ""}},
	"hints":     {{"forZones", "[named"}, {"forNodes", "[named"}},
	"named":     {{"name", ""}},
	"eport":     {{"name", ""}, {"protocol", ""}, {"port", ""}, {"appProtocol", ""}},
}

func (g *shapeGen) ws() {
	if g.pick(4) == 0 {
		g.out = append(g.out, " \n\t\r"[g.pick(4)])
	}
}

func (g *shapeGen) value(shape string, depth int) {
	g.ws()
	switch {
	case depth > 6 || g.pick(12) == 0:
		g.out = append(g.out, shapeScalars[g.pick(len(shapeScalars))]...)
	case shape == "":
		if g.pick(3) == 0 {
			g.out = append(g.out, shapeScalars[g.pick(len(shapeScalars))]...)
		} else {
			g.out = append(g.out, shapeScalars[g.pick(8)]...) // strings and null mostly
		}
	case shape[0] == '[':
		g.out = append(g.out, '[')
		for i, n := 0, g.pick(4); i < n; i++ {
			if i > 0 {
				g.out = append(g.out, ',')
			}
			g.value(shape[1:], depth+1)
		}
		g.out = append(g.out, ']')
	case shape == "{":
		g.out = append(g.out, '{')
		for i, n := 0, g.pick(4); i < n; i++ {
			if i > 0 {
				g.out = append(g.out, ',')
			}
			g.out = append(g.out, []string{`"a"`, `"b"`, `"app.kubernetes.io/name"`, `"A"`}[g.pick(4)]...)
			g.out = append(g.out, ':')
			g.value("", depth+1)
		}
		g.out = append(g.out, '}')
	default:
		g.object(shape, depth+1)
	}
	g.ws()
}

func (g *shapeGen) object(shape string, depth int) {
	fields := shapeFields[shape]
	g.out = append(g.out, '{')
	for i, n := 0, g.pick(len(fields)+2); i < n; i++ {
		if i > 0 {
			g.out = append(g.out, ',')
		}
		g.ws()
		f := fields[g.pick(len(fields))]
		key := f[0]
		switch g.pick(16) {
		case 0:
			key = strings.ToUpper(key[:1]) + key[1:] // another case
		case 1:
			key = "unknown"
		}
		g.out = append(g.out, '"')
		g.out = append(g.out, key...)
		g.out = append(g.out, '"', ':')
		g.value(f[1], depth)
	}
	g.out = append(g.out, '}')
}

// FuzzDirectShapes checks the direct decoder against encoding/json on
// objects shaped like Services and EndpointSlices, built from the input.
func FuzzDirectShapes(f *testing.F) {
	f.Add([]byte("service-seed-0123456789abcdefghijklmnopqrstuvwxyz"))
	f.Add([]byte("\x01slice-seed-\x05\x07\x09\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"))
	f.Fuzz(func(t *testing.T, in []byte) {
		g := &shapeGen{in: in}
		g.object([]string{"service", "slice"}[g.pick(2)], 0)
		if _, err := compareDirect(g.out); err != nil {
			t.Fatal(err)
		}
	})
}
