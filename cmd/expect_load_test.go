package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/proxier"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
)

// expectText loads paths with lo and returns the files the reference
// proxier writes for every node in mode, one after the other (or the
// error, as text).
func expectText(t *testing.T, paths []string, lo load.Options, mode string) []byte {
	t.Helper()
	snaps, err := load.Load(paths, lo)
	if err != nil {
		t.Fatalf("%s: %v", paths[0], err)
	}
	var b bytes.Buffer
	for _, s := range snaps {
		dp, err := proxier.Expect(resolve.Resolve(s, resolve.Options{Mode: mode}), proxier.Options{TextOnly: true})
		if err != nil {
			b.WriteString("error: " + err.Error() + "\n")
			continue
		}
		for _, f := range dp.Files {
			b.WriteString("# " + f.Name + "\n")
			b.Write(f.Data)
		}
	}
	return b.Bytes()
}

// TestExpectLoadSameText checks that the inputs as expect loads them (the
// exports decoded lean) give the rules the whole inputs give, in every
// mode, for every bundle and conformance scenario of testdata.
func TestExpectLoadSameText(t *testing.T) {
	var dirs []string
	for _, root := range [][]string{{"bundles"}, {"upstream", "scenarios"}, {"proxier", "scenarios"}} {
		entries, err := os.ReadDir(testdata(t, root...))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				dirs = append(dirs, filepath.Join(testdata(t, root...), e.Name()))
			}
		}
	}
	if len(dirs) < 30 {
		t.Fatalf("%d input directories, want every bundle and scenario", len(dirs))
	}
	compared := 0
	for _, dir := range dirs {
		for _, mode := range []string{model.ModeIPTables, model.ModeIPVS, model.ModeNFTables} {
			whole := expectText(t, []string{dir}, load.Options{}, mode)
			lean := expectText(t, []string{dir}, expectLoadOptions("", "", false), mode)
			if !bytes.Equal(whole, lean) {
				t.Errorf("%s, %s mode: the rules differ when the inputs are loaded as expect loads them:\n%s", filepath.Base(dir), mode, firstDifference(whole, lean))
			}
			if !bytes.HasPrefix(whole, []byte("error: ")) {
				compared++
			}
		}
	}
	if compared < len(dirs) {
		t.Errorf("%d generated rule sets compared, want at least one per input directory", compared)
	}
}

// firstDifference returns the first line where a and b differ.
func firstDifference(a, b []byte) string {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := 0; i < len(la) && i < len(lb); i++ {
		if !bytes.Equal(la[i], lb[i]) {
			return "- " + string(la[i]) + "\n+ " + string(lb[i])
		}
	}
	return "one is a prefix of the other"
}
