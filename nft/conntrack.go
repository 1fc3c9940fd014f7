package nft

import (
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/nfrouter/nfrouter/nft/conntrack"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// Conntrack keeps a connection going once its first packet passed: its
// later packets are accepted as established before any policy is looked
// at. So when a sync starts denying a flow, the flow's conntrack entry has
// to go too, or the connection outlives the policy that denies it; its next
// packet is then judged as new, and dropped. (kube-network-policies does the
// same in its strict mode; kube-router leaves such flows alone.)

// flowJudge reports whether the firewall now denies a connection's first
// packet.
type flowJudge func(ruleset.Packet) (denied bool, err error)

// conntrackSweep is the result of one pass over the conntrack table.
type conntrackSweep struct {
	Checked, Deleted int
}

// deleteDeniedFlows deletes the conntrack entries, in network namespace
// nsFd (0: the current one), of the TCP, UDP and SCTP flows judge denies.
// Each entry is judged as its first packet was filtered: from its original
// source to the address that answers (after DNAT, before SNAT), to the port
// that answers. Entries whose source is one of the node's own addresses
// are judged as the node's, which the firewall never filters, and those
// delivered to one of them are not judged at all.
func deleteDeniedFlows(nsFd int, judge flowJudge) (conntrackSweep, error) {
	h, err := conntrack.Handle(nsFd)
	if err != nil {
		return conntrackSweep{}, err
	}
	defer h.Close()
	local, err := conntrack.LocalAddrs(h)
	if err != nil {
		return conntrackSweep{}, err
	}
	f := &deniedFlows{judge: judge, local: local}
	n, err := conntrack.Delete(h, f)
	if err != nil {
		return conntrackSweep{Deleted: n}, fmt.Errorf("delete conntrack entries of denied flows: %w", err)
	}
	return conntrackSweep{Checked: f.checked, Deleted: n}, nil
}

// deniedFlows is the conntrack filter: it matches the flows to delete.
type deniedFlows struct {
	judge   flowJudge
	local   map[netip.Addr]bool
	checked int
	err     error // the first judging error; later flows are kept
}

func (f *deniedFlows) Err() error { return f.err }

func (f *deniedFlows) Match(flow *netlink.ConntrackFlow) bool {
	if f.err != nil {
		return false
	}
	switch flow.Forward.Protocol {
	case unix.IPPROTO_TCP, unix.IPPROTO_UDP, unix.IPPROTO_SCTP:
	default:
		return false
	}
	pkt, ok := firstPacket(flow)
	if !ok {
		return false
	}
	if f.local[pkt.Dst] {
		// Delivered to the node itself (input): no policy judges it.
		return false
	}
	pkt.SrcLocal = f.local[pkt.Src]
	f.checked++
	denied, err := f.judge(pkt)
	if err != nil {
		f.err = err
		return false
	}
	return denied
}

// firstPacket is the packet that opened flow, as the filter hooks saw it:
// the original source, and the reply's source as destination (the
// endpoint a service address was translated to).
func firstPacket(flow *netlink.ConntrackFlow) (ruleset.Packet, bool) {
	src, ok1 := netip.AddrFromSlice(flow.Forward.SrcIP)
	dst, ok2 := netip.AddrFromSlice(flow.Reverse.SrcIP)
	if !ok1 || !ok2 {
		return ruleset.Packet{}, false
	}
	return ruleset.Packet{Src: src.Unmap(), Dst: dst.Unmap(), Proto: flow.Forward.Protocol, DPort: flow.Reverse.SrcPort}, true
}

var _ conntrack.Filter = (*deniedFlows)(nil)
