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
//   - Router (router.go): the watch.Backend. Sync plans peers and paths from the
//     model; a goroutine of its own applies best-path events as they arrive
//     (one event, one route operation) and periodically reads the kernel back
//     to restore routes someone removed.
//
// # Graceful restart
//
// A router that starts and finds routes of ours in the kernel was restarted:
// it tells its peers so (the Restart State and Forwarding State bits), and
// keeps those routes until every peer has sent End-of-RIB or the deferral time
// has passed, so that forwarding never stops on either side.
package bgp
