package proxier

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/parsers/kpversion"
)

// sequentialAndSharded generates snap's iptables rules once with the
// service ports written one after the other and once split into up to
// four shards (however few the ports), and fails unless the files are
// byte for byte the same.
func sequentialAndSharded(t *testing.T, name string, snap *model.Snapshot, o testOptions) {
	t.Helper()
	defer func(n int) { shardMinPorts = n }(shardMinPorts)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	shardMinPorts = 1 << 30
	seq, seqErr := expectFor(snap, o)
	shardMinPorts = 2
	par, parErr := expectFor(snap, o)
	if (seqErr == nil) != (parErr == nil) {
		t.Fatalf("%s: sequential error %v, sharded error %v", name, seqErr, parErr)
	}
	if seqErr != nil {
		return
	}
	if len(seq.Files) != len(par.Files) || len(seq.Files) == 0 {
		t.Fatalf("%s: %d files sequential, %d sharded", name, len(seq.Files), len(par.Files))
	}
	for i := range seq.Files {
		if !bytes.Equal(seq.Files[i].Data, par.Files[i].Data) {
			t.Errorf("%s %s %s: sharded text differs from the sequential one:\n%s", name, o.Version, seq.Files[i].Name,
				firstDiff(seq.Files[i].Data, par.Files[i].Data))
		}
	}
}

// firstDiff returns the first line where a and b differ, with its number.
func firstDiff(a, b []byte) string {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := 0; i < len(la) && i < len(lb); i++ {
		if !bytes.Equal(la[i], lb[i]) {
			return "line " + itoa(i+1) + ":\n- " + string(la[i]) + "\n+ " + string(lb[i])
		}
	}
	return "lengths " + itoa(len(la)) + " and " + itoa(len(lb)) + " lines"
}

func itoa(n int) string { return port(int32(n)) }

// TestShardedSyncSameText writes the rules of every conformance scenario,
// and of a generated cluster of 3,000 Services, with the service ports
// split into shards and without: the text is the same, in the releases
// that write KUBE-MARK-DROP (1.24), the firewall chains of filter (1.25+)
// and the newest.
func TestShardedSyncSameText(t *testing.T) {
	versions := []kpversion.Version{kpversion.V(24), kpversion.V(28), kpversion.V(37)}
	for _, c := range conformanceCases(t) {
		snap := loadScenario(t, c.inputs)
		for _, v := range versions {
			sequentialAndSharded(t, c.name, snap, testOptions{Mode: model.ModeIPTables, Version: v})
		}
	}
	spec := benchgen.Spec{Services: 3000, Endpoints: 9000, NodePortEvery: 4, Node: "bench-node-1"}
	if testing.Short() {
		spec = benchgen.Spec{Services: 300, Endpoints: 900, NodePortEvery: 4, Node: "bench-node-1"}
	}
	snap := specSnapshot(t, spec)
	for _, v := range versions {
		sequentialAndSharded(t, "generated", snap, testOptions{Mode: model.ModeIPTables, Version: v})
	}
}
