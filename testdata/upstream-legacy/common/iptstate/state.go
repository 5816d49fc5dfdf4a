// Package iptstate models the iptables tables of one IP family the way the
// kernel holds them, for the old kube-proxy and kubelet code whose iptables
// fake records nothing: every EnsureChain, EnsureRule, DeleteRule,
// FlushChain, DeleteChain and iptables-restore payload is applied to the
// model with the semantics of the real iptables and iptables-restore
// (--noflush) commands, and the final state is rendered as one
// iptables-restore input that recreates it in an empty network namespace.
//
// Rules are kept in restore form: the arguments after "-A CHAIN", with
// arguments that contain blanks double-quoted.
package iptstate

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Tables lists the tables in the order Render writes them.
var Tables = []string{"mangle", "filter", "nat"}

// Builtins lists the built-in chains of each table, in iptables-save order.
var Builtins = map[string][]string{
	"mangle": {"PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"},
	"filter": {"INPUT", "FORWARD", "OUTPUT"},
	"nat":    {"PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"},
}

type chain struct {
	name    string
	builtin bool
	rules   []string
}

type table struct {
	chains map[string]*chain
}

// State is the content of the mangle, filter and nat tables.
type State struct {
	tables map[string]*table
}

// New returns the state of an empty network namespace: every table with
// its built-in chains and no rules.
func New() *State {
	s := &State{tables: map[string]*table{}}
	for _, t := range Tables {
		tb := &table{chains: map[string]*chain{}}
		for _, c := range Builtins[t] {
			tb.chains[c] = &chain{name: c, builtin: true}
		}
		s.tables[t] = tb
	}
	return s
}

func (s *State) table(name string) (*table, error) {
	t, ok := s.tables[name]
	if !ok {
		return nil, fmt.Errorf("table %q does not exist", name)
	}
	return t, nil
}

func (s *State) chain(tname, cname string) (*chain, error) {
	t, err := s.table(tname)
	if err != nil {
		return nil, err
	}
	c, ok := t.chains[cname]
	if !ok {
		return nil, fmt.Errorf("chain %q does not exist in table %s", cname, tname)
	}
	return c, nil
}

// EnsureChain creates a user chain if it does not exist and reports
// whether it existed.
func (s *State) EnsureChain(tname, cname string) (bool, error) {
	t, err := s.table(tname)
	if err != nil {
		return false, err
	}
	if _, ok := t.chains[cname]; ok {
		return true, nil
	}
	t.chains[cname] = &chain{name: cname}
	return false, nil
}

// ChainExists reports whether a chain exists.
func (s *State) ChainExists(tname, cname string) bool {
	_, err := s.chain(tname, cname)
	return err == nil
}

// FlushChain removes every rule of a chain.
func (s *State) FlushChain(tname, cname string) error {
	c, err := s.chain(tname, cname)
	if err != nil {
		return err
	}
	c.rules = nil
	return nil
}

// DeleteChain deletes an empty user chain; as "iptables -X", it refuses a
// chain that still has rules or is the target of a rule.
func (s *State) DeleteChain(tname, cname string) error {
	c, err := s.chain(tname, cname)
	if err != nil {
		return err
	}
	if c.builtin {
		return fmt.Errorf("cannot delete built-in chain %s", cname)
	}
	if len(c.rules) > 0 {
		return fmt.Errorf("chain %s in table %s is not empty", cname, tname)
	}
	for _, o := range s.tables[tname].chains {
		for _, r := range o.rules {
			if jumpTarget(r) == cname {
				return fmt.Errorf("chain %s in table %s is referenced by %s", cname, tname, o.name)
			}
		}
	}
	delete(s.tables[tname].chains, cname)
	return nil
}

// EnsureRule adds a rule at the start (prepend) or end of a chain unless an
// identical rule is already in it, and reports whether it was there. The
// chain must exist and a jump target must exist, as for iptables -I/-A.
func (s *State) EnsureRule(prepend bool, tname, cname, rule string) (bool, error) {
	c, err := s.chain(tname, cname)
	if err != nil {
		return false, err
	}
	for _, r := range c.rules {
		if r == rule {
			return true, nil
		}
	}
	if err := s.checkTarget(tname, rule); err != nil {
		return false, err
	}
	if prepend {
		c.rules = append([]string{rule}, c.rules...)
	} else {
		c.rules = append(c.rules, rule)
	}
	return false, nil
}

