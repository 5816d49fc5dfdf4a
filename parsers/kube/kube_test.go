package kube

import (
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// summary is the golden form of what Parse read: every object's kind,
// name and line, and the fields proxyscan relies on.
type summary struct {
	Objects []string
	Ignored []string `json:",omitempty"`
	Details []string `json:",omitempty"`
}

func summarize(o *Objects) summary {
	var s summary
	for _, x := range o.Services {
		s.Objects = append(s.Objects, x.Pos.String()+" Service "+x.Namespace+"/"+x.Name)
		for _, p := range x.Ports {
			s.Details = append(s.Details, x.Pos.File+":"+itoa(p.Line)+" port "+p.Name+" "+itoa(int(p.Port))+" "+p.Text)
		}
		if _, ok := x.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; ok {
			s.Details = append(s.Details, "last-applied-configuration kept")
		}
	}
	for _, x := range o.EndpointSlices {
		s.Objects = append(s.Objects, x.Pos.String()+" EndpointSlice "+x.Namespace+"/"+x.Name+" ("+x.APIVersion+")")
		for _, e := range x.Endpoints {
			d := "endpoint " + strings.Join(e.Addresses, ",")
			if e.NodeName != nil {
				d += " node=" + *e.NodeName
			}
			if e.Zone != nil {
				d += " zone=" + *e.Zone
			}
			if e.Conditions.Ready != nil {
				d += " ready=" + boolStr(*e.Conditions.Ready)
			}
			s.Details = append(s.Details, d)
		}
	}
	for _, x := range o.Endpoints {
		s.Objects = append(s.Objects, x.Pos.String()+" Endpoints "+x.Namespace+"/"+x.Name)
	}
	for _, x := range o.ConfigMaps {
		s.Objects = append(s.Objects, x.Pos.String()+" ConfigMap "+x.Namespace+"/"+x.Name)
		for _, k := range []string{"config.conf", "kubeconfig.conf"} {
			if l, ok := x.DataLines[k]; ok {
				s.Details = append(s.Details, "data "+k+" starts on line "+itoa(l))
			}
		}
	}
	for _, x := range o.Nodes {
		s.Objects = append(s.Objects, x.Pos.String()+" Node "+x.Name)
	}
	for _, x := range o.Pods {
		s.Objects = append(s.Objects, x.Pos.String()+" Pod "+x.Namespace+"/"+x.Name)
	}
	for _, x := range o.DaemonSets {
		s.Objects = append(s.Objects, x.Pos.String()+" DaemonSet "+x.Namespace+"/"+x.Name)
	}
	for _, x := range o.ServiceCIDRs {
		s.Objects = append(s.Objects, x.Pos.String()+" ServiceCIDR "+x.Name+" "+strings.Join(x.Spec.CIDRs, ","))
	}
	for _, x := range o.Raw {
		s.Objects = append(s.Objects, x.Pos.String()+" raw "+x.Kind)
	}
	for _, x := range o.Ignored {
		s.Ignored = append(s.Ignored, x.Pos.String()+" "+x.Kind+" "+x.Namespace+"/"+x.Name)
	}
	return s
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	neg := i < 0
	if neg {
		i = -i
	}
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	if neg {
		return "-" + string(b)
	}
	return string(b)
}

func TestGolden(t *testing.T) {
	parsetest.Golden(t, "parsers/kube/*.txtar", func(t *testing.T, name string, a *txtar.Archive) map[string][]byte {
		o, err := Parse("cluster/export.yaml", parsetest.Section(a, "input"))
		if err != nil || parsetest.Section(a, "want.err") != nil {
			got := "<no error>"
			if err != nil {
				got = err.Error()
			}
			return map[string][]byte{"want.err": []byte(got + "\n")}
		}
		return map[string][]byte{"want.json": parsetest.JSON(t, summarize(o))}
	})
}

// FuzzParse checks that Parse never panics and that its errors name the
// file.
func FuzzParse(f *testing.F) {
	parsetest.Seeds(f, "parsers/kube/*.txtar")
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := Parse("fuzz.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		_ = summarize(o)
	})
}

