package load

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/proxyscan/proxyscan/parsers/kpconfig"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
)

// configsShown is how many settings a note of configurations that differ
// names.
const configsShown = 6

// configDiffNote says, of the configuration other (from source) that sets
// the settings diff (configDiff) otherwise than the one used (read, from
// used), which settings differ and which configuration the checks read:
// two ConfigMaps of kube-proxy given (one edited since, or of another
// cluster) are two answers to one question, and the checks answer with
// one (coverage makes the settings they read a gap).
func configDiffNote(diff []string, read, other *kpconfig.Config, used, source string) string {
	names := diff
	more := ""
	if len(names) > configsShown {
		names, more = names[:configsShown], fmt.Sprintf(" and %d more", len(diff)-configsShown)
	}
	return fmt.Sprintf("%s (%s) and %s (%s) set %s%s otherwise; the checks read %s (%s): give the configuration kube-proxy runs with alone to check it",
		used, read.Pos, source, other.Pos, strings.Join(names, ", "), more, used, read.Pos)
}

// configDiff returns the settings, by their paths in the configuration
// ("iptables.masqueradeBit"), that a and b set otherwise once both are
// defaulted for kube-proxy v, in order: of those the mode of a reads, an
// empty IPVS scheduler being round robin.
func configDiff(a, b *kpconfig.Config, v kpversion.Version) []string {
	x, y := a.Clone(), b.Clone()
	kpconfig.Defaults(x, v)
	kpconfig.Defaults(y, v)
	mx, errX := settings(x)
	my, errY := settings(y)
	if errX != nil || errY != nil {
		if !reflect.DeepEqual(x.Config, y.Config) {
			return []string{"their settings"}
		}
		return nil
	}
	var out []string
	diffPaths("", mx, my, &out)
	mode := string(x.Config.Mode)
	if mode == "" {
		mode = "iptables" // kube-proxy's default on Linux
	}
	out = slices.DeleteFunc(out, func(path string) bool {
		section, _, _ := strings.Cut(path, ".")
		return !sectionApplies(section, mode) || path == "ipvs.scheduler" && sameScheduler(x.Config.IPVS.Scheduler, y.Config.IPVS.Scheduler)
	})
	slices.Sort(out)
	return out
}

// sectionApplies reports whether kube-proxy in mode reads a section of its
// configuration: each mode its own, IPVS mode the iptables one too (its
// masquerade settings), no Linux mode the winkernel one.
func sectionApplies(section, mode string) bool {
	switch section {
	case "iptables":
		return mode == "iptables" || mode == "ipvs"
	case "ipvs", "nftables":
		return mode == section
	case "winkernel":
		return false
	}
	return true
}

// sameScheduler reports whether two IPVS schedulers are one: an empty
// one is round robin.
func sameScheduler(a, b string) bool {
	norm := func(s string) string {
		if s == "" {
			return "rr"
		}
		return s
	}
	return norm(a) == norm(b)
}

// settings returns the configuration's settings as its JSON form decodes
// into maps.
func settings(c *kpconfig.Config) (map[string]any, error) {
	data, err := json.Marshal(&c.Config)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(data, &m)
}

// diffPaths appends to out the paths below prefix where a and b differ.
func diffPaths(prefix string, a, b any, out *[]string) {
	ma, okA := a.(map[string]any)
	mb, okB := b.(map[string]any)
	if !okA || !okB {
		if !reflect.DeepEqual(a, b) {
			*out = append(*out, prefix)
		}
		return
	}
	for k, va := range ma {
		diffPaths(settingPath(prefix, k), va, mb[k], out)
	}
	for k, vb := range mb {
		if _, ok := ma[k]; !ok {
			diffPaths(settingPath(prefix, k), nil, vb, out)
		}
	}
}

// settingPath is the path of key below prefix.
func settingPath(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}
