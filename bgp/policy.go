package bgp

import (
	"context"
	"fmt"
	"net/netip"

	api "github.com/osrg/gobgp/v3/api"
	"github.com/osrg/gobgp/v3/pkg/server"
)

// Names of the gobgp policy objects the speaker owns.
const (
	setExternalPeers   = "nfr-external-peers"
	setClusterPrefixes = "nfr-cluster-prefixes"
	// setClusterPrefixes6 holds the IPv6 ones: a gobgp prefix set holds
	// one family ("multiple families" otherwise).
	setClusterPrefixes6 = "nfr-cluster-prefixes6"
	policyImport        = "nfr-import"
	policyExport        = "nfr-export"
)

// sentinel keeps our defined sets from ever being empty; sentinel6 is the
// IPv6 prefix set's.
var (
	sentinel  = netip.IPv4Unspecified()
	sentinel6 = netip.IPv6Unspecified()
)

// installPolicies sets up, once per server:
//   - import: a path from an external router for a cluster prefix (any node's
//     pod CIDR, any service VIP, or a more specific prefix of one) is
//     rejected, so that it never competes with the nodes' own paths in best
//     path selection (an eBGP path would win over the iBGP one);
//   - export: external routers get only the paths this node originates, never
//     what it learned from nodes or other routers.
//
// The defined sets are edited element by element as peers and prefixes come
// and go. Each holds a sentinel that matches nothing real (0.0.0.0/32,
// ::/128), because gobgp treats an empty neighbor set as matching every
// neighbor. Cluster prefixes are in two sets, one per family: a gobgp prefix
// set holds one family, and matches no path of the other.
func installPolicies(ctx context.Context, s *server.BgpServer) error {
	sets := []*api.DefinedSet{externalPeerSet([]netip.Addr{sentinel})}
	sets = append(sets, clusterPrefixSets([]netip.Prefix{netip.PrefixFrom(sentinel, 32), netip.PrefixFrom(sentinel6, 128)})...)
	for _, ds := range sets {
		if err := s.AddDefinedSet(ctx, &api.AddDefinedSetRequest{DefinedSet: ds}); err != nil {
			return fmt.Errorf("add defined set %s: %w", ds.Name, err)
		}
	}
	fromExternal := &api.MatchSet{Type: api.MatchSet_ANY, Name: setExternalPeers}
	reject := &api.Actions{RouteAction: api.RouteAction_REJECT}
	policies := []struct {
		dir    api.PolicyDirection
		policy *api.Policy
	}{
		{api.PolicyDirection_IMPORT, &api.Policy{Name: policyImport, Statements: []*api.Statement{
			{
				Name:       policyImport + "-cluster-prefixes",
				Conditions: &api.Conditions{NeighborSet: fromExternal, PrefixSet: &api.MatchSet{Type: api.MatchSet_ANY, Name: setClusterPrefixes}},
				Actions:    reject,
			},
			{
				Name:       policyImport + "-cluster-prefixes6",
				Conditions: &api.Conditions{NeighborSet: fromExternal, PrefixSet: &api.MatchSet{Type: api.MatchSet_ANY, Name: setClusterPrefixes6}},
				Actions:    reject,
			},
		}}},
		{api.PolicyDirection_EXPORT, &api.Policy{Name: policyExport, Statements: []*api.Statement{
			{Name: policyExport + "-internal", Conditions: &api.Conditions{NeighborSet: fromExternal, RouteType: api.Conditions_ROUTE_TYPE_INTERNAL}, Actions: reject},
			{Name: policyExport + "-external", Conditions: &api.Conditions{NeighborSet: fromExternal, RouteType: api.Conditions_ROUTE_TYPE_EXTERNAL}, Actions: reject},
		}}},
	}
	for _, p := range policies {
		if err := s.AddPolicy(ctx, &api.AddPolicyRequest{Policy: p.policy, ReferExistingStatements: false}); err != nil {
			return fmt.Errorf("add policy %s: %w", p.policy.Name, err)
		}
		err := s.AddPolicyAssignment(ctx, &api.AddPolicyAssignmentRequest{Assignment: &api.PolicyAssignment{
			Name: "global", Direction: p.dir, Policies: []*api.Policy{{Name: p.policy.Name}}, DefaultAction: api.RouteAction_ACCEPT,
		}})
		if err != nil {
			return fmt.Errorf("assign policy %s: %w", p.policy.Name, err)
		}
	}
	return nil
}

// editDefinedSet adds and removes elements of one of our defined sets.
func editDefinedSet(ctx context.Context, s *server.BgpServer, set *api.DefinedSet, add bool) error {
	if len(set.List) == 0 && len(set.Prefixes) == 0 {
		return nil
	}
	if add {
		if err := s.AddDefinedSet(ctx, &api.AddDefinedSetRequest{DefinedSet: set}); err != nil {
			return fmt.Errorf("add to defined set %s: %w", set.Name, err)
		}
		return nil
	}
	if err := s.DeleteDefinedSet(ctx, &api.DeleteDefinedSetRequest{DefinedSet: set, All: false}); err != nil {
		return fmt.Errorf("remove from defined set %s: %w", set.Name, err)
	}
	return nil
}

// clusterPrefixSets returns the IPv4 and the IPv6 cluster prefix set with
// prefixes, each of its family.
func clusterPrefixSets(prefixes []netip.Prefix) []*api.DefinedSet {
	v4 := &api.DefinedSet{DefinedType: api.DefinedType_PREFIX, Name: setClusterPrefixes}
	v6 := &api.DefinedSet{DefinedType: api.DefinedType_PREFIX, Name: setClusterPrefixes6}
	for _, p := range prefixes {
		ds := v4
		if p.Addr().Is6() {
			ds = v6
		}
		ds.Prefixes = append(ds.Prefixes, &api.Prefix{IpPrefix: p.String(), MaskLengthMin: uint32(p.Bits()), MaskLengthMax: uint32(p.Addr().BitLen())})
	}
	return []*api.DefinedSet{v4, v6}
}

func externalPeerSet(addrs []netip.Addr) *api.DefinedSet {
	ds := &api.DefinedSet{DefinedType: api.DefinedType_NEIGHBOR, Name: setExternalPeers}
	for _, a := range addrs {
		ds.List = append(ds.List, netip.PrefixFrom(a, a.BitLen()).String())
	}
	return ds
}
