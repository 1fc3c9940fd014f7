package nft

import (
	"fmt"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// elementChunk bounds the elements per NEWSETELEM message so that no single
// message outgrows what the kernel accepts.
const elementChunk = 2000

// maxElementList bounds the encoded size of one message's element list: it is
// one netlink attribute, whose length field has 16 bits. Map elements that
// jump to long chain names reach it well before elementChunk elements.
const maxElementList = 60000

// maxElementSize estimates the largest encoded size of one element.
func maxElementSize(els []nftables.SetElement) int {
	n := 0
	for _, e := range els {
		s := 32 + len(e.Key)
		if e.VerdictData != nil {
			s += 32 + len(e.VerdictData.Chain)
		}
		n = max(n, s)
	}
	return n
}

// batch builds the messages of one transaction. google/nftables serializes
// each object (its Conn runs against an in-memory netlink fake and never
// touches the kernel); transport sends them. Every google/nftables call used
// here queues exactly one message, so the batch notes a description (and an
// optional patch) per call and serializes everything with one Flush at the
// end: a Flush per object costs a fake dial each (20,000 at a cold start).
type batch struct {
	c        *nftables.Conn
	table    *nftables.Table
	pending  []pendingMsg
	captured []netlink.Message
	msgs     []netlink.Message
	what     []string
	err      error
	stats    Stats
}

// pendingMsg describes one queued message.
type pendingMsg struct {
	what  string
	patch func(*netlink.Message) error
}

func newBatch(family nftables.TableFamily, name string) *batch {
	b := &batch{table: &nftables.Table{Family: family, Name: name}, stats: Stats{ByType: map[string]int{}}}
	// Replies: one acknowledgement per receive, which is what Flush waits for.
	ack := netlink.Message{Header: netlink.Header{Type: netlink.Error}, Data: make([]byte, 4)}
	b.c, b.err = nftables.New(nftables.WithTestDial(func(req []netlink.Message) ([]netlink.Message, error) {
		if req == nil {
			return []netlink.Message{ack}, nil
		}
		for _, m := range req {
			if t := m.Header.Type; t != netlink.HeaderType(unix.NFNL_MSG_BATCH_BEGIN) && t != netlink.HeaderType(unix.NFNL_MSG_BATCH_END) {
				b.captured = append(b.captured, m)
			}
		}
		return nil, nil
	}))
	return b
}

// take notes the message the last google/nftables call queued.
func (b *batch) take(what string) { b.takePatched(what, nil) }

// takePatched is take with a chance to edit the serialized message.
func (b *batch) takePatched(what string, patch func(*netlink.Message) error) {
	if b.err != nil {
		return
	}
	b.pending = append(b.pending, pendingMsg{what, patch})
}

// finish serializes the queued messages; afterwards msgs, what and stats
// describe the whole batch.
func (b *batch) finish() {
	if b.err != nil || len(b.pending) == 0 {
		return
	}
	pending := b.pending
	b.pending = nil
	if err := b.c.Flush(); err != nil {
		b.err = fmt.Errorf("serialize %d messages: %w", len(pending), err)
		return
	}
	if len(b.captured) != len(pending) {
		b.err = fmt.Errorf("serialize: %d messages for %d objects", len(b.captured), len(pending))
		return
	}
	for i := range b.captured {
		m := &b.captured[i]
		if p := pending[i].patch; p != nil {
			if err := p(m); err != nil {
				b.err = fmt.Errorf("serialize %s: %w", pending[i].what, err)
				return
			}
		}
		b.msgs = append(b.msgs, *m)
		b.what = append(b.what, pending[i].what)
		b.stats.Messages++
		b.stats.ByType[msgTypeName(m.Header.Type)]++
	}
	b.captured = nil
}

func (b *batch) empty() bool { return len(b.msgs) == 0 && len(b.pending) == 0 }

func (b *batch) addTable() {
	b.c.AddTable(b.table)
	b.take("add table " + b.table.Name)
}

func (b *batch) delTable() {
	b.c.DelTable(b.table)
	b.take("delete table " + b.table.Name)
}

func (b *batch) kset(s *ruleset.Set) *nftables.Set {
	ks := &nftables.Set{Table: b.table, Name: s.Name, Comment: s.Comment, Interval: s.Interval}
	ks.KeyType, ks.Concatenation = setDatatype(s.Type)
	switch {
	case s.Verdict:
		ks.IsMap = true
		ks.DataType = nftables.TypeVerdict
	case s.Data != 0:
		ks.IsMap = true
		ks.DataType, _ = setDatatype(s.Data)
	}
	if s.Dynamic {
		ks.Dynamic = true
		ks.HasTimeout = s.Timeout > 0
		ks.Timeout = s.Timeout
		ks.Size = s.Size
	}
	return ks
}

func (b *batch) addSet(s *ruleset.Set) {
	if b.err != nil {
		return
	}
	if err := b.c.AddSet(b.kset(s), nil); err != nil {
		b.err = fmt.Errorf("serialize set %s: %w", s.Name, err)
		return
	}
	ud := setUserdata(s)
	if ud == nil {
		b.take("add set " + s.Name)
		return
	}
	b.takePatched("add set "+s.Name, func(m *netlink.Message) error { return replaceSetUserdata(m, ud) })
}

func (b *batch) delSet(s *ruleset.Set) {
	b.c.DelSet(b.kset(s))
	b.take("delete set " + s.Name)
}

func (b *batch) flushSet(s *ruleset.Set) {
	b.c.FlushSet(b.kset(s))
	b.take("flush set " + s.Name)
}

// elements adds (or, with del, deletes) elements in chunks.
func (b *batch) elements(s *ruleset.Set, els []ruleset.Element, del bool) {
	if len(els) == 0 || b.err != nil {
		return
	}
	ks := b.kset(s)
	kels := encodeElements(s, els)
	if del {
		// The kernel finds an element by its key alone.
		for i := range kels {
			kels[i].Val = nil
		}
	}
	verb := "add"
	if del {
		verb = "delete"
	}
	step := elementChunk
	if n := maxElementSize(kels); n*step > maxElementList {
		step = max(1, maxElementList/n)
	}
	for i := 0; i < len(kels); i += step {
		chunk := kels[i:min(i+step, len(kels))]
		var err error
		if del {
			err = b.c.SetDeleteElements(ks, chunk)
		} else {
			err = b.c.SetAddElements(ks, chunk)
		}
		if err != nil {
			b.err = fmt.Errorf("serialize elements of %s: %w", s.Name, err)
			return
		}
		b.take(fmt.Sprintf("%s %d elements to set %s", verb, len(chunk), s.Name))
	}
	if del {
		b.stats.ElementsRemoved += len(els)
	} else {
		b.stats.ElementsAdded += len(els)
	}
}

func (b *batch) kchain(c *ruleset.Chain) *nftables.Chain {
	kc := &nftables.Chain{Table: b.table, Name: c.Name}
	if h := c.Base; h != nil {
		kc.Type = nftables.ChainType(h.Type)
		kc.Hooknum = hookNum(h.Hook)
		prio := nftables.ChainPriority(h.Priority)
		kc.Priority = &prio
		pol := nftables.ChainPolicyAccept
		if h.Drop {
			pol = nftables.ChainPolicyDrop
		}
		kc.Policy = &pol
	}
	return kc
}

func hookNum(h string) *nftables.ChainHook {
	switch h {
	case "prerouting":
		return nftables.ChainHookPrerouting
	case "input":
		return nftables.ChainHookInput
	case "output":
		return nftables.ChainHookOutput
	case "postrouting":
		return nftables.ChainHookPostrouting
	}
	return nftables.ChainHookForward
}

// addChain adds an empty chain. google/nftables has no chain comments, so the
// comment is appended to the serialized message as NFTA_CHAIN_USERDATA in the
// TLV format nft reads (NFTNL_UDATA_CHAIN_COMMENT, NUL-terminated).
func (b *batch) addChain(c *ruleset.Chain) {
	b.c.AddChain(b.kchain(c))
	if c.Comment == "" {
		b.take("add chain " + c.Name)
		return
	}
	b.takePatched("add chain "+c.Name, func(m *netlink.Message) error {
		ud := userdata.AppendString(nil, userdata.TypeComment, c.Comment)
		attr, err := netlink.MarshalAttributes([]netlink.Attribute{{Type: nftaChainUserdata, Data: ud}})
		if err != nil {
			return err
		}
		m.Data = append(m.Data, attr...)
		return nil
	})
}

func (b *batch) flushChain(name string) {
	b.c.FlushChain(&nftables.Chain{Table: b.table, Name: name})
	b.take("flush chain " + name)
}

func (b *batch) delChain(name string) {
	b.c.DelChain(&nftables.Chain{Table: b.table, Name: name})
	b.take("delete chain " + name)
}

func (b *batch) addRule(chain string, r ruleset.Rule) {
	b.c.AddRule(&nftables.Rule{Table: b.table, Chain: &nftables.Chain{Table: b.table, Name: chain}, Exprs: r.Exprs()})
	b.take("add rule to chain " + chain + ": " + r.Text())
}

// encodeElements turns elements into kernel set elements. Interval sets get
// nft's encoding: each range is a start element and an end element one past
// its last address (none when the range reaches the top of the address
// space), after a leading end element at the zero address.
func encodeElements(s *ruleset.Set, els []ruleset.Element) []nftables.SetElement {
	var out []nftables.SetElement
	if s.Interval {
		if len(els) > 0 && !els[0].Addr.IsUnspecified() {
			out = append(out, nftables.SetElement{Key: zeroAddr(s.Type.V6()).AsSlice(), IntervalEnd: true})
		}
		for _, e := range els {
			out = append(out, nftables.SetElement{Key: e.Addr.AsSlice()})
			if next := e.End.Next(); next.IsValid() {
				out = append(out, nftables.SetElement{Key: next.AsSlice(), IntervalEnd: true})
			}
		}
		return out
	}
	for _, e := range els {
		out = append(out, encodeElement(s, e))
	}
	return out
}

func encodeElement(s *ruleset.Set, e ruleset.Element) nftables.SetElement {
	ke := nftables.SetElement{Key: encodeKey(s.Type, e)}
	switch {
	case s.Verdict:
		ke.VerdictData = &expr.Verdict{Kind: expr.VerdictJump, Chain: e.Jump}
	case s.Data != 0:
		ke.Val = encodeData(s.Data, e)
	}
	return ke
}

func zeroAddr(v6 bool) netip.Addr {
	if v6 {
		return netip.IPv6Unspecified()
	}
	return netip.IPv4Unspecified()
}

func msgTypeName(t netlink.HeaderType) string {
	switch int(t) & 0xff {
	case unix.NFT_MSG_NEWTABLE:
		return "newtable"
	case unix.NFT_MSG_DELTABLE:
		return "deltable"
	case unix.NFT_MSG_NEWCHAIN:
		return "newchain"
	case unix.NFT_MSG_DELCHAIN:
		return "delchain"
	case unix.NFT_MSG_NEWRULE:
		return "newrule"
	case unix.NFT_MSG_DELRULE:
		return "delrule"
	case unix.NFT_MSG_NEWSET:
		return "newset"
	case unix.NFT_MSG_DELSET:
		return "delset"
	case unix.NFT_MSG_NEWSETELEM:
		return "newsetelem"
	case unix.NFT_MSG_DELSETELEM:
		return "delsetelem"
	}
	return fmt.Sprintf("type-%d", int(t)&0xff)
}

// nftaChainUserdata is NFTA_CHAIN_USERDATA (linux/netfilter/nf_tables.h, since
// Linux 5.10), which x/sys/unix does not name.
const nftaChainUserdata = 12
