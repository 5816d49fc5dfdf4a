package intern

import (
	"testing"
	"unsafe"
)

func TestStr(t *testing.T) {
	m := New()
	big := "node-a/iptables-save.txt"
	a := m.Str(big[:6])
	if a != "node-a" {
		t.Fatalf("Str = %q", a)
	}
	if unsafe.StringData(a) == unsafe.StringData(big) {
		t.Error("the stored string shares the memory of the larger one")
	}
	b := m.Str(string([]byte("node-a")))
	if unsafe.StringData(a) != unsafe.StringData(b) {
		t.Error("equal strings are stored twice")
	}
	if m.Str("") != "" || len(m) != 1 {
		t.Errorf("the empty string is stored (%d strings)", len(m))
	}
}
