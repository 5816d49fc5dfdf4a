package ipaddr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strconv"

	"github.com/proxyscan/proxyscan/parsers"
)

// kv is one member of a JSON object, in document order.
type kv struct {
	key string
	val json.RawMessage
}

func decodeObject(raw json.RawMessage) ([]kv, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not an object")
	}
	var out []kv
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, kv{tok.(string), v})
	}
	return out, nil
}

// lineOf returns the 1-based line of a byte offset.
func lineOf(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	return bytes.Count(data[:off], []byte("\n")) + 1
}

func parseJSON(name string, data []byte) (*Dump, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, parsers.Errorf(parsers.Pos{File: name, Line: lineOf(data, se.Offset)}, "bad JSON: %v", err)
		}
		return nil, parsers.Errorf(parsers.Pos{File: name, Path: "$"}, "ip -j addr output must be an array of interfaces: %v", err)
	}
	d := &Dump{Form: FormJSON, Interfaces: []*Interface{}}
	var errs parsers.ErrorList
	seen := map[int]bool{}
	for i, raw := range items {
		path := fmt.Sprintf("$[%d]", i)
		ifc, err := jsonInterface(name, path, raw)
		if err != nil {
			if len(errs) < maxErrors {
				errs = append(errs, err)
			}
			continue
		}
		if seen[ifc.Index] {
			errs.Add(parsers.Pos{File: name, Path: path}, "interface index %d listed twice", ifc.Index)
			continue
		}
		seen[ifc.Index] = true
		d.Interfaces = append(d.Interfaces, ifc)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return d, nil
}

func jsonInterface(file, path string, raw json.RawMessage) (*Interface, *parsers.Error) {
	bad := func(p, format string, args ...any) *parsers.Error {
		return parsers.Errorf(parsers.Pos{File: file, Path: p}, format, args...)
	}
	kvs, err := decodeObject(raw)
	if err != nil {
		return nil, bad(path, "interface must be an object")
	}
	i := &Interface{Pos: parsers.Pos{File: file, Path: path}, Flags: []string{}, Addresses: []*Address{}}
	hasIndex, hasName := false, false
	for _, m := range kvs {
		p := path + "." + m.key
		var s string
		var n int
		str := func() bool { return json.Unmarshal(m.val, &s) == nil }
		num := func() bool { return json.Unmarshal(m.val, &n) == nil && n >= 0 }
		switch m.key {
		case "ifindex":
			if !num() || n == 0 {
				return nil, bad(p, "bad ifindex %s", m.val)
			}
			i.Index, hasIndex = n, true
		case "ifname":
			if !str() || s == "" {
				return nil, bad(p, "bad ifname %s", m.val)
			}
			i.Name, hasName = s, true
		case "link":
			if !str() {
				return nil, bad(p, "bad link %s", m.val)
			}
			i.Peer = s
		case "flags":
			if json.Unmarshal(m.val, &i.Flags) != nil || i.Flags == nil {
				return nil, bad(p, "flags must be an array of strings")
			}
		case "mtu", "txqlen":
			if !num() {
				return nil, bad(p, "bad %s %s", m.key, m.val)
			}
			k := map[string]string{"mtu": "mtu", "txqlen": "qlen"}[m.key]
			i.Attrs = append(i.Attrs, Attr{k, strconv.Itoa(n)})
			if k == "mtu" {
				i.MTU = n
			} else {
				i.Qlen = n
			}
		case "qdisc", "master", "operstate", "group":
			if !str() {
				return nil, bad(p, "bad %s %s", m.key, m.val)
			}
			k := m.key
			switch k {
			case "qdisc":
				i.Qdisc = s
			case "master":
				i.Master = s
			case "operstate":
				i.State, k = s, "state"
			case "group":
				i.Group = s
			}
			i.Attrs = append(i.Attrs, Attr{k, s})
		case "link_type", "address", "broadcast":
			if !str() {
				return nil, bad(p, "bad %s %s", m.key, m.val)
			}
			switch m.key {
			case "link_type":
				i.LinkType = s
			case "address":
				i.LinkAddress = s
			default:
				i.Broadcast = s
			}
		case "altnames":
			if json.Unmarshal(m.val, &i.AltNames) != nil {
				return nil, bad(p, "altnames must be an array of strings")
			}
		case "addr_info":
			var addrs []json.RawMessage
			if json.Unmarshal(m.val, &addrs) != nil {
				return nil, bad(p, "addr_info must be an array")
			}
			for j, ar := range addrs {
				a, e := jsonAddress(file, fmt.Sprintf("%s[%d]", p, j), ar)
				if e != nil {
					return nil, e
				}
				i.Addresses = append(i.Addresses, a)
			}
		default:
			// Other keys (link_netnsid, promiscuity, …) are not modelled.
		}
	}
	if !hasIndex || !hasName {
		return nil, bad(path, "interface without ifindex or ifname")
	}
	return i, nil
}

