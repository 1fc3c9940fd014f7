package kerneltest

import (
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Addr is ip/bits as an interface address, without duplicate address
// detection: a tentative IPv6 address cannot be used.
func Addr(ip netip.Addr, bits int) *netlink.Addr {
	return &netlink.Addr{IPNet: &net.IPNet{IP: ip.AsSlice(), Mask: net.CIDRMask(bits, ip.BitLen())}, Flags: unix.IFA_F_NODAD}
}

// IPNet is p in the form netlink routes take.
func IPNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// HostNet is the host prefix of ip (/32 or /128) in the form netlink routes
// take.
func HostNet(ip netip.Addr) *net.IPNet { return IPNet(netip.PrefixFrom(ip, ip.BitLen())) }
