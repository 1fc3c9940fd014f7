package ruleset

import "fmt"

// TraceChain follows pkt through chain name as if a rule had jumped to it:
// Accepted says the chain itself accepts the packet; a packet it lets
// return to its caller, or drops, is not accepted. It answers what one
// regular chain (a policy's rules, say) does with a packet, where Trace
// answers what the hook does.
func (t *Table) TraceChain(name string, pkt Packet) (TraceResult, error) {
	c := t.Chains[name]
	if c == nil {
		return TraceResult{}, fmt.Errorf("trace: no chain %s", name)
	}
	var res TraceResult
	verdict, err := t.traceChain(c, pkt, &res, 0)
	res.Accepted = verdict == verdictAccept
	return res, err
}
