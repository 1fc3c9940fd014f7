package ruleset

import "slices"

// Hook makes a chain a base chain of the forward, input or output hook.
type Hook struct {
	Hook     string // "forward", "input", "output", "prerouting", "postrouting"
	Type     string // "filter", "nat"
	Priority int32
	Drop     bool // policy drop instead of accept
}

// Equal reports whether two hooks are the same; nil (a regular chain) equals
// only nil.
func (h *Hook) Equal(o *Hook) bool {
	if h == nil || o == nil {
		return h == o
	}
	return *h == *o
}

// Chain is a chain and its rules, in order.
type Chain struct {
	Name    string
	Comment string
	Base    *Hook // nil for a regular chain
	Rules   []Rule
}

// Equal reports whether two chains would be programmed the same.
func (c *Chain) Equal(o *Chain) bool {
	if c == nil || o == nil {
		return c == o
	}
	if c.Name != o.Name || c.Comment != o.Comment || !c.Base.Equal(o.Base) {
		return false
	}
	return slices.EqualFunc(c.Rules, o.Rules, func(a, b Rule) bool { return a.Text() == b.Text() })
}
