package kube

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/proxyscan/proxyscan/parsers/internal/jsonstr"
)

// direct decodes the JSON of the two kinds that make up most of a large
// export, Service (core/v1) and EndpointSlice (discovery.k8s.io/v1),
// straight into their k8s.io/api types, without reflection.
//
// It reads only the JSON that kubectl prints for them: every key spelled
// exactly as the type's JSON tag and given once per object, keys in plain
// ASCII, integers without fraction or exponent within their field's
// range, and values of their field's JSON type. On anything else — an
// unknown or differently spelled key, a duplicate key, a number or type
// that encoding/json refuses or reads another way, a syntax error — it
// gives up and the object goes to the general path, whose results and
// errors are the reference decoders'. When it succeeds, the object is the
// one encoding/json gives (FuzzDirect and FuzzDirectShapes check this): a
// null leaves the zero value, an empty array or object gives an empty (not
// nil) slice or map, intstr.IntOrString decodes itself with its
// UnmarshalJSON, and metav1.Time is parsed as its UnmarshalJSON parses it.
//
// Strings of the fields whose values repeat across objects (kinds,
// namespaces, protocols, node names, label keys, ...) are interned, and the
// small values that endpoints point to (conditions, addresses, node names,
// zones, target references) are carved from blocks, so that an
// EndpointSlice costs a few allocations rather than a dozen per endpoint.
// The input must be valid UTF-8 (fastJSONSafe); string escapes are
// decoded as encoding/json decodes them (jsonstr.Unescape).
type direct struct {
	d   []byte
	i   int
	bad bool

	intern map[string]string
	buf    []byte // unescaped string scratch

	// Blocks small values are carved from: endpoints have their own, so
	// that what outlives the endpoint lists (load.Options.Compact drops
	// them) pins none of theirs.
	cur       *blocks // kept, or endpoints' while an endpoint is read
	kept, eps blocks
	refs      []corev1.ObjectReference // endpoints' target references
	epScratch []discoveryv1.Endpoint   // scratch of the endpoints being read
	tmp       []string                 // scratch of the strings being read

	// lean, as Options.Lean, reads what Lean leaves out of the objects
	// (see leanMeta, leanSlice) as it reads everything, refusing what it
	// refuses, but keeps nothing of it.
	lean bool
	// slice says an EndpointSlice is read (not a Service): Lean leaves
	// out its annotations and owner references.
	slice bool
}

// blocks hand out small values from larger allocations.
type blocks struct {
	bools []bool
	strs  []string
	ints  []int32
}

func (b *blocks) str() *string {
	if len(b.strs) == 0 {
		b.strs = make([]string, 32)
	}
	p := &b.strs[0]
	b.strs = b.strs[1:]
	return p
}

// strSlice returns a slice of n strings with no room to grow.
func (b *blocks) strSlice(n int) []string {
	if len(b.strs) < n {
		b.strs = make([]string, max(32, n))
	}
	s := b.strs[:n:n]
	b.strs = b.strs[n:]
	return s
}

func (b *blocks) bool() *bool {
	if len(b.bools) == 0 {
		b.bools = make([]bool, 64)
	}
	p := &b.bools[0]
	b.bools = b.bools[1:]
	return p
}

func (b *blocks) int32() *int32 {
	if len(b.ints) == 0 {
		b.ints = make([]int32, 32)
	}
	p := &b.ints[0]
	b.ints = b.ints[1:]
	return p
}

// maxIntern bounds the strings one decoder interns.
const maxIntern = 4096

// service decodes data into s, reporting whether it could.
func (x *direct) service(data []byte, s *corev1.Service) bool {
	x.start(data)
	x.slice = false
	if x.object() {
		var seen uint64
		for n, k := 0, []byte(nil); x.key(&n, &k); {
			switch string(k) {
			case "kind":
				x.once(&seen, 0)
				s.Kind = x.istr()
			case "apiVersion":
				x.once(&seen, 1)
				s.APIVersion = x.istr()
			case "metadata":
				x.once(&seen, 2)
				x.meta(&s.ObjectMeta)
			case "spec":
				x.once(&seen, 3)
				x.serviceSpec(&s.Spec)
			case "status":
				x.once(&seen, 4)
				x.serviceStatus(&s.Status)
			default:
				x.fail()
			}
		}
	}
	return x.end()
}