func jsonAddress(file, path string, raw json.RawMessage) (*Address, *parsers.Error) {
	bad := func(p, format string, args ...any) *parsers.Error {
		return parsers.Errorf(parsers.Pos{File: file, Path: p}, format, args...)
	}
	kvs, err := decodeObject(raw)
	if err != nil {
		return nil, bad(path, "address must be an object")
	}
	a := &Address{Pos: parsers.Pos{File: file, Path: path}, ValidLft: Forever, PreferredLft: Forever}
	var local, peer string
	plen := -1
	for _, m := range kvs {
		p := path + "." + m.key
		var s string
		switch m.key {
		case "family", "local", "address", "broadcast", "scope", "label":
			if json.Unmarshal(m.val, &s) != nil {
				return nil, bad(p, "bad %s %s", m.key, m.val)
			}
			switch m.key {
			case "family":
				if s != "inet" && s != "inet6" {
					return nil, bad(p, "bad family %q", s)
				}
				a.Family = s
			case "local":
				local = s
			case "address":
				peer = s
			case "broadcast":
				b, err := netip.ParseAddr(s)
				if err != nil {
					return nil, bad(p, "bad broadcast address %q", s)
				}
				a.Broadcast = b
			case "scope":
				a.Scope = s
			case "label":
				a.Label = s
			}
		case "prefixlen":
			if json.Unmarshal(m.val, &plen) != nil || plen < 0 || plen > 128 {
				return nil, bad(p, "bad prefixlen %s", m.val)
			}
		case "valid_life_time", "preferred_life_time":
			var n uint32
			if json.Unmarshal(m.val, &n) != nil {
				return nil, bad(p, "bad %s %s", m.key, m.val)
			}
			if m.key == "valid_life_time" {
				a.ValidLft = n
			} else {
				a.PreferredLft = n
			}
		default:
			var flag bool
			if isAddrFlag(m.key) && json.Unmarshal(m.val, &flag) == nil && flag {
				a.Flags = append(a.Flags, m.key)
			}
		}
	}
	if a.Family == "" || local == "" || plen < 0 {
		return nil, bad(path, "address without family, local or prefixlen")
	}
	pfx, msg := parsePrefix(local+"/"+strconv.Itoa(plen), a.Family)
	if msg != "" {
		return nil, bad(path+".local", "%s", msg)
	}
	a.Local, a.PrefixLen = pfx.Addr(), pfx.Bits()
	if peer != "" {
		pp, msg := parsePrefix(peer+"/"+strconv.Itoa(plen), a.Family)
		if msg != "" {
			return nil, bad(path+".address", "%s", msg)
		}
		a.Peer = pp
	}
	return a, nil
}

// FormatJSON prints d as `ip -j addr` does (compact, iproute2's key order
// for the keys the model holds).
func FormatJSON(d *Dump) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for n, i := range d.Interfaces {
		if n > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"ifindex":` + strconv.Itoa(i.Index))
		if i.Peer != "" {
			b.WriteString(`,"link":` + jstr(i.Peer))
		}
		b.WriteString(`,"ifname":` + jstr(i.Name))
		fl, _ := json.Marshal(i.Flags)
		b.WriteString(`,"flags":` + string(fl))
		for _, a := range i.Attrs {
			switch a.Key {
			case "mtu":
				b.WriteString(`,"mtu":` + a.Value)
			case "qlen":
				b.WriteString(`,"txqlen":` + a.Value)
			case "state":
				b.WriteString(`,"operstate":` + jstr(a.Value))
			case "qdisc", "master", "group":
				b.WriteString(`,"` + a.Key + `":` + jstr(a.Value))
			}
		}
		if i.LinkType != "" {
			b.WriteString(`,"link_type":` + jstr(i.LinkType))
		}
		if i.LinkAddress != "" {
			b.WriteString(`,"address":` + jstr(i.LinkAddress))
		}
		if i.Broadcast != "" {
			b.WriteString(`,"broadcast":` + jstr(i.Broadcast))
		}
		if len(i.AltNames) > 0 {
			an, _ := json.Marshal(i.AltNames)
			b.WriteString(`,"altnames":` + string(an))
		}
		b.WriteString(`,"addr_info":[`)
		for k, a := range i.Addresses {
			if k > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"family":` + jstr(a.Family) + `,"local":` + jstr(a.Local.String()))
			if a.Peer.IsValid() {
				b.WriteString(`,"address":` + jstr(a.Peer.Addr().String()))
			}
			b.WriteString(`,"prefixlen":` + strconv.Itoa(a.PrefixLen))
			if a.Broadcast.IsValid() {
				b.WriteString(`,"broadcast":` + jstr(a.Broadcast.String()))
			}
			if a.Scope != "" {
				b.WriteString(`,"scope":` + jstr(a.Scope))
			}
			for _, f := range a.Flags {
				b.WriteString(`,` + jstr(f) + `:true`)
			}
			if a.Label != "" {
				b.WriteString(`,"label":` + jstr(a.Label))
			}
			b.WriteString(`,"valid_life_time":` + strconv.FormatUint(uint64(a.ValidLft), 10))
			b.WriteString(`,"preferred_life_time":` + strconv.FormatUint(uint64(a.PreferredLft), 10) + `}`)
		}
		b.WriteString(`]}`)
	}
	b.WriteString("]\n")
	return b.Bytes()
}

func jstr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
