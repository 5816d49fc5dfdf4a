package view_test

import (
	"testing"
	"unsafe"

	"github.com/proxyscan/proxyscan/analyzer/view"
)

// TestBackendSize guards the room a backend takes: a view of a
// 10,000-Service node has one per endpoint of every Service (about
// 60,000), kept for the whole analysis.
func TestBackendSize(t *testing.T) {
	if n := unsafe.Sizeof(view.Backend{}); n > 96 {
		t.Errorf("a Backend takes %d bytes, want at most 96", n)
	}
}

// TestObjectSize guards the room a data-plane object takes: a view of a
// 10,000-Service iptables node has one per chain (about 67,000).
func TestObjectSize(t *testing.T) {
	if n := unsafe.Sizeof(view.Object{}); n > 56 {
		t.Errorf("an Object takes %d bytes, want at most 56", n)
	}
	if got := view.ObjElement.String(); got != "map element" {
		t.Errorf("ObjElement.String() = %q, want %q", got, "map element")
	}
}

// TestEntrySize guards the room of an entry and a dispatch: a view of a
// 10,000-Service node has one or two of each per service port.
func TestEntrySize(t *testing.T) {
	if n := unsafe.Sizeof(view.Entry{}); n > 224 {
		t.Errorf("an Entry takes %d bytes, want at most 224", n)
	}
	if n := unsafe.Sizeof(view.Dispatch{}); n > 144 {
		t.Errorf("a Dispatch takes %d bytes, want at most 144", n)
	}
}