// endpointSlice decodes data into s, reporting whether it could.
func (x *direct) endpointSlice(data []byte, s *discoveryv1.EndpointSlice) bool {
	x.start(data)
	x.slice = true
	if x.object() {
		var seen uint64
		for n, k := 0, []byte(nil); x.key(&n, &k); {
			switch string(k) {
			case "kind":
				x.once(&seen, 0)
				s.Kind = x.istr()
			case "apiVersion":
				x.once(&seen, 1)
				s.APIVersion = x.istr()
			case "metadata":
				x.once(&seen, 2)
				x.meta(&s.ObjectMeta)
			case "addressType":
				x.once(&seen, 3)
				s.AddressType = discoveryv1.AddressType(x.istr())
			case "endpoints":
				x.once(&seen, 4)
				s.Endpoints = x.endpoints()
			case "ports":
				x.once(&seen, 5)
				if x.array() {
					s.Ports = []discoveryv1.EndpointPort{}
					for n := 0; x.elem(&n); {
						s.Ports = append(s.Ports, discoveryv1.EndpointPort{})
						x.endpointPort(&s.Ports[len(s.Ports)-1])
					}
				}
			default:
				x.fail()
			}
		}
	}
	return x.end()
}

func (x *direct) start(data []byte) {
	x.d, x.i, x.bad = data, 0, false
	x.cur = &x.kept
	if x.intern == nil {
		x.intern = make(map[string]string)
	}
	x.ws()
}

// end reports whether the whole input was read, and lets go of it.
func (x *direct) end() bool {
	x.ws()
	ok := !x.bad && x.i == len(x.d)
	x.d, x.i = nil, 0
	if cap(x.buf) > 1<<16 {
		x.buf = nil
	}
	return ok
}

// fail gives up: every loop ends, as the input seems used up.
func (x *direct) fail() {
	x.bad = true
	x.i = len(x.d)
}

// once fails when the key numbered bit was already read in this object.
func (x *direct) once(seen *uint64, bit uint) {
	if *seen&(1<<bit) != 0 {
		x.fail()
	}
	*seen |= 1 << bit
}

func (x *direct) ws() {
	for x.i < len(x.d) {
		switch x.d[x.i] {
		case ' ', '\n':
			x.i = skipSpaces(x.d, x.i+1)
		case '\t', '\r':
			x.i++
		default:
			return
		}
	}
}

func (x *direct) peek() byte {
	if x.i < len(x.d) {
		return x.d[x.i]
	}
	return 0
}

// null consumes a null if one is next.
func (x *direct) null() bool {
	if x.i+4 <= len(x.d) && string(x.d[x.i:x.i+4]) == "null" {
		x.i += 4
		return true
	}
	return false
}

// object starts an object; false (the value consumed) for null.
func (x *direct) object() bool {
	if x.peek() == '{' {
		x.i++
		return true
	}
	if !x.null() {
		x.fail()
	}
	return false
}

// array starts an array; false (the value consumed) for null.
func (x *direct) array() bool {
	if x.peek() == '[' {
		x.i++
		return true
	}
	if !x.null() {
		x.fail()
	}
	return false
}

// key moves to the value of the next key of an object, setting k, or past
// the object's end, returning false. n counts the keys read.
func (x *direct) key(n *int, k *[]byte) bool {
	x.ws()
	c := x.peek()
	switch {
	case c == '}':
		x.i++
		return false
	case *n > 0 && c == ',':
		x.i++
		x.ws()
	case *n > 0:
		x.fail()
		return false
	}
	*n++
	if x.peek() != '"' {
		x.fail()
		return false
	}
	s := x.i + 1
	j := plainEnd(x.d, s)
	if j >= len(x.d) || x.d[j] != '"' {
		x.fail() // an escape, a control or non-ASCII byte, or no end
		return false
	}
	*k = x.d[s:j]
	x.i = j + 1
	x.ws()
	if x.peek() != ':' {
		x.fail()
		return false
	}
	x.i++
	x.ws()
	return true
}

// elem moves to the next element of an array, or past its end, returning
// false. n counts the elements read.
func (x *direct) elem(n *int) bool {
	x.ws()
	c := x.peek()
	switch {
	case c == ']':
		x.i++
		return false
	case *n > 0 && c == ',':
		x.i++
		x.ws()
	case *n > 0:
		x.fail()
		return false
	}
	*n++
	return !x.bad
}

