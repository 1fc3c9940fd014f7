// Package ipvs is nfrouter's IPVS service proxy: one IPVS virtual service per
// (address, protocol, port) of every ClusterIP, NodePort, external IP and
// load-balancer IP, its destinations from the service's endpoints, and the
// virtual addresses on a dummy interface of our own, all through netlink
// (github.com/cloudflare/ipvs for IPVS, github.com/vishvananda/netlink for the
// interface and its addresses).
//
// # Layers
//
//   - planner (plan.go, planner.go, endpoints.go, sched.go): pure. It turns
//     model service ports, endpoints and this node into desired
//     VirtualServices, incrementally: only the service ports named in
//     model.Changes are re-planned, and the result lists the virtual services
//     whose desired state changed.
//   - NAT part (nat.go, nat_rules.go, nat_hairpin.go): pure. The nftables
//     helpers (service-address sets, masquerade, hairpin, drop of ports no
//     service has and, with --service-cluster-ip-range, of unallocated
//     service addresses) as a part of nft's one table and transaction.
//
// Destinations of traffic policy Cluster are the endpoints topology-aware
// routing picks for this node (model.Endpoints.ClusterServing), as in the
// nftables mode. What IPVS cannot express: one virtual service has one
// destination list whatever the client, so the in-cluster short-circuit of
// external traffic policy Local (pods reaching any endpoint) is not there.
//   - applier (applier.go, drain.go, readback.go): the only code that writes
//     to the kernel. It keeps what it programmed, so that an incremental sync
//     touches only the changed virtual services and never lists IPVS; a full
//     sync lists IPVS and our interface and repairs drift.
//   - Proxy (proxy.go, stale.go): the watch.Backend, with metrics and
//     Events, and the conntrack pass after each sync.
//   - Cleanup (cleanup.go): removes the services we own and kube-dummy-if,
//     for `nfrouter cleanup`, by the ownership rule below.
//
// # Kernel quirks
//
//   - IPVS refuses a service without a netmask (EINVAL); it is also the
//     persistence granularity, so it is /32 or /128.
//   - IPVS refuses real servers (EINVAL) while lo is down in the namespace.
//   - The kernel adds IP_VS_SVC_F_HASHED to every service's flags; it is
//     masked before comparing flags read back.
//   - A missing service is ESRCH, a missing destination ENOENT, an existing
//     one EEXIST; the applier treats "already there" on create and "already
//     gone" on delete as success, so that its operations are idempotent.
//   - IPVS speaks only one family per service in masquerade mode: a
//     destination of the other family is never planned.
//   - Addresses on the dummy interface get the local route IPVS needs; IPv4
//     ones are added with link scope (as kube-router does) so that the kernel
//     never picks a VIP as the source of the node's own traffic, IPv6 ones
//     with IFA_F_NODAD so that they are usable at once. The kernel's own
//     link-local IPv6 address on the interface is never touched.
//   - Graceful termination: a TCP destination that is no longer wanted gets
//     weight 0 (no new connections) and is deleted once IPVS counts no active
//     or inactive connections to it, or when its grace period ends. UDP and
//     SCTP destinations are deleted at once, as kube-proxy does: their flows
//     do not end while the client sends. After the sync, the proxy deletes
//     the conntrack entries of UDP and SCTP flows to its virtual services
//     that no current destination answers (stale.go, package nft/conntrack),
//     so that such a client reaches a new destination with its next
//     datagram; a failed pass is counted and tried again after the next
//     sync, and every full sync makes one.
//   - Session affinity is IPVS persistence; with expire_quiescent_template
//     the templates of a weight-0 (removed) destination end, so its clients
//     choose again at once while other clients keep theirs.
//   - With NAT (masquerade) forwarding, IPVS must tell conntrack about its
//     connections for nftables NAT and filtering to see them: the proxy sets
//     net.ipv4.vs.conntrack=1 (and expire_nodest_conn, expire_quiescent_template,
//     so that connections to deleted or weight-0 destinations end) by writing
//     /proc/sys, in the network namespace it was created in.
//
// # Ownership
//
// The interface kube-dummy-if and all its addresses (except link-local ones)
// belong to nfrouter. An IPVS service belongs to nfrouter when nfrouter
// programmed it, when its address is on kube-dummy-if, or when it is a NodePort
// (a port in the NodePort range on an address nfrouter binds NodePorts on);
// other IPVS services are never changed.
package ipvs
