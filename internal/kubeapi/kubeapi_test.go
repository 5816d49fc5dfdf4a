package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/proxyscan/proxyscan/internal/kubeapi/kubeapitest"
)

func newClient(t *testing.T, cfg *rest.Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.retryWait = time.Millisecond
	return c
}

func nodes(n int) []any {
	var out []any
	for i := range n {
		out = append(out, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i), Labels: map[string]string{"pool": []string{"a", "b"}[i%2]}}})
	}
	return out
}

func TestListPaginates(t *testing.T) {
	srv := kubeapitest.New(t, nodes(5)...)
	srv.SetPageSize(2)
	c := newClient(t, srv.Config())
	l, err := List[corev1.Node](context.Background(), c, Nodes, "", ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range l {
		if n.APIVersion != "v1" || n.Kind != "Node" {
			t.Errorf("%s: apiVersion %q kind %q", n.Name, n.APIVersion, n.Kind)
		}
		names = append(names, n.Name)
	}
	if got := strings.Join(names, " "); got != "node-0 node-1 node-2 node-3 node-4" {
		t.Errorf("nodes %s", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3 pages", len(reqs))
	}
	seen := map[string]bool{}
	for i, r := range reqs {
		q := r.URL.Query()
		if r.URL.Path != "/api/v1/nodes" || q.Get("limit") != "500" {
			t.Errorf("request %d: %s", i, r.URL)
		}
		if cont := q.Get("continue"); (i == 0) != (cont == "") || seen[cont] {
			t.Errorf("request %d: continue %q", i, cont)
		} else {
			seen[cont] = true
		}
		if r.Header.Get("Accept") != "application/json" || r.Header.Get("Authorization") != "Bearer "+kubeapitest.Token {
			t.Errorf("request %d: headers %v", i, r.Header)
		}
	}

	// Selectors are sent, and the server's answer is what they select.
	l, err = List[corev1.Node](context.Background(), c, Nodes, "", ListOptions{LabelSelector: "pool=b", FieldSelector: "metadata.name!=node-1"})
	if err != nil || len(l) != 1 || l[0].Name != "node-3" {
		t.Errorf("selected nodes %v, %v", l, err)
	}
	reqs = srv.Requests()
	if q := reqs[len(reqs)-1].URL.Query(); q.Get("labelSelector") != "pool=b" || q.Get("fieldSelector") != "metadata.name!=node-1" {
		t.Errorf("query %v", q)
	}
}

func TestGet(t *testing.T) {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system"}}
	srv := kubeapitest.New(t, ds, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system"}, Data: map[string]string{"config.conf": "mode: ipvs\n"}})
	c := newClient(t, srv.Config())
	got, err := Get[appsv1.DaemonSet](context.Background(), c, DaemonSets, "kube-system", "kube-proxy")
	if err != nil {
		t.Fatal(err)
	}
	if got.APIVersion != "apps/v1" || got.Kind != "DaemonSet" || got.Name != "kube-proxy" || got.ResourceVersion == "" {
		t.Errorf("daemonset %+v", got)
	}
	cm, err := Get[corev1.ConfigMap](context.Background(), c, ConfigMaps, "kube-system", "kube-proxy")
	if err != nil || cm.Data["config.conf"] != "mode: ipvs\n" {
		t.Errorf("configmap %+v, %v", cm, err)
	}
	if r := srv.Requests(); r[0].URL.Path != "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy" || r[1].URL.Path != "/api/v1/namespaces/kube-system/configmaps/kube-proxy" {
		t.Errorf("paths %s, %s", r[0].URL.Path, r[1].URL.Path)
	}
	// A name that is no path segment is refused before any request.
	n := len(srv.Requests())
	if _, err := Get[corev1.ConfigMap](context.Background(), c, ConfigMaps, "kube-system", "a/b"); err == nil || !strings.Contains(err.Error(), `invalid name "a/b"`) {
		t.Errorf("name a/b: %v", err)
	}
	if _, err := Get[corev1.Node](context.Background(), c, Nodes, "", ""); err == nil || err.Error() != "resource name may not be empty" {
		t.Errorf("empty name: %v", err)
	}
	if len(srv.Requests()) != n {
		t.Errorf("invalid names were requested")
	}
}

func TestStatusErrors(t *testing.T) {
	srv := kubeapitest.New(t, nodes(1)...)
	srv.Forbid("list", "services")
	srv.Forbid("get", "daemonsets.apps")
	c := newClient(t, srv.Config())
	ctx := context.Background()

	_, err := Get[corev1.ConfigMap](ctx, c, ConfigMaps, "kube-system", "kube-proxy-config")
	if !apierrors.IsNotFound(err) || err.Error() != `configmaps "kube-proxy-config" not found` {
		t.Errorf("absent configmap: %v (not found: %v)", err, apierrors.IsNotFound(err))
	}
	_, err = List[corev1.Service](ctx, c, Services, "", ListOptions{})
	want := `services is forbidden: User "system:serviceaccount:kube-system:proxyscan" cannot list resource "services" in API group "" at the cluster scope`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("forbidden list: %v\nwant %s", err, want)
	}
	_, err = Get[appsv1.DaemonSet](ctx, c, DaemonSets, "kube-system", "kube-proxy")
	want = `daemonsets.apps "kube-proxy" is forbidden: User "system:serviceaccount:kube-system:proxyscan" cannot get resource "daemonsets" in API group "apps" in the namespace "kube-system"`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("forbidden get: %v\nwant %s", err, want)
	}
	// A resource the server does not serve.
	_, err = List[corev1.Service](ctx, c, Resource{Group: "example.com", Version: "v1", Resource: "widgets", Kind: "Widget"}, "", ListOptions{})
	if !apierrors.IsNotFound(err) || err.Error() != "the server could not find the requested resource" {
		t.Errorf("unknown resource: %v", err)
	}
	// A field label the server does not support.
	_, err = List[corev1.Node](ctx, c, Nodes, "", ListOptions{FieldSelector: "spec.nodeName=x"})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "field label not supported: spec.nodeName") {
		t.Errorf("bad field selector: %v", err)
	}
}

