// Package netpol plans the NetworkPolicy firewall: it turns model.State into the
// chains, sets and maps of nfrouter's nftables table (package ruleset), and
// keeps them up to date incrementally. It never touches the kernel.
//
// # Ruleset layout
//
// All objects live in `table inet nfrouter`:
//
//	pod-egress   base chain, hook forward, priority filter - 1
//	pod-ingress  base chain, hook forward, priority filter
//	  ct state established,related accept
//	  ip saddr vmap @isolated-out-v4   (pod-ingress: ip daddr vmap @isolated-in-v4)
//	  ip6 saddr vmap @isolated-out-v6
//	  [--netpol-default-deny] ip saddr @local-cidrs-v4 ip saddr != @local-pods-v4 jump deny
//	isolated-{in,out}-v{4,6}  verdict maps: IP of each local pod that some policy
//	             isolates in that direction : jump ns-{in,out}/<namespace>
//	ns-in/<ns>   for each policy of <ns> with ingress rules, in name order:
//	               ip daddr @np-tgt4/<ns>/<name> jump np-in/<ns>/<name>   (and ip6)
//	             then: jump deny
//	np-in/<ns>/<name>  the policy's ingress rules; each accepts (peer ∧ port)
//	deny         limit rate 10/minute burst 10 packets log group 100; drop
//
// Sets of a policy: np-tgt{4,6}/<ns>/<name> (local pods it selects),
// np-in<i>-pod{4,6} (pods its ingress rule i's selectors match, cluster-wide),
// np-in<i>-cidr{4,6} (its ipBlocks less their excepts, as one interval set),
// np-in<i>-port{4,6} (address . protocol . port of destination pods for ports
// given by name), and the same with out<i> for egress rules.
//
// Why this shape:
//   - Egress and ingress are two base chains on the forward hook. An accept ends
//     only the base chain it happens in, so a packet between two local pods
//     passes the source's egress chain and then the destination's ingress chain.
//   - Which pods are isolated, and which pods or ports a rule allows, is carried
//     by set and map elements. A pod coming, going or changing labels edits
//     elements only; chains depend on policies alone, so a changed policy
//     rewrites its own chains and its namespace's dispatch chain.
//   - Traffic from the node to its pods (kubelet probes) goes through the output
//     hook and is never filtered; traffic from a pod to its node is allowed too,
//     as Kubernetes documents. hostNetwork pods are not in the model at all.
//   - Replies pass via conntrack before any policy is looked at.
//   - A policy with Err isolates its targets with no rule allowing anything.
//
// Names longer than nftables allows are shortened with a hash; comments carry
// the full namespace/name.
package netpol
