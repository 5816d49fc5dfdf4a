//go:build linux

package ipvs

import (
	"bytes"
	"math/rand/v2"
	"net"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	mobyipvs "github.com/moby/ipvs"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
	"github.com/rogpeppe/go-internal/txtar"
)

// fakeHandle serves a table the way moby/ipvs' Handle returns one.
type fakeHandle struct {
	svcs  []*mobyipvs.Service
	dests map[*mobyipvs.Service][]*mobyipvs.Destination
}

func (h *fakeHandle) GetServices() ([]*mobyipvs.Service, error) { return h.svcs, nil }
func (h *fakeHandle) GetDestinations(s *mobyipvs.Service) ([]*mobyipvs.Destination, error) {
	return h.dests[s], nil
}

var _ Source = (*mobyipvs.Handle)(nil)

// kernelValue returns what the kernel reports over netlink for a parsed
// service: moby/ipvs' view (4-byte IPv4 addresses as parseIP gives them).
func kernelValue(s *Service) (*mobyipvs.Service, []*mobyipvs.Destination) {
	vs := s.VirtualServer
	if vs.Address != nil && vs.AddressFamily == FamilyIPv4 {
		vs.Address = append(net.IP(nil), vs.Address.To4()...)
	}
	var ds []*mobyipvs.Destination
	for _, d := range s.Destinations {
		rs := d.RealServer
		ds = append(ds, &rs)
	}
	return &vs, ds
}

// TestNetlinkAndTextAgree builds the moby/ipvs values of the plain-node
// golden, hands them to FromIPVS in a scrambled (hash-like) order and
// checks that the printed listing is the golden text byte for byte and
// that both paths give the same values.
func TestNetlinkAndTextAgree(t *testing.T) {
	for _, name := range []string{"plain-node", "plain-flags", "stats-node"} {
		t.Run(name, func(t *testing.T) {
			a, err := txtar.ParseFile(parsetest.Root(t) + "/testdata/parsers/ipvs/" + name + ".txtar")
			if err != nil {
				t.Fatal(err)
			}
			in := parsetest.Section(a, "input")
			parsed, err := ParseList(name, in)
			if err != nil {
				t.Fatal(err)
			}
			h := &fakeHandle{dests: map[*mobyipvs.Service][]*mobyipvs.Destination{}}
			for _, s := range parsed.Services {
				vs, ds := kernelValue(s)
				rand.Shuffle(len(ds), func(i, j int) { ds[i], ds[j] = ds[j], ds[i] })
				h.svcs = append(h.svcs, vs)
				h.dests[vs] = ds
			}
			rand.Shuffle(len(h.svcs), func(i, j int) { h.svcs[i], h.svcs[j] = h.svcs[j], h.svcs[i] })
			got, err := FromIPVS(h)
			if err != nil {
				t.Fatal(err)
			}
			got.Version, got.Size = parsed.Version, parsed.Size
			out := FormatList(got, parsed.ListOptions())
			if !bytes.Equal(out, in) {
				t.Errorf("listing of the netlink values differs from the golden:\n%s", parsetest.Diff(in, out))
			}
			opts := cmp.Options{ignorePos, cmpopts.IgnoreFields(Service{}, "Counters"), cmpopts.IgnoreFields(Destination{}, "Counters", "Tunnel"),
				cmpopts.IgnoreFields(Dump{}, "Version", "Size", "Columns", "Exact")}
			if diff := cmp.Diff(parsed, got, opts); diff != "" {
				t.Errorf("text and netlink values differ (-text +netlink):\n%s", diff)
			}
			if parsed.Columns == ColumnsStats {
				for i, s := range parsed.Services {
					if s.Counters.InBytes.Value != got.Services[i].Counters.InBytes.Value {
						t.Errorf("%s: InBytes %d from text, %d from netlink", s, s.Counters.InBytes.Value, got.Services[i].Counters.InBytes.Value)
					}
				}
			}
		})
	}
}

func TestNewServiceNormalises(t *testing.T) {
	vs := &mobyipvs.Service{Address: net.ParseIP("10.96.0.1"), Protocol: ProtoTCP, Port: 443, SchedName: "rr",
		Flags: FlagHashed, Netmask: 0xffffffff, AddressFamily: FamilyIPv4, Stats: mobyipvs.SvcStats{Connections: 5, BytesIn: 1 << 40}}
	rs := &mobyipvs.Destination{Address: net.ParseIP("10.244.1.5"), Port: 8080, Weight: 1, ConnectionFlags: mobyipvs.ConnectionFlagMasq,
		ActiveConnections: 2, Stats: mobyipvs.DstStats{PacketsOut: 7}}
	s := NewService(vs, []*mobyipvs.Destination{rs})
	if len(s.Address) != 4 || s.String() != "10.96.0.1:443/TCP" {
		t.Errorf("address %v (%d bytes), String %q", s.Address, len(s.Address), s)
	}
	if s.Counters.Conns.Value != 5 || s.Counters.InBytes.Value != 1<<40 {
		t.Errorf("counters %+v", s.Counters)
	}
	d := s.Destinations[0]
	if d.AddressFamily != FamilyIPv4 || len(d.Address) != 4 || d.Counters.OutPkts.Value != 7 || d.ActiveConnections != 2 {
		t.Errorf("destination %+v", d)
	}
	if vs.Address.To4() == nil || len(vs.Address) != 16 {
		t.Error("NewService changed its argument")
	}
}

// TestPortableTypes keeps the non-Linux copies of the moby/ipvs types in
// step with moby/ipvs.
func TestPortableTypes(t *testing.T) {
	for _, pair := range [][2]reflect.Type{
		{reflect.TypeFor[portableService](), reflect.TypeFor[mobyipvs.Service]()},
		{reflect.TypeFor[portableDestination](), reflect.TypeFor[mobyipvs.Destination]()},
		{reflect.TypeFor[portableSvcStats](), reflect.TypeFor[mobyipvs.SvcStats]()},
	} {
		p, m := pair[0], pair[1]
		if p.NumField() != m.NumField() {
			t.Errorf("%s has %d fields, %s has %d", p, p.NumField(), m, m.NumField())
			continue
		}
		for i := range p.NumField() {
			pf, mf := p.Field(i), m.Field(i)
			if pf.Name != mf.Name || pf.Type.Kind() != mf.Type.Kind() || (pf.Type.Kind() != reflect.Struct && pf.Type != mf.Type) {
				t.Errorf("%s field %d is %s %s, %s has %s %s", p, i, pf.Name, pf.Type, m, mf.Name, mf.Type)
			}
		}
	}
}
