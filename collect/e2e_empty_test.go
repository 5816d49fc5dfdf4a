package collect_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/parsers/manifest"
)

// TestE2EEmptyNamespace collects a namespace without any rule, where
// iptables-save prints nothing, and analyzes the bundle with an export of
// Services: the empty dump is a data plane without rules, so every
// Service is missing, not a run without a data plane: one service-missing
// finding, of that one cause, lists every Service's destinations.
func TestE2EEmptyNamespace(t *testing.T) {
	_, export := specFiles(t, e2eSpec)
	ns := requireE2E(t)
	dir, m, _ := collectIn(t, ns, nil)
	src := m.Source("iptables-nft-save")
	if src == nil || src.Status != manifest.StatusOK || src.File != "" || src.Bytes != 0 {
		t.Fatalf("iptables-nft-save of an empty namespace: %+v, want ok and nothing written", src)
	}
	r, out := analyze(t, dir, filepath.Join(export, "cluster.yaml"), filepath.Join(export, "config.yaml"))
	missing := map[string]bool{}
	grouped := 0
	for _, f := range r.Findings {
		if f.Check != "service-missing" {
			continue
		}
		grouped++
		if !strings.Contains(f.Message, "holds no kube-proxy rules at all") {
			t.Errorf("service-missing: %s", f.Message)
		}
		for _, o := range f.Objects {
			svc, _, _ := strings.Cut(o, " ")
			missing[svc] = true
		}
	}
	if grouped != 1 {
		t.Errorf("%d service-missing findings, want the one of the empty data plane", grouped)
	}
	if len(missing) < e2eSpec.Services {
		t.Fatalf("%d Services reported missing, want all %d:\n%s", len(missing), e2eSpec.Services, out)
	}
	if !strings.Contains(string(out), "iptables-nft-save printed nothing") {
		t.Errorf("the inputs do not say the dump was empty:\n%s", out)
	}
}
