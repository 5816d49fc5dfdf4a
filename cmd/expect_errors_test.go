package cmd

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/load"
	"github.com/proxyscan/proxyscan/analyzer/proxier"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/internal/fault"
	"github.com/proxyscan/proxyscan/parsers"
)

// TestGeneratorFailureIsInternal gives the reference proxier a Service
// the export parser refuses (a protocol no kube-proxy mode programs), so
// that its own output fails to parse: the error is proxyscan's (exit 3),
// although it wraps a parse error of the generated text.
func TestGeneratorFailureIsInternal(t *testing.T) {
	snaps, err := load.Load([]string{testdata(t, "bundles", "ipvs-healthy-mini")}, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	snaps[0].Objects.Services[0].Spec.Ports[0].Protocol = "FROB"
	snaps[0].ObjectsChanged()
	_, err = proxier.Expect(resolve.Resolve(snaps[0], resolve.Options{Mode: "ipvs"}), proxier.Options{})
	if !fault.Is(err) || !parsers.IsInputError(err) {
		t.Fatalf("Expect() = %v, want a *fault.Error wrapping the parse error", err)
	}
	for _, e := range []error{err, &FlagError{Err: err}} {
		if code := exitCode(e); code != exitInternal {
			t.Errorf("exitCode(%v) = %d, want %d", e, code, exitInternal)
		}
	}
	var fe *fault.Error
	if errors.As(err, &fe); fe.Stack != nil {
		t.Errorf("an error has a stack")
	}
}

// TestExpectRefusesProtocol checks that expect blames the export, at the
// Service port's line, for a protocol kube-proxy cannot program, rather
// than the file it would have generated, naming the bundle before the
// export's place in it.
func TestExpectRefusesProtocol(t *testing.T) {
	dir := copyBundle(t, "ipvs-healthy-mini")
	replaceInFile(t, filepath.Join(dir, "cluster", "cluster.yaml"), "      protocol: TCP\n      targetPort: 6443", "      protocol: FROB\n      targetPort: 6443")
	for _, mode := range []string{"ipvs", "iptables", "nftables"} {
		f, outputs := testFactory()
		code := Run(f, []string{"expect", dir, "--mode", mode})
		_, stderr := outputs()
		want := "proxyscan: " + filepath.Join(dir, "cluster", "cluster.yaml") + `:23: Service default/kubernetes: port https (443): protocol "FROB" is not TCP, UDP or SCTP`
		if code != exitInput || !strings.HasPrefix(stderr, want) {
			t.Errorf("--mode %s: exit %d, stderr %q; want %d, %q", mode, code, stderr, exitInput, want)
		}
	}
}

// copyBundle copies a bundle of testdata/bundles into a directory of the
// test.
func copyBundle(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dir, os.DirFS(testdata(t, "bundles", name))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// replaceInFile replaces old, which the file must hold, with new.
func replaceInFile(t *testing.T, path, old, new string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s does not hold %q", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}
