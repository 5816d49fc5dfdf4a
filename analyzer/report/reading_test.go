package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
)

// TestUnknownReason checks that the text formats say why an input of no
// known kind was not read, in the loader's words, and fall back to "kind
// not recognised" when it gave none.
func TestUnknownReason(t *testing.T) {
	r := &Report{
		Inputs: []model.Input{
			{Path: "dump.bin", Kind: "unknown", Unread: "binary: a NUL byte at offset 0", Note: "unknown kind of file (binary: a NUL byte at offset 0): not analysed"},
			{Path: "README", Kind: "unknown", Note: "unknown kind of file (blank): not analysed"},
			{Path: "other.txt", Kind: "unknown"},
		},
		Unknown: []string{"dump.bin", "README", "other.txt"},
	}
	for _, tc := range []struct{ path, want string }{
		{"dump.bin", "binary: a NUL byte at offset 0"},
		{"README", "blank"},
		{"other.txt", "kind not recognised"},
	} {
		if got := unknownReason(r, tc.path); got != tc.want {
			t.Errorf("unknownReason(%s) = %q, want %q", tc.path, got, tc.want)
		}
	}
	for _, format := range []string{"table", "markdown", "html"} {
		var buf bytes.Buffer
		if err := Render(&buf, format, r, Options{Width: 200}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "binary: a NUL byte at offset 0, not analysed") {
			t.Errorf("%s does not say why dump.bin was not read:\n%s", format, buf.String())
		}
	}
}
