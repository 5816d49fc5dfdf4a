// Package kubeapitest is a fake Kubernetes API server for tests: an
// httptest.Server that serves a fixed set of objects over HTTP as the API
// server does, so that a test exercises the real client code, requests
// and answers included.
//
// It answers GETs of single objects and of lists at the API's paths
// (/api/v1/..., /apis/GROUP/VERSION/..., namespaced or not), and watches
// of lists (watch=true) as informers open them: from a resourceVersion,
// or with the current objects first (resourceVersion 0 or none, or
// sendInitialEvents=true, which ends them with the initial-events-end
// bookmark), kept open until timeoutSeconds, the client or the server
// ends them; [Server.Delete] sends their DELETED events. Lists have
// their apiVersion, kind and resourceVersion, items without apiVersion and
// kind, objects sorted by namespace and name as etcd keeps them; they are
// filtered by labelSelector and by the fieldSelector labels the API server
// supports for the kind, and paginated by limit and continue (with pages
// the server may make smaller than the limit asked for, see
// [Server.SetPageSize]). Errors are metav1.Status bodies with the API
// server's messages: 404 NotFound for an absent object or an unknown path,
// 403 Forbidden for what [Server.Forbid] denies, 400 BadRequest for a bad
// selector or continue token, 405 for a method other than GET.
//
// Its table of kinds and paths is its own, independent of the client's,
// so that a wrong path in the client fails the tests.
package kubeapitest

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// DefaultUser is the user the server's Forbidden messages name.
const DefaultUser = "system:serviceaccount:kube-system:proxyscan"

// kind is a kind of object the server knows: where it is served and which
// field labels its lists can be selected by (besides metadata.name and,
// when namespaced, metadata.namespace).
type kind struct {
	group, version, resource, kind string
	namespaced                     bool
	fields                         map[string][]string // field label -> path in the object
}

func (k *kind) apiVersion() string {
	return schema.GroupVersion{Group: k.group, Version: k.version}.String()
}

func (k *kind) groupResource() schema.GroupResource {
	return schema.GroupResource{Group: k.group, Resource: k.resource}
}

var (
	kindService = &kind{version: "v1", resource: "services", kind: "Service", namespaced: true,
		fields: map[string][]string{"spec.clusterIP": {"spec", "clusterIP"}, "spec.type": {"spec", "type"}}}
	kindEndpointSlice = &kind{group: "discovery.k8s.io", version: "v1", resource: "endpointslices", kind: "EndpointSlice", namespaced: true,
		fields: map[string][]string{"addressType": {"addressType"}}}
	kindConfigMap = &kind{version: "v1", resource: "configmaps", kind: "ConfigMap", namespaced: true}
	kindSecret    = &kind{version: "v1", resource: "secrets", kind: "Secret", namespaced: true,
		fields: map[string][]string{"type": {"type"}}}
	kindPod = &kind{version: "v1", resource: "pods", kind: "Pod", namespaced: true,
		fields: map[string][]string{
			"spec.nodeName": {"spec", "nodeName"}, "spec.restartPolicy": {"spec", "restartPolicy"},
			"spec.schedulerName": {"spec", "schedulerName"}, "spec.serviceAccountName": {"spec", "serviceAccountName"},
			"status.phase": {"status", "phase"}, "status.podIP": {"status", "podIP"},
			"status.nominatedNodeName": {"status", "nominatedNodeName"},
		}}
	kindNode = &kind{version: "v1", resource: "nodes", kind: "Node",
		fields: map[string][]string{"spec.unschedulable": {"spec", "unschedulable"}}}
	kindNamespace = &kind{version: "v1", resource: "namespaces", kind: "Namespace",
		fields: map[string][]string{"status.phase": {"status", "phase"}}}
	kindDaemonSet   = &kind{group: "apps", version: "v1", resource: "daemonsets", kind: "DaemonSet", namespaced: true}
	kindServiceCIDR = &kind{group: "networking.k8s.io", version: "v1", resource: "servicecidrs", kind: "ServiceCIDR"}

	kinds = []*kind{kindService, kindEndpointSlice, kindConfigMap, kindSecret, kindPod, kindNode, kindNamespace, kindDaemonSet, kindServiceCIDR}
)

func kindOf(obj any) *kind {
	switch obj.(type) {
	case *corev1.Service:
		return kindService
	case *discoveryv1.EndpointSlice:
		return kindEndpointSlice
	case *corev1.ConfigMap:
		return kindConfigMap
	case *corev1.Secret:
		return kindSecret
	case *corev1.Pod:
		return kindPod
	case *corev1.Node:
		return kindNode
	case *corev1.Namespace:
		return kindNamespace
	case *appsv1.DaemonSet:
		return kindDaemonSet
	case *networkingv1.ServiceCIDR:
		return kindServiceCIDR
	}
	return nil
}

