package redact

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// KeySize is the size of a redaction key.
const KeySize = 32

// A Redactor maps addresses and names consistently under one key.
type Redactor struct {
	key []byte
	pan *pan

	mu sync.Mutex
	// kinds records every name met with its kinds.
	kinds map[string]map[string]bool
	// names is the final name mapping (filled lazily after learning).
	names map[string]string
	// fixed are mappings carried over from an earlier map.
	fixed map[string]string
	// addrs records every address mapped, for the map file.
	addrs map[string]string
	// chains maps old chain names or hashes to new ones.
	chains map[string]string
	// learning state for kube-proxy's iptables chain hashes.
	ipt *iptLearn
	// spns are service port names met (ns/name:port or ns/name).
	spns map[string]bool
}

// New returns a redactor with a key; a nil key makes a random one.
func New(key []byte) (*Redactor, error) {
	if key == nil {
		key = make([]byte, KeySize)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
	}
	if len(key) != KeySize {
		// Any key material is stretched to the key size.
		sum := sha256.Sum256(key)
		key = sum[:]
	}
	return &Redactor{
		key: key, pan: newPAN(key),
		kinds: map[string]map[string]bool{}, fixed: map[string]string{},
		addrs: map[string]string{}, chains: map[string]string{}, spns: map[string]bool{},
		ipt: newIPTLearn(),
	}, nil
}

// Kinds of names, in the order that picks a name's pseudonym prefix when
// it is used in several roles.
var kindPrefix = []struct{ kind, prefix string }{
	{"namespace", "ns"}, {"service", "svc"}, {"node", "node"}, {"pod", "pod"}, {"object", "obj"},
}

// system names are never mapped: they identify nobody, and the analysis
// looks for some of them (kube-system/kube-proxy).
var system = map[string]bool{
	"default": true, "kube-system": true, "kube-public": true, "kube-node-lease": true,
	"kubernetes": true, "kube-proxy": true, "kube-dns": true, "coredns": true, "localhost": true,
	"kube-proxy-config": true,
}

// reserved words are not mapped in free text, where a name equal to one
// cannot be told apart from the keyword.
var reserved = wordSet(`nat filter mangle raw security tcp udp sctp icmp icmpv6 ip ip6 inet arp bridge netdev
		iptables ipvs nftables ipv4 ipv6 true false null yes no on off primary localhost all none
		rr wrr lc wlc lblc lblcr dh sh sed nq mh fo ovf local cluster external internal
		accept drop reject return jump goto comment mark new established related invalid
		info warning error debug stdout stderr proxy mode kube node service services endpoints
		name namespace http https dns metrics healthz livez v1 apps core io com net org svc`)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

var reName = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9._]*[A-Za-z0-9])?$`)

// AddName records a Kubernetes name in a role (namespace, service, node,
// pod, object).
func (r *Redactor) AddName(kind, name string) {
	name = strings.TrimSpace(name)
	if name == "" || system[name] || !reName.MatchString(name) || isNumeric(name) || len(name) > 253 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.kinds[name] == nil {
		r.kinds[name] = map[string]bool{}
	}
	r.kinds[name][kind] = true
	r.names = nil
}

// AddServicePort records a service port (namespace, name, port name,
// protocol) so that the hashes of its chains can be recomputed.
func (r *Redactor) AddServicePort(ns, name, port string) {
	r.AddName("namespace", ns)
	r.AddName("service", name)
	r.mu.Lock()
	r.spns[spnString(ns, name, port)] = true
	r.mu.Unlock()
}

func spnString(ns, name, port string) string {
	if port == "" {
		return ns + "/" + name
	}
	return ns + "/" + name + ":" + port
}

func isNumeric(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (r *Redactor) mac(tag, s string) []byte {
	h := hmac.New(sha256.New, r.key)
	h.Write([]byte(tag + "\x00" + s))
	return h.Sum(nil)
}

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// nameMap returns the name mapping, computing it when names changed.
func (r *Redactor) nameMap() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.names != nil {
		return r.names
	}
	m := make(map[string]string, len(r.kinds))
	for name, kinds := range r.kinds {
		if p, ok := r.fixed[name]; ok {
			m[name] = p
			continue
		}
		prefix := "obj"
		for _, kp := range kindPrefix {
			if kinds[kp.kind] {
				prefix = kp.prefix
				break
			}
		}
		m[name] = prefix + "-" + strings.ToLower(b32.EncodeToString(r.mac("name", name))[:8])
	}
	r.names = m
	return m
}

// Name returns the pseudonym of a known name, or the name itself.
func (r *Redactor) Name(s string) string {
	if p, ok := r.nameMap()[s]; ok {
		return p
	}
	return s
}

// Addr returns the image of an address.
func (r *Redactor) Addr(a netip.Addr) netip.Addr {
	if Kept(a) {
		return a
	}
	m := r.pan.Map(a)
	r.mu.Lock()
	r.addrs[a.String()] = m.String()
	r.mu.Unlock()
	return m
}

// Prefix returns the image of a prefix: same length, masked when the
// original was.
func (r *Redactor) Prefix(p netip.Prefix) netip.Prefix {
	m := netip.PrefixFrom(r.Addr(p.Addr()), p.Bits())
	if p.Masked() == p {
		m = m.Masked()
	}
	return m
}

// A Map is the translation table of a redaction: keep it to translate
// findings back; never send it along with the bundle.
type Map struct {
	// Key is the redaction key (base64); reusing it (--redact-map of an
	// earlier run) gives every node the same pseudonyms.
	Key string `json:"key"`
	// Names maps original names to pseudonyms.
	Names map[string]string `json:"names"`
	// Addresses maps original addresses to their images.
	Addresses map[string]string `json:"addresses"`
	// Chains maps original chain names to redacted ones.
	Chains map[string]string `json:"chains,omitempty"`
}

// Map returns the translation table of everything mapped so far.
func (r *Redactor) Map() *Map {
	names := r.nameMap()
	r.mu.Lock()
	defer r.mu.Unlock()
	m := &Map{Key: base64.StdEncoding.EncodeToString(r.key), Names: map[string]string{}, Addresses: map[string]string{}, Chains: map[string]string{}}
	for k, v := range names {
		m.Names[k] = v
	}
	for k, v := range r.addrs {
		m.Addresses[k] = v
	}
	for k, v := range r.chains {
		m.Chains[k] = v
	}
	return m
}

// Format writes m as indented JSON.
func (m *Map) Format() []byte {
	b, _ := json.MarshalIndent(m, "", "  ")
	return append(b, '\n')
}

// Reverse returns the inverse of the name and address tables, to
// translate redacted findings back.
func (m *Map) Reverse() map[string]string {
	out := map[string]string{}
	for _, t := range []map[string]string{m.Names, m.Addresses, m.Chains} {
		for k, v := range t {
			out[v] = k
		}
	}
	return out
}

// FromMap returns a redactor with the key and the name pseudonyms of an
// earlier map, so that a new bundle is consistent with the earlier ones.
func FromMap(data []byte) (*Redactor, error) {
	var m Map
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("reading the redaction map: %w", err)
	}
	key, err := base64.StdEncoding.DecodeString(m.Key)
	if err != nil || len(key) != KeySize {
		return nil, errors.New("reading the redaction map: no valid key")
	}
	r, err := New(key)
	if err != nil {
		return nil, err
	}
	for k, v := range m.Names {
		r.fixed[k] = v
	}
	return r, nil
}

// Originals returns every name recorded, sorted (for checks that
// nothing remains).
func (r *Redactor) Originals() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for n := range r.kinds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
