package resolve

import (
	"testing"

	"github.com/proxyscan/proxyscan/parsers/kpconfig"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
)

// TestBehaviourTable checks that the rows of the behaviour table are
// consistent: every behaviour has a row with a name of its own, a
// behaviour that ends does so after it starts, one that is on whatever the
// gates say from some release has a gate before that, and every gate is
// one of kpconfig's, known to every release that reads it.
func TestBehaviourTable(t *testing.T) {
	names := map[string]Behaviour{}
	for b := Behaviour(0); b < numBehaviours; b++ {
		s := behaviours[b]
		if s.name == "" {
			t.Errorf("behaviour %d has no row (or no name)", b)
			continue
		}
		if o, ok := names[s.name]; ok {
			t.Errorf("behaviours %d and %d are both named %s", o, b, s.name)
		}
		names[s.name] = b
		if b.String() != s.name {
			t.Errorf("%s: String() = %q", s.name, b.String())
		}
		if s.since < 0 || s.since > kpversion.NewestMinor {
			t.Errorf("%s: since 1.%d lies outside the modelled releases", s.name, s.since)
		}
		if s.until != 0 && s.until <= s.since {
			t.Errorf("%s: until 1.%d is not after since 1.%d", s.name, s.until, s.since)
		}
		if s.always != 0 {
			if s.gate == "" {
				t.Errorf("%s: always 1.%d without a gate", s.name, s.always)
			}
			if s.always < s.since || s.until != 0 && s.always >= s.until {
				t.Errorf("%s: always 1.%d lies outside since 1.%d until 1.%d", s.name, s.always, s.since, s.until)
			}
		}
		if s.gate == "" {
			continue
		}
		g := kpconfig.LookupGate(s.gate)
		if g == nil {
			t.Errorf("%s: gate %s is not in kpconfig.Gates", s.name, s.gate)
			continue
		}
		// The releases that read the gate must know it.
		end := kpversion.NewestMinor + 1
		if s.until != 0 {
			end = s.until
		}
		if s.always != 0 {
			end = s.always
		}
		for m := max(s.since, kpversion.OldestMinor); m < end; m++ {
			if known, sure := g.Known(m); !known && sure {
				t.Errorf("%s: gate %s is unknown to 1.%d, which reads it", s.name, s.gate, m)
			}
		}
	}
	if got := Behaviour(-1).String(); got != "unknown" {
		t.Errorf("Behaviour(-1).String() = %q", got)
	}
	if got := numBehaviours.String(); got != "unknown" {
		t.Errorf("numBehaviours.String() = %q", got)
	}
}

// TestEnabled checks how a row decides: before since and from until never,
// between them as the gate says (kpconfig's default when not configured),
// from always whatever the gate says.
func TestEnabled(t *testing.T) {
	off := map[string]bool{"ProxyTerminatingEndpoints": false}
	for _, tc := range []struct {
		b     Behaviour
		minor int
		gates map[string]bool
		want  bool
	}{
		{PolicyChains, 23, nil, false},
		{PolicyChains, 24, nil, true},
		{UserspaceMode, 20, nil, true},
		{UserspaceMode, 25, nil, true},
		{UserspaceMode, 26, nil, false},
		{NFTablesFirstLayout, 28, nil, false},
		{NFTablesFirstLayout, 29, nil, true},
		{NFTablesFirstLayout, 30, nil, false},
		{LocalTerminatingFallback, 21, map[string]bool{"ProxyTerminatingEndpoints": true}, false},
		{LocalTerminatingFallback, 22, nil, false},
		{LocalTerminatingFallback, 22, map[string]bool{"ProxyTerminatingEndpoints": true}, true},
		{LocalTerminatingFallback, 26, nil, true},
		{LocalTerminatingFallback, 26, off, false},
		{LocalTerminatingFallback, 28, off, true},
		{InternalTrafficPolicyLocal, 21, nil, false},
		{InternalTrafficPolicyLocal, 22, nil, true},
		{InternalTrafficPolicyLocal, 22, map[string]bool{"ServiceInternalTrafficPolicy": false}, false},
		{InternalTrafficPolicyLocal, 30, map[string]bool{"ServiceInternalTrafficPolicy": false}, true},
	} {
		if got := Enabled(tc.b, kpversion.V(tc.minor), tc.gates); got != tc.want {
			t.Errorf("%s in 1.%d with %v: %v, want %v", tc.b, tc.minor, tc.gates, got, tc.want)
		}
	}
	if InRelease(NFTablesMode, kpversion.V(28)) || !InRelease(NFTablesMode, kpversion.V(29)) || Enabled(NFTablesMode, kpversion.V(30), nil) || !Enabled(NFTablesMode, kpversion.V(31), nil) {
		t.Error("NFTablesMode: want in 1.29+, on by default from 1.31")
	}
}
