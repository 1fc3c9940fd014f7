package kuberouter

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// The ipset netlink protocol (include/uapi/linux/netfilter/ipset/ip_set.h).
const (
	nfnlSubsysIPSet = 6

	ipsetCmdDestroy    = 3
	ipsetCmdList       = 7
	ipsetCmdGetByIndex = 15

	ipsetAttrProtocol = 1
	ipsetAttrSetName  = 2
	ipsetAttrFlags    = 6
	ipsetAttrIndex    = 11

	// ipsetProtocol is the protocol version we speak first: 7 on current
	// kernels (IPSET_PROTOCOL). Most commands accept down to 6
	// (IPSET_PROTOCOL_MIN), but IPSET_CMD_GET_BYINDEX wants exactly the
	// kernel's own, so a kernel that answers IPSET_ERR_PROTOCOL is asked
	// again with ipsetProtocolOld.
	ipsetProtocol    = 7
	ipsetProtocolOld = 6
	// ipsetErrProtocol: the kernel speaks another protocol version.
	ipsetErrProtocol = 4097
	// ipsetFlagListSetName lists names only (IPSET_FLAG_LIST_SETNAME).
	ipsetFlagListSetName = 1 << 1
	// ipsetErrBusy: a rule still uses the set (IPSET_ERR_BUSY).
	ipsetErrBusy = 4100
)

// ipsetConn speaks the ipset netlink protocol in one network namespace.
type ipsetConn struct{ c *netlink.Conn }

// dialIPSet opens a netfilter netlink socket in the namespace netnsFd (0:
// the caller's).
func dialIPSet(netnsFd int) (*ipsetConn, error) {
	c, err := netlink.Dial(unix.NETLINK_NETFILTER, &netlink.Config{NetNS: netnsFd})
	if err != nil {
		return nil, fmt.Errorf("open netfilter netlink: %w", err)
	}
	return &ipsetConn{c: c}, nil
}

func (s *ipsetConn) Close() error { return s.c.Close() }

// request sends one ipset command with attrs and returns the replies' data
// without their nfgenmsg header.
func (s *ipsetConn) request(cmd int, flags netlink.HeaderFlags, attrs func(ae *netlink.AttributeEncoder)) ([][]byte, error) {
	out, err := s.requestVersion(ipsetProtocol, cmd, flags, attrs)
	var oe *netlink.OpError
	if errors.As(err, &oe) && oe.Err == unix.Errno(ipsetErrProtocol) {
		return s.requestVersion(ipsetProtocolOld, cmd, flags, attrs)
	}
	return out, err
}

func (s *ipsetConn) requestVersion(version uint8, cmd int, flags netlink.HeaderFlags, attrs func(ae *netlink.AttributeEncoder)) ([][]byte, error) {
	ae := netlink.NewAttributeEncoder()
	ae.Uint8(ipsetAttrProtocol, version)
	if attrs != nil {
		attrs(ae)
	}
	body, err := ae.Encode()
	if err != nil {
		return nil, err
	}
	// nfgenmsg: family, version NFNETLINK_V0, resource id 0.
	data := append([]byte{unix.AF_INET, unix.NFNETLINK_V0, 0, 0}, body...)
	msgs, err := s.c.Execute(netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(nfnlSubsysIPSet<<8 | cmd), Flags: netlink.Request | flags},
		Data:   data,
	})
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, m := range msgs {
		if len(m.Data) > 4 {
			out = append(out, m.Data[4:])
		}
	}
	return out, nil
}

// names lists every set's name.
func (s *ipsetConn) names() ([]string, error) {
	replies, err := s.request(ipsetCmdList, netlink.Dump|netlink.Acknowledge, func(ae *netlink.AttributeEncoder) {
		ae.Do(ipsetAttrFlags, func() ([]byte, error) { return binary.BigEndian.AppendUint32(nil, ipsetFlagListSetName), nil })
	})
	if err != nil {
		return nil, fmt.Errorf("list ipsets: %w", err)
	}
	var out []string
	for _, r := range replies {
		if name := setName(r); name != "" {
			out = append(out, name)
		}
	}
	return out, nil
}

// nameOf resolves a set's kernel index, as xt "set" matches hold it.
func (s *ipsetConn) nameOf(index uint16) (string, error) {
	// No acknowledgement: the kernel answers with the set's name alone.
	replies, err := s.request(ipsetCmdGetByIndex, 0, func(ae *netlink.AttributeEncoder) {
		ae.Do(ipsetAttrIndex, func() ([]byte, error) { return binary.BigEndian.AppendUint16(nil, index), nil })
	})
	if err != nil {
		return "", fmt.Errorf("ipset with index %d: %w", index, err)
	}
	for _, r := range replies {
		if name := setName(r); name != "" {
			return name, nil
		}
	}
	return "", fmt.Errorf("ipset with index %d: no name in the answer", index)
}

// destroy removes one set.
func (s *ipsetConn) destroy(name string) error {
	_, err := s.request(ipsetCmdDestroy, netlink.Acknowledge, func(ae *netlink.AttributeEncoder) { ae.String(ipsetAttrSetName, name) })
	var oe *netlink.OpError
	if errors.As(err, &oe) && oe.Err == unix.Errno(ipsetErrBusy) {
		return fmt.Errorf("destroy ipset %s: a rule still uses it", name)
	}
	if err != nil {
		return fmt.Errorf("destroy ipset %s: %w", name, err)
	}
	return nil
}

// setName is the IPSET_ATTR_SETNAME of one reply.
func setName(data []byte) string {
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return ""
	}
	for ad.Next() {
		if ad.Type() == ipsetAttrSetName {
			return ad.String()
		}
	}
	return ""
}

// isKubeRouterSet reports whether kube-router names a set so: its own sets
// (kube-router-*), the per-policy KUBE-SRC-*/KUBE-DST-*, each also with the
// inet6: prefix of its IPv6 twin.
func isKubeRouterSet(name string) bool {
	name = strings.TrimPrefix(name, "inet6:")
	for _, p := range []string{"kube-router-", "KUBE-SRC-", "KUBE-DST-"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
