package kubeapitest

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type watchEvent struct {
	Type   string `json:"type"`
	Object struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name            string            `json:"name"`
			ResourceVersion string            `json:"resourceVersion"`
			Annotations     map[string]string `json:"annotations"`
		} `json:"metadata"`
	} `json:"object"`
}

// openWatch GETs path and returns a function reading its next event,
// which fails the test after a few seconds without one.
func openWatch(t *testing.T, s *Server, path string) func() (watchEvent, bool) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	events := make(chan watchEvent)
	go func() {
		defer close(events)
		dec := json.NewDecoder(bufio.NewReader(resp.Body))
		for {
			var ev watchEvent
			if dec.Decode(&ev) != nil {
				return
			}
			events <- ev
		}
	}()
	return func() (watchEvent, bool) {
		select {
		case ev, ok := <-events:
			return ev, ok
		case <-time.After(10 * time.Second):
			t.Fatalf("GET %s: no event in 10s", path)
			return watchEvent{}, false
		}
	}
}

func svc(name string, labels map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels}}
}

func TestWatch(t *testing.T) {
	headless := svc("d", nil)
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	s := New(t, svc("a", nil), svc("b", map[string]string{"service.kubernetes.io/headless": ""}), svc("c", nil), headless)
	// kube-proxy's selectors.
	sel := "&labelSelector=%21service.kubernetes.io%2Fheadless&fieldSelector=spec.clusterIP%21%3DNone"

	// An informer's watch-list: the current objects, then the bookmark
	// that ends them, then the changes.
	next := openWatch(t, s, "/api/v1/services?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan"+sel)
	var got []string
	for {
		ev, ok := next()
		if !ok {
			t.Fatal("the watch ended before its bookmark")
		}
		got = append(got, ev.Type+" "+ev.Object.Metadata.Name)
		if ev.Type == "BOOKMARK" {
			if ev.Object.Metadata.Annotations[metav1.InitialEventsAnnotationKey] != "true" || ev.Object.Metadata.ResourceVersion != "4" {
				t.Errorf("bookmark %+v: want the initial-events-end annotation and resourceVersion 4", ev.Object.Metadata)
			}
			break
		}
	}
	if want := "ADDED a,ADDED c,BOOKMARK "; strings.Join(got, ",") != want {
		t.Errorf("initial events %q, want %q", strings.Join(got, ","), want)
	}

	// A watch from a resourceVersion sends only what changed after it.
	fromRV := openWatch(t, s, "/api/v1/namespaces/default/services?watch=1&resourceVersion=4")
	if err := s.Delete(svc("b", nil)); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(svc("c", nil)); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(svc("c", nil)); err == nil {
		t.Error("deleting c twice: no error")
	}
	if ev, _ := next(); ev.Type != "DELETED" || ev.Object.Metadata.Name != "c" || ev.Object.Metadata.ResourceVersion != "6" || ev.Object.Kind != "Service" {
		t.Errorf("selected watch: got %+v, want the DELETED Service c at resourceVersion 6 (b is not selected)", ev)
	}
	for _, want := range []string{"b", "c"} {
		if ev, _ := fromRV(); ev.Type != "DELETED" || ev.Object.Metadata.Name != want {
			t.Errorf("watch from resourceVersion 4: got %+v, want DELETED %s", ev, want)
		}
	}

	// A list after the change no longer holds the objects, at the new
	// resourceVersion; a watch of it with resourceVersion 0 starts with
	// what is left.
	zero := openWatch(t, s, "/api/v1/services?watch=true&resourceVersion=0")
	for _, want := range []string{"a", "d"} {
		if ev, _ := zero(); ev.Type != "ADDED" || ev.Object.Metadata.Name != want {
			t.Errorf("watch from resourceVersion 0: got %+v, want ADDED %s", ev, want)
		}
	}

	// timeoutSeconds ends a watch; so does closing the server.
	short := openWatch(t, s, "/api/v1/services?watch=true&resourceVersion=6&timeoutSeconds=1")
	if ev, ok := short(); ok {
		t.Errorf("watch with timeoutSeconds=1: got %+v, want its end", ev)
	}
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close blocked by the open watches")
	}
}

func TestWatchForbiddenAndBad(t *testing.T) {
	s := New(t, svc("a", nil))
	s.Forbid("watch", "services")
	for path, want := range map[string]int{
		"/api/v1/services?watch=true":                           http.StatusForbidden,
		"/api/v1/nodes?watch=true&resourceVersion=x":            http.StatusBadRequest,
		"/api/v1/nodes?watch=true&timeoutSeconds=-1":            http.StatusBadRequest,
		"/api/v1/nodes?watch=true&fieldSelector=spec.bogus%3D1": http.StatusBadRequest,
	} {
		resp, err := s.Client().Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %s, want %d", path, resp.Status, want)
		}
	}
}
