package kpgen

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"time"

	utiliptables "k8s.io/kubernetes/pkg/util/iptables"
	iptablestest "k8s.io/kubernetes/pkg/util/iptables/testing"

	"github.com/proxyscan/proxyscan/testdata/upstream-legacy/common/iptstate"
)

// recIPT is the release's iptables fake (pkg/util/iptables/testing) with
// every state-changing call applied to an iptstate.State, which gives the
// old, stateless fake the behaviour of the real iptables commands:
// EnsureRule and EnsureChain report what exists, SaveInto returns what
// iptables-save would, RestoreAll applies the payload with --noflush
// semantics. Every call is logged.
type recIPT struct {
	*iptablestest.FakeIPTables

	mu      sync.Mutex
	state   *iptstate.State
	log     []string
	monitor chan monitorReq
}

type monitorReq struct {
	canary utiliptables.Chain
	tables []utiliptables.Table
}

var _ utiliptables.Interface = &recIPT{}

// newRecIPT returns an IPv4 fake on an empty namespace. The real iptables
// 1.8.9 supports --random-fully, so the fake says so.
func newRecIPT(st *iptstate.State) *recIPT {
	f := iptablestest.NewFake().SetHasRandomFully(true)
	return &recIPT{FakeIPTables: f, state: st, monitor: make(chan monitorReq, 4)}
}

func (r *recIPT) logf(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf(format, args...))
}

func (r *recIPT) EnsureChain(table utiliptables.Table, chain utiliptables.Chain) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logf("EnsureChain %s %s", table, chain)
	return r.state.EnsureChain(string(table), string(chain))
}

func (r *recIPT) ChainExists(table utiliptables.Table, chain utiliptables.Chain) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state.ChainExists(string(table), string(chain)), nil
}

func (r *recIPT) FlushChain(table utiliptables.Table, chain utiliptables.Chain) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logf("FlushChain %s %s", table, chain)
	return r.state.FlushChain(string(table), string(chain))
}

func (r *recIPT) DeleteChain(table utiliptables.Table, chain utiliptables.Chain) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logf("DeleteChain %s %s", table, chain)
	return r.state.DeleteChain(string(table), string(chain))
}

func (r *recIPT) EnsureRule(pos utiliptables.RulePosition, table utiliptables.Table, chain utiliptables.Chain, args ...string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rule := iptstate.QuoteArgs(args)
	r.logf("EnsureRule %s %s %s %s", pos, table, chain, rule)
	return r.state.EnsureRule(pos == utiliptables.Prepend, string(table), string(chain), rule)
}

func (r *recIPT) DeleteRule(table utiliptables.Table, chain utiliptables.Chain, args ...string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	rule := iptstate.QuoteArgs(args)
	r.logf("DeleteRule %s %s %s", table, chain, rule)
	if err := r.state.DeleteRule(string(table), string(chain), rule); err != nil {
		// iptables -D of a missing rule or chain: the callers treat
		// "not found" as success.
		return notFound{err}
	}
	return nil
}

// notFound is an error utiliptables.IsNotFoundError recognises: the real
// runner returns an exec error with status 1 and this message.
type notFound struct{ err error }

func (e notFound) Error() string {
	return "iptables: Bad rule (does a matching rule exist in that chain?)."
}

func (r *recIPT) Save(table utiliptables.Table) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state.SaveTable(string(table))
}

func (r *recIPT) SaveInto(table utiliptables.Table, buffer *bytes.Buffer) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	data, err := r.state.SaveTable(string(table))
	if err != nil {
		return err
	}
	buffer.Write(data)
	return nil
}

func (r *recIPT) Restore(table utiliptables.Table, data []byte, flush utiliptables.FlushFlag, counters utiliptables.RestoreCountersFlag) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logf("Restore %s flush=%v counters=%v\n%s", table, flush, counters, data)
	payload := append([]byte("*"+string(table)+"\n"), data...)
	if !bytes.HasSuffix(bytes.TrimSpace(data), []byte("COMMIT")) {
		payload = append(payload, []byte("\nCOMMIT\n")...)
	}
	return r.state.Restore(payload, flush == utiliptables.NoFlushTables)
}

func (r *recIPT) RestoreAll(data []byte, flush utiliptables.FlushFlag, counters utiliptables.RestoreCountersFlag) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logf("RestoreAll flush=%v counters=%v\n%s", flush, counters, data)
	if err := r.state.Restore(data, flush == utiliptables.NoFlushTables); err != nil {
		return fmt.Errorf("iptables-restore: %w", err)
	}
	r.FakeIPTables.Lines = data
	return nil
}

// Monitor is started in a goroutine (by NewProxier, and by kubelet's
// initNetworkUtil). The real Monitor first creates the canary chain in
// every table, then polls; the request is handed to the main goroutine,
// which creates the chains (applyMonitor) before anything else happens.
func (r *recIPT) Monitor(canary utiliptables.Chain, tables []utiliptables.Table, _ func(), _ time.Duration, _ <-chan struct{}) {
	r.monitor <- monitorReq{canary: canary, tables: tables}
}

func (r *recIPT) applyMonitor() error {
	select {
	case req := <-r.monitor:
		return r.ensureCanary(req)
	case <-time.After(10 * time.Second):
		return fmt.Errorf("the proxier did not start its iptables Monitor")
	}
}

func (r *recIPT) ensureCanary(req monitorReq) error {
	for _, t := range req.tables {
		if _, err := r.EnsureChain(t, req.canary); err != nil {
			return err
		}
	}
	return nil
}

func (r *recIPT) callLog() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.log, "\n") + "\n"
}
