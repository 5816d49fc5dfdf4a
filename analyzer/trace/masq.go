package trace

import (
	"strconv"

	"github.com/proxyscan/proxyscan/analyzer/model"
)

// masqueradeNote is the note of the step that masquerades the packet, in
// every mode: the MASQUERADE target of iptables (and of IPVS mode's
// rules), nftables' masquerade statement.
const masqueradeNote = "masquerade: source NAT to the address of the outgoing interface"

// markNote is the note of a step that changes the packet's mark.
func markNote(before, after uint32) string {
	return "mark 0x" + strconv.FormatUint(uint64(before), 16) + " -> 0x" + strconv.FormatUint(uint64(after), 16)
}

// noteUnmasqueraded says, on the last step of p, why a packet that came
// from outside the node and was sent to an endpoint keeps its source
// address: no rule masqueraded it, and mark is the mark it leaves with
// (kube-proxy masquerades what its rules marked, so an unmarked packet,
// as with externalTrafficPolicy: Local, keeps the client's address).
// Other paths are left as they are. p's steps are copied before the
// note is written: they may be shared.
func noteUnmasqueraded(p *Path, pkt Packet, mark uint32) {
	if pkt.From != model.FromExternal || p.Verdict != VerdictDNAT || p.Masquerade || p.SNAT != "" || len(p.Steps) == 0 {
		return
	}
	steps := make([]Step, len(p.Steps))
	copy(steps, p.Steps)
	last := &steps[len(steps)-1]
	last.Note = joinNote(last.Note, "not masqueraded: no rule masqueraded the packet (it leaves with mark 0x"+
		strconv.FormatUint(uint64(mark), 16)+"), so it keeps the client's source address "+pkt.Src.String())
	p.Steps = steps
}