// strBytes reads a string, returning its value (valid until the next
// string is read) and false for null.
func (x *direct) strBytes() ([]byte, bool) {
	if x.peek() != '"' {
		if !x.null() {
			x.fail()
		}
		return nil, false
	}
	s := x.i + 1
	for j := plainEnd(x.d, s); j < len(x.d); j = plainEnd(x.d, j+1) {
		switch b := x.d[j]; {
		case b == '"':
			x.i = j + 1
			return x.d[s:j], true
		case b == '\\':
			return x.unescape(s, j)
		case b < 0x20:
			x.fail()
			return nil, false
		}
		// A byte of a UTF-8 sequence (the text was checked as a whole).
	}
	x.fail()
	return nil, false
}

// plainEnd returns the offset of the first byte of d from j on that ends
// or escapes a string, is a control character or is not ASCII (len(d)
// when there is none), looking at eight bytes at a time.
func plainEnd(d []byte, j int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for j+8 <= len(d) {
		x := binary.LittleEndian.Uint64(d[j:])
		q, b := x^('"'*ones), x^('\\'*ones)
		// The high bit of a byte is set in (q-ones)&^q where q's byte is
		// zero, in (x-0x20*ones)&^x where x's is under 0x20, and in x
		// where it is not ASCII; borrows only set it in bytes after such
		// a byte, so the lowest one is the first.
		if m := ((q-ones)&^q | (b-ones)&^b | (x-0x20*ones)&^x | x) & highs; m != 0 {
			return j + bits.TrailingZeros64(m)/8
		}
		j += 8
	}
	for ; j < len(d); j++ {
		if c := d[j]; c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
			return j
		}
	}
	return j
}

// unescape reads the rest of a string that starts at s and has its first
// escape at j.
func (x *direct) unescape(s, j int) ([]byte, bool) {
	buf, end, p := jsonstr.Unescape(append(x.buf[:0], x.d[s:j]...), x.d, j)
	if p != jsonstr.OK {
		x.fail()
		return nil, false
	}
	x.i, x.buf = end, buf
	return buf, true
}

// str reads a string ("" for null).
func (x *direct) str() string {
	b, _ := x.strBytes()
	return string(b)
}

// istr reads a string that is likely to repeat across objects, interned.
func (x *direct) istr() string {
	b, _ := x.strBytes()
	return x.internBytes(b)
}

