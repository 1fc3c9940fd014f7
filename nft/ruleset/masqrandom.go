package ruleset

import "github.com/google/nftables/expr"

// MasqueradeFullyRandom is Masquerade with a fully random source port, as
// kube-proxy masquerades service traffic: with the kernel's default
// sequential port choice, two connections from different pods to the same
// endpoint may race for one source port, and one of them is lost.
type MasqueradeFullyRandom struct{}

func (MasqueradeFullyRandom) text() string { return "masquerade fully-random" }
func (MasqueradeFullyRandom) compile(c *compiler) {
	c.add(&expr.Masq{FullyRandom: true})
}
