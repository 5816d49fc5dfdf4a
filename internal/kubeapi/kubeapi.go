// Package kubeapi is the collector's small client of the Kubernetes API
// server: it reads single objects and paginated lists with GET and decodes
// their JSON into the k8s.io/api types.
//
// It is built on client-go's rest package alone, which turns a kubeconfig
// or the in-cluster service account into an *http.Client (TLS, bearer
// tokens, client certificates, exec and auth-provider plugins,
// impersonation, user agent). The typed clientset
// (k8s.io/client-go/kubernetes) is deliberately not used: linking it pulls
// in the client, apply configurations and scheme registrations of every
// API group, which nearly doubles the size of the binary and raises by
// half the memory every command uses before doing anything
// (internal/depcheck keeps it out).
//
// Like client-go, the client limits its own request rate (the config's
// QPS and Burst), retries a GET the server asks to retry (429 Too Many
// Requests, or a 5xx answer with Retry-After) or whose connection was
// reset, and turns an error answer into an *apierrors.StatusError: the
// metav1.Status of its body when there is one, so that
// apierrors.IsNotFound, IsForbidden and the others work as with the
// clientset, and the server's message is kept.
package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	kjson "sigs.k8s.io/json"
)

// PageSize is how many objects [List] asks for in one page (the limit
// parameter): the server answers with at most that many and a continue
// token for the rest.
const PageSize = 500

// maxRetries bounds the retries of one GET, as client-go's default.
const maxRetries = 10

// maxErrorText caps the text of a non-Status error answer kept in the
// error.
const maxErrorText = 1024

// A Client reads objects from one API server. It is safe for concurrent
// use.
type Client struct {
	// host is the server's URL; a path in it is a prefix of every API
	// path (an API server behind a proxy that relocated it).
	host *url.URL
	// http carries the config's TLS, credentials and user agent.
	http *http.Client
	// limiter enforces the config's QPS and Burst; nil for none.
	limiter flowcontrol.RateLimiter
	// retryWait is the pause before retrying after a reset connection.
	retryWait time.Duration
}

// New returns a client of the API server cfg describes. As client-go's
// REST client does, a zero QPS or Burst means 5 requests a second with
// bursts of 10, a negative QPS no client-side limit, and cfg.RateLimiter,
// when set, replaces both.
func New(cfg *rest.Config) (*Client, error) {
	host, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("the API server's address: %w", err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("the API server's transport: %w", err)
	}
	limiter := cfg.RateLimiter
	if limiter == nil {
		qps, burst := cfg.QPS, cfg.Burst
		if qps == 0 {
			qps = rest.DefaultQPS
		}
		if burst == 0 {
			burst = rest.DefaultBurst
		}
		if qps > 0 {
			limiter = flowcontrol.NewTokenBucketRateLimiter(qps, burst)
		}
	}
	return &Client{host: host, http: hc, limiter: limiter, retryWait: time.Second}, nil
}

// A Resource is a kind of object of the API: the group and version it is
// served at, its plural resource name in paths, and its Kind.
type Resource struct {
	Group, Version, Resource, Kind string
}

// The resources the collector reads.
var (
	Services       = Resource{Version: "v1", Resource: "services", Kind: "Service"}
	EndpointSlices = Resource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices", Kind: "EndpointSlice"}
	ConfigMaps     = Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap"}
	Pods           = Resource{Version: "v1", Resource: "pods", Kind: "Pod"}
	Nodes          = Resource{Version: "v1", Resource: "nodes", Kind: "Node"}
	DaemonSets     = Resource{Group: "apps", Version: "v1", Resource: "daemonsets", Kind: "DaemonSet"}
	ServiceCIDRs   = Resource{Group: "networking.k8s.io", Version: "v1", Resource: "servicecidrs", Kind: "ServiceCIDR"}
)

// APIVersion is the resource's apiVersion: "v1", "apps/v1".
func (r Resource) APIVersion() string {
	return schema.GroupVersion{Group: r.Group, Version: r.Version}.String()
}

