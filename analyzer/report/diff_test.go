package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/diff"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestDiffRenderers renders the diff results of testdata/diff (their JSON
// goldens, which analyzer/diff's tests write) in every format and compares
// with the goldens there (rewritten with -update).
func TestDiffRenderers(t *testing.T) {
	dir := filepath.Join(parsetest.Root(t), "testdata", "diff")
	for _, name := range []string{"mode-switch", "data-plane"} {
		data, err := os.ReadFile(filepath.Join(dir, name+".golden.json"))
		if err != nil {
			t.Fatal(err)
		}
		r := &diff.Result{}
		if err := json.Unmarshal(data, r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, format := range Diffs.Formats() {
			t.Run(name+"/"+format, func(t *testing.T) {
				var buf bytes.Buffer
				if err := Diffs.Render(&buf, format, r, Options{Width: 120}); err != nil {
					t.Fatal(err)
				}
				parsetest.GoldenFile(t, filepath.Join(dir, name+".golden."+format), buf.Bytes())
			})
		}
	}
}
