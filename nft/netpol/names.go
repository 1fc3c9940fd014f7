package netpol

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/nfrouter/nfrouter/model"
)

// Names of the table and of the objects the firewall shares between policies.
const (
	Family = "inet"
	Table  = "nfrouter"

	ChainEgress  = "pod-egress"
	ChainIngress = "pod-ingress"
	// ChainEgressOutput and ChainIngressOutput filter what the node sends
	// out on a pod's behalf: IPVS forwards service traffic through the
	// output hook, never through forward.
	ChainEgressOutput  = "pod-egress-output"
	ChainIngressOutput = "pod-ingress-output"
	ChainDeny          = "deny"

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

func (d direction) opposite() direction { return !d }

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

// isolatedSet names the set of local pods isolated in direction d.
func isolatedSet(d direction, v6 bool) string { return "isolated-" + d.String() + "-v" + fam(v6) }

// nsIsolatedSet names the set of local pods of namespace ns isolated in
// direction d.
func nsIsolatedSet(d direction, ns string, v6 bool) string {
	return "iso-" + d.String() + fam(v6) + "/" + ns
}

// dispatchChain names the chain that sends isolated pods to their
// namespace's chain.
func dispatchChain(d direction) string { return "dispatch-" + d.String() }

func localCIDRs(v6 bool) string { return "local-cidrs-v" + fam(v6) }
func localPods(v6 bool) string  { return "local-pods-v" + fam(v6) }

// nsChain names the chain that dispatches a namespace's pods to its policies.
func nsChain(d direction, ns string) string { return "ns-" + d.String() + "/" + ns }

// denyChain names the chain that logs, counts and drops what a
// namespace's policies do not allow in direction d.
func denyChain(d direction, ns string) string { return "deny-" + d.String() + "/" + ns }

// denyPrefix is the NFLOG prefix of packets denyChain drops: the direction
// and the namespace, so that a log line says whose policies denied it.
func denyPrefix(d direction, ns string) string { return "nfrouter deny " + d.long() + " " + ns + ": " }

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

// podsSetName names a set of pods: under its namespace when only pods of
// one namespace can be in it, with a hash of its key (the comment says
// which pods in words).
func podsSetName(ns, key string, v6 bool) string {
	prefix := "pods" + fam(v6) + "/"
	if ns != "" {
		prefix += ns + "/"
	}
	return hashedName(prefix, key)
}

// portsSetName names a set of named ports by the names ("http.tcp"), or by
// a hash when they are too long for a set name.
func portsSetName(parts []string, v6 bool) string {
	name := "ports" + fam(v6) + "/" + strings.Join(parts, "/")
	if len(name) <= maxID {
		return name
	}
	return hashedName("ports"+fam(v6)+"/", strings.Join(parts, "/"))
}

// hashedName is prefix followed by a short hash of key.
func hashedName(prefix, key string) string {
	sum := sha256.Sum256([]byte(key))
	return prefix + hex.EncodeToString(sum[:6])
}