// GroupResource is the resource's group and plural name, as errors name
// it ("daemonsets.apps").
func (r Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.Group, Resource: r.Resource}
}

// Path is the API path of the resource's objects in namespace (all
// namespaces, or a cluster-scoped resource, when empty), or of the object
// name when set: /api/v1/namespaces/kube-system/configmaps/kube-proxy.
func (r Resource) Path(namespace, name string) string {
	p := "/api/" + r.Version
	if r.Group != "" {
		p = "/apis/" + r.Group + "/" + r.Version
	}
	if namespace != "" {
		p += "/namespaces/" + namespace
	}
	p += "/" + r.Resource
	if name != "" {
		p += "/" + name
	}
	return p
}

// ListOptions select the objects of a list.
type ListOptions struct {
	// LabelSelector and FieldSelector are passed to the server as they
	// are ("k8s-app=kube-proxy", "spec.nodeName=worker-1").
	LabelSelector, FieldSelector string
}

// Object is a pointer to a k8s.io/api object type, whose apiVersion and
// kind can be set.
type Object[T any] interface {
	*T
	GetObjectKind() schema.ObjectKind
}

// Get reads the object name of r in namespace (empty for a cluster-scoped
// resource) into a T of the k8s.io/api types, with its apiVersion and kind
// set.
func Get[T any, P Object[T]](ctx context.Context, c *Client, r Resource, namespace, name string) (*T, error) {
	if name == "" {
		return nil, errors.New("resource name may not be empty")
	}
	if err := validSegments(namespace, name); err != nil {
		return nil, err
	}
	obj := new(T)
	if err := c.get(ctx, r, r.Path(namespace, name), nil, name, obj); err != nil {
		return nil, err
	}
	if err := checkKind(P(obj).GetObjectKind(), r, r.Kind); err != nil {
		return nil, err
	}
	P(obj).GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind})
	return obj, nil
}

// List reads every object of r in namespace (all namespaces, or a
// cluster-scoped resource, when empty) that opts select, [PageSize] at a
// time: each page's continue token asks for the next. The items have their
// apiVersion and kind set (the server leaves them out of a list's items).
func List[T any, P Object[T]](ctx context.Context, c *Client, r Resource, namespace string, opts ListOptions) ([]T, error) {
	if err := validSegments(namespace); err != nil {
		return nil, err
	}
	q := url.Values{"limit": {strconv.Itoa(PageSize)}}
	if opts.LabelSelector != "" {
		q.Set("labelSelector", opts.LabelSelector)
	}
	if opts.FieldSelector != "" {
		q.Set("fieldSelector", opts.FieldSelector)
	}
	gvk := schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
	var items []T
	for {
		var page struct {
			metav1.TypeMeta
			Metadata metav1.ListMeta `json:"metadata"`
			Items    []T             `json:"items"`
		}
		if err := c.get(ctx, r, r.Path(namespace, ""), q, "", &page); err != nil {
			return nil, err
		}
		if err := checkKind(&page.TypeMeta, r, r.Kind+"List"); err != nil {
			return nil, err
		}
		for i := range page.Items {
			P(&page.Items[i]).GetObjectKind().SetGroupVersionKind(gvk)
		}
		if items == nil {
			items = page.Items
		} else {
			items = append(items, page.Items...)
		}
		next := page.Metadata.Continue
		if next == "" {
			return items, nil
		}
		if next == q.Get("continue") {
			return nil, fmt.Errorf("listing %s: the server answered the same continue token again", r.GroupResource())
		}
		q.Set("continue", next)
	}
}

// checkKind checks that the server answered with the object kind asked
// for (a missing apiVersion or kind is taken as right).
func checkKind(k schema.ObjectKind, r Resource, kind string) error {
	gvk := k.GroupVersionKind()
	if (gvk.Kind != "" && gvk.Kind != kind) || (gvk.Version != "" && gvk.GroupVersion().String() != r.APIVersion()) {
		return fmt.Errorf("the server answered a %s %s where a %s %s was expected", gvk.GroupVersion(), gvk.Kind, r.APIVersion(), kind)
	}
	return nil
}

