package nft

import (
	"fmt"

	"github.com/google/nftables"
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

// batch builds the messages of one transaction. google/nftables serializes
// each object (its Conn runs against an in-memory netlink fake and never
// touches the kernel); transport sends them. Every google/nftables call used
// here queues exactly one message, so the batch notes a description (and an
// optional patch) per call and serializes everything with one Flush at the
// end: a Flush per object costs a fake dial each (20,000 at a cold start).
// Element messages the batch builds itself (setelem.go) and queues in
// order between them.
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

// pendingMsg describes one queued message: one google/nftables queued, or
// own, one the batch built itself.
type pendingMsg struct {
	what  string
	patch func(*netlink.Message) error
	own   *netlink.Message
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
	b.pending = append(b.pending, pendingMsg{what: what, patch: patch})
}

// add queues a message the batch built itself.
func (b *batch) add(what string, m netlink.Message) {
	if b.err != nil {
		return
	}
	b.pending = append(b.pending, pendingMsg{what: what, own: &m})
}

// finish serializes the queued messages; afterwards msgs, what and stats
// describe the whole batch.
func (b *batch) finish() {
	if b.err != nil || len(b.pending) == 0 {
		return
	}
	pending := b.pending
	b.pending = nil
	queued := 0
	for _, p := range pending {
		if p.own == nil {
			queued++
		}
	}
	if queued > 0 {
		if err := b.c.Flush(); err != nil {
			b.err = fmt.Errorf("serialize %d messages: %w", queued, err)
			return
		}
	}
	if len(b.captured) != queued {
		b.err = fmt.Errorf("serialize: %d messages for %d objects", len(b.captured), queued)
		return
	}
	next := 0
	for _, p := range pending {
		m := p.own
		if m == nil {
			m = &b.captured[next]
			next++
		}
		if p.patch != nil {
			if err := p.patch(m); err != nil {
				b.err = fmt.Errorf("serialize %s: %w", p.what, err)
				return
			}
		}
		b.msgs = append(b.msgs, *m)
		b.what = append(b.what, p.what)
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
	var concat bool
	ks.KeyType, concat = setDatatype(s.Type)
	// nft flags a concatenation and describes its fields (NFT_SET_CONCAT,
	// NFTA_SET_DESC_CONCAT) only for interval sets, whose kernel backend
	// needs the field lengths. The kernel compares both when nft adds the
	// set again, so a hashed concatenation gets neither.
	ks.Concatenation = concat && s.Interval
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
	kels := encodeElements(s, els)
	verb := "add"
	if del {
		verb = "delete"
	}
	for len(kels) > 0 {
		// As many elements as fit, in count and in size.
		n, size := 0, 0
		for n < len(kels) && n < elementChunk && (n == 0 || size+kels[n].size(del) <= maxElementList) {
			size += kels[n].size(del)
			n++
		}
		chunk := kels[:n]
		kels = kels[n:]
		m, err := elementsMessage(byte(b.table.Family), b.table.Name, s.Name, chunk, del)
		if err != nil {
			b.err = fmt.Errorf("serialize elements of %s: %w", s.Name, err)
			return
		}
		b.add(fmt.Sprintf("%s %d elements to set %s", verb, len(chunk), s.Name), m)
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
