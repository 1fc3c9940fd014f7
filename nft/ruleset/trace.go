package ruleset

import (
	"fmt"
	"net/netip"
)

// Packet is what a trace needs to know of a packet: its addresses as the
// filter hooks see them (after DNAT, before SNAT), its transport protocol
// and destination port (ICMPv6: its type), whether conntrack knows its
// connection, whether it is a TCP packet without SYN, and whether its
// source is an address of the node.
type Packet struct {
	Src, Dst    netip.Addr
	Proto       uint8
	DPort       uint16
	ICMPv6Type  uint8
	Established bool
	MidStream   bool
	SrcLocal    bool
}

// Step is one rule a traced packet matched, in the chain it stands in.
type Step struct {
	Chain string
	Rule  string
}

// TraceResult is where a packet went through one base chain: the rules it
// matched, in order, and whether the chain accepts it (its last step's
// verdict, or the chain's policy when no rule ended it).
type TraceResult struct {
	Steps    []Step
	Accepted bool
}

// Trace follows pkt through base chain base the way the kernel would,
// reading sets from the table: it is the table's own answer to "what
// happens to this packet", so it cannot disagree with what is programmed
// from it. A match the tracer does not understand is an error, never a
// guess.
func (t *Table) Trace(base string, pkt Packet) (TraceResult, error) {
	c := t.Chains[base]
	if c == nil || c.Base == nil {
		return TraceResult{}, fmt.Errorf("trace: no base chain %s", base)
	}
	var res TraceResult
	verdict, err := t.traceChain(c, pkt, &res, 0)
	if err != nil {
		return res, err
	}
	switch verdict {
	case verdictAccept:
		res.Accepted = true
	case verdictDrop:
		res.Accepted = false
	default:
		res.Accepted = !c.Base.Drop
	}
	return res, nil
}

type traceVerdict int

const (
	verdictContinue traceVerdict = iota
	verdictAccept
	verdictDrop
)

// maxJumpDepth is the kernel's limit on nested jumps (NFT_JUMP_STACK_SIZE).
const maxJumpDepth = 16

func (t *Table) traceChain(c *Chain, pkt Packet, res *TraceResult, depth int) (traceVerdict, error) {
	if depth > maxJumpDepth {
		return 0, fmt.Errorf("trace: jumps nested deeper than %d at chain %s", maxJumpDepth, c.Name)
	}
	for _, r := range c.Rules {
		ok, err := t.matches(r.Matches, pkt)
		if err != nil {
			return 0, fmt.Errorf("trace: chain %s, rule %q: %w", c.Name, r.Text(), err)
		}
		if !ok {
			continue
		}
		res.Steps = append(res.Steps, Step{Chain: c.Name, Rule: r.Text()})
		switch v := r.Verdict.(type) {
		case nil:
		case Accept:
			return verdictAccept, nil
		case Drop:
			return verdictDrop, nil
		case Jump:
			next := t.Chains[v.Chain]
			if next == nil {
				return 0, fmt.Errorf("trace: chain %s jumps to missing chain %s", c.Name, v.Chain)
			}
			verdict, err := t.traceChain(next, pkt, res, depth+1)
			if err != nil || verdict != verdictContinue {
				return verdict, err
			}
		default:
			return 0, fmt.Errorf("trace: chain %s: verdict %q not understood", c.Name, r.Verdict.text())
		}
	}
	return verdictContinue, nil
}

func (t *Table) matches(ms []Match, pkt Packet) (bool, error) {
	for _, m := range ms {
		ok, err := t.match(m, pkt)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

func (t *Table) match(m Match, pkt Packet) (bool, error) {
	switch m := m.(type) {
	case CtEstablished:
		return pkt.Established, nil
	case SourceNotLocal:
		return !pkt.SrcLocal, nil
	case LogLimited, Counter:
		return true, nil // logs or counts, and lets the packet on
	case L4Proto:
		return pkt.Proto == m.Proto, nil
	case TCPMidStream:
		return pkt.Proto == tcp && pkt.MidStream, nil
	case ICMPv6Type:
		return pkt.Dst.Is6() && pkt.Proto == icmpv6 && pkt.ICMPv6Type == m.Type, nil
	case DPort:
		last := max(m.Last, m.First)
		return pkt.Proto == m.Proto && pkt.DPort >= m.First && pkt.DPort <= last, nil
	case AddrIn:
		a := pkt.Dst
		if m.Src {
			a = pkt.Src
		}
		if a.Is6() != m.V6 {
			return false, nil // another family's rule
		}
		in, err := t.hasAddr(m.Set, a)
		return in != m.Not, err
	case DestPortIn:
		if pkt.Dst.Is6() != m.V6 || (m.Proto != 0 && pkt.Proto != m.Proto) {
			return false, nil
		}
		s := t.Sets[m.Set]
		if s == nil {
			return false, fmt.Errorf("set %s missing", m.Set)
		}
		return s.Has(Element{Addr: pkt.Dst, Proto: pkt.Proto, Port: pkt.DPort}), nil
	}
	return false, fmt.Errorf("match %q not understood", m.text())
}

const (
	tcp    = 6
	icmpv6 = 58
)

// hasAddr reports whether address set name holds a, as an element or
// inside an interval.
func (t *Table) hasAddr(name string, a netip.Addr) (bool, error) {
	s := t.Sets[name]
	if s == nil {
		return false, fmt.Errorf("set %s missing", name)
	}
	if !s.Interval {
		return s.Has(Element{Addr: a}), nil
	}
	for e := range s.Elements.All() {
		if !a.Less(e.Addr) && !e.End.Less(a) {
			return true, nil
		}
	}
	return false, nil
}