// stored is one object of the server, as the JSON object it serves
// (without apiVersion and kind).
type stored struct {
	kind            *kind
	namespace, name string
	obj             map[string]any
}

// Request is a request the server received.
type Request struct {
	Method string
	// URL is the request's URL: its Path and Query.
	URL    *url.URL
	Header http.Header
}

// Server is a fake API server. Its methods are safe for concurrent use.
type Server struct {
	*httptest.Server

	mu        sync.Mutex
	objects   []stored
	rv        int
	pageSize  int
	user      string
	forbidden map[string]bool
	stall     bool
	requests  []Request
	// events are the changes made since the server started, in order of
	// resourceVersion; changed is closed and replaced at each change, to
	// wake the watches; stop is closed when the server closes.
	events  []event
	changed chan struct{}
	stop    chan struct{}
	stopped sync.Once
}

// event is a change of an object, as a watch sends it.
type event struct {
	rv  int
	typ string
	o   stored
}

// New starts a server (HTTPS, with httptest's certificate) holding objs (pointers to k8s.io/api objects of the
// kinds the server knows: Service, EndpointSlice, ConfigMap, Secret, Pod,
// Node, Namespace, DaemonSet) and stops it at the end of the test. Each
// object without a resourceVersion is given one.
func New(t testing.TB, objs ...any) *Server {
	t.Helper()
	return NewOn(t, nil, objs...)
}

// NewOn is [New] serving on ln instead of a listener of its own (nil for
// one of its own): a listener opened in another network namespace makes
// the server reachable there.
func NewOn(t testing.TB, ln net.Listener, objs ...any) *Server {
	t.Helper()
	s := &Server{user: DefaultUser, forbidden: map[string]bool{}, changed: make(chan struct{}), stop: make(chan struct{})}
	for _, o := range objs {
		if err := s.add(o); err != nil {
			t.Fatalf("kubeapitest: %v", err)
		}
	}
	sort.Slice(s.objects, func(i, j int) bool {
		a, b := s.objects[i], s.objects[j]
		if a.kind != b.kind {
			return a.kind.resource < b.kind.resource
		}
		if a.namespace != b.namespace {
			return a.namespace < b.namespace
		}
		return a.name < b.name
	})
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	if ln != nil {
		_ = s.Server.Listener.Close()
		s.Server.Listener = ln
	}
	s.Server.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// Close ends the open watches, then shuts the server down.
func (s *Server) Close() {
	s.stopped.Do(func() { close(s.stop) })
	s.Server.Close()
}

// Delete removes an object (a pointer to a k8s.io/api object of a kind
// the server knows, of which only the name and namespace count) and sends
// its DELETED event to the watches that select it.
func (s *Server) Delete(obj any) error {
	k := kindOf(obj)
	if k == nil {
		return fmt.Errorf("unknown kind of object %T", obj)
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return fmt.Errorf("%T has no metadata", obj)
	}
	ns := m.GetNamespace()
	if k.namespaced && ns == "" {
		ns = "default"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, o := range s.objects {
		if o.kind == k && o.namespace == ns && o.name == m.GetName() {
			s.objects = append(s.objects[:i], s.objects[i+1:]...)
			s.rv++
			gone := stored{kind: o.kind, namespace: o.namespace, name: o.name, obj: withRV(o.obj, s.rv)}
			s.events = append(s.events, event{rv: s.rv, typ: "DELETED", o: gone})
			close(s.changed)
			s.changed = make(chan struct{})
			return nil
		}
	}
	return fmt.Errorf("%s %s/%s: not found", k.kind, ns, m.GetName())
}

// withRV is a shallow copy of obj whose metadata has resourceVersion rv.
func withRV(obj map[string]any, rv int) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	meta := map[string]any{}
	if m, ok := obj["metadata"].(map[string]any); ok {
		for k, v := range m {
			meta[k] = v
		}
	}
	meta["resourceVersion"] = strconv.Itoa(rv)
	out["metadata"] = meta
	return out
}

func (s *Server) add(o any) error {
	k := kindOf(o)
	if k == nil {
		return fmt.Errorf("unknown kind of object %T", o)
	}
	data, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("encoding %T: %w", o, err)
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		return fmt.Errorf("decoding %T: %w", o, err)
	}
	delete(obj, "apiVersion")
	delete(obj, "kind")
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	if name == "" {
		return fmt.Errorf("a %s without a name", k.kind)
	}
	if k.namespaced && ns == "" {
		ns = "default"
		meta["namespace"] = ns
	}
	if !k.namespaced && ns != "" {
		return fmt.Errorf("%s %s is cluster-scoped but has namespace %q", k.kind, name, ns)
	}
	for _, have := range s.objects {
		if have.kind == k && have.namespace == ns && have.name == name {
			return fmt.Errorf("%s %s/%s twice", k.kind, ns, name)
		}
	}
	s.rv++
	if rv, _ := meta["resourceVersion"].(string); rv == "" {
		meta["resourceVersion"] = strconv.Itoa(s.rv)
	}
	s.objects = append(s.objects, stored{kind: k, namespace: ns, name: name, obj: obj})
	return nil
}