func (x *direct) internBytes(b []byte) string {
	if s, ok := x.intern[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(x.intern) < maxIntern && len(s) <= 64 {
		x.intern[s] = s
	}
	return s
}

// strPtr reads a string that a pointer holds (nil for null).
func (x *direct) strPtr(intern bool) *string {
	b, ok := x.strBytes()
	if !ok {
		return nil
	}
	p := x.cur.str()
	if intern {
		*p = x.internBytes(b)
	} else {
		*p = string(b)
	}
	return p
}

// boolean reads true or false; null (reported false) leaves v alone.
func (x *direct) boolean(v *bool) bool {
	switch {
	case x.i+4 <= len(x.d) && string(x.d[x.i:x.i+4]) == "true":
		x.i += 4
		*v = true
	case x.i+5 <= len(x.d) && string(x.d[x.i:x.i+5]) == "false":
		x.i += 5
		*v = false
	default:
		if !x.null() {
			x.fail()
		}
		return false
	}
	return true
}

// boolPtr reads a boolean that a pointer holds (nil for null).
func (x *direct) boolPtr() *bool {
	var v bool
	if !x.boolean(&v) {
		return nil
	}
	p := x.cur.bool()
	*p = v
	return p
}

// integer reads an integer in [lo, hi] the way encoding/json reads one
// into a Go integer, giving up on what it would refuse (fractions,
// exponents, overflow) and on very long numbers; null (reported false)
// leaves v alone.
func (x *direct) integer(v *int64, lo, hi int64) bool {
	if x.null() {
		return false
	}
	d := x.d
	j := x.i
	neg := j < len(d) && d[j] == '-'
	if neg {
		j++
	}
	s := j
	var n int64
	for j < len(d) && d[j] >= '0' && d[j] <= '9' {
		n = n*10 + int64(d[j]-'0')
		j++
	}
	digits := j - s
	if digits == 0 || digits > 18 || digits > 1 && d[s] == '0' ||
		j < len(d) && (d[j] == '.' || d[j] == 'e' || d[j] == 'E') {
		x.fail()
		return false
	}
	if neg {
		n = -n
	}
	if n < lo || n > hi {
		x.fail()
		return false
	}
	x.i = j
	*v = n
	return true
}

func (x *direct) int32(v *int32) {
	var n int64
	if x.integer(&n, -1<<31, 1<<31-1) {
		*v = int32(n)
	}
}

func (x *direct) int32Ptr() *int32 {
	var n int64
	if !x.integer(&n, -1<<31, 1<<31-1) {
		return nil
	}
	p := x.cur.int32()
	*p = int32(n)
	return p
}

// scalar returns the text of the string, number, boolean or null that is
// next, for a type's own UnmarshalJSON.
func (x *direct) scalar() []byte {
	s := x.i
	switch c := x.peek(); {
	case c == '"':
		x.strBytes()
	case c == '{' || c == '[' || c == 0:
		x.fail()
	default:
	scan:
		for x.i < len(x.d) {
			switch x.d[x.i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				break scan
			}
			x.i++
		}
		if x.i == s {
			x.fail() // no value: UnmarshalJSON needs one
		}
	}
	if x.bad {
		return nil
	}
	return x.d[s:x.i]
}

// time reads a metav1.Time. A string without escapes is parsed as its
// UnmarshalJSON parses it (RFC 3339, in the local time zone), without
// the encoding/json round trip it makes; anything else goes to
// UnmarshalJSON itself.
func (x *direct) time(t *metav1.Time) {
	b := x.scalar()
	if len(b) >= 2 && b[0] == '"' && bytes.IndexByte(b, '\\') < 0 {
		pt, err := time.Parse(time.RFC3339, string(b[1:len(b)-1]))
		if err != nil {
			x.fail()
			return
		}
		t.Time = pt.Local()
		return
	}
	if b != nil && t.UnmarshalJSON(b) != nil {
		x.fail()
	}
}

// strMap reads a map of strings into *m (nil for null, as in
// encoding/json, which also merges into a map already there).
func (x *direct) strMap(m *map[string]string, internValues bool) {
	if !x.object() {
		*m = nil
		return
	}
	if *m == nil {
		*m = make(map[string]string)
	}
	for n, k := 0, []byte(nil); x.key(&n, &k); {
		key := x.internBytes(k)
		if internValues {
			(*m)[key] = x.istr()
		} else {
			(*m)[key] = x.str()
		}
	}
}

// skipStrMap reads a map of strings as strMap does, keeping nothing.
func (x *direct) skipStrMap() {
	if !x.object() {
		return
	}
	for n, k := 0, []byte(nil); x.key(&n, &k); {
		x.strBytes()
	}
}

// strings reads an array of strings, carved from a block when short.
func (x *direct) strings(intern bool) []string {
	if !x.array() {
		return nil
	}
	tmp := x.tmp[:0]
	for n := 0; x.elem(&n); {
		if intern {
			tmp = append(tmp, x.istr())
		} else {
			tmp = append(tmp, x.str())
		}
	}
	var out []string
	switch {
	case len(tmp) == 0:
		out = []string{}
	case len(tmp) <= 4:
		out = x.cur.strSlice(len(tmp))
		copy(out, tmp)
	default:
		out = append([]string(nil), tmp...)
	}
	clear(tmp)
	x.tmp = tmp[:0]
	return out
}

func (x *direct) meta(m *metav1.ObjectMeta) {
	if !x.object() {
		return
	}
	var seen uint64
	for n, k := 0, []byte(nil); x.key(&n, &k); {
		switch string(k) {
		case "name":
			x.once(&seen, 0)
			m.Name = x.str()
		case "generateName":
			x.once(&seen, 1)
			m.GenerateName = x.str()
		case "namespace":
			x.once(&seen, 2)
			m.Namespace = x.istr()
		case "selfLink":
			x.once(&seen, 3)
			//lint:ignore SA1019 decoded as encoding/json decodes it, which the fast path must match
			m.SelfLink = x.str()
		case "uid":
			x.once(&seen, 4)
			if x.lean && (x.slice || m.Namespace != "" && m.Name != "" && !clusterService(m)) {
				x.strBytes()
				break
			}
			m.UID = types.UID(x.str())
		case "resourceVersion":
			x.once(&seen, 5)
			m.ResourceVersion = x.str()
		case "generation":
			x.once(&seen, 6)
			x.integer(&m.Generation, -1<<63, 1<<63-1)
		case "creationTimestamp":
			x.once(&seen, 7)
			x.time(&m.CreationTimestamp)
		case "deletionTimestamp":
			x.once(&seen, 8)
			if !x.null() {
				m.DeletionTimestamp = &metav1.Time{}
				x.time(m.DeletionTimestamp)
			}
		case "deletionGracePeriodSeconds":
			x.once(&seen, 9)
			var v int64
			if x.integer(&v, -1<<63, 1<<63-1) {
				m.DeletionGracePeriodSeconds = &v
			}
		case "labels":
			x.once(&seen, 10)
			x.strMap(&m.Labels, false)
		case "annotations":
			x.once(&seen, 11)
			if x.lean && x.slice {
				x.skipStrMap()
				break
			}
			x.strMap(&m.Annotations, false)
		case "ownerReferences":
			x.once(&seen, 12)
			if x.array() {
				if x.lean && x.slice {
					for n := 0; x.elem(&n); {
						x.ownerRef(nil)
					}
					break
				}
				m.OwnerReferences = []metav1.OwnerReference{}
				for n := 0; x.elem(&n); {
					m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{})
					x.ownerRef(&m.OwnerReferences[len(m.OwnerReferences)-1])
				}
			}
		case "finalizers":
			x.once(&seen, 13)
			m.Finalizers = x.strings(false)
		default:
			x.fail() // managedFields included
		}
	}
	if x.lean && !clusterService(m) {
		// Lean keeps the uid of Service default/kubernetes only (read
		// above when it came before the name and namespace).
		m.UID = ""
	}
}

