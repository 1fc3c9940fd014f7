package main

import (
	"errors"

	"github.com/nfrouter/nfrouter/nft"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// nftablesProxyPart is the nftables service proxy (--service-proxy=nftables).
func nftablesProxyPart(w wiring) nftPart {
	return func(t *ruleset.Table) (nft.Part, error) {
		return nil, errors.New("the nftables service proxy is not in this build yet")
	}
}
