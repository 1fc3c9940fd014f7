// Package svcproxy plans the nftables service proxy: it turns the model's
// service ports, endpoints and nodes into the chains, sets and maps of
// nfrouter's table (package ruleset), and keeps them up to date
// incrementally. It never touches the kernel.
//
// # Ruleset layout
//
// All objects live in `table inet nfrouter`, next to the firewall's; every
// name starts with "service". A service address is one (address, protocol,
// port): a cluster IP, external IP or load-balancer IP on the service port,
// or a NodePort address of this node on the NodePort.
//
//	services-nat-prerouting  nat prerouting, dstnat:
//	               ip saddr @service-cluster-cidrs-v4 jump services-internal
//	               jump services
//	services-nat-output      nat output, -100:
//	               ip daddr . meta l4proto . th dport @service-external-local-ips-v4 meta mark set meta mark | 0x4000
//	               jump services-internal
//	               jump services
//	services-internal  in-cluster clients of external addresses of traffic
//	               policy Local go to any endpoint (kube-proxy's short-circuit),
//	               for n in 1..16 and every larger count in use:
//	               and every protocol <p> (tcp, udp, sctp):
//	               ip daddr . meta l4proto . <p> dport @services-internal-with-<n>-endpoints-v4
//	                 dnat ip to ip daddr . meta l4proto . <p> dport . numgen random mod <n> map @service-internal-endpoints-<p>-v4
//	services     ip daddr . meta l4proto . th dport @service-ips-v4
//	               ip saddr != @service-cluster-cidrs-v4 meta mark set meta mark | 0x4000
//	             ip daddr . meta l4proto . th dport @service-external-ips-v4
//	               meta mark set meta mark | 0x4000
//	             jump services-sticky
//	             for n in 1..16 and every larger count in use, and every protocol <p>:
//	               ip daddr . meta l4proto . <p> dport @services-with-<n>-endpoints-v4
//	                 dnat ip to ip daddr . meta l4proto . <p> dport . numgen random mod <n> map @service-endpoints-<p>-v4
//	             (and the same for IPv6 with ip6 and -v6)
//	service-endpoints-<p>-v4  map, typeof ip daddr . meta l4proto . th dport . numgen random mod 1
//	                      : ip daddr . <p> dport — slot i of each service address to its
//	                      i-th endpoint (endpoints sorted by address and port); one per
//	                      protocol, since nft 1.0.6 cannot check a dnat rule against a
//	                      map from the kernel whose data is typeof th dport, and an
//	                      operator must be able to reload the listing
//	services-without-endpoints-v4  rejected by services-filter-{input,forward,output}
//	                      (filter, priority filter - 10) with an ICMP port-unreachable
//	services-without-local-endpoints-v4  policy Local addresses whose endpoints are
//	                      all elsewhere: dropped there (clients outside the cluster)
//	services-filter-{forward,output} also, after DNAT (so only what no
//	                      service port translated):
//	               ip daddr @service-cluster-ips-v4 reject      a cluster IP, a port no service has
//	               ip daddr @service-cidrs-v4 drop              --service-cluster-ip-range, no service
//	services-nat-postrouting  nat postrouting, srcnat:
//	               jump services-remember
//	               meta mark & 0x4000 == 0x4000 meta mark set meta mark ^ 0x4000 masquerade fully-random
//	               ct status dnat ip saddr . ip daddr @service-hairpin-v4 masquerade fully-random
//	service-hairpin-v4  local endpoint . itself: a pod that reached itself
//	services-nat-input   nat input, 100: jump services-remember
//
// loadBalancerSourceRanges, per restricted load-balancer IP, before DNAT
// (filter prerouting and output, priority -110, as kube-proxy):
//
//	services-firewall-prerouting, services-firewall-output:
//	      ip daddr <lb ip> tcp dport <port> ip saddr != @service-lb-sources-v4/<ns>/<name>/<proto>[/<port>] drop
//	service-lb-sources-v4/…  interval set of the allowed clients (the
//	      ranges of the family; empty, everyone dropped, when the service
//	      lists ranges of the other family only)
//
// Session affinity (ClientIP), per service port, family and timeout:
//
//	service-affinity-v4/<ns>/<name>/<proto>[/<port>]/<timeout>s
//	      dynamic map client address : endpoint address, size 65535,
//	      flags dynamic,timeout, timeout <timeout>
//	service-affinity-endpoints-v4/…  endpoint address . protocol . port
//	services-sticky    per sticky service address:
//	      ip daddr <vip> tcp dport <port> dnat ip to ip saddr map @<affinity map>:<target port>
//	services-remember  per affinity map:
//	      ct status dnat ip daddr . meta l4proto . th dport @<endpoints> update @<affinity map> { ip saddr : ip daddr }
//
// Why this shape:
//   - No chain per service or per endpoint, and no verdict map. Measured on
//     kernel 6.18: with 10,000 service chains and a jump map the kernel
//     re-validates the chain graph on every rule or jump element that is
//     added (~10 ms per DNAT rule). Here endpoints live in map elements, and
//     services are grouped by endpoint count: a service whose endpoints come
//     and go moves between class sets and its slots are rewritten, all
//     element messages; no rule or chain is touched while the count stays
//     within the precreated classes 1–16 (a larger count adds its class
//     rule once, and removes it with the last service of that count).
//   - Slots follow the sorted endpoints, so that the layout is a function of
//     the model (incremental planning equals a fresh plan). Re-laying a
//     service's slots costs at most twice its endpoints in elements, in the
//     same two messages per set as any change.
//   - A connection that exists keeps its endpoint (conntrack); new
//     connections are spread by numgen random.
//   - Session affinity remembers the endpoint address per client in a
//     dynamic map, refreshed by every new connection that reaches one of
//     the service's endpoints (in nat postrouting and input, where the
//     translated destination is known). The sticky DNAT needs the endpoints'
//     one target port; when they differ, the service is balanced without
//     affinity and the problem is reported. When an endpoint goes, the
//     planner names the map in TakeStale, and the caller deletes, once the
//     kernel holds the change, the entries whose endpoint the map's
//     addresses no longer have (nft/servicestale.go); on every full sync it
//     checks every map, so a failed transaction or a restart leaves no
//     client pinned. Nothing is flushed: the other clients keep their
//     endpoint. Checking the remembered endpoint against the endpoint set
//     in the sticky rule itself would need `ip saddr map @m @set`, which
//     the kernel runs but nft 1.0.6 cannot parse back ("Relational
//     expression has constant value"), so the listing would not reload. Only
//     affinity services have rules of their own (one per address in
//     services-sticky, one per map in services-remember), and those change
//     only when the service, its target port or its addresses change.
//     IPv6 affinity stores addresses only because nft 1.0.6 cannot generate
//     an `update` with an IPv6 address . port as data (assertion failure),
//     so the listing would not parse back; IPv4 does the same for symmetry.
//   - Masquerading: connections from outside the cluster CIDRs
//     (--cluster-cidr, else every node's pod CIDRs) or all
//     (--masquerade-all) are marked before DNAT and masqueraded in
//     postrouting. External addresses (NodePorts, external and
//     load-balancer IPs) of services with external traffic policy Cluster
//     mark every connection, pods' too, as kube-proxy does: the endpoint
//     may be on a third node, and its reply must come back through the
//     node that translated the connection (a pod on node A reaching node
//     B's NodePort served by a pod on node C). External addresses of
//     policy Local are never marked, so that the client's address reaches
//     the pod. Hairpin connections (a pod reaching itself) are masqueraded
//     after DNAT through the endpoint . endpoint set.
//   - NodePorts are served on this node's addresses from the Node object:
//     its node IP per family, or every listed address with
//     --nodeport-bindon-all-ip, or those within --nodeport-addresses, as
//     the IPVS mode does; not on 127.0.0.1
//     (kube-proxy's nftables mode does not serve localhost either, and it
//     would need route_localnet).
//   - Traffic policies Local keep only this node's endpoints; an address
//     left without any endpoint is rejected, one whose endpoints are all on
//     other nodes is dropped (external policy Local), as kube-proxy does,
//     rather than left to the routing table. Pods and the node itself
//     reaching an external address of policy Local are sent to any
//     endpoint instead (services-internal), as kube-proxy does: their
//     connection is translated on their own node. They get no session
//     affinity there. kube-router's service.local annotation keeps local
//     endpoints only, for every client.
//   - UDP and SCTP flows stay in conntrack while their client sends, so
//     TakeStale also says when an address of those protocols lost an
//     endpoint, got its first, or went, and FlowTargets lists every such
//     address with its endpoints now: the caller deletes the conntrack
//     entries no current endpoint answers (package nft/conntrack).
//   - Topology-aware routing picks which endpoints this node uses for
//     traffic of policy Cluster (model.Endpoints.ClusterServing: the
//     EndpointSlices' hints for this node or its zone, by kube-proxy's
//     rules); it changes the elements an address has, never a rule.
//     Policy Local takes precedence; the in-cluster endpoints of policy
//     Local addresses (services-internal) follow topology, as kube-proxy's
//     cluster endpoints do.
//   - Addresses no one claims twice: when two service ports want one
//     address, the smaller key owns it, whatever the order they came in,
//     and the other reports an AddressConflict.
//   - A family's objects exist while some service address of it does.
package svcproxy
