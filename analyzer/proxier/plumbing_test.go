package proxier

import (
	"fmt"
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/resolve"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
)

// TestPlumbingGenerated checks that every rule Plumbing lists is one the
// generators write, in every mode and in the releases whose layouts differ
// (the nftables base chains of 1.29 and 1.33, mark-for-masquerade up to
// 1.35, the masquerade bit of the configuration): the checks that look
// them up read kube-proxy's rules from the proxier, and a rule the
// proxier does not write would be reported missing on every node.
func TestPlumbingGenerated(t *testing.T) {
	bundles := map[string]string{
		model.ModeIPTables: "../../testdata/bundles/iptables-mini",
		model.ModeIPVS:     "../../testdata/bundles/ipvs-healthy-mini",
		model.ModeNFTables: "../../testdata/bundles/nftables-healthy",
	}
	for _, mode := range []string{model.ModeIPTables, model.ModeIPVS, model.ModeNFTables} {
		snap := loadScenario(t, bundles[mode])
		for _, minor := range []int{20, 23, 24, 29, 31, 33, 35, 36, kpversion.NewestMinor} {
			v := kpversion.Version{Major: 1, Minor: minor}
			if modelled(mode, v) != nil {
				continue
			}
			t.Run(fmt.Sprintf("%s-1.%d", mode, minor), func(t *testing.T) {
				snap := snap
				if mode == model.ModeNFTables && minor == 29 {
					snap = loadScenario(t, bundles[mode])
					setGates(t, snap, "NFTablesProxyMode=true")
				}
				r := resolve.Resolve(snap, resolve.Options{Mode: mode, Version: v})
				dp, err := Expect(r, Options{})
				if err != nil {
					t.Fatal(err)
				}
				roles := map[PlumbingRole]bool{}
				for _, fam := range r.Families {
					var text string
					for _, f := range dp.Files {
						if f.Family == fam || f.Family == "" {
							text += string(f.Data)
						}
					}
					for _, p := range Plumbing(r, fam) {
						roles[p.Role] = true
						if !generated(text, mode, p) {
							t.Errorf("%s: %s %s: no rule %q (target %q) in the generated data plane", fam, p.Table, p.Chain, p.Rule, p.Target)
						}
					}
				}
				for _, role := range []PlumbingRole{HookJump, MasqueradeJump, Masquerade} {
					if !roles[role] {
						t.Errorf("no rule of role %d listed", role)
					}
				}
			})
		}
	}
}

// generated reports whether text, a generated dump, holds the rule p in
// kube-proxy's spelling (Rule) or one with its target.
func generated(text, mode string, p PlumbingRule) bool {
	if mode != model.ModeNFTables {
		for _, l := range strings.Split(text, "\n") {
			if l == p.Rule {
				return true
			}
			if strings.HasPrefix(l, "-A "+p.Chain+" ") && strings.HasSuffix(strings.TrimSuffix(l, " --random-fully"), "-j "+p.Target) &&
				(p.Target != "MARK" || strings.Contains(l, "--set-xmark")) && (p.Not == "" || !strings.Contains(l, p.Not)) {
				return true
			}
		}
		return false
	}
	in := false
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "chain "):
			in = l == "chain "+p.Chain+" {"
		case in && l == p.Rule:
			return true
		}
	}
	return false
}
