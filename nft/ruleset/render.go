package ruleset

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Render writes the table in the syntax `nft list table` prints and `nft -f`
// reads: sets and maps by name, then base chains and regular chains by name.
// Elements are sorted, so the output is canonical.
func Render(w io.Writer, t *Table) error {
	var b strings.Builder
	fmt.Fprintf(&b, "table %s %s {\n", t.Family, t.Name)
	first := true
	sep := func() {
		if !first {
			b.WriteString("\n")
		}
		first = false
	}
	for _, name := range slices.Sorted(maps.Keys(t.Sets)) {
		sep()
		renderSet(&b, t.Sets[name])
	}
	chains := slices.Collect(maps.Values(t.Chains))
	slices.SortFunc(chains, func(a, b *Chain) int {
		if (a.Base == nil) != (b.Base == nil) {
			if a.Base != nil {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Name, b.Name)
	})
	for _, c := range chains {
		sep()
		renderChain(&b, c)
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func renderSet(b *strings.Builder, s *Set) {
	kind, typ := "set", s.Type.String()
	if s.Verdict {
		kind, typ = "map", typ+" : verdict"
	}
	fmt.Fprintf(b, "\t%s %s {\n\t\ttype %s\n", kind, s.Name, typ)
	if s.Interval {
		b.WriteString("\t\tflags interval\n")
	}
	if s.Comment != "" {
		fmt.Fprintf(b, "\t\tcomment %s\n", strconv.Quote(s.Comment))
	}
	if els := SortedElements(s); len(els) > 0 {
		texts := make([]string, len(els))
		for i, e := range els {
			texts[i] = e.Text()
		}
		fmt.Fprintf(b, "\t\telements = { %s }\n", strings.Join(texts, ", "))
	}
	b.WriteString("\t}\n")
}

// SortedElements returns the programmed elements of s in order.
func SortedElements(s *Set) []Element {
	els := make([]Element, 0, len(s.Elements))
	for e, n := range s.Elements {
		if n > 0 {
			els = append(els, e)
		}
	}
	slices.SortFunc(els, Element.Compare)
	return els
}

func renderChain(b *strings.Builder, c *Chain) {
	fmt.Fprintf(b, "\tchain %s {\n", c.Name)
	if c.Comment != "" {
		fmt.Fprintf(b, "\t\tcomment %s\n", strconv.Quote(c.Comment))
	}
	if h := c.Base; h != nil {
		policy := "accept"
		if h.Drop {
			policy = "drop"
		}
		fmt.Fprintf(b, "\t\ttype %s hook %s priority %s; policy %s;\n", h.Type, h.Hook, priorityText(h), policy)
	}
	for _, r := range c.Rules {
		fmt.Fprintf(b, "\t\t%s\n", r.Text())
	}
	b.WriteString("\t}\n")
}

// priorityText names a priority relative to the standard one of its hook, as
// nft prints it.
func priorityText(h *Hook) string {
	name, base := "filter", int32(0)
	if h.Type == "nat" {
		name, base = "dstnat", -100
		if h.Hook == "postrouting" || h.Hook == "input" {
			name, base = "srcnat", 100
		}
	}
	switch d := h.Priority - base; {
	case d == 0:
		return name
	case d > 0:
		return fmt.Sprintf("%s + %d", name, d)
	default:
		return fmt.Sprintf("%s - %d", name, -d)
	}
}
