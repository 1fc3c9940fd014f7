package bgp

import (
	"fmt"
	"net/netip"

	api "github.com/osrg/gobgp/v3/api"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

var (
	familyV4 = &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST}
	familyV6 = &api.Family{Afi: api.Family_AFI_IP6, Safi: api.Family_SAFI_UNICAST}
)

func familyOf(a netip.Addr) *api.Family {
	if a.Is4() {
		return familyV4
	}
	return familyV6
}

// apiPath builds the gobgp path that originates prefix with nextHop: IPv4
// with a NEXT_HOP attribute, IPv6 with MP_REACH_NLRI.
func apiPath(prefix netip.Prefix, nextHop netip.Addr) (*api.Path, error) {
	nlri, err := anypb.New(&api.IPAddressPrefix{Prefix: prefix.Addr().String(), PrefixLen: uint32(prefix.Bits())})
	if err != nil {
		return nil, fmt.Errorf("encode prefix %s: %w", prefix, err)
	}
	attrs := []proto.Message{&api.OriginAttribute{Origin: 0}}
	if prefix.Addr().Is4() {
		attrs = append(attrs, &api.NextHopAttribute{NextHop: nextHop.String()})
	} else {
		attrs = append(attrs, &api.MpReachNLRIAttribute{Family: familyV6, NextHops: []string{nextHop.String()}, Nlris: []*anypb.Any{nlri}})
	}
	pattrs := make([]*anypb.Any, 0, len(attrs))
	for _, a := range attrs {
		any, err := anypb.New(a)
		if err != nil {
			return nil, fmt.Errorf("encode attribute of %s: %w", prefix, err)
		}
		pattrs = append(pattrs, any)
	}
	return &api.Path{Family: familyOf(prefix.Addr()), Nlri: nlri, Pattrs: pattrs}, nil
}

// bestPathFrom decodes a path of a best-path event.
func bestPathFrom(p *api.Path) (BestPath, error) {
	var nlri api.IPAddressPrefix
	if err := p.GetNlri().UnmarshalTo(&nlri); err != nil {
		return BestPath{}, fmt.Errorf("decode path: not an IP prefix: %w", err)
	}
	addr, err := netip.ParseAddr(nlri.Prefix)
	if err != nil {
		return BestPath{}, fmt.Errorf("decode path: %w", err)
	}
	prefix, err := addr.Prefix(int(nlri.PrefixLen))
	if err != nil {
		return BestPath{}, fmt.Errorf("decode path: %w", err)
	}
	out := BestPath{Prefix: prefix, Withdraw: p.IsWithdraw}
	// gobgp names the source of our own paths "<nil>": Peer stays invalid.
	out.Peer, _ = netip.ParseAddr(p.NeighborIp)
	for _, a := range p.Pattrs {
		var nh api.NextHopAttribute
		var mp api.MpReachNLRIAttribute
		switch {
		case a.MessageIs(&nh):
			if err := a.UnmarshalTo(&nh); err == nil {
				out.NextHop, _ = netip.ParseAddr(nh.NextHop)
			}
		case a.MessageIs(&mp):
			if err := a.UnmarshalTo(&mp); err == nil && len(mp.NextHops) > 0 {
				out.NextHop, _ = netip.ParseAddr(mp.NextHops[0])
			}
		}
	}
	out.NextHop = out.NextHop.Unmap()
	return out, nil
}
