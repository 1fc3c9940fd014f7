package model

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Operator is a label selector requirement's operator.
type Operator string

// The operators of metav1.LabelSelectorRequirement.
const (
	OpIn           Operator = "In"
	OpNotIn        Operator = "NotIn"
	OpExists       Operator = "Exists"
	OpDoesNotExist Operator = "DoesNotExist"
)

// Requirement is one condition on a label.
type Requirement struct {
	Key    string
	Op     Operator
	Values []string // sorted; empty for Exists and DoesNotExist
}

// Selector is a compiled label selector: all requirements must hold. The zero
// Selector matches everything, as an empty metav1.LabelSelector does.
// Requirements are sorted, so equal selectors have equal String forms.
type Selector struct {
	Requirements []Requirement
}

// SelectorFromAPI compiles a Kubernetes label selector. A nil selector yields a
// nil *Selector, which callers read as "not given".
func SelectorFromAPI(ls *metav1.LabelSelector) (*Selector, error) {
	if ls == nil {
		return nil, nil
	}
	sel := &Selector{}
	for _, k := range slices.Sorted(maps.Keys(ls.MatchLabels)) {
		sel.Requirements = append(sel.Requirements, Requirement{Key: k, Op: OpIn, Values: []string{ls.MatchLabels[k]}})
	}
	for _, e := range ls.MatchExpressions {
		r := Requirement{Key: e.Key, Op: Operator(e.Operator)}
		switch r.Op {
		case OpIn, OpNotIn:
			if len(e.Values) == 0 {
				return nil, fmt.Errorf("selector key %q: operator %s needs values", e.Key, e.Operator)
			}
			r.Values = slices.Compact(slices.Sorted(slices.Values(e.Values)))
		case OpExists, OpDoesNotExist:
			if len(e.Values) != 0 {
				return nil, fmt.Errorf("selector key %q: operator %s takes no values", e.Key, e.Operator)
			}
		default:
			return nil, fmt.Errorf("selector key %q: unknown operator %q", e.Key, e.Operator)
		}
		sel.Requirements = append(sel.Requirements, r)
	}
	slices.SortStableFunc(sel.Requirements, func(a, b Requirement) int {
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return strings.Compare(string(a.Op), string(b.Op))
	})
	return sel, nil
}

// Matches reports whether labels satisfy every requirement.
func (s *Selector) Matches(labels map[string]string) bool {
	for _, r := range s.Requirements {
		v, ok := labels[r.Key]
		switch r.Op {
		case OpIn:
			if !ok || !slices.Contains(r.Values, v) {
				return false
			}
		case OpNotIn:
			if ok && slices.Contains(r.Values, v) {
				return false
			}
		case OpExists:
			if !ok {
				return false
			}
		case OpDoesNotExist:
			if ok {
				return false
			}
		}
	}
	return true
}

// Empty reports whether the selector matches everything.
func (s *Selector) Empty() bool { return len(s.Requirements) == 0 }

// String is a canonical form in kubectl's selector syntax, e.g.
// "app=web,tier in (a,b),!debug"; the empty selector prints as "".
func (s *Selector) String() string {
	var b strings.Builder
	for i, r := range s.Requirements {
		if i > 0 {
			b.WriteByte(',')
		}
		switch {
		case r.Op == OpIn && len(r.Values) == 1:
			b.WriteString(r.Key + "=" + r.Values[0])
		case r.Op == OpIn:
			b.WriteString(r.Key + " in (" + strings.Join(r.Values, ",") + ")")
		case r.Op == OpNotIn:
			b.WriteString(r.Key + " notin (" + strings.Join(r.Values, ",") + ")")
		case r.Op == OpExists:
			b.WriteString(r.Key)
		case r.Op == OpDoesNotExist:
			b.WriteString("!" + r.Key)
		}
	}
	return b.String()
}

// Equal reports whether two selectors, either of which may be nil, are the same.
func (s *Selector) Equal(o *Selector) bool {
	if s == nil || o == nil {
		return s == o
	}
	return slices.EqualFunc(s.Requirements, o.Requirements, func(a, b Requirement) bool {
		return a.Key == b.Key && a.Op == b.Op && slices.Equal(a.Values, b.Values)
	})
}
