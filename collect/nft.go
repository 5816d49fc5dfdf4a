package collect

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// bigIPTables is the size of the iptables-save dumps above which nft
// listings leave out the tables of iptables-nft: for tens of thousands of
// chains nft takes many minutes to list what iptables-save.txt already
// holds.
const bigIPTables = 4 << 20

// iptablesNFTTables are the tables iptables-nft and ip6tables-nft manage.
var iptablesNFTTables = map[string]bool{
	"ip filter": true, "ip nat": true, "ip mangle": true, "ip raw": true, "ip security": true,
	"ip6 filter": true, "ip6 nat": true, "ip6 mangle": true, "ip6 raw": true, "ip6 security": true,
}

// readNFT lists the nf_tables ruleset (text or JSON): nft list ruleset,
// or, on a node whose iptables dumps are large, each table but those of
// iptables-nft.
func readNFT(ctx context.Context, e *env, s *Source, w *Writer) {
	var size int64
	for _, f := range []string{"node/iptables-save.txt", "node/ip6tables-save.txt"} {
		size += e.stagedSize(f)
	}
	args, _ := e.pick(s)
	if args == nil || size < bigIPTables {
		runExec(ctx, e, s, w)
		return
	}
	jsonForm := s.File == "node/nft-ruleset.json"
	// The table names come over netlink: nft itself would fetch every
	// rule first, even for `nft list tables`.
	tables, err := e.netlink().NFTTables()
	if err != nil {
		w.Fail("the iptables dumps are %d MiB; listing the nf_tables tables to leave out those of iptables-nft failed: %v", size>>20, err)
		return
	}
	var keep, skipped []string
	for _, t := range tables {
		if iptablesNFTTables[t] {
			skipped = append(skipped, t)
		} else {
			keep = append(keep, t)
		}
	}
	if len(skipped) == 0 {
		runExec(ctx, e, s, w)
		return
	}
	why := fmt.Sprintf("the tables of iptables-nft (%s) are left out: their %d MiB of rules are in the iptables-save dumps, and listing them again through nft takes minutes", strings.Join(skipped, ", "), size>>20)
	rec := w.Record()
	rec.Command = nil
	if len(keep) == 0 {
		w.Skip("%s; no other table exists", why)
		return
	}
	var merged []json.RawMessage
	for _, t := range keep {
		f := strings.Fields(t)
		cmd := []string{"nft", "list", "table", f[0], f[1]}
		if jsonForm {
			cmd = []string{"nft", "-j", "list", "table", f[0], f[1]}
		}
		rec.Command = cmd
		var out bytes.Buffer
		res := e.runner.Run(ctx, Cmd{Args: cmd, Timeout: e.timeout(s.Timeout), MaxBytes: s.MaxBytes}, &out)
		switch {
		case res.Err != nil:
			w.Fail("%s: %v", strings.Join(cmd, " "), res.Err)
			return
		case res.Truncated:
			w.Fail("output over the %d-byte cap: discarded", s.MaxBytes)
			return
		case res.ExitStatus != 0:
			w.Fail("%s: exit status %d: %s", strings.Join(cmd, " "), res.ExitStatus, firstLines(res.Stderr, 2))
			return
		}
		if !jsonForm {
			_, _ = w.Write(out.Bytes())
			continue
		}
		var doc struct {
			Nftables []json.RawMessage `json:"nftables"`
		}
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			w.Fail("%s: %v", strings.Join(cmd, " "), err)
			return
		}
		for i, obj := range doc.Nftables {
			if i == 0 && len(merged) > 0 && bytes.Contains(obj, []byte(`"metainfo"`)) {
				continue
			}
			merged = append(merged, obj)
		}
	}
	if jsonForm {
		b, err := json.Marshal(map[string]any{"nftables": merged})
		if err != nil {
			w.Fail("%v", err)
			return
		}
		_, _ = w.Write(append(b, '\n'))
	}
	rec.Command = []string{"nft", "list", "table", "..."}
	w.Partial("%s; listed table by table: %s", why, strings.Join(keep, ", "))
}
