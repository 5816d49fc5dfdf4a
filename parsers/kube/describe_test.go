package kube

import (
	"strings"
	"testing"
)

// TestDescribeValues checks the values read from kubectl describe output:
// each key's lines as they are, comments kept, without the blank line
// kubectl prints after a value or Windows line ends.
func TestDescribeValues(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		want        map[string]string
		lines       map[string]int
	}{
		{
			name: "two keys",
			input: "Name:         kube-proxy\nNamespace:    kube-system\nLabels:       <none>\nAnnotations:  <none>\n\nData\n====\n" +
				"config.conf:\n----\nkind: KubeProxyConfiguration\n\nipvs:\n  scheduler: wrr # ops\n\nkubeconfig.conf:\n----\nkind: Config\n\nBinaryData\n====\n\nEvents:  <none>\n",
			want:  map[string]string{"config.conf": "kind: KubeProxyConfiguration\n\nipvs:\n  scheduler: wrr # ops\n", "kubeconfig.conf": "kind: Config\n"},
			lines: map[string]int{"config.conf": 10, "kubeconfig.conf": 17},
		},
		{
			name:  "Windows line ends, no BinaryData (kubectl before 1.20)",
			input: "Name:         kube-proxy\r\nNamespace:    kube-system\r\n\r\nData\r\n====\r\nconfig.conf:\r\n----\r\nmode: iptables\r\n\r\nEvents:  <none>\r\n",
			want:  map[string]string{"config.conf": "mode: iptables\n"},
			lines: map[string]int{"config.conf": 8},
		},
		{
			name:  "a value line that looks like a key without dashes under it",
			input: "Name:  kube-proxy\nNamespace:  kube-system\nData\n====\nconfig.conf:\n----\nipvs:\n  x: 1\nmode:\n",
			want:  map[string]string{"config.conf": "ipvs:\n  x: 1\nmode:\n"},
			lines: map[string]int{"config.conf": 7},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !IsDescribe([]byte(tc.input)) {
				t.Fatal("not recognised as kubectl describe output")
			}
			o, err := ParseWith("cm.txt", []byte(tc.input), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(o.ConfigMaps) != 1 {
				t.Fatalf("%d ConfigMaps, want 1", len(o.ConfigMaps))
			}
			cm := o.ConfigMaps[0]
			if cm.Name != "kube-proxy" || cm.Namespace != "kube-system" || cm.Kind != "ConfigMap" {
				t.Errorf("object %s %s/%s", cm.Kind, cm.Namespace, cm.Name)
			}
			for k, v := range tc.want {
				if cm.Data[k] != v {
					t.Errorf("%s = %q, want %q", k, cm.Data[k], v)
				}
				if cm.DataLines[k] != tc.lines[k] {
					t.Errorf("%s starts on line %d, want %d", k, cm.DataLines[k], tc.lines[k])
				}
			}
			if len(cm.Data) != len(tc.want) {
				t.Errorf("keys %v, want %v", cm.Data, tc.want)
			}
			// Streamed in small windows, the same objects.
			for _, w := range []int{1, 3, 1 << 20} {
				sameParse(t, "cm.txt", []byte(tc.input), w)
			}
		})
	}
	if IsDescribe([]byte("apiVersion: v1\nkind: ConfigMap\ndata:\n  x: |\n    Name: a\nNamespace: b\nData\n====\n")) {
		t.Error("a YAML export recognised as kubectl describe output")
	}
	if _, err := ParseWith("svc.txt", []byte("Name:  web\nNamespace:  shop\nData\n====\n"), Options{}); err != nil && !strings.HasPrefix(err.Error(), "svc.txt") {
		t.Errorf("error without the file name: %v", err)
	}
}
