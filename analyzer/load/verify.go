package load

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/proxyscan/proxyscan/parsers/manifest"
)

// verifyManifests checks each bundle that holds a manifest against it:
// every file it lists is in the bundle, of the size and SHA-256 it gives.
// A bundle that does not match was changed after it was collected (or
// cut): reading it strictly as collect wrote it would mislead, so it is
// an input error, which says how to read it all the same.
func verifyManifests(results []parsed) error {
	byGroup := map[string]map[string]*parsed{}
	for i := range results {
		r := &results[i]
		if r.f.group == "" {
			continue
		}
		if byGroup[r.f.group] == nil {
			byGroup[r.f.group] = map[string]*parsed{}
		}
		byGroup[r.f.group][r.f.name] = r
	}
	var groups []string
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	var problems []string
	for _, g := range groups {
		m, ok := byGroup[g]["manifest.json"]
		if !ok {
			continue
		}
		man, ok := m.value.(*manifest.Manifest)
		if !ok || man == nil {
			continue // a manifest that could not be read is an error of its own
		}
		listed := map[string]bool{"manifest.json": true}
		for _, src := range man.Sources {
			if src.File == "" {
				continue
			}
			listed[src.File] = true
			if p := mismatch(src, byGroup[g][src.File]); p != "" {
				problems = append(problems, fmt.Sprintf("%s: %s: %s", g, src.Pos, p))
			}
		}
		// Files the manifest does not list were added afterwards: they
		// are read all the same, and say so.
		for name, r := range byGroup[g] {
			if !listed[name] && r.note == "" {
				r.note = "not listed in manifest.json: added after the bundle was collected"
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return inputErrorf("%s; the bundle was changed after it was collected: remove its manifest.json to read its files as loose files, leniently", strings.Join(problems, "; "))
}

// mismatch says how the file r differs from what the manifest says of
// it, or "".
func mismatch(src manifest.Source, r *parsed) string {
	if r == nil {
		return fmt.Sprintf("source %s wrote %s, which is not in the bundle", src.Name, src.File)
	}
	if r.f.special {
		return fmt.Sprintf("%s, which source %s wrote, is %s", src.File, src.Name, r.f.det.unread)
	}
	size := r.f.size
	if r.f.path == "" && !r.f.skipped && r.f.parsed == nil {
		size = r.size
	}
	if r.f.decoded != "" {
		return fmt.Sprintf("%s is %s, not the UTF-8 text source %s wrote", src.File, r.f.decoded, src.Name)
	}
	if size != src.Bytes {
		return fmt.Sprintf("%s is %d bytes, the manifest says %d", src.File, size, src.Bytes)
	}
	if src.SHA256 == "" {
		return ""
	}
	sum := r.f.sum
	if sum == "" && r.f.path != "" {
		var err error
		if sum, err = fileSum(r.f.path); err != nil {
			return fmt.Sprintf("reading %s: %v", src.File, pathErr(err))
		}
	}
	if sum != "" && !strings.EqualFold(sum, src.SHA256) {
		return fmt.Sprintf("the SHA-256 of %s is %s, the manifest says %s", src.File, sum, src.SHA256)
	}
	return ""
}

// sourceFiles are the files collect writes for the sources whose empty
// output is a data plane without rules; it writes no file for an empty
// output, and says so in the manifest (status ok, no file).
var sourceFiles = map[string]string{
	"iptables-nft-save":     "node/iptables-save.txt",
	"ip6tables-nft-save":    "node/ip6tables-save.txt",
	"iptables-legacy-save":  "node/iptables-legacy-save.txt",
	"ip6tables-legacy-save": "node/ip6tables-legacy-save.txt",
	"ipvsadm":               "node/ipvsadm.txt",
	"ipvsadm-save":          "node/ipvsadm-save.txt",
	"ipset-save":            "node/ipset-save.txt",
}

// emptySources returns, for each bundle with a manifest, the dumps
// without rules of the sources whose output was empty: a node whose
// iptables-save printed nothing has no rules at all, which the checks
// must see rather than a dump missing from the inputs.
func emptySources(results []parsed) []parsed {
	have := map[[2]string]bool{}
	for _, r := range results {
		have[[2]string{r.f.group, r.f.name}] = true
	}
	var out []parsed
	for _, r := range results {
		m, ok := r.value.(*manifest.Manifest)
		if !ok || r.f.group == "" {
			continue
		}
		for _, src := range m.Sources {
			name, ok := sourceFiles[src.Name]
			if !ok || src.Status != manifest.StatusOK || src.File != "" || src.Bytes != 0 || have[[2]string{r.f.group, name}] {
				continue
			}
			k := layoutKind(name)
			out = append(out, parsed{f: file{name: name, group: r.f.group, archive: r.f.archive}, kind: k, value: emptyDump(name, k),
				note: "empty: a data plane without rules (" + src.Name + " printed nothing, " + m.Pos.File + " says)"})
			have[[2]string{r.f.group, name}] = true
		}
	}
	return out
}

// hashes counts the files hashed, whole (fileSum) or as decoded (see
// UnitExports.decode), for tests.
var hashes atomic.Int64

// fileSum returns the hex SHA-256 of the file at p.
func fileSum(p string) (string, error) {
	hashes.Add(1)
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
