package load

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/kube"
)

// TestDropDuplicates checks which copies of an object given in several
// exports are read, and the note that says so.
func TestDropDuplicates(t *testing.T) {
	svc := func(file, name, rv, clusterIP string) *kube.Service {
		return &kube.Service{
			Service: &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, ResourceVersion: rv},
				Spec:       corev1.ServiceSpec{ClusterIP: clusterIP},
			},
			Pos: parsers.Pos{File: file, Line: 3},
		}
	}
	slice := func(file, name, rv string) *kube.EndpointSlice {
		return &kube.EndpointSlice{
			EndpointSlice: &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, ResourceVersion: rv}},
			Pos:           parsers.Pos{File: file, Line: 9},
		}
	}
	for _, tc := range []struct {
		name     string
		services []*kube.Service
		slices   []*kube.EndpointSlice
		// want are the files of the Services (then the slices) kept.
		want []string
		note string
	}{
		{"one state twice", []*kube.Service{svc("a", "cart", "7", "10.0.0.1"), svc("b", "cart", "7", "10.0.0.1")}, nil, []string{"a"}, ""},
		{"the newer given last", []*kube.Service{svc("a", "cart", "7", "10.0.0.1"), svc("b", "cart", "12", "10.0.0.2")}, nil, []string{"b"},
			"Service shop/cart is in 2 exports (a:3 resourceVersion 7, b:3 resourceVersion 12): the newest, b:3, is read"},
		{"the newer given first", []*kube.Service{svc("a", "cart", "12", "10.0.0.2"), svc("b", "cart", "7", "10.0.0.1")}, nil, []string{"a"},
			"Service shop/cart is in 2 exports (a:3 resourceVersion 12, b:3 resourceVersion 7): the newest, a:3, is read"},
		{"alike without resourceVersions", []*kube.Service{svc("a", "cart", "", "10.0.0.1"), svc("b", "cart", "", "10.0.0.1")}, nil, []string{"a"}, ""},
		{"different without resourceVersions", []*kube.Service{svc("a", "cart", "", "10.0.0.1"), svc("b", "cart", "", "10.0.0.2")}, nil, []string{"a", "b"},
			"Service shop/cart is in 2 exports that differ (a:3, b:3), without resourceVersions that tell the newest: each copy is read"},
		{"other names untouched", []*kube.Service{svc("a", "cart", "7", "10.0.0.1"), svc("b", "web", "3", "10.0.0.2"), svc("c", "cart", "9", "10.0.0.1")}, nil, []string{"b", "c"},
			"Service shop/cart is in 2 exports (a:3 resourceVersion 7, c:3 resourceVersion 9): the newest, c:3, is read"},
		{"slices", nil, []*kube.EndpointSlice{slice("a", "cart-x", "40"), slice("b", "cart-x", "41"), slice("b", "cart-y", "41")}, []string{"b", "b"},
			"EndpointSlice shop/cart-x is in 2 exports (a:9 resourceVersion 40, b:9 resourceVersion 41): the newest, b:9, is read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &kube.Objects{Services: tc.services, EndpointSlices: tc.slices}
			notes := dropDuplicates(o)
			var got []string
			for _, s := range o.Services {
				got = append(got, s.Pos.File)
			}
			for _, s := range o.EndpointSlices {
				got = append(got, s.Pos.File)
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("kept %v, want %v", got, tc.want)
			}
			want := []string{}
			if tc.note != "" {
				want = append(want, tc.note)
			}
			if strings.Join(notes, "\n") != strings.Join(want, "\n") {
				t.Errorf("notes %q, want %q", notes, want)
			}
		})
	}
}

// TestDuplicatesAcrossExports loads a bundle's export with an older copy of
// it given beside: the bundle's Service, the newer, is the one read, its
// ports built once, and a note says so; the same export given twice is
// read once, with no note.
func TestDuplicatesAcrossExports(t *testing.T) {
	src := filepath.Join("..", "..", "testdata", "bundles", "iptables-mini")
	data, err := os.ReadFile(filepath.Join(src, "cluster", "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(t.TempDir(), "b")
	if err := os.CopyFS(bundle, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	alone, err := Load([]string{bundle}, Options{Compact: true})
	if err != nil {
		t.Fatal(err)
	}
	same := filepath.Join(t.TempDir(), "same.yaml")
	if err := os.WriteFile(same, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// An older copy: every resourceVersion one digit shorter.
	older := filepath.Join(t.TempDir(), "older.yaml")
	if err := os.WriteFile(older, regexp.MustCompile(`(resourceVersion: "[0-9]+)[0-9]"`).ReplaceAll(data, []byte(`$1"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, loose string
		notes       bool
	}{
		{"same export", same, false},
		{"older export", older, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snaps, err := Load([]string{bundle, tc.loose}, Options{Compact: true})
			if err != nil {
				t.Fatal(err)
			}
			s := snaps[0]
			if len(s.Objects.Services) != len(alone[0].Objects.Services) || len(s.Ports) != len(alone[0].Ports) {
				t.Errorf("%d Services, %d service ports; alone %d and %d", len(s.Objects.Services), len(s.Ports), len(alone[0].Objects.Services), len(alone[0].Ports))
			}
			for _, svc := range s.Objects.Services {
				if strings.HasPrefix(svc.Pos.File, tc.loose) {
					t.Errorf("Service %s/%s read from %s, not from the bundle's newer export", svc.Namespace, svc.Name, svc.Pos)
				}
			}
			var n int
			for _, note := range s.Notes {
				if strings.Contains(note, " exports (") {
					n++
				}
			}
			if got := n > 0; got != tc.notes {
				t.Errorf("%d notes of copies, want some: %t\n%s", n, tc.notes, strings.Join(s.Notes, "\n"))
			}
		})
	}
}

// TestDuplicateNode: the node's Node object given twice (a bundle's own
// and a loose export of the Nodes) is one Node, the node's, not two Nodes
// none of which is chosen.
func TestDuplicateNode(t *testing.T) {
	src := filepath.Join("..", "..", "testdata", "bundles", "iptables-healthy")
	loose := filepath.Join(t.TempDir(), "node.yaml")
	data, err := os.ReadFile(filepath.Join(src, "cluster", "node.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(loose, data, 0o644); err != nil {
		t.Fatal(err)
	}
	snaps, err := Load([]string{src, loose}, Options{Compact: true})
	if err != nil {
		t.Fatal(err)
	}
	s := snaps[0]
	if len(s.Objects.Nodes) != 1 || s.Node.Name == "" || s.Node.Object == nil {
		t.Errorf("%d Nodes, node %q from %q", len(s.Objects.Nodes), s.Node.Name, s.Node.NameSource)
	}
}
