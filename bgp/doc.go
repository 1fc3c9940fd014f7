// Package bgp routes pod networks between nodes the way kube-router does, with
// an embedded gobgp v3 server instead of a separate daemon and netlink instead
// of the ip command.
//
// # Layers
//
//   - Planners (pure, tested without root): peers.go turns Node objects,
//     annotations and flags into the set of BGP sessions; adverts.go turns this
//     node's pod CIDRs and the services into the paths we originate, counted
//     per source so that one changed service adds or withdraws one path;
//     routes.go turns one best path into one kernel route (direct via the peer
//     on a shared subnet, else through an ipip tunnel, else nothing).
//   - Speaker (speaker.go, policy.go, pathcodec.go): the gobgp server. Peers are
//     added, updated and deleted one by one, so unchanged sessions never reset.
//     Import and export policies keep routes learned from external routers
//     away from cluster prefixes, and keep routes learned from nodes away from
//     external routers.
//   - Kernel (kernel.go): the only code that touches netlink. Every route we
//     install carries RouteProtocol, and only routes with that protocol are
//     ever listed, replaced or deleted; tunnels carry the TunnelPrefix name.
//     One exception, for nodes switching from kube-router: a route of
//     kube-router's protocol (0x11) for a prefix we route is replaced by ours
//     in place, and kube-router's ipip tunnel to the same node (tun-<hash>)
//     gives way to ours. cleanup.go removes what is left of either.
//   - Router (router.go): the watch.Backend. Sync plans peers and paths from the
//     model; a goroutine of its own applies best-path events as they arrive
//     (one event, one route operation) and periodically reads the kernel back
//     to restore routes someone removed.
//
// # Dual stack
//
// Two nodes peer once per family both have an internal address of (the
// first of each family on the Node object): an IPv4 session between their
// IPv4 addresses carries IPv4 unicast, an IPv6 session between their IPv6
// addresses carries IPv6 unicast, as kube-router does it. We chose that over
// one session carrying both AFI/SAFIs because with gobgp v3 it needs nothing
// special and fails per family: each session proves that its family gets
// through between the two nodes, and its peer is the gateway of the routes
// it brings; a node gaining or losing an address of one family never resets
// the other family's session (gobgp resets a session whose AFI/SAFIs
// change); gobgp sends a family only on sessions that negotiated it, and
// has no collision detection across neighbors, so two sessions between the
// same router IDs are fine.
//
// A path carries the node's address of its prefix's family as next hop:
// NEXT_HOP for IPv4, MP_REACH_NLRI for IPv6. gobgp keeps the explicit next
// hop of a local path on iBGP and eBGP sessions alike (UpdatePathAttrs in
// internal/pkg/table/path.go). A prefix of a family the node has no address
// of is not advertised and is reported (NoNextHop).
//
// An external router is peered once per configured address; the session
// offers the family of that address and every family the node has an
// address of, and capability negotiation keeps what the router is
// configured for: a router with one session gets both families over it, a
// router peered once per family gets each on its own.
//
// Learned IPv6 prefixes are routed like IPv4 ones (RouteProtocol), via the
// peer's IPv6 address on a shared subnet. The overlay is ipip and IPv4
// only: an IPv6 path from a node on another subnet gets no route, with one
// log line per prefix (ip6ip6 tunnels are not done).
//
// gobgp's prefix sets hold one family each, so the import policy's cluster
// prefixes are two sets, one per family.
//
// # Graceful restart
//
// A router that starts and finds routes of ours in the kernel was restarted:
// it tells its peers so (the Restart State and Forwarding State bits), and
// keeps those routes until every peer has sent End-of-RIB or the deferral time
// has passed, so that forwarding never stops on either side.
package bgp
