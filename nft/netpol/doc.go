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
//	  icmpv6 type nd-neighbor-solicit accept      (when IPv6 is planned:
//	  icmpv6 type nd-neighbor-advert accept        pods on a bridge, see below)
//	  ip daddr @isolated-in-v4 jump dispatch-in   (pod-egress: saddr, -out-)
//	  ip6 daddr @isolated-in-v6 jump dispatch-in
//	  [--netpol-default-deny] ip saddr @local-cidrs-v4 ip saddr != @local-pods-v4 jump deny
//	pod-egress-output   base chain, hook output, priority filter - 1
//	pod-ingress-output  base chain, hook output, priority filter
//	  the same, without the neighbour-discovery rules, each judging rule
//	  also requiring fib saddr type != local
//	isolated-{in,out}-v{4,6}  local pods some policy isolates in that direction
//	dispatch-in  per namespace with isolating policies:
//	               ip daddr @iso-in4/<ns> jump ns-in/<ns>   (and ip6)
//	             then: jump deny
//	iso-{in,out}{4,6}/<ns>  local pods of <ns> isolated in that direction
//	ns-in/<ns>   for each policy of <ns> with ingress rules, in name order:
//	               ip daddr @<target set> jump np-in/<ns>/<name>   (and ip6)
//	             then: jump deny-in/<ns>
//	np-in/<ns>/<name>  the policy's ingress rules; each accepts (peer ∧ port)
//	deny-in/<ns> limit rate 10/minute burst 10 packets log prefix "nfrouter deny ingress <ns>: " group 100
//	             counter drop
//	deny         the same for pod addresses no namespace chain judged
//	             (--netpol-default-deny), prefix "nfrouter deny: "
//
// Each deny chain's counter is exported as
// nfrouter_firewall_denied_packets_total{namespace,direction}, read from the
// kernel at scrape time; its limit is its own, so one noisy namespace does
// not silence another's log. A rule's counter values are ignored when the
// applier compares what it wrote with what it reads back.
//
// Before the dispatch, each base chain denies TCP packets without SYN on
// the far side of an isolated pod (from an ingress-isolated pod, to an
// egress-isolated one): only conntrack pickups get that far, and one coming
// from the server side would reopen a connection in the direction the
// policies do not judge. When a sync starts denying flows conntrack holds,
// the firewall deletes their entries (nft/conntrack.go), judging each by
// tracing its first packet through the planned table (Judge), so the next
// packet of a denied connection is judged anew and dropped.
//
// Sets are shared between policies: their content is a function of a
// canonical key, so identical selectors, named-port lists and ipBlocks use
// one set (see setSpec):
//
//	pods{4,6}/<ns>/<hash>  pods of <ns> a pod selector matches (a policy's
//	                       targets, or selector peers without a namespace selector)
//	pods{4,6}/<hash>       pods that peers with namespace selectors match
//	ports{4,6}/<name.proto>/…  address . protocol . port of every pod's named ports
//	cidr{4,6}/<hash>       ipBlocks less their excepts, as intervals
//
// Comments say in words what each holds.
//
// # Packet paths
//
// Policies apply to the packet as it reaches the pod: after the service
// proxy chose an endpoint (DNAT), before any masquerade (SNAT). Which hook
// sees that packet depends on the path and the proxy mode:
//
//	path                                          nftables proxy      IPVS proxy
//	pod to pod, same node or other node           forward             forward
//	pod to ClusterIP, endpoint local or remote    forward (DNAT at    output (IPVS takes
//	pod to NodePort / external IP / LB IP           prerouting)         it at input, sends
//	outside to NodePort / LB IP, local endpoint                         it out through output)
//	a reply of any of these                       conntrack: established, accepted first
//	node (kubelet, hostNetwork pods) to a pod     output: never judged (source is local)
//	pod to its own node, any mode                 input: not filtered (allowed, as documented)
//
// On the receiving node of a remote endpoint the packet is plain forwarded
// traffic from the client's address (or the node's, where the proxy
// masqueraded it). The output chains judge only packets whose source is not
// an address of the node (fib saddr type != local), which on output are
// exactly the packets the node forwards on someone else's behalf; the
// node's own traffic passes as it never reaches forward. Both the forward
// and the output chains are installed in both modes: a packet passes one
// or the other, never both, so the cost per new connection is one set
// lookup per family and direction, as before, plus one fib lookup for an
// isolated pod's IPVS traffic.
//
// Why this shape:
//   - Egress and ingress are two base chains on each hook. An accept ends
//     only the base chain it happens in, so a packet between two local pods
//     passes the source's egress chain and then the destination's ingress chain.
//   - Which pods are isolated, and which pods or ports a rule allows, is carried
//     by set elements. A pod coming, going or changing labels edits elements
//     only; chains depend on policies alone, so a changed policy rewrites its
//     own chains, its namespace's chain and, when a namespace gains or loses
//     its first isolating policy, the dispatch chains.
//   - No set element is a jump. The kernel checks the whole table for loops
//     whenever a jump element is added, walking every map element and all it
//     reaches: with a verdict map from each pod to its namespace chain that
//     cost milliseconds per pod at 5,000 pods. The dispatch chains scan the
//     namespaces instead, once per new connection of an isolated pod.
//   - Few sets: the kernel finds a set by name by walking the table's list of
//     sets, for every message that names one.
//   - A shared set may hold more than one policy needs (a target set holds
//     remote pods too, a named-port set every pod's ports); the rest of the
//     rule narrows it: dispatch is only for local pods, and a named port is
//     matched together with the rule's peer or the policy's target.
//   - Traffic from the node to its pods (kubelet probes) goes through the output
//     hook and is never filtered; traffic from a pod to its node is allowed too,
//     as Kubernetes documents. hostNetwork pods are not in the model at all.
//   - Replies pass via conntrack before any policy is looked at.
//   - IPv6 neighbour discovery is always accepted. Routed pods only ever
//     solicit the node, but pods on a bridge solicit each other, and with
//     br_netfilter those messages pass the forward hook untracked (conntrack
//     leaves NS/NA alone), so the conntrack rule cannot let them through; an
//     isolated pod whose neighbour confirmation is dropped loses connections
//     its policies allow.
//   - A policy with Err isolates its targets with no rule allowing anything.
//
// Names longer than nftables allows are shortened with a hash; comments carry
// the full namespace/name.
package netpol