// DeleteRule deletes the first rule of a chain identical to rule.
func (s *State) DeleteRule(tname, cname, rule string) error {
	c, err := s.chain(tname, cname)
	if err != nil {
		return err
	}
	for i, r := range c.rules {
		if r == rule {
			c.rules = append(c.rules[:i:i], c.rules[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("no such rule in chain %s of table %s: %s", cname, tname, rule)
}

var targetRE = regexp.MustCompile(`(?:^|\s)-j\s+(\S+)`)

func jumpTarget(rule string) string {
	m := targetRE.FindStringSubmatch(rule)
	if m == nil {
		return ""
	}
	return m[1]
}

// checkTarget fails when a rule jumps to a chain-like target (an
// upper-case name with a dash, as every KUBE- chain) that does not exist.
func (s *State) checkTarget(tname, rule string) error {
	t := jumpTarget(rule)
	if t == "" || !strings.Contains(t, "-") || strings.ToUpper(t) != t {
		return nil
	}
	if _, ok := s.tables[tname].chains[t]; !ok {
		return fmt.Errorf("rule jumps to chain %s, which does not exist in table %s", t, tname)
	}
	return nil
}

// Restore applies an iptables-restore payload. With noflush, as
// "iptables-restore --noflush", a ":CHAIN" line creates the user chain or
// flushes it if it exists, and other chains keep their rules; without it,
// every table named in the payload is flushed and emptied of user chains
// first. The changes of a table take effect at its COMMIT only if every
// line of it applied.
func (s *State) Restore(data []byte, noflush bool) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	var (
		cur    string
		staged *State
		lineNo int
	)
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "*"):
			if cur != "" {
				return fmt.Errorf("line %d: table %s not committed", lineNo, cur)
			}
			cur = line[1:]
			if _, err := s.table(cur); err != nil {
				return fmt.Errorf("line %d: %w", lineNo, err)
			}
			staged = s.clone()
			if !noflush {
				t := staged.tables[cur]
				for name, c := range t.chains {
					if c.builtin {
						c.rules = nil
					} else {
						delete(t.chains, name)
					}
				}
			}
		case line == "COMMIT":
			if cur == "" {
				return fmt.Errorf("line %d: COMMIT outside a table", lineNo)
			}
			s.tables[cur] = staged.tables[cur]
			cur, staged = "", nil
		case cur == "":
			return fmt.Errorf("line %d: %q outside a table", lineNo, line)
		case strings.HasPrefix(line, ":"):
			f := strings.Fields(line[1:])
			if len(f) < 2 {
				return fmt.Errorf("line %d: bad chain line %q", lineNo, line)
			}
			t := staged.tables[cur]
			if c, ok := t.chains[f[0]]; ok {
				if !c.builtin {
					c.rules = nil
				}
			} else {
				if f[1] != "-" {
					return fmt.Errorf("line %d: policy for user chain %s", lineNo, f[0])
				}
				t.chains[f[0]] = &chain{name: f[0]}
			}
		default:
			op, rest, _ := strings.Cut(line, " ")
			cname, rule, _ := strings.Cut(strings.TrimSpace(rest), " ")
			rule = strings.TrimSpace(rule)
			var err error
			switch op {
			case "-A":
				var c *chain
				if c, err = staged.chain(cur, cname); err == nil {
					if err = staged.checkTarget(cur, rule); err == nil {
						c.rules = append(c.rules, rule)
					}
				}
			case "-I":
				_, err = staged.EnsureRule(true, cur, cname, rule)
			case "-D":
				err = staged.DeleteRule(cur, cname, rule)
			case "-F":
				err = staged.FlushChain(cur, cname)
			case "-X":
				err = staged.DeleteChain(cur, cname)
			default:
				err = fmt.Errorf("unsupported operation %q", op)
			}
			if err != nil {
				return fmt.Errorf("line %d: %w", lineNo, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if cur != "" {
		return fmt.Errorf("table %s not committed", cur)
	}
	return nil
}

func (s *State) clone() *State {
	n := &State{tables: map[string]*table{}}
	for tn, t := range s.tables {
		nt := &table{chains: map[string]*chain{}}
		for cn, c := range t.chains {
			nt.chains[cn] = &chain{name: c.name, builtin: c.builtin, rules: append([]string(nil), c.rules...)}
		}
		n.tables[tn] = nt
	}
	return n
}

// chainOrder returns the chains of a table: built-ins in iptables-save
// order, then user chains by name.
func (s *State) chainOrder(tname string) []*chain {
	t := s.tables[tname]
	var out []*chain
	for _, b := range Builtins[tname] {
		out = append(out, t.chains[b])
	}
	var user []*chain
	for _, c := range t.chains {
		if !c.builtin {
			user = append(user, c)
		}
	}
	sort.Slice(user, func(i, j int) bool { return user[i].name < user[j].name })
	return append(out, user...)
}

// used reports whether a table has a user chain or a rule; iptables-save
// of an nf_tables namespace lists only tables that were written to.
func (s *State) used(tname string) bool {
	for _, c := range s.tables[tname].chains {
		if !c.builtin || len(c.rules) > 0 {
			return true
		}
	}
	return false
}

// SaveTable renders one table as "iptables-save -t TABLE" does (without the
// comment lines and with zero counters): what the proxier reads back
// through SaveInto.
func (s *State) SaveTable(tname string) ([]byte, error) {
	if _, err := s.table(tname); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	s.writeTable(&buf, tname, nil)
	return buf.Bytes(), nil
}

// SortFunc reorders the rules of one chain.
type SortFunc func(rules []string) []string

func (s *State) writeTable(buf *bytes.Buffer, tname string, sorters map[string]SortFunc) {
	order := s.chainOrder(tname)
	fmt.Fprintf(buf, "*%s\n", tname)
	for _, c := range order {
		if c.builtin {
			fmt.Fprintf(buf, ":%s ACCEPT [0:0]\n", c.name)
		} else {
			fmt.Fprintf(buf, ":%s - [0:0]\n", c.name)
		}
	}
	for _, c := range order {
		rules := c.rules
		if f := sorters[c.name]; f != nil {
			rules = f(append([]string(nil), rules...))
		}
		for _, r := range rules {
			fmt.Fprintf(buf, "-A %s %s\n", c.name, r)
		}
	}
	buf.WriteString("COMMIT\n")
}

// Render writes the state as one iptables-restore input that recreates it
// in an empty namespace: the used tables in Tables order, their chains
// (built-ins first, then user chains by name) and rules. sorters, keyed by
// table then chain, may reorder the rules of some chains.
func (s *State) Render(sorters map[string]map[string]SortFunc) string {
	var buf bytes.Buffer
	for _, t := range Tables {
		if !s.used(t) {
			continue
		}
		s.writeTable(&buf, t, sorters[t])
	}
	return buf.String()
}

// QuoteArgs joins argv-style rule arguments into restore form, quoting the
// arguments that contain blanks.
func QuoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " \t") && !strings.HasPrefix(a, `"`) {
			a = `"` + a + `"`
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

var commentRE = regexp.MustCompile(`--comment (?:"([^"]*)"|(\S+))`)

// Comment returns the text of a rule's --comment, if any.
func Comment(rule string) (string, bool) {
	m := commentRE.FindStringSubmatch(rule)
	if m == nil {
		return "", false
	}
	if m[1] != "" {
		return m[1], true
	}
	return m[2], true
}

// SortByService stable-sorts the rules of a chain kube-proxy fills while
// ranging over a Go map, by the service port name that starts each rule's
// comment ("ns/name:port ..."), so the rules of one service port keep
// their relative order; rules without a comment are keyed by their text.
// The "kubernetes service nodeports" rules stay last.
func SortByService(rules []string) []string {
	type keyed struct{ key, rule string }
	var body, tail []keyed
	for _, r := range rules {
		c, ok := Comment(r)
		switch {
		case ok && strings.HasPrefix(c, "kubernetes service nodeports"):
			tail = append(tail, keyed{r, r})
		case ok:
			key, _, _ := strings.Cut(c, " ")
			body = append(body, keyed{key, r})
		default:
			body = append(body, keyed{r, r})
		}
	}
	sort.SliceStable(body, func(i, j int) bool { return body[i].key < body[j].key })
	sort.SliceStable(tail, func(i, j int) bool { return tail[i].key < tail[j].key })
	out := make([]string, 0, len(rules))
	for _, k := range append(body, tail...) {
		out = append(out, k.rule)
	}
	return out
}
