package netpol

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/nfrouter/nfrouter/model"
)

// Names of the table and of the objects the firewall shares between policies.
const (
	Family = "inet"
	Table  = "nfrouter"

	ChainEgress  = "pod-egress"
	ChainIngress = "pod-ingress"
	ChainDeny    = "deny"

	// NFLogGroup is where dropped packets are logged, as kube-router does.
	NFLogGroup = 100
)

type direction bool

const (
	ingress direction = true
	egress  direction = false
)

func (d direction) String() string {
	if d == ingress {
		return "in"
	}
	return "out"
}

func (d direction) long() string {
	if d == ingress {
		return "ingress"
	}
	return "egress"
}

func fam(v6 bool) string {
	if v6 {
		return "6"
	}
	return "4"
}

// isolatedMap names the verdict map of pods isolated in direction d.
func isolatedMap(d direction, v6 bool) string { return "isolated-" + d.String() + "-v" + fam(v6) }

func localCIDRs(v6 bool) string { return "local-cidrs-v" + fam(v6) }
func localPods(v6 bool) string  { return "local-pods-v" + fam(v6) }

// nsChain names the chain that dispatches a namespace's pods to its policies.
func nsChain(d direction, ns string) string { return "ns-" + d.String() + "/" + ns }

// maxID keeps the longest object name (prefix + id) within the kernel's 255
// bytes for chain and set names.
const maxID = 200

// policyID is the readable part of a policy's object names.
func policyID(k model.PolicyKey) string {
	id := k.Namespace + "/" + k.Name
	if len(id) <= maxID {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return id[:maxID-17] + "~" + hex.EncodeToString(sum[:8])
}

func policyChain(d direction, k model.PolicyKey) string {
	return "np-" + d.String() + "/" + policyID(k)
}

func targetSet(k model.PolicyKey, v6 bool) string { return "np-tgt" + fam(v6) + "/" + policyID(k) }

// ruleSet names a set of rule i of a policy: kind is "pod", "cidr" or "port".
func ruleSet(d direction, i int, kind string, k model.PolicyKey, v6 bool) string {
	return fmt.Sprintf("np-%s%d-%s%s/%s", d, i, kind, fam(v6), policyID(k))
}
