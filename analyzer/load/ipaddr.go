package load

import (
	"fmt"
	"slices"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/ipaddr"
)

// addrsPartial makes an ip addr listing pasted under its command line
// partial where that command shows less than every interface whole: `ip
// addr show eth0` (`ip a s dev eth0`, or any other selector after show)
// lists the interfaces it selects; `ip -4 addr` the interfaces with an
// address of that family, and only those addresses; a filter (`ip addr |
// grep inet`) may have dropped any line. A listing without the loopback
// interface is already partial (the parser says so); the command's reason
// comes first.
func addrsPartial(d *ipaddr.Dump, data []byte, notes []parsers.LineNote) {
	var why []string
	promptLines(data, notes, func(_ int, text string) bool {
		cmd, sel, fam, ok := ipAddrCommand(text)
		if !ok {
			return true
		}
		if sel != "" {
			why = append(why, fmt.Sprintf("the command line above it (`%s`) lists %s only", cmd, sel))
		}
		if fam != "" {
			d.Family = fam
			name := map[string]string{"inet": "IPv4", "inet6": "IPv6"}[fam]
			why = append(why, fmt.Sprintf("the command line above it (`%s`) lists the %s addresses only", cmd, name))
		}
		return false
	})
	if f := filteredBy(data, notes); f != "" {
		d.Filtered = true
		why = append(why, "filtered by `"+f+"` on the command line above it")
	}
	if len(why) == 0 {
		return
	}
	if d.Partial != "" {
		why = append(why, d.Partial)
	}
	d.Partial = strings.Join(why, "; ")
}

// ipAddrObject are the words ip takes for its address object.
var ipAddrObject = []string{"a", "ad", "addr", "addre", "addres", "address"}

// ipAddrCommand reads the first command of a prompt or command line as
// iproute2's `ip address show` (or list, and their abbreviations): the
// command (the words from "ip" on), what its selectors pick ("interface
// eth0", or the selectors quoted) and the family its -4, -6 or -f option
// keeps ("inet", "inet6"), each "" when it has none. ok is false for any
// other command.
func ipAddrCommand(line string) (cmd, sel, family string, ok bool) {
	first, _, _ := strings.Cut(line, "|")
	words := strings.Fields(first)
	at := slices.IndexFunc(words, func(w string) bool { return w == "ip" || strings.HasSuffix(w, "/ip") })
	if at < 0 {
		return "", "", "", false
	}
	words = words[at:]
	for i, w := range words {
		if w == ";" || w == "&&" || w == "||" || strings.HasPrefix(w, ">") || strings.HasPrefix(w, "2>") {
			words = words[:i]
			break
		}
	}
	i := 1
	for ; i < len(words) && strings.HasPrefix(words[i], "-"); i++ {
		switch o := strings.TrimLeft(words[i], "-"); {
		case o == "4":
			family = "inet"
		case o == "6":
			family = "inet6"
		case o == "f" || o == "family":
			if i+1 < len(words) {
				i++
				if f := words[i]; f == "inet" || f == "inet6" {
					family = f
				}
			}
		}
	}
	if i >= len(words) || !slices.Contains(ipAddrObject, words[i]) {
		return "", "", "", false
	}
	args := words[i+1:]
	if len(args) > 0 {
		c := args[0]
		if !strings.HasPrefix("show", c) && !strings.HasPrefix("list", c) && c != "lst" {
			return "", "", "", false // add, del, flush, ...
		}
		args = args[1:]
	}
	cmd = strings.Join(words, " ")
	switch {
	case len(args) == 0:
	case len(args) == 1:
		sel = "interface " + args[0]
	case len(args) == 2 && args[0] == "dev":
		sel = "interface " + args[1]
	default:
		sel = "what `" + strings.Join(args, " ") + "` selects"
	}
	return cmd, sel, family, true
}
