package resolve_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// TestLayoutReadAhead checks that the layout read off dumps whose traits
// ReadLayoutAhead found is the one read from the rules, whichever of the
// dumps were read ahead (the IPv4 dump of one release beside the IPv6 one
// of another), and that RecognizeLayout takes a finding once: it answers
// what the dump held when the finding was started, then reads the dump.
func TestLayoutReadAhead(t *testing.T) {
	dumps := func() []*iptables.Dump {
		old := loadOne(t, bundle(t, "iptables-v1.18-mini")).IPTables
		cur := loadOne(t, bundle(t, "iptables-healthy")).IPTables
		var v6 []*iptables.Dump
		for _, d := range cur {
			c := *d
			c.Family = iptables.IPv6
			v6 = append(v6, &c)
		}
		return append(old, v6...)
	}
	want := resolve.RecognizeLayout(&model.Snapshot{IPTables: dumps()})
	if want == nil || !want.Mixed() {
		t.Fatalf("layout %v, want the two releases mixed", want)
	}
	for _, ahead := range [][]int{{0}, {1}, {0, 1}} {
		ds := dumps()
		var some []*iptables.Dump
		for _, i := range ahead {
			some = append(some, ds[i])
		}
		resolve.ReadLayoutAhead(some)
		if got := resolve.RecognizeLayout(&model.Snapshot{IPTables: ds}); !reflect.DeepEqual(got, want) {
			t.Errorf("dumps %v read ahead: layout %v, want %v", ahead, got, want)
		}
		resolve.ForgetLayout(some)
	}

	s := loadOne(t, bundle(t, "iptables-v1.18-mini"))
	before := resolve.RecognizeLayout(s)
	resolve.ReadLayoutAhead(s.IPTables)
	resolve.WaitLayoutAhead(s.IPTables[0])
	// KUBE-PROXY-FIREWALL is 1.25+: changed after the finding started,
	// the dump is read as mixed only by the next recognition.
	s.IPTables[0].Tables[1].Chains[0].Name = "KUBE-PROXY-FIREWALL"
	if got := resolve.RecognizeLayout(s); !reflect.DeepEqual(got, before) {
		t.Errorf("layout %v, want the one found ahead, %v", got, before)
	}
	if l := resolve.RecognizeLayout(s); !l.Mixed() || !strings.Contains(l.String(), "mix the layouts") {
		t.Errorf("layout read again %v, want mixed", l)
	}
}
