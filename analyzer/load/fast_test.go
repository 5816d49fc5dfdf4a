package load

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/proxyscan/proxyscan/parsers/kube"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// TestFastDecodeSameSnapshots loads every bundle of the testdata with the
// fast export decoders and with the reference ones, and checks that the
// snapshots are the same.
func TestFastDecodeSameSnapshots(t *testing.T) {
	root := filepath.Join(parsetest.Root(t), "testdata", "bundles")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(root, e.Name())
		fast, ferr := Load([]string{p}, Options{})
		kubeOptions = kube.Options{Reference: true}
		ref, rerr := Load([]string{p}, Options{})
		kubeOptions = kube.Options{}
		if (ferr == nil) != (rerr == nil) || ferr != nil && ferr.Error() != rerr.Error() {
			t.Errorf("%s: fast decoders: %v; reference decoders: %v", e.Name(), ferr, rerr)
			continue
		}
		if !reflect.DeepEqual(fast, ref) {
			t.Errorf("%s: the fast and reference decoders give different snapshots", e.Name())
		}
		n++
	}
	if n < 5 {
		t.Fatalf("only %d bundles compared", n)
	}
}

// TestStreamedExportsSameSnapshots loads every bundle of the testdata with
// its exports decoded as they are read and decoded once read whole, and
// checks that the snapshots, or the errors, are the same.
func TestStreamedExportsSameSnapshots(t *testing.T) {
	root := filepath.Join(parsetest.Root(t), "testdata", "bundles")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(root, e.Name())
		streamed, serr := Load([]string{p}, Options{})
		streamExports = false
		whole, werr := Load([]string{p}, Options{})
		streamExports = true
		if (serr == nil) != (werr == nil) || serr != nil && serr.Error() != werr.Error() {
			t.Errorf("%s: streamed: %v; read whole: %v", e.Name(), serr, werr)
			continue
		}
		if !reflect.DeepEqual(streamed, whole) {
			t.Errorf("%s: streamed and whole exports give different snapshots", e.Name())
		}
		n++
	}
	if n < 5 {
		t.Fatalf("only %d bundles compared", n)
	}
}
