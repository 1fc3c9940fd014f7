package bgp

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/nfrouter/nfrouter/model"
)

// PeerSpec is one BGP session as this node wants it. Two equal specs mean the
// session is left alone.
type PeerSpec struct {
	Addr     netip.Addr
	ASN      uint32
	Port     uint16
	Password string
	// Node names the peer when it is a node of the cluster; "" for an external
	// router.
	Node string
	// RRClusterID is set when the peer is our route-reflector client.
	RRClusterID string
	// MultihopTTL is set (> 1) for eBGP sessions to routers several hops away.
	MultihopTTL uint8
	// Passive means we never dial the peer and wait for it to connect. Of
	// two nodes, the one with the lower address dials: when both dial, a
	// restarted node and its peers can take turns refusing each other's
	// connections (gobgp closes connections it accepts while idle, and it
	// idles five seconds after every failed attempt) for a minute or more.
	// Calico's BIRD node mesh is one-way ("passive on") for the same reason.
	Passive bool
	// Families are the AFI/SAFIs the session carries: a session between
	// nodes carries the family of its addresses; a session to an external
	// router carries that, and every family this node has an address of (to
	// be the next hop of that family's paths).
	Families Families
}

// External reports whether the peer is a router outside the cluster.
func (p PeerSpec) External() bool { return p.Node == "" }

// PeerPlan is the local speaker's identity and its sessions.
type PeerPlan struct {
	LocalASN uint32
	RouterID netip.Addr
	// Local are this node's addresses per family: the next hops of the paths
	// it originates.
	Local FamilyAddrs
	Peers map[netip.Addr]PeerSpec
	// NodeAddrs maps the addresses (of both families) of every other node to
	// its name, whether peered or not; the route planner tunnels only to
	// nodes.
	NodeAddrs map[netip.Addr]string
	Problems  []Problem
}

// PlanPeers decides the sessions of node cfg.NodeName:
//   - a route-reflector client peers only with the route-reflector servers;
//   - a server peers with the other servers and, as their reflector, with its
//     clients;
//   - with --nodes-full-mesh, every other node that is not a client and has
//     the same ASN (kube-router.io/node.asn, else the cluster ASN) is a peer;
//   - external routers from the flags and from this node's kube-router.io/peers
//     annotation (which wins for the same address);
//   - with DisableIBGP, no node at all: only the external routers.
//
// Two nodes peer once per family both have an address of (AddrsOf): a
// dual-stack pair has an IPv4 session between their IPv4 addresses and an
// IPv6 session between their IPv6 addresses.
//
// Only this node's malformed annotations are reported (every node reports its
// own); a malformed annotation of another node makes it count as unannotated.
func PlanPeers(cfg *Config, nodes model.Map[string, *model.Node]) (PeerPlan, error) {
	local := nodes.Get(cfg.NodeName)
	if local == nil {
		return PeerPlan{}, fmt.Errorf("plan peers: node %s not known yet", cfg.NodeName)
	}
	plan := PeerPlan{Peers: map[netip.Addr]PeerSpec{}, NodeAddrs: map[netip.Addr]string{}}
	plan.Local = AddrsOf(local)
	primary := plan.Local.Primary()
	if !primary.IsValid() {
		return PeerPlan{}, fmt.Errorf("plan peers: node %s has no address", cfg.NodeName)
	}
	plan.RouterID = cfg.RouterID
	if !plan.RouterID.IsValid() {
		if !primary.Is4() {
			return PeerPlan{}, fmt.Errorf("plan peers: node %s has no IPv4 address for a router ID; set --router-id", cfg.NodeName)
		}
		plan.RouterID = primary
	}
	ls, problems := parseNodeSettings(local)
	plan.Problems = problems
	plan.LocalASN = cfg.ClusterASN
	if ls.asn != 0 {
		plan.LocalASN = ls.asn
	}
	localServer, localClient := ls.rrServer != "", ls.rrClient != "" && ls.rrServer == ""

	names := slices.Sorted(nodes.Keys())
	for _, name := range names {
		if name == cfg.NodeName {
			continue
		}
		n := nodes.Get(name)
		addrs := AddrsOf(n)
		for _, addr := range addrs.List() {
			if !plan.Local.Has(addr) {
				plan.NodeAddrs[addr] = name
			}
		}
		if cfg.DisableIBGP {
			continue
		}
		other, _ := parseNodeSettings(n)
		asn := cfg.ClusterASN
		if other.asn != 0 {
			asn = other.asn
		}
		server, client := other.rrServer != "", other.rrClient != "" && other.rrServer == ""
		var rrClusterID string
		switch {
		case localClient:
			if !server {
				continue
			}
		case client:
			if !localServer {
				continue
			}
			rrClusterID = ls.rrServer
		case localServer && server:
		case cfg.NodesFullMesh && asn == plan.LocalASN:
		default:
			continue
		}
		for _, addr := range addrs.List() {
			from := plan.Local.For(addr)
			if !from.IsValid() || from == addr {
				continue // we have no address of this family
			}
			plan.Peers[addr] = PeerSpec{Addr: addr, ASN: asn, Port: cfg.Port, Node: name, RRClusterID: rrClusterID,
				Passive: from.Compare(addr) > 0, Families: familiesOf(addr)}
		}
	}

	external := slices.Clone(cfg.PeerRouters)
	external = append(external, ls.peers...) // later entries win
	for _, p := range external {
		if _, isNode := plan.NodeAddrs[p.Addr]; isNode || plan.Local.Has(p.Addr) {
			plan.Problems = append(plan.Problems, Problem{Node: cfg.NodeName, Reason: "InvalidPeer",
				Message: fmt.Sprintf("external peer %s ignored: it is a node's address", p.Addr)})
			continue
		}
		spec := PeerSpec{Addr: p.Addr, ASN: p.ASN, Port: p.Port, Password: p.Password, Families: familiesOf(p.Addr) | plan.Local.Families()}
		if spec.Port == 0 {
			spec.Port = DefaultPort
		}
		if p.ASN != plan.LocalASN && cfg.MultihopTTL > 1 {
			spec.MultihopTTL = cfg.MultihopTTL
		}
		plan.Peers[p.Addr] = spec
	}
	return plan, nil
}
