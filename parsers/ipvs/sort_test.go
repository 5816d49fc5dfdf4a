package ipvs

import (
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
	"github.com/rogpeppe/go-internal/txtar"
)

func svcAt(addr string) *Service {
	ip := net.ParseIP(addr).To4()
	return newServiceFromSpec(ProtoTCP, FamilyIPv4, ip, 80)
}

func order(d *Dump) []string {
	var out []string
	for _, s := range d.Services {
		out = append(out, s.String())
	}
	return out
}

// TestSortWraps checks the non-transitive order of libipvs' comparison run
// through glibc's merge sort, worked out by hand from glibc's msort: the
// result depends on the input order.
func TestSortWraps(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"10.0.0.1", "100.0.0.1", "200.0.0.1"}, []string{"10.0.0.1", "100.0.0.1", "200.0.0.1"}},
		{[]string{"200.0.0.1", "100.0.0.1", "10.0.0.1"}, []string{"200.0.0.1", "10.0.0.1", "100.0.0.1"}},
		{[]string{"10.0.0.2", "192.168.0.1", "10.0.0.1"}, []string{"192.168.0.1", "10.0.0.1", "10.0.0.2"}},
	} {
		d := &Dump{}
		for _, a := range tc.in {
			d.Services = append(d.Services, svcAt(a))
		}
		Sort(d)
		var want []string
		for _, a := range tc.want {
			want = append(want, a+":80/TCP")
		}
		if got := order(d); !slices.Equal(got, want) {
			t.Errorf("Sort(%v) = %v, want %v", tc.in, got, want)
		}
	}
}

// TestSortGoldens checks that every golden listing is in ipvsadm's order:
// sorting a shuffled copy gives it back (the goldens avoid address sets
// whose order depends on the input order).
func TestSortGoldens(t *testing.T) {
	for _, file := range parsetest.Files(t, "parsers/ipvs/*.txtar") {
		if strings.Contains(file, "handwritten") {
			continue // not ipvsadm output
		}
		a, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Parse(file, parsetest.Section(a, "input"))
		if err != nil {
			continue
		}
		want := order(d)
		var wantDests [][]string
		for _, s := range d.Services {
			var ds []string
			for _, x := range s.Destinations {
				ds = append(ds, x.String())
			}
			wantDests = append(wantDests, ds)
		}
		for range 5 {
			rand.Shuffle(len(d.Services), func(i, j int) { d.Services[i], d.Services[j] = d.Services[j], d.Services[i] })
			for _, s := range d.Services {
				rand.Shuffle(len(s.Destinations), func(i, j int) { s.Destinations[i], s.Destinations[j] = s.Destinations[j], s.Destinations[i] })
			}
			Sort(d)
			if got := order(d); !slices.Equal(got, want) {
				t.Errorf("%s: sorted order %v, want %v", file, got, want)
				break
			}
			for i, s := range d.Services {
				var ds []string
				for _, x := range s.Destinations {
					ds = append(ds, x.String())
				}
				if !slices.Equal(ds, wantDests[i]) {
					t.Errorf("%s: %s: sorted real servers %v, want %v", file, s, ds, wantDests[i])
				}
			}
		}
	}
}

// TestBefore checks where a service missing from a sorted table would be
// listed: before the first service it compares below, nil after the last.
func TestBefore(t *testing.T) {
	d := &Dump{}
	for _, a := range []string{"198.18.0.11", "10.0.1.31", "10.100.0.1", "10.100.28.49"} {
		d.Services = append(d.Services, svcAt(a))
	}
	for _, tc := range []struct{ addr, want string }{
		{"198.18.0.1", "198.18.0.11:80/TCP"},
		{"10.0.0.5", "10.0.1.31:80/TCP"},
		{"10.100.26.59", "10.100.28.49:80/TCP"},
		{"10.200.0.1", ""},
	} {
		got := ""
		if s := d.Before(svcAt(tc.addr)); s != nil {
			got = s.String()
		}
		if got != tc.want {
			t.Errorf("Before(%s) = %q, want %q", tc.addr, got, tc.want)
		}
	}
	if s := (&Dump{}).Before(svcAt("10.0.0.1")); s != nil {
		t.Errorf("Before in an empty table = %v, want nil", s)
	}
}
