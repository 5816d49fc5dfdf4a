package cmd

import (
	"strings"
	"testing"
	"time"

	"github.com/proxyscan/proxyscan/parsers/manifest"
)

func TestCollectFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want CollectOptions
		err  string
	}{
		{name: "defaults", args: []string{"collect"}, want: CollectOptions{ConntrackSample: 5000, LogLines: 10000, Root: "/"}},
		{name: "archive", args: []string{"collect", "-o", "n1.tgz", "--kubeconfig", "kc", "--timeout", "5s"},
			want: CollectOptions{Output: "n1.tgz", Kubeconfig: "kc", Timeout: 5 * time.Second, ConntrackSample: 5000, LogLines: 10000, Root: "/"}},
		{name: "dir and redaction", args: []string{"collect", "--dir", "d", "--redact", "--redact-map", "m.json"},
			want: CollectOptions{Dir: "d", Redact: true, RedactMap: "m.json", ConntrackSample: 5000, LogLines: 10000, Root: "/"}},
		{name: "both outputs", args: []string{"collect", "-o", "x.tgz", "--dir", "d"}, err: "-o and --dir cannot be used together"},
		{name: "map without redact", args: []string{"collect", "--redact-map", "m.json"}, err: "need --redact"},
		{name: "arguments", args: []string{"collect", "extra"}, err: "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			io, _, errOut := Test()
			f := &Factory{IO: io, Version: "v0.1.0-test"}
			var got *CollectOptions
			root := NewRootCmd(f)
			for _, c := range root.Commands() {
				if c.Name() == "collect" {
					root.RemoveCommand(c)
				}
			}
			root.AddCommand(NewCmdCollect(f, func(o *CollectOptions) error { got = o; return nil }))
			root.SetArgs(tc.args)
			root.SetOut(io.Out)
			root.SetErr(io.ErrOut)
			err := root.Execute()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q (stderr %s)", err, tc.err, errOut)
				}
				if exitCode(err) != exitInput {
					t.Errorf("exit code %d for a usage error", exitCode(err))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			w := tc.want
			if got.Output != w.Output || got.Dir != w.Dir || got.Kubeconfig != w.Kubeconfig || got.Redact != w.Redact ||
				got.RedactMap != w.RedactMap || got.Timeout != w.Timeout || got.ConntrackSample != w.ConntrackSample ||
				got.LogLines != w.LogLines || got.Root != w.Root || got.Tool.Version != "v0.1.0-test" {
				t.Errorf("options %+v, want %+v", *got, w)
			}
		})
	}
}

func TestProgressLine(t *testing.T) {
	io, _, errOut := Test()
	_ = io
	p := newProgress(errOut, false)
	p.line(sourceForTest("ipvsadm", "skipped", "IPVS is not loaded"))
	p.line(sourceForTest("iptables-nft-save", "ok", ""))
	got := errOut.String()
	if !strings.Contains(got, "skip ipvsadm") || !strings.Contains(got, "IPVS is not loaded") || !strings.Contains(got, "ok   iptables-nft-save") || !strings.Contains(got, "node/x.txt 2.0 KiB") {
		t.Errorf("progress lines:\n%s", got)
	}
}

func sourceForTest(name, status, err string) manifest.Source {
	s := manifest.Source{Name: name, Status: status, Error: err, DurationMS: 3}
	if err == "" {
		s.File, s.Bytes = "node/x.txt", 2048
	}
	return s
}
