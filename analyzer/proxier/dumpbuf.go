package proxier

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// ruleTable accumulates one table of an iptables dump in iptables-save
// form: kube-proxy's rules are written to it as kube-proxy writes its
// restore input (words, in any order iptables-restore accepts) and stored
// as iptables-save prints them.
type ruleTable struct {
	name   string
	fam    iptables.Family
	chains map[string]*ruleChain
	user   []*ruleChain
	err    error
	// last is the chain the last rule was written to: rules of a chain
	// mostly follow each other.
	last *ruleChain

	words []string
	args  []iptables.Arg
	canon canonicalizer
	// blk is the block the rules' text is written into: its free
	// capacity is the room left (see appendLine).
	blk []byte
}

// ruleChain is one chain of a ruleTable: its policy and its rules, as
// newline-terminated lines.
type ruleChain struct {
	name, policy string
	// runs are the chain's lines in order, each run consecutive lines
	// in one block of a table (see ruleTable.appendLine); size is their
	// length and n their number.
	runs [][]byte
	size int
	n    int
}

// Rule text is written into blocks of blockSize bytes shared by the
// chains of a table, a new one when less than blockRoom is left: a
// chain's text does not grow by doubling through reallocations (tens of
// thousands of small chains, and a KUBE-SERVICES of megabytes, would be
// copied and cleared several times over), and is copied once, into the
// dump's text.
const (
	blockSize = 256 << 10
	blockRoom = 4 << 10
)

// appendLine appends the rule of chain c with args, in iptables-save form,
// as a line of c.
func (t *ruleTable) appendLine(c *ruleChain, args []iptables.Arg) {
	if cap(t.blk)-len(t.blk) < blockRoom {
		t.blk = make([]byte, 0, blockSize)
	}
	start := len(t.blk)
	b := t.canon.appendRule(t.blk, t.fam, c.name, args)
	b = append(b, '\n')
	// A rule longer than the room left moved the block (the runs
	// already written keep the old one); the block is then b.
	moved := cap(b) != cap(t.blk)
	t.blk = b
	c.size += len(b) - start
	c.n++
	if k := len(c.runs) - 1; k >= 0 && !moved && follows(c.runs[k], b, start) {
		c.runs[k] = c.runs[k][:len(c.runs[k])+len(b)-start]
		return
	}
	c.runs = append(c.runs, b[start:])
}

// follows reports whether run ends in blk's array at offset start.
func follows(run, blk []byte, start int) bool {
	if cap(run)-len(run) != cap(blk)-start || cap(run) == 0 {
		return false
	}
	// Both reach the end of their array: the same array when the last
	// byte of their capacity is the same byte.
	return &run[:cap(run)][cap(run)-1] == &blk[:cap(blk)][cap(blk)-1]
}

func newRuleTable(name string, fam iptables.Family) *ruleTable {
	t := &ruleTable{name: name, fam: fam, chains: map[string]*ruleChain{}}
	for _, c := range iptables.BuiltinChains(name) {
		t.chains[c] = &ruleChain{name: c, policy: "ACCEPT"}
	}
	return t
}

// chain returns the named chain, declaring it (":NAME - [0:0]", as
// MakeChainLine) when it is new.
func (t *ruleTable) chain(name string) *ruleChain {
	if c := t.chains[name]; c != nil {
		return c
	}
	c := &ruleChain{name: name, policy: "-"}
	t.chains[name] = c
	t.user = append(t.user, c)
	return c
}

// reserve makes room in t for n more chains, so that the table of a
// large cluster's chains is not rehashed as it grows.
func (t *ruleTable) reserve(n int) {
	chains := make(map[string]*ruleChain, len(t.chains)+n)
	for name, c := range t.chains {
		chains[name] = c
	}
	t.chains = chains
}

// emptyCopy returns a table declaring the chains t declares, without
// their rules: what one shard of syncServicePorts writes into.
func (t *ruleTable) emptyCopy() *ruleTable {
	c := &ruleTable{name: t.name, fam: t.fam, chains: make(map[string]*ruleChain, len(t.chains))}
	for name, ch := range t.chains {
		c.chains[name] = &ruleChain{name: name, policy: ch.policy}
	}
	return c
}

// merge appends what was written into q, an emptyCopy of t, after what t
// holds: the chains q declared and the rules of every chain, so that t
// is as if q's rules had been written into it.
func (t *ruleTable) merge(q *ruleTable) {
	if q.err != nil {
		t.fail(q.err)
	}
	for _, c := range q.user {
		if t.chains[c.name] == nil {
			t.chain(c.name)
		}
	}
	for name, c := range q.chains {
		if c.n == 0 {
			continue
		}
		tc := t.chains[name]
		tc.runs = append(tc.runs, c.runs...)
		tc.size += c.size
		tc.n += c.n
	}
}