// clusterService reports whether m is that of Service default/kubernetes,
// whose uid names the cluster: Lean keeps it (see leanMeta).
func clusterService(m *metav1.ObjectMeta) bool {
	return m.Namespace == "default" && m.Name == "kubernetes"
}

// ownerRef reads an owner reference into r; with r nil, it reads it all
// the same and keeps nothing.
func (x *direct) ownerRef(r *metav1.OwnerReference) {
	if !x.object() {
		return
	}
	var seen uint64
	for n, k := 0, []byte(nil); x.key(&n, &k); {
		var bit uint
		switch string(k) {
		case "apiVersion":
			bit = 0
		case "kind":
			bit = 1
		case "name":
			bit = 2
		case "uid":
			bit = 3
		case "controller":
			bit = 4
		case "blockOwnerDeletion":
			bit = 5
		default:
			x.fail()
			continue
		}
		x.once(&seen, bit)
		switch {
		case r == nil && bit >= 4:
			var v bool
			x.boolean(&v)
		case r == nil:
			x.strBytes()
		case bit == 0:
			r.APIVersion = x.istr()
		case bit == 1:
			r.Kind = x.istr()
		case bit == 2:
			r.Name = x.str()
		case bit == 3:
			r.UID = types.UID(x.str())
		case bit == 4:
			r.Controller = x.boolPtr()
		case bit == 5:
			r.BlockOwnerDeletion = x.boolPtr()
		}
	}
}

