package load

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/proxyscan/proxyscan/parsers/iptables"
	"github.com/proxyscan/proxyscan/parsers/nft"
)

// heldReader reads r once held is closed, or fails after a while.
type heldReader struct {
	io.ReadCloser
	held <-chan struct{}
}

func (h *heldReader) Read(p []byte) (int, error) {
	select {
	case <-h.held:
		return h.ReadCloser.Read(p)
	case <-time.After(20 * time.Second):
		return 0, errors.New("the export was held back and the dumps were never handed over")
	}
}

// TestParsedBeforeExportsDecoded checks that Options.Parsed gets the dumps
// while the exports are still being decoded: the export's reading waits
// for the dumps to be handed over, and the load goes through.
func TestParsedBeforeExportsDecoded(t *testing.T) {
	dir := t.TempDir()
	dump := writeFile(t, dir, "iptables-save.txt", []byte(miniDump))
	export := writeFile(t, dir, "svc.yaml", []byte(miniService))
	handed := make(chan struct{})
	saved := openExport
	t.Cleanup(func() { openExport = saved })
	openExport = func(p string) (io.ReadCloser, error) {
		f, err := saved(p)
		if err != nil {
			return nil, err
		}
		return &heldReader{ReadCloser: f, held: handed}, nil
	}
	var got []*iptables.Dump
	calls := 0
	opts := Options{Parsed: func(dumps []*iptables.Dump) {
		got = dumps
		calls++
		close(handed)
	}}
	snaps, err := Load([]string{dump, export}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 || len(got) != 1 || len(snaps) != 1 || len(snaps[0].IPTables) != 1 || snaps[0].IPTables[0] != got[0] {
		t.Fatalf("Parsed called %d times with %d dumps; want once with the snapshot's dump", calls, len(got))
	}
	if len(snaps[0].Ports) == 0 {
		t.Errorf("the export's Service has no port in the snapshot")
	}
}

// TestParsedSkipsFailedDumps checks that a dump that did not parse is not
// handed to Options.Parsed (the load fails), and the others are.
func TestParsedSkipsFailedDumps(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "iptables-save.txt", []byte(miniDump))
	bad := writeFile(t, dir, "ip6tables-save.txt", []byte(strings.Replace(miniDump, "iptables-save", "ip6tables-save", 1)+"*nat\n-A NO-SUCH-CHAIN -j ACCEPT\nCOMMIT\n"))
	var got []*iptables.Dump
	_, err := Load([]string{good, bad}, Options{Strict: true, Parsed: func(dumps []*iptables.Dump) { got = dumps }})
	if err == nil {
		t.Fatal("a dump with a rule for no chain loaded strictly")
	}
	if len(got) != 1 || got[0] == nil || got[0].Name != good && !strings.HasSuffix(good, got[0].Name) {
		t.Fatalf("Parsed got %v, want the dump that parsed", got)
	}
}

// TestParsedNFT checks that Options.ParsedNFT gets the nftables rulesets
// read, once, after Parsed (with no dump), and that they are the
// snapshot's.
func TestParsedNFT(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "node/nft-ruleset.txt", []byte(nftListing))
	var order []string
	var got []*nft.Ruleset
	opts := Options{
		Parsed: func(dumps []*iptables.Dump) {
			order = append(order, "Parsed")
			if len(dumps) != 0 {
				t.Errorf("Parsed got %d dumps, want none", len(dumps))
			}
		},
		ParsedNFT: func(rs []*nft.Ruleset) { order, got = append(order, "ParsedNFT"), rs },
	}
	snaps, err := Load([]string{dir}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(order, " ") != "Parsed ParsedNFT" {
		t.Errorf("called %v, want Parsed then ParsedNFT", order)
	}
	if len(got) != 1 || len(snaps) != 1 || len(snaps[0].NFT) != 1 || snaps[0].NFT[0] != got[0] {
		t.Fatalf("ParsedNFT got %d rulesets; want the snapshot's one", len(got))
	}
	// Either alone is called.
	got = nil
	if _, err := Load([]string{dir}, Options{ParsedNFT: func(rs []*nft.Ruleset) { got = rs }}); err != nil || len(got) != 1 {
		t.Errorf("ParsedNFT alone: %d rulesets, %v; want one", len(got), err)
	}
}