func validSegments(segs ...string) error {
	for _, s := range segs {
		if s == "" {
			continue
		}
		if msgs := rest.IsValidPathSegmentName(s); len(msgs) != 0 {
			return fmt.Errorf("invalid name %q: %s", s, strings.Join(msgs, ", "))
		}
	}
	return nil
}

// get GETs path with the query q and decodes the JSON answer into out,
// retrying when the server asks to or the connection was reset. name is
// the object's name for error messages (empty for a list).
func (c *Client) get(ctx context.Context, r Resource, path string, q url.Values, name string, out any) error {
	u := *c.host
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawPath = ""
	u.RawQuery = q.Encode()
	for attempt := 1; ; attempt++ {
		if c.limiter != nil {
			if err := c.limiter.Wait(ctx); err != nil {
				return fmt.Errorf("waiting for the client-side rate limit: %w", err)
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return fmt.Errorf("the request of %s: %w", path, err)
		}
		req.Header.Set("Accept", "application/json")
		resp, err := c.http.Do(req)
		if err != nil {
			if attempt <= maxRetries && ctx.Err() == nil && (utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err)) {
				if werr := sleep(ctx, c.retryWait); werr != nil {
					return err
				}
				continue
			}
			return err
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return fmt.Errorf("reading the answer of GET %s: %w", u.Redacted(), err)
		}
		if resp.StatusCode >= 200 && resp.StatusCode <= 206 {
			if err := kjson.UnmarshalCaseSensitivePreserveInts(body, out); err != nil {
				return fmt.Errorf("decoding the answer of GET %s: %w", u.Redacted(), err)
			}
			return nil
		}
		seconds, retryAfter := retryAfterSeconds(resp)
		if retryAfter && attempt <= maxRetries && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500) {
			if sleep(ctx, time.Duration(seconds)*time.Second) == nil {
				continue
			}
		}
		return responseError(resp, body, r, name)
	}
}

// responseError is the error of an answer other than 2xx: the
// metav1.Status of its body, else an error of its status code, as
// client-go makes them.
func responseError(resp *http.Response, body []byte, r Resource, name string) error {
	var st metav1.Status
	if isJSON(resp) && kjson.UnmarshalCaseSensitivePreserveInts(body, &st) == nil &&
		(st.Kind == "Status" || st.Kind == "") && st.Status == metav1.StatusFailure {
		if st.Code == 0 {
			st.Code = int32(resp.StatusCode)
		}
		return &apierrors.StatusError{ErrStatus: st}
	}
	message := "unknown"
	if isText(resp) {
		if len(body) > maxErrorText {
			body = body[:maxErrorText]
		}
		message = strings.TrimSpace(string(body))
	}
	seconds, _ := retryAfterSeconds(resp)
	return apierrors.NewGenericServerResponse(resp.StatusCode, http.MethodGet, r.GroupResource(), name, message, seconds, true)
}

func mediaType(resp *http.Response) (string, bool) {
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		return "", false
	}
	mt, _, err := mime.ParseMediaType(ct)
	return mt, err == nil
}

func isJSON(resp *http.Response) bool {
	mt, ok := mediaType(resp)
	return ok && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// isText reports whether the answer is text, whose body can be quoted in
// an error: a text/ media type, or none.
func isText(resp *http.Response) bool {
	if resp.Header.Get("Content-Type") == "" {
		return true
	}
	mt, ok := mediaType(resp)
	return ok && strings.HasPrefix(mt, "text/")
}

// retryAfterSeconds is the Retry-After header in seconds, if any.
func retryAfterSeconds(resp *http.Response) (int, bool) {
	if h := resp.Header.Get("Retry-After"); h != "" {
		if i, err := strconv.Atoi(h); err == nil && i >= 0 {
			return i, true
		}
	}
	return 0, false
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
