package main

import (
	"github.com/nfrouter/nfrouter/nft"
	"github.com/nfrouter/nfrouter/nft/egress"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// podEgressPart masquerades pod traffic leaving the cluster's pod CIDRs
// (--enable-pod-egress).
func podEgressPart() nftPart {
	return func(t *ruleset.Table) (nft.Part, error) { return egress.New(t), nil }
}
