package load

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestExpandArgs: a DaemonSet's $(VAR) references are expanded from the
// container's literal environment values; a flag whose value the kubelet
// takes from elsewhere (the downward API) is left out, in either form.
func TestExpandArgs(t *testing.T) {
	env := []corev1.EnvVar{
		{Name: "MODE", Value: "ipvs"},
		{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		{Name: "CIDR", Value: "10.42.0.0/16"},
	}
	for _, tc := range []struct {
		name      string
		argv      []string
		out, left []string
	}{
		{"literal values", []string{"kube-proxy", "--proxy-mode=$(MODE)", "--cluster-cidr", "$(CIDR)"},
			[]string{"kube-proxy", "--proxy-mode=ipvs", "--cluster-cidr", "10.42.0.0/16"}, nil},
		{"from the downward API", []string{"kube-proxy", "--hostname-override=$(NODE_NAME)", "--v=2"},
			[]string{"kube-proxy", "--v=2"}, []string{"--hostname-override=$(NODE_NAME)"}},
		{"the value of the flag before", []string{"kube-proxy", "--hostname-override", "$(NODE_NAME)", "--proxy-mode=ipvs"},
			[]string{"kube-proxy", "--proxy-mode=ipvs"}, []string{"--hostname-override $(NODE_NAME)"}},
		{"escaped", []string{"kube-proxy", "--hostname-override=$$(NODE_NAME)"},
			[]string{"kube-proxy", "--hostname-override=$(NODE_NAME)"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, left := expandArgs(tc.argv, env)
			if !reflect.DeepEqual(out, tc.out) || !reflect.DeepEqual(left, tc.left) {
				t.Errorf("expandArgs(%q) = %q, left %q; want %q, left %q", tc.argv, out, left, tc.out, tc.left)
			}
		})
	}
}