// declare declares a user chain; declaring it twice is harmless, as
// iptables-restore flushes a chain named twice.
func (t *ruleTable) declare(name string) { t.chain(name) }

// Write appends one rule given as kube-proxy's LineBuffer.Write takes it:
// strings and string slices, starting with "-A" and the chain; quoted
// values ("\"kubernetes service portals\"") lose their quotes, "!" negates
// the next option. The chain must have been declared.
func (t *ruleTable) Write(words ...any) {
	t.words = t.words[:0]
	for _, w := range words {
		switch w := w.(type) {
		case string:
			t.words = append(t.words, w)
		case []string:
			t.words = append(t.words, w...)
		default:
			panic(fmt.Sprintf("ruleTable.Write: unexpected %T", w))
		}
	}
	if len(t.words) < 2 || t.words[0] != "-A" {
		t.fail(fmt.Errorf("rule %q does not start with -A CHAIN", strings.Join(t.words, " ")))
		return
	}
	c := t.last
	if c == nil || c.name != t.words[1] {
		c = t.chains[t.words[1]]
		t.last = c
	}
	if c == nil {
		t.fail(fmt.Errorf("rule for undeclared chain %s in table %s", t.words[1], t.name))
		return
	}
	t.args = wordsToArgs(t.args[:0], t.words[2:])
	t.appendLine(c, t.args)
}

func (t *ruleTable) fail(err error) {
	if t.err == nil {
		t.err = err
	}
}

// wordsToArgs reads restore-input words into options.
func wordsToArgs(dst []iptables.Arg, words []string) []iptables.Arg {
	neg := false
	for _, w := range words {
		switch {
		case w == "!":
			neg = true
		case len(w) > 1 && w[0] == '-' && (w[1] == '-' || w[1] >= 'a' && w[1] <= 'z' || w[1] >= 'A' && w[1] <= 'Z'):
			dst = append(dst, iptables.Arg{Name: w, Neg: neg})
			neg = false
		case len(dst) > 0:
			if len(w) >= 2 && w[0] == '"' && w[len(w)-1] == '"' {
				w = w[1 : len(w)-1]
			}
			last := &dst[len(dst)-1]
			if last.Value == "" {
				last.Value = w
			} else {
				last.Value += " " + w
			}
		}
	}
	return dst
}

// writeTo writes the table as iptables-save prints it: "*name", the
// built-in chains in their fixed order, the user chains sorted by name,
// every chain's rules in that order, "COMMIT".
func (t *ruleTable) writeTo(b *bytes.Buffer) {
	b.WriteByte('*')
	b.WriteString(t.name)
	b.WriteByte('\n')
	var order []*ruleChain
	for _, name := range iptables.BuiltinChains(t.name) {
		order = append(order, t.chains[name])
	}
	user := append([]*ruleChain(nil), t.user...)
	sort.Slice(user, func(i, j int) bool { return user[i].name < user[j].name })
	order = append(order, user...)
	for _, c := range order {
		b.WriteByte(':')
		b.WriteString(c.name)
		b.WriteByte(' ')
		b.WriteString(c.policy)
		b.WriteString(" [0:0]\n")
	}
	for _, c := range order {
		for _, run := range c.runs {
			b.Write(run)
		}
	}
	b.WriteString("COMMIT\n")
}

// size returns the bytes writeTo writes.
func (t *ruleTable) size() int {
	n := len(t.name) + len("*\nCOMMIT\n")
	for _, c := range t.chains {
		n += len(":  [0:0]\n") + len(c.name) + len(c.policy) + c.size
	}
	return n
}

// canonicalDump assembles tables (in iptables-save's table order) into
// text and parses it into a dump named name; with textOnly the dump is
// not parsed (nil).
func canonicalDump(name string, fam iptables.Family, header string, textOnly bool, tables ...*ruleTable) (*iptables.Dump, []byte, error) {
	byName := map[string]*ruleTable{}
	size := len(header)
	for _, t := range tables {
		if t.err != nil {
			return nil, nil, t.err
		}
		byName[t.name] = t
		size += t.size()
	}
	// The text is written once into a buffer of its size: a dump of
	// 10,000 Services is tens of megabytes, which growing by doubling
	// would copy and clear several times over.
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(header)
	for _, n := range tableOrder {
		if t := byName[n]; t != nil {
			t.writeTo(&b)
		}
	}
	text := b.Bytes()
	if textOnly {
		return nil, text, nil
	}
	d, err := iptables.Parse(name, text)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing the generated dump: %w", err)
	}
	d.Family = fam
	return d, text, nil
}
