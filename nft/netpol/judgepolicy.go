package netpol

import (
	"fmt"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// PolicyChain names the chain holding policy k's ingress (or egress)
// rules, which its namespace's chain jumps to for the pods it selects.
func PolicyChain(k model.PolicyKey, isIngress bool) string {
	return policyChain(direction(isIngress), k)
}

// PolicyAllows reports whether policy k's own rules for one direction
// allow pkt, reading the policy's chain in t: whether the policy would
// accept the packet if its namespace's chain asked it, whatever the
// policies before it said. A policy without rules in that direction has no
// chain and allows nothing. It judges the rules only; whether the policy
// selects the pod is the caller's question (model.Policy.Selects).
func PolicyAllows(t *ruleset.Table, k model.PolicyKey, isIngress bool, pkt ruleset.Packet) (bool, []ruleset.Step, error) {
	name := PolicyChain(k, isIngress)
	if t.Chains[name] == nil {
		return false, nil, nil
	}
	res, err := t.TraceChain(name, pkt)
	if err != nil {
		return false, nil, fmt.Errorf("judge policy %s: %w", k, err)
	}
	return res.Accepted, res.Steps, nil
}
