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
