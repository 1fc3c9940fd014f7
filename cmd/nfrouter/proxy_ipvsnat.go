package main

import (
	"github.com/nfrouter/nfrouter/ipvs"
	"github.com/nfrouter/nfrouter/nft"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// ipvsNATPart is what the IPVS proxy needs from the nftables table:
// masquerading, hairpin, the service-address sets and the drop of traffic to
// service addresses on ports no service has.
func ipvsNATPart(w wiring) nftPart {
	return func(t *ruleset.Table) (nft.Part, error) {
		return ipvs.NewNAT(t, ipvs.NATConfig{
			PlanConfig: ipvs.PlanConfig{NodeName: w.nodeName, NodePortBindOnAllIPs: w.o.proxy.nodePortBindOnAllIP,
				NodePortCIDRs: w.o.proxy.nodePortPrefixes},
			MasqueradeAll: w.o.proxy.masqueradeAll,
			ClusterCIDRs:  w.o.proxy.clusterPrefixes,
			HairpinAll:    w.o.proxy.hairpinMode,
			ServiceCIDRs:  w.o.proxy.servicePrefixes,
			Log:           w.log,
		}), nil
	}
}
