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