// TestLean decodes an export with and without Options.Lean, by every
// decoding path: the lean objects lack exactly what Lean leaves out.
func TestLean(t *testing.T) {
	const export = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Service
  metadata:
    name: web
    namespace: shop
    uid: 6f1d8a34-0000-4000-8000-000000000001
    resourceVersion: "42"
    creationTimestamp: "2026-03-01T12:00:00Z"
    labels: {app: web}
  spec:
    selector: {app: web}
    clusterIP: 10.96.0.10
    ports:
    - {name: http, port: 80, protocol: TCP}
- apiVersion: discovery.k8s.io/v1
  kind: EndpointSlice
  metadata:
    name: web-abc
    namespace: shop
    uid: 6f1d8a34-0000-4000-8000-000000000002
    labels: {kubernetes.io/service-name: web}
    annotations: {endpoints.kubernetes.io/last-change-trigger-time: "2026-03-01T12:00:00Z"}
    ownerReferences:
    - {apiVersion: v1, kind: Service, name: web, uid: 6f1d8a34-0000-4000-8000-000000000001}
  addressType: IPv4
  ports:
  - {name: http, port: 8080, protocol: TCP}
  endpoints:
  - addresses: ["10.244.1.5"]
    conditions: {ready: true}
    hostname: web-0
    nodeName: node-a
    zone: zone-1
    targetRef: {kind: Pod, namespace: shop, name: web-0}
`
	for _, ref := range []bool{false, true} {
		full, err := ParseWith("export.yaml", []byte(export), Options{Reference: ref})
		if err != nil {
			t.Fatal(err)
		}
		lean, err := ParseWith("export.yaml", []byte(export), Options{Reference: ref, Lean: true})
		if err != nil {
			t.Fatal(err)
		}
		fs, ls := full.Services[0], lean.Services[0]
		if fs.UID == "" || fs.Spec.Selector == nil || fs.CreationTimestamp.IsZero() {
			t.Fatalf("reference=%v: the full Service lacks what the test leaves out: %+v", ref, fs.ObjectMeta)
		}
		if ls.UID != "" || !ls.CreationTimestamp.IsZero() || ls.Spec.Selector != nil {
			t.Errorf("reference=%v: lean Service keeps %q %q %v %v", ref, ls.UID, ls.ResourceVersion, ls.CreationTimestamp, ls.Spec.Selector)
		}
		// The resourceVersion tells which of two copies of an object is
		// the newer.
		if ls.Name != "web" || ls.Labels["app"] != "web" || ls.Spec.ClusterIP != "10.96.0.10" || len(ls.Spec.Ports) != 1 || ls.Pos != fs.Pos || ls.ResourceVersion != "42" {
			t.Errorf("reference=%v: lean Service lost what is read: %+v", ref, ls.Service)
		}
		fe, le := full.EndpointSlices[0], lean.EndpointSlices[0]
		if fe.Endpoints[0].TargetRef == nil || fe.Annotations == nil || fe.OwnerReferences == nil {
			t.Fatalf("reference=%v: the full slice lacks what the test leaves out", ref)
		}
		ep := le.Endpoints[0]
		if ep.TargetRef != nil || ep.Hostname != nil || le.Annotations != nil || le.OwnerReferences != nil || le.UID != "" {
			t.Errorf("reference=%v: lean slice keeps %+v %+v", ref, le.ObjectMeta, ep)
		}
		if le.Labels["kubernetes.io/service-name"] != "web" || ep.Addresses[0] != "10.244.1.5" || *ep.NodeName != "node-a" || *ep.Zone != "zone-1" ||
			ep.Conditions.Ready == nil || !*ep.Conditions.Ready || *le.Ports[0].Port != 8080 || le.Pos != fe.Pos {
			t.Errorf("reference=%v: lean slice lost what is read: %+v", ref, le.EndpointSlice)
		}
	}
}
