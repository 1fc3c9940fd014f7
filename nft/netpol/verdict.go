package netpol

import (
	"fmt"

	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// Verdict is what the firewall programmed in a table does with a packet
// that opens a connection: the source's egress policies judge it, then the
// destination's ingress policies.
type Verdict struct {
	Allowed         bool
	Egress, Ingress ruleset.TraceResult
}

// Judge traces pkt through the firewall's base chains of t. A packet from
// the node's own addresses goes through the output chains, where nothing of
// the node's is judged; any other through the forward chains, which judge
// exactly as the output chains do for traffic IPVS sends on.
func Judge(t *ruleset.Table, pkt ruleset.Packet) (Verdict, error) {
	egressChain, ingressChain := ChainEgress, ChainIngress
	if pkt.SrcLocal {
		egressChain, ingressChain = ChainEgressOutput, ChainIngressOutput
	}
	var v Verdict
	var err error
	if v.Egress, err = t.Trace(egressChain, pkt); err != nil {
		return v, fmt.Errorf("judge egress: %w", err)
	}
	if !v.Egress.Accepted {
		return v, nil
	}
	if v.Ingress, err = t.Trace(ingressChain, pkt); err != nil {
		return v, fmt.Errorf("judge ingress: %w", err)
	}
	v.Allowed = v.Ingress.Accepted
	return v, nil
}