// TestNonStatusErrors: an error answer without a Status body gives
// client-go's error of its status code.
func TestNonStatusErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/services":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintln(w, "etcdserver: request timed out")
		case "/api/v1/nodes/gone":
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintln(w, "<html>no</html>")
		default:
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	c := newClient(t, &rest.Config{Host: srv.URL, QPS: -1})
	ctx := context.Background()
	_, err := List[corev1.Service](ctx, c, Services, "", ListOptions{})
	if want := `an error on the server ("etcdserver: request timed out") has prevented the request from succeeding (get services)`; err == nil || err.Error() != want || !apierrors.IsInternalError(err) {
		t.Errorf("500: %v\nwant %s", err, want)
	}
	_, err = Get[corev1.Node](ctx, c, Nodes, "", "gone")
	if want := "the server could not find the requested resource (get nodes gone)"; !apierrors.IsNotFound(err) || err.Error() != want {
		t.Errorf("404: %v\nwant %s", err, want)
	}
	_, err = List[appsv1.DaemonSet](ctx, c, DaemonSets, "kube-system", ListOptions{})
	if want := "the server has asked for the client to provide credentials (get daemonsets.apps)"; !apierrors.IsUnauthorized(err) || err.Error() != want {
		t.Errorf("401: %v\nwant %s", err, want)
	}
}