// Token is the bearer token of the server's kubeconfig.
const Token = "kubeapitest-token"

// caPEM is the server's certificate in PEM, for a client to trust.
func (s *Server) caPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
}

// Config is a client configuration of the server: its address, its
// certificate as the certificate authority, the bearer token [Token], and
// no client-side rate limit.
func (s *Server) Config() *rest.Config {
	return &rest.Config{Host: s.URL, BearerToken: Token, QPS: -1, TLSClientConfig: rest.TLSClientConfig{CAData: s.caPEM()}}
}

// Kubeconfig writes a kubeconfig of the server (its address and
// certificate, and the bearer token [Token]) into a temporary directory
// of the test and returns its path.
func (s *Server) Kubeconfig(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: fake
  user:
    token: %s
contexts:
- name: fake
  context:
    cluster: fake
    user: fake
current-context: fake
`, s.URL, base64.StdEncoding.EncodeToString(s.caPEM()), Token)
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatalf("kubeapitest: %v", err)
	}
	return p
}

// SetPageSize makes the server answer lists with at most n objects a page
// even when the client asks for more (0, the default: the client's limit).
// The API server may return fewer objects than the limit; this makes a
// test paginate with a few objects.
func (s *Server) SetPageSize(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pageSize = n
}

// Forbid makes the server deny verb ("get" or "list") on resource, named
// as RBAC names it: "services", "daemonsets.apps".
func (s *Server) Forbid(verb, resource string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forbidden[verb+" "+resource] = true
}

// Stall makes every request wait until the client gives up (its context
// is done or its connection closed), or for a minute, and then closes the
// connection without answering.
func (s *Server) Stall() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stall = true
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	u := *r.URL
	s.requests = append(s.requests, Request{Method: r.Method, URL: &u, Header: r.Header.Clone()})
	stall := s.stall
	s.mu.Unlock()
	if stall {
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
		// No answer at all: an empty one, were it read by a client that
		// gave up a moment before, would be a 200 with no body.
		panic(http.ErrAbortHandler)
	}
	if r.Method != http.MethodGet {
		writeStatus(w, apierrors.NewMethodNotSupported(schema.GroupResource{}, strings.ToLower(r.Method)))
		return
	}
	if !acceptsJSON(r.Header.Get("Accept")) {
		writeStatus(w, apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "get", schema.GroupResource{}, "",
			"only the following media types are accepted: application/json", 0, false))
		return
	}
	k, ns, name, ok := route(r.URL.Path)
	if !ok {
		writeStatus(w, apierrors.NewGenericServerResponse(http.StatusNotFound, "get", schema.GroupResource{}, "", "", 0, false))
		return
	}
	verb := "get"
	if name == "" {
		verb = "list"
		if v := r.URL.Query().Get("watch"); v == "true" || v == "1" {
			verb = "watch"
		}
	}
	s.mu.Lock()
	if verb == "watch" && !s.forbidden[verb+" "+k.groupResource().String()] {
		s.mu.Unlock()
		s.watch(w, r, k, ns)
		return
	}
	defer s.mu.Unlock()
	if s.forbidden[verb+" "+k.groupResource().String()] {
		scope := "at the cluster scope"
		if ns != "" {
			scope = fmt.Sprintf("in the namespace %q", ns)
		}
		//lint:ignore ST1005 the API server's own words, which clients show
		why := fmt.Errorf("User %q cannot %s resource %q in API group %q %s", s.user, verb, k.resource, k.group, scope)
		writeStatus(w, apierrors.NewForbidden(k.groupResource(), name, why))
		return
	}
	if name != "" {
		for _, o := range s.objects {
			if o.kind == k && o.namespace == ns && o.name == name {
				writeJSON(w, http.StatusOK, typed(o))
				return
			}
		}
		writeStatus(w, apierrors.NewNotFound(k.groupResource(), name))
		return
	}
	s.list(w, r.URL.Query(), k, ns)
}

// continueToken is the content of a continue token: the resourceVersion
// of the list and the key to start from, as the API server keeps them.
type continueToken struct {
	V     string `json:"v"`
	RV    int    `json:"rv"`
	Start string `json:"start"`
}

// selectors are the label and field selectors of a list or watch.
func selectors(q url.Values, k *kind) (labels.Selector, fields.Selector, *apierrors.StatusError) {
	lsel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		return nil, nil, apierrors.NewBadRequest(err.Error())
	}
	fsel, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		return nil, nil, apierrors.NewBadRequest(err.Error())
	}
	for _, req := range fsel.Requirements() {
		if _, ok := k.fields[req.Field]; !ok && req.Field != "metadata.name" && (req.Field != "metadata.namespace" || !k.namespaced) {
			return nil, nil, apierrors.NewBadRequest("field label not supported: " + req.Field)
		}
	}
	return lsel, fsel, nil
}

// selects reports whether the object o is one of the list of k in ns
// (every namespace when empty) that the selectors select.
func selects(o stored, k *kind, ns string, lsel labels.Selector, fsel fields.Selector) bool {
	return o.kind == k && (ns == "" || o.namespace == ns) &&
		lsel.Matches(labels.Set(stringMap(o.obj["metadata"], "labels"))) && fsel.Matches(fieldSet(o, k))
}

// typed is the object o with its apiVersion and kind, as a watch event
// or a GET of the object carries it.
func typed(o stored) map[string]any {
	obj := make(map[string]any, len(o.obj)+2)
	for key, v := range o.obj {
		obj[key] = v
	}
	obj["apiVersion"], obj["kind"] = o.kind.apiVersion(), o.kind.kind
	return obj
}

// watch streams the changes of the list of k in ns as the API server
// does: one JSON watch event after another, flushed as they are written.
func (s *Server) watch(w http.ResponseWriter, r *http.Request, k *kind, ns string) {
	q := r.URL.Query()
	lsel, fsel, serr := selectors(q, k)
	if serr != nil {
		writeStatus(w, serr)
		return
	}
	var timeout <-chan time.Time
	if ts := q.Get("timeoutSeconds"); ts != "" {
		n, err := strconv.Atoi(ts)
		if err != nil || n < 0 {
			writeStatus(w, apierrors.NewBadRequest(fmt.Sprintf("invalid timeoutSeconds %q", ts)))
			return
		}
		if n > 0 {
			t := time.NewTimer(time.Duration(n) * time.Second)
			defer t.Stop()
			timeout = t.C
		}
	}
	initial := q.Get("sendInitialEvents") == "true"
	rv := q.Get("resourceVersion")
	var first []map[string]any
	s.mu.Lock()
	from := s.rv
	if initial || rv == "" || rv == "0" {
		for _, o := range s.objects {
			if selects(o, k, ns, lsel, fsel) {
				first = append(first, map[string]any{"type": "ADDED", "object": typed(o)})
			}
		}
		if initial {
			first = append(first, map[string]any{"type": "BOOKMARK", "object": map[string]any{
				"apiVersion": k.apiVersion(), "kind": k.kind,
				"metadata": map[string]any{
					"resourceVersion": strconv.Itoa(s.rv),
					"annotations":     map[string]any{metav1.InitialEventsAnnotationKey: "true"},
				},
			}})
		}
	} else {
		n, err := strconv.Atoi(rv)
		if err != nil || n < 0 {
			s.mu.Unlock()
			writeStatus(w, apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q", rv)))
			return
		}
		from = n
	}
	s.mu.Unlock()
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	send := func(evs []map[string]any) bool {
		for _, ev := range evs {
			if enc.Encode(ev) != nil {
				return false
			}
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	if !send(first) {
		return
	}
	for {
		s.mu.Lock()
		var batch []map[string]any
		for _, e := range s.events {
			if e.rv > from && selects(e.o, k, ns, lsel, fsel) {
				batch = append(batch, map[string]any{"type": e.typ, "object": typed(e.o)})
			}
		}
		from = max(from, s.rv)
		changed := s.changed
		s.mu.Unlock()
		if len(batch) > 0 && !send(batch) {
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		case <-s.stop:
			return
		case <-timeout:
			return
		}
	}
}

func (s *Server) list(w http.ResponseWriter, q url.Values, k *kind, ns string) {
	lsel, fsel, serr := selectors(q, k)
	if serr != nil {
		writeStatus(w, serr)
		return
	}
	var err error
	limit := 0
	if l := q.Get("limit"); l != "" {
		if limit, err = strconv.Atoi(l); err != nil || limit < 0 {
			writeStatus(w, apierrors.NewBadRequest(fmt.Sprintf("invalid limit %q", l)))
			return
		}
	}
	if s.pageSize > 0 && limit > s.pageSize {
		limit = s.pageSize
	}
	start := ""
	if c := q.Get("continue"); c != "" {
		tok, err := decodeContinue(c)
		if err != nil {
			writeStatus(w, apierrors.NewBadRequest("continue key is not valid: "+err.Error()))
			return
		}
		if tok.RV != s.rv {
			writeStatus(w, apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result."))
			return
		}
		start = tok.Start
	}
	items := []any{}
	next := ""
	remaining := int64(0)
	for _, o := range s.objects {
		if o.kind != k || (ns != "" && o.namespace != ns) {
			continue
		}
		key := o.namespace + "/" + o.name
		if start != "" && key < start {
			continue
		}
		if !selects(o, k, ns, lsel, fsel) {
			continue
		}
		if limit > 0 && len(items) == limit {
			if next == "" {
				next = key
			}
			remaining++
			continue
		}
		items = append(items, o.obj)
	}
	meta := map[string]any{"resourceVersion": strconv.Itoa(s.rv)}
	if next != "" {
		meta["continue"] = encodeContinue(continueToken{V: "meta.k8s.io/v1", RV: s.rv, Start: next})
		if lsel.Empty() && fsel.Empty() {
			meta["remainingItemCount"] = remaining
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"apiVersion": k.apiVersion(), "kind": k.kind + "List", "metadata": meta, "items": items,
	})
}

// route parses an API path: /api/v1/[namespaces/NS/]RESOURCE[/NAME] or
// /apis/GROUP/VERSION/[namespaces/NS/]RESOURCE[/NAME].
func route(path string) (k *kind, ns, name string, ok bool) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	var group, version string
	switch {
	case len(segs) >= 3 && segs[0] == "api":
		version, segs = segs[1], segs[2:]
	case len(segs) >= 4 && segs[0] == "apis":
		group, version, segs = segs[1], segs[2], segs[3:]
	default:
		return nil, "", "", false
	}
	namespaced := false
	if len(segs) >= 3 && segs[0] == "namespaces" {
		namespaced, ns, segs = true, segs[1], segs[2:]
	}
	if len(segs) > 2 || segs[0] == "" || (len(segs) == 2 && segs[1] == "") {
		return nil, "", "", false
	}
	for _, c := range kinds {
		if c.group == group && c.version == version && c.resource == segs[0] && (!namespaced || c.namespaced) {
			k = c
		}
	}
	if k == nil {
		return nil, "", "", false
	}
	if len(segs) == 2 {
		name = segs[1]
		if k.namespaced && !namespaced {
			// GET of a namespaced object needs its namespace.
			return nil, "", "", false
		}
	}
	return k, ns, name, true
}

func acceptsJSON(accept string) bool {
	if accept == "" {
		return true
	}
	for _, part := range strings.Split(accept, ",") {
		mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		switch strings.TrimSpace(mt) {
		case "application/json", "application/*", "*/*":
			return true
		}
	}
	return false
}

func stringMap(m any, key string) map[string]string {
	out := map[string]string{}
	if mm, ok := m.(map[string]any); ok {
		if l, ok := mm[key].(map[string]any); ok {
			for k, v := range l {
				out[k], _ = v.(string)
			}
		}
	}
	return out
}

// fieldSet is the field labels of an object.
func fieldSet(o stored, k *kind) fields.Set {
	set := fields.Set{"metadata.name": o.name}
	if k.namespaced {
		set["metadata.namespace"] = o.namespace
	}
	for label, path := range k.fields {
		var v any = o.obj
		for _, p := range path {
			m, _ := v.(map[string]any)
			v = m[p]
		}
		switch v := v.(type) {
		case string:
			set[label] = v
		case bool:
			set[label] = strconv.FormatBool(v)
		case nil:
			set[label] = ""
			if label == "spec.unschedulable" {
				set[label] = "false"
			}
		default:
			set[label] = fmt.Sprint(v)
		}
	}
	return set
}

func encodeContinue(t continueToken) string {
	data, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeContinue(s string) (continueToken, error) {
	var t continueToken
	data, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return t, err
	}
	if err := json.Unmarshal(data, &t); err != nil {
		return t, err
	}
	if t.V != "meta.k8s.io/v1" || t.Start == "" {
		return t, errors.New("unknown continue token")
	}
	return t, nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

// writeStatus answers with the metav1.Status of err, as the API server
// does.
func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.Status()
	st.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
	writeJSON(w, int(st.Code), st)
}
