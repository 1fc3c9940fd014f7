package ipvs

import (
	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// Hairpin: a pod that reaches itself through a service address would get
// its own packet with its own source and answer itself directly, which the
// connection it opened does not expect. Masquerading such a connection (the
// source is a local endpoint, and so is the destination IPVS chose) makes
// the pod answer the node. The set holds endpoint . endpoint pairs.
//
// Waiting for ruleset's address-pair key type: until then no hairpin
// objects are planned.

func hairpinSets(v6 bool) []ruleset.Set { return nil }

func hairpinRules(v6 bool) []ruleset.Rule { return nil }

func hairpinElems(vs *VirtualService, eps model.Endpoints, nodeName string) []natElem { return nil }
