package netpol

import "github.com/nfrouter/nfrouter/nft/ruleset"

// ownedNames are the names of the chains and sets one planner wrote.
type ownedNames struct {
	chains, sets map[string]struct{}
}

func (p *Planner) putChain(c *ruleset.Chain) {
	if p.owned.chains == nil {
		p.owned.chains = map[string]struct{}{}
	}
	p.owned.chains[c.Name] = struct{}{}
	p.t.PutChain(c)
}

func (p *Planner) putSet(s ruleset.Set) {
	if p.owned.sets == nil {
		p.owned.sets = map[string]struct{}{}
	}
	p.owned.sets[s.Name] = struct{}{}
	p.t.PutSet(s)
}

func (p *Planner) deleteChain(name string) {
	delete(p.owned.chains, name)
	p.t.DeleteChain(name)
}

func (p *Planner) deleteSet(name string) {
	delete(p.owned.sets, name)
	p.t.DeleteSet(name)
}
