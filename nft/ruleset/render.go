package ruleset

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Render writes the table in the syntax `nft list table` prints and `nft -f`
// reads: sets and maps by name, then base chains and regular chains by name.
// Elements are sorted, so the output is canonical.
func Render(w io.Writer, t *Table) error {
	_, err := io.WriteString(w, Text(t))
	return err
}

// Text is the table as Render writes it.
func Text(t *Table) string {
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
	return b.String()
}

func renderSet(b *strings.Builder, s *Set) {
	kind, decl := "set", "type "+s.Type.String()
	if typeof := s.Type.Typeof(); typeof != "" {
		decl = "typeof " + typeof
	}
	switch {
	case s.Verdict:
		kind, decl = "map", decl+" : verdict"
	case s.Data != 0:
		data := s.Data.String()
		if typeof := s.DataTypeof(); typeof != "" {
			data = typeof
		}
		kind, decl = "map", decl+" : "+data
	}
	fmt.Fprintf(b, "\t%s %s {\n\t\t%s\n", kind, s.Name, decl)
	if s.Size > 0 {
		fmt.Fprintf(b, "\t\tsize %d\n", s.Size)
	}
	var flags []string
	if s.Interval {
		flags = append(flags, "interval")
	}
	if s.Dynamic {
		flags = append(flags, "dynamic")
	}
	if s.Timeout > 0 {
		flags = append(flags, "timeout")
	}
	if len(flags) > 0 {
		fmt.Fprintf(b, "\t\tflags %s\n", strings.Join(flags, ","))
	}
	if s.Timeout > 0 {
		fmt.Fprintf(b, "\t\ttimeout %s\n", DurationText(s.Timeout))
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

// DurationText writes a duration the way nft prints one: days, hours,
// minutes, seconds and milliseconds that are not zero ("3h", "1m40s").
func DurationText(d time.Duration) string {
	ms := d.Milliseconds()
	var b strings.Builder
	for _, u := range []struct {
		ms   int64
		name string
	}{{86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}, {1, "ms"}} {
		if n := ms / u.ms; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			ms -= n * u.ms
		}
	}
	if b.Len() == 0 {
		return "0s"
	}
	return b.String()
}

// SortedElements returns the programmed elements of s in order.
func SortedElements(s *Set) []Element {
	els := make([]Element, 0, s.Elements.Len())
	for e := range s.Elements.All() {
		els = append(els, e)
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

// priorityText names a priority the way nft 1.0.6 prints it: relative to
// the first standard priority within 10 of it that suits the hook (dstnat
// only on prerouting, srcnat only on postrouting), else as a number.
func priorityText(h *Hook) string {
	for _, std := range []struct {
		name string
		prio int32
		hook string // "" for every hook
	}{{"raw", -300, ""}, {"mangle", -150, ""}, {"dstnat", -100, "prerouting"}, {"filter", 0, ""},
		{"security", 50, ""}, {"srcnat", 100, "postrouting"}} {
		d := h.Priority - std.prio
		if (std.hook != "" && std.hook != h.Hook) || d < -10 || d > 10 {
			continue
		}
		switch {
		case d == 0:
			return std.name
		case d > 0:
			return fmt.Sprintf("%s + %d", std.name, d)
		default:
			return fmt.Sprintf("%s - %d", std.name, -d)
		}
	}
	return strconv.Itoa(int(h.Priority))
}
