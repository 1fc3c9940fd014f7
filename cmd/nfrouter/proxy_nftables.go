package main

import (
	"fmt"

	"github.com/nfrouter/nfrouter/nft"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// nftablesProxyPart is the nftables service proxy (--service-proxy=nftables).
func nftablesProxyPart(w wiring) nftPart {
	return func(t *ruleset.Table) (nft.Part, error) {
		cfg := nft.ServiceProxyConfig{
			NodeName:             w.nodeName,
			NodePortBindOnAllIPs: w.o.proxy.nodePortBindOnAllIP,
			NodePortCIDRs:        w.o.proxy.nodePortPrefixes,
			MasqueradeAll:        w.o.proxy.masqueradeAll,
			ClusterCIDRs:         w.o.proxy.clusterPrefixes,
			ServiceCIDRs:         w.o.proxy.servicePrefixes,
			Logger:               w.log,
			Registerer:           w.reg,
			Events:               w.events,
		}
		p, err := nft.NewServiceProxy(t, cfg)
		if err != nil {
			return nil, fmt.Errorf("--service-proxy=nftables: %w", err)
		}
		return p, nil
	}
}