func (x *direct) serviceSpec(s *corev1.ServiceSpec) {
	if !x.object() {
		return
	}
	var seen uint64
	for n, k := 0, []byte(nil); x.key(&n, &k); {
		switch string(k) {
		case "ports":
			x.once(&seen, 0)
			if x.array() {
				s.Ports = []corev1.ServicePort{}
				for n := 0; x.elem(&n); {
					s.Ports = append(s.Ports, corev1.ServicePort{})
					x.servicePort(&s.Ports[len(s.Ports)-1])
				}
			}
		case "selector":
			x.once(&seen, 1)
			if x.lean {
				x.skipStrMap()
				break
			}
			x.strMap(&s.Selector, false)
		case "clusterIP":
			x.once(&seen, 2)
			s.ClusterIP = x.str()
		case "clusterIPs":
			x.once(&seen, 3)
			s.ClusterIPs = x.strings(false)
		case "type":
			x.once(&seen, 4)
			s.Type = corev1.ServiceType(x.istr())
		case "externalIPs":
			x.once(&seen, 5)
			s.ExternalIPs = x.strings(false)
		case "sessionAffinity":
			x.once(&seen, 6)
			s.SessionAffinity = corev1.ServiceAffinity(x.istr())
		case "loadBalancerIP":
			x.once(&seen, 7)
			s.LoadBalancerIP = x.str()
		case "loadBalancerSourceRanges":
			x.once(&seen, 8)
			s.LoadBalancerSourceRanges = x.strings(false)
		case "externalName":
			x.once(&seen, 9)
			s.ExternalName = x.str()
		case "externalTrafficPolicy":
			x.once(&seen, 10)
			s.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicy(x.istr())
		case "healthCheckNodePort":
			x.once(&seen, 11)
			x.int32(&s.HealthCheckNodePort)
		case "publishNotReadyAddresses":
			x.once(&seen, 12)
			x.boolean(&s.PublishNotReadyAddresses)
		case "sessionAffinityConfig":
			x.once(&seen, 13)
			if x.object() {
				s.SessionAffinityConfig = &corev1.SessionAffinityConfig{}
				for n, k := 0, []byte(nil); x.key(&n, &k); {
					if string(k) != "clientIP" || n > 1 {
						x.fail()
						break
					}
					if x.object() {
						c := &corev1.ClientIPConfig{}
						s.SessionAffinityConfig.ClientIP = c
						for n, k := 0, []byte(nil); x.key(&n, &k); {
							if string(k) != "timeoutSeconds" || n > 1 {
								x.fail()
								break
							}
							c.TimeoutSeconds = x.int32Ptr()
						}
					}
				}
			}
		case "ipFamilies":
			x.once(&seen, 14)
			if x.array() {
				s.IPFamilies = []corev1.IPFamily{}
				for n := 0; x.elem(&n); {
					s.IPFamilies = append(s.IPFamilies, corev1.IPFamily(x.istr()))
				}
			}
		case "ipFamilyPolicy":
			x.once(&seen, 15)
			s.IPFamilyPolicy = (*corev1.IPFamilyPolicy)(x.strPtr(true))
		case "allocateLoadBalancerNodePorts":
			x.once(&seen, 16)
			s.AllocateLoadBalancerNodePorts = x.boolPtr()
		case "loadBalancerClass":
			x.once(&seen, 17)
			s.LoadBalancerClass = x.strPtr(true)
		case "internalTrafficPolicy":
			x.once(&seen, 18)
			s.InternalTrafficPolicy = (*corev1.ServiceInternalTrafficPolicy)(x.strPtr(true))
		case "trafficDistribution":
			x.once(&seen, 19)
			s.TrafficDistribution = x.strPtr(true)
		default:
			x.fail()
		}
	}
}

func (x *direct) servicePort(p *corev1.ServicePort) {
	if !x.object() {
		return
	}
	var seen uint64
	for n, k := 0, []byte(nil); x.key(&n, &k); {
		switch string(k) {
		case "name":
			x.once(&seen, 0)
			p.Name = x.istr()
		case "protocol":
			x.once(&seen, 1)
			p.Protocol = corev1.Protocol(x.istr())
		case "appProtocol":
			x.once(&seen, 2)
			p.AppProtocol = x.strPtr(true)
		case "port":
			x.once(&seen, 3)
			x.int32(&p.Port)
		case "targetPort":
			x.once(&seen, 4)
			if b := x.scalar(); b != nil && p.TargetPort.UnmarshalJSON(b) != nil {
				x.fail()
			}
		case "nodePort":
			x.once(&seen, 5)
			x.int32(&p.NodePort)
		default:
			x.fail()
		}
	}
}

func (x *direct) serviceStatus(s *corev1.ServiceStatus) {
	if !x.object() {
		return
	}
	var seen uint64
	for n, k := 0, []byte(nil); x.key(&n, &k); {
		switch string(k) {
		case "loadBalancer":
			x.once(&seen, 0)
			if !x.object() {
				break
			}
			for n, k := 0, []byte(nil); x.key(&n, &k); {
				if string(k) != "ingress" || n > 1 {
					x.fail()
					break
				}
				if x.array() {
					s.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{}
					for n := 0; x.elem(&n); {
						s.LoadBalancer.Ingress = append(s.LoadBalancer.Ingress, corev1.LoadBalancerIngress{})
						x.ingress(&s.LoadBalancer.Ingress[len(s.LoadBalancer.Ingress)-1])
					}
				}
			}
		case "conditions":
			x.once(&seen, 1)
			if x.array() {
				s.Conditions = []metav1.Condition{}
				for n := 0; x.elem(&n); {
					s.Conditions = append(s.Conditions, metav1.Condition{})
					x.condition(&s.Conditions[len(s.Conditions)-1])
				}
			}
		default:
			x.fail()
		}
	}
}