// TestRetries: a GET is retried when the server asks (429 or 5xx with
// Retry-After) and when the connection is dropped, up to a bound.
func TestRetries(t *testing.T) {
	var calls, fail atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Each answer on its own connection: the transport retries on a
		// reused connection by itself.
		w.Header().Set("Connection", "close")
		switch n := calls.Add(1); {
		case n == 1:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
		case n == 2:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
		case n == 3:
			// A connection closed without an answer.
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		case n <= fail.Load():
			w.Header().Set("Retry-After", "0")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Too many requests, please try again later.","reason":"TooManyRequests","code":429}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"n1"}}]}`)
		}
	}))
	defer srv.Close()
	c := newClient(t, &rest.Config{Host: srv.URL, QPS: -1})
	fail.Store(3)
	l, err := List[corev1.Node](context.Background(), c, Nodes, "", ListOptions{})
	if err != nil || len(l) != 1 || l[0].Name != "n1" || calls.Load() != 4 {
		t.Fatalf("after 3 failures: %v, %v, %d calls", l, err, calls.Load())
	}
	calls.Store(0)
	fail.Store(100)
	_, err = List[corev1.Node](context.Background(), c, Nodes, "", ListOptions{})
	if !apierrors.IsTooManyRequests(err) || err.Error() != "Too many requests, please try again later." || calls.Load() != maxRetries+1 {
		t.Errorf("after %d failures: %v, %d calls", fail.Load(), err, calls.Load())
	}
}

func TestTimeout(t *testing.T) {
	srv := kubeapitest.New(t, nodes(1)...)
	srv.Stall()
	c := newClient(t, srv.Config())
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := List[corev1.Node](ctx, c, Nodes, "", ListOptions{})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "context deadline exceeded") {
		t.Errorf("stalled server: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the request took %v", d)
	}
	// A Retry-After beyond the deadline is not waited for.
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv2.Close()
	c = newClient(t, &rest.Config{Host: srv2.URL, QPS: -1})
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := List[corev1.Node](ctx, c, Nodes, "", ListOptions{}); !apierrors.IsTooManyRequests(err) || time.Since(start) > 5*time.Second {
		t.Errorf("long Retry-After: %v after %v", err, time.Since(start))
	}
}

// TestHostPath: a path in the server's address prefixes every request (an
// API server behind a proxy that relocated it).
func TestHostPath(t *testing.T) {
	srv := kubeapitest.New(t, nodes(2)...)
	target, _ := url.Parse(srv.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = srv.Client().Transport
	proxy := httptest.NewServer(http.StripPrefix("/k8s/clusters/c-1", rp))
	defer proxy.Close()
	c := newClient(t, &rest.Config{Host: proxy.URL + "/k8s/clusters/c-1/", QPS: -1})
	n, err := Get[corev1.Node](context.Background(), c, Nodes, "", "node-1")
	if err != nil || n.Name != "node-1" {
		t.Fatalf("node-1 through a proxy: %v, %v", n, err)
	}
	if r := srv.Requests(); r[0].URL.Path != "/api/v1/nodes/node-1" {
		t.Errorf("path %s", r[0].URL.Path)
	}
}

// TestUnexpectedAnswers: an answer of another kind, or a list that keeps
// answering the same continue token, is an error, not a wrong result or a
// loop.
func TestUnexpectedAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/services":
			fmt.Fprint(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[]}`)
		case "/api/v1/nodes":
			fmt.Fprint(w, `{"kind":"NodeList","apiVersion":"v1","metadata":{"continue":"again"},"items":[{"metadata":{"name":"n1"}}]}`)
		default:
			fmt.Fprint(w, `<html>`)
		}
	}))
	defer srv.Close()
	c := newClient(t, &rest.Config{Host: srv.URL, QPS: -1})
	ctx := context.Background()
	if _, err := List[corev1.Service](ctx, c, Services, "", ListOptions{}); err == nil || !strings.Contains(err.Error(), "answered a v1 ConfigMapList where a v1 ServiceList was expected") {
		t.Errorf("wrong kind: %v", err)
	}
	if _, err := List[corev1.Node](ctx, c, Nodes, "", ListOptions{}); err == nil || !strings.Contains(err.Error(), "same continue token") {
		t.Errorf("repeated continue token: %v", err)
	}
	if _, err := Get[corev1.Pod](ctx, c, Pods, "default", "p"); err == nil || !strings.Contains(err.Error(), "decoding the answer of GET") {
		t.Errorf("not JSON: %v", err)
	}
}
