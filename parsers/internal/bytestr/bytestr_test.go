package bytestr

import (
	"testing"
	"unsafe"
)

func TestOf(t *testing.T) {
	for _, in := range [][]byte{nil, {}, []byte("-A KUBE-SERVICES -j KUBE-NODEPORTS")} {
		s := Of(in)
		if s != string(in) {
			t.Fatalf("Of(%q) = %q", in, s)
		}
		if len(in) > 0 && unsafe.StringData(s) != &in[0] {
			t.Fatalf("Of(%q) copied its input", in)
		}
	}
}