func (x *direct) ingress(in *corev1.LoadBalancerIngress) {
	if !x.object() {
		return
	}
	var seen uint64
	for n, k := 0, []byte(nil); x.key(&n, &k); {
		switch string(k) {
		case "ip":
			x.once(&seen, 0)
			in.IP = x.str()
		case "hostname":
			x.once(&seen, 1)
			in.Hostname = x.str()
		case "ipMode":
			x.once(&seen, 2)
			in.IPMode = (*corev1.LoadBalancerIPMode)(x.strPtr(true))
		case "ports":
			x.once(&seen, 3)
			if !x.array() {
				break
			}
			in.Ports = []corev1.PortStatus{}
			for n := 0; x.elem(&n); {
				in.Ports = append(in.Ports, corev1.PortStatus{})
				p := &in.Ports[len(in.Ports)-1]
				if !x.object() {
					continue
				}
				var seen uint64
				for n, k := 0, []byte(nil); x.key(&n, &k); {
					switch string(k) {
					case "port":
						x.once(&seen, 0)
						x.int32(&p.Port)
					case "protocol":
						x.once(&seen, 1)
						p.Protocol = corev1.Protocol(x.istr())
					case "error":
						x.once(&seen, 2)
						p.Error = x.strPtr(false)
					default:
						x.fail()
					}
				}
			}
		default:
			x.fail()
		}
	}
}

func (x *direct) condition(c *metav1.Condition) {
	if !x.object() {
		return
	}
	var seen uint64
	for n, k := 0, []byte(nil); x.key(&n, &k); {
		switch string(k) {
		case "type":
			x.once(&seen, 0)
			c.Type = x.istr()
		case "status":
			x.once(&seen, 1)
			c.Status = metav1.ConditionStatus(x.istr())
		case "observedGeneration":
			x.once(&seen, 2)
			x.integer(&c.ObservedGeneration, -1<<63, 1<<63-1)
		case "lastTransitionTime":
			x.once(&seen, 3)
			x.time(&c.LastTransitionTime)
		case "reason":
			x.once(&seen, 4)
			c.Reason = x.istr()
		case "message":
			x.once(&seen, 5)
			c.Message = x.str()
		default:
			x.fail()
		}
	}
}

// endpoints reads an EndpointSlice's endpoints into a slice of their
// exact length.
func (x *direct) endpoints() []discoveryv1.Endpoint {
	if !x.array() {
		return nil
	}
	eps := x.epScratch[:0]
	for n := 0; x.elem(&n); {
		eps = append(eps, discoveryv1.Endpoint{})
		x.endpoint(&eps[len(eps)-1])
	}
	out := make([]discoveryv1.Endpoint, len(eps))
	copy(out, eps)
	clear(eps)
	x.epScratch = eps[:0]
	if cap(x.epScratch) > 1024 {
		x.epScratch = nil
	}
	return out
}

