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

func TestArena(t *testing.T) {
	var a Arena
	big := "node-a/iptables-save.txt"
	x := a.Str(big[:6])
	if x != "node-a" || unsafe.StringData(x) == unsafe.StringData(big) {
		t.Fatalf("Str = %q, sharing the larger string's memory: %v", x, unsafe.StringData(x) == unsafe.StringData(big))
	}
	var all []string
	for i := 0; i < 3*arenaBlock/10; i++ {
		s := string(rune('a'+i%26)) + "0123456789"[:i%10]
		all = append(all, a.Str(s))
		if all[i] != s {
			t.Fatalf("Str(%q) = %q", s, all[i])
		}
	}
	for i, s := range all {
		if want := string(rune('a'+i%26)) + "0123456789"[:i%10]; s != want {
			t.Fatalf("string %d changed to %q, want %q", i, s, want)
		}
	}
	long := string(make([]byte, arenaBlock))
	if a.Str(long) != long || a.Str("") != "" {
		t.Error("long or empty strings are not copied as they are")
	}
}

// TestArenaBytes: a string copied from a buffer keeps its text when the
// buffer is written again.
func TestArenaBytes(t *testing.T) {
	var a Arena
	buf := append([]byte(nil), "backend 10.0.0.1:80"...)
	x := a.Bytes(buf)
	copy(buf, "entry   ")
	if x != "backend 10.0.0.1:80" {
		t.Fatalf("Bytes = %q after its buffer changed", x)
	}
	if a.Bytes(nil) != "" || a.Bytes(make([]byte, arenaBlock)) != string(make([]byte, arenaBlock)) {
		t.Error("long or empty buffers are not copied as they are")
	}
}