func (x *direct) endpoint(e *discoveryv1.Endpoint) {
	if !x.object() {
		return
	}
	x.cur = &x.eps
	defer func() { x.cur = &x.kept }()
	var seen uint64
	for n, k := 0, []byte(nil); x.key(&n, &k); {
		switch string(k) {
		case "addresses":
			x.once(&seen, 0)
			e.Addresses = x.strings(false)
		case "conditions":
			x.once(&seen, 1)
			if !x.object() {
				break
			}
			var seen uint64
			for n, k := 0, []byte(nil); x.key(&n, &k); {
				switch string(k) {
				case "ready":
					x.once(&seen, 0)
					e.Conditions.Ready = x.boolPtr()
				case "serving":
					x.once(&seen, 1)
					e.Conditions.Serving = x.boolPtr()
				case "terminating":
					x.once(&seen, 2)
					e.Conditions.Terminating = x.boolPtr()
				default:
					x.fail()
				}
			}
		case "hostname":
			x.once(&seen, 2)
			if x.lean {
				x.strBytes()
				break
			}
			e.Hostname = x.strPtr(false)
		case "targetRef":
			x.once(&seen, 3)
			if x.object() {
				if x.lean {
					x.objectRef(nil)
					break
				}
				if len(x.refs) == 0 {
					x.refs = make([]corev1.ObjectReference, 16)
				}
				e.TargetRef = &x.refs[0]
				x.refs = x.refs[1:]
				x.objectRef(e.TargetRef)
			}
		case "deprecatedTopology":
			x.once(&seen, 4)
			x.strMap(&e.DeprecatedTopology, true)
		case "nodeName":
			x.once(&seen, 5)
			e.NodeName = x.strPtr(true)
		case "zone":
			x.once(&seen, 6)
			e.Zone = x.strPtr(true)
		case "hints":
			x.once(&seen, 7)
			if x.object() {
				e.Hints = &discoveryv1.EndpointHints{}
				x.hints(e.Hints)
			}
		default:
			x.fail()
		}
	}
}

// objectRef reads the fields of an object reference, its '{' read.
// With r nil, it reads them all the same and keeps nothing.
func (x *direct) objectRef(r *corev1.ObjectReference) {
	var seen uint64
	for n, k := 0, []byte(nil); x.key(&n, &k); {
		var bit uint
		switch string(k) {
		case "kind":
			bit = 0
		case "namespace":
			bit = 1
		case "name":
			bit = 2
		case "uid":
			bit = 3
		case "apiVersion":
			bit = 4
		case "resourceVersion":
			bit = 5
		case "fieldPath":
			bit = 6
		default:
			x.fail()
			continue
		}
		x.once(&seen, bit)
		switch bit {
		case 0, 1, 4:
			if r == nil {
				x.strBytes()
				break
			}
			v := x.istr()
			switch bit {
			case 0:
				r.Kind = v
			case 1:
				r.Namespace = v
			case 4:
				r.APIVersion = v
			}
		default:
			if r == nil {
				x.strBytes()
				break
			}
			v := x.str()
			switch bit {
			case 2:
				r.Name = v
			case 3:
				r.UID = types.UID(v)
			case 5:
				r.ResourceVersion = v
			case 6:
				r.FieldPath = v
			}
		}
	}
}

// hints reads an endpoint's hints, its '{' read.
func (x *direct) hints(h *discoveryv1.EndpointHints) {
	var seen uint64
	for n, k := 0, []byte(nil); x.key(&n, &k); {
		switch string(k) {
		case "forZones":
			x.once(&seen, 0)
			if x.array() {
				h.ForZones = []discoveryv1.ForZone{}
				for n := 0; x.elem(&n); {
					h.ForZones = append(h.ForZones, discoveryv1.ForZone{Name: x.nameObject()})
				}
			}
		case "forNodes":
			x.once(&seen, 1)
			if x.array() {
				h.ForNodes = []discoveryv1.ForNode{}
				for n := 0; x.elem(&n); {
					h.ForNodes = append(h.ForNodes, discoveryv1.ForNode{Name: x.nameObject()})
				}
			}
		default:
			x.fail()
		}
	}
}

// nameObject reads {"name": ...} (a ForZone or ForNode).
func (x *direct) nameObject() string {
	name := ""
	if x.object() {
		for n, k := 0, []byte(nil); x.key(&n, &k); {
			if string(k) != "name" || n > 1 {
				x.fail()
				break
			}
			name = x.istr()
		}
	}
	return name
}

func (x *direct) endpointPort(p *discoveryv1.EndpointPort) {
	if !x.object() {
		return
	}
	var seen uint64
	for n, k := 0, []byte(nil); x.key(&n, &k); {
		switch string(k) {
		case "name":
			x.once(&seen, 0)
			p.Name = x.strPtr(true)
		case "protocol":
			x.once(&seen, 1)
			p.Protocol = (*corev1.Protocol)(x.strPtr(true))
		case "port":
			x.once(&seen, 2)
			p.Port = x.int32Ptr()
		case "appProtocol":
			x.once(&seen, 3)
			p.AppProtocol = x.strPtr(true)
		default:
			x.fail()
		}
	}
}
