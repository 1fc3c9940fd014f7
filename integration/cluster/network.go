package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// Addresses of the bed's network. They exist only inside its namespaces.
var (
	nodeSubnet = netip.MustParsePrefix("192.168.50.0/24")
	// Pods route through a link-local gateway that every node-side veth owns
	// (Calico's layout, as in integration/netnstest).
	podGateway = netip.MustParseAddr("169.254.1.1")
)

// APIProxyPort is where each node namespace reaches the API server.
const APIProxyPort = 6443

// Node is a node network namespace on the bed's bridge.
type Node struct {
	Name    string
	IP      netip.Addr
	PodCIDR netip.Prefix
	NS      netns.NsHandle
	h       *netlink.Handle
	nextIf  int
	pool    *ipPool
}

// newFabric makes the namespace holding the bridge that joins the nodes.
func (b *Bed) newFabric() (err error) {
	b.fabric, b.fabricH, b.bridge, err = NewBridgeNS(&b.cleanups, "fabric", nil)
	return err
}

// NewBridgeNS makes a network namespace holding the bridge br0, up, with
// addr on it when not nil, and a netlink handle working in it; cleanups
// closes both. what names the namespace in errors and cleanup steps.
func NewBridgeNS(cleanups *Cleanups, what string, addr *netlink.Addr) (netns.NsHandle, *netlink.Handle, *netlink.Bridge, error) {
	ns, err := kerneltest.CreateNetNS()
	if err != nil {
		return -1, nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	cleanups.Add("close "+what+" namespace", ns.Close)
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return -1, nil, nil, fmt.Errorf("%s: netlink: %w", what, err)
	}
	cleanups.Add("close "+what+" netlink", func() error { h.Close(); return nil })
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br0"}}
	if err := h.LinkAdd(br); err != nil {
		return -1, nil, nil, fmt.Errorf("%s: add bridge: %w", what, err)
	}
	if addr != nil {
		if err := h.AddrAdd(br, addr); err != nil {
			return -1, nil, nil, fmt.Errorf("%s: bridge address: %w", what, err)
		}
	}
	if err := h.LinkSetUp(br); err != nil {
		return -1, nil, nil, fmt.Errorf("%s: bridge up: %w", what, err)
	}
	return ns, h, br, nil
}

// addNode makes node i (1-based): a namespace with eth0 on the bridge,
// forwarding on, and an API proxy on 127.0.0.1:APIProxyPort.
func (b *Bed) addNode(i int) (*Node, error) {
	name := "node-" + strconv.Itoa(i)
	ns, err := kerneltest.CreateNetNS()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	b.cleanups.Add("close "+name+" namespace", ns.Close)
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("%s: netlink: %w", name, err)
	}
	b.cleanups.Add("close "+name+" netlink", func() error { h.Close(); return nil })
	n := &Node{
		Name: name, NS: ns, h: h,
		IP:      netip.AddrFrom4([4]byte{192, 168, 50, byte(10 + i)}),
		PodCIDR: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 244, byte(i), 0}), 24),
	}
	n.pool = newIPPool(n.PodCIDR)
	port := "n" + strconv.Itoa(i)
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: port, MasterIndex: b.bridge.Index}, PeerName: "eth0", PeerNamespace: netlink.NsFd(int(ns))}
	if err := b.fabricH.LinkAdd(veth); err != nil {
		return nil, fmt.Errorf("%s: add veth: %w", name, err)
	}
	if err := b.fabricH.LinkSetUp(veth); err != nil {
		return nil, fmt.Errorf("%s: veth up: %w", name, err)
	}
	eth, err := h.LinkByName("eth0")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := h.AddrAdd(eth, kerneltest.Addr(n.IP, nodeSubnet.Bits())); err != nil {
		return nil, fmt.Errorf("%s: address: %w", name, err)
	}
	if err := h.LinkSetUp(eth); err != nil {
		return nil, fmt.Errorf("%s: eth0 up: %w", name, err)
	}
	if err := sysctl(ns, map[string]string{"net/ipv4/ip_forward": "1"}); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := b.apiProxy(n); err != nil {
		return nil, err
	}
	return n, nil
}

// WaitPodRoutes waits until every node has a route to every other node's
// pod CIDR via that node: the routes nfrouter's BGP router installs (the bed
// adds none of its own).
func (b *Bed) WaitPodRoutes(ctx context.Context, timeout time.Duration) error {
	_, err := pollUntil(ctx, timeout, func() (struct{}, bool, error) {
		missing, err := missingPodRoutes(b.Nodes)
		if err != nil {
			return struct{}{}, false, err
		}
		return struct{}{}, len(missing) == 0, nil
	})
	if err != nil {
		missing, _ := missingPodRoutes(b.Nodes)
		return fmt.Errorf("pod routes: still missing %s: %w", strings.Join(missing, ", "), err)
	}
	return nil
}

// missingPodRoutes lists "node: CIDR via IP" for each route not yet there.
func missingPodRoutes(nodes []*Node) ([]string, error) {
	var missing []string
	for _, n := range nodes {
		for _, o := range nodes {
			if o == n {
				continue
			}
			routes, err := n.h.RouteListFiltered(unix.AF_INET, &netlink.Route{Dst: kerneltest.IPNet(o.PodCIDR)}, netlink.RT_FILTER_DST)
			if err != nil {
				return nil, fmt.Errorf("%s: list routes: %w", n.Name, err)
			}
			if !slices.ContainsFunc(routes, func(r netlink.Route) bool { return net.IP(o.IP.AsSlice()).Equal(r.Gw) }) {
				missing = append(missing, fmt.Sprintf("%s: %s via %s", n.Name, o.PodCIDR, o.IP))
			}
		}
	}
	return missing, nil
}

// apiProxy listens on 127.0.0.1:APIProxyPort inside the node namespace and
// forwards each connection to the API server on the host's loopback, the way
// k3s agents reach their servers. TLS passes through untouched.
func (b *Bed) apiProxy(n *Node) error {
	var l net.Listener
	err := kerneltest.Do(n.NS, func() error {
		var err error
		l, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(APIProxyPort))
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: API proxy: %w", n.Name, err)
	}
	b.cleanups.Add("close "+n.Name+" API proxy", func() error { l.Close(); return nil })
	target := b.cp.apiURL[len("https://"):]
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go splice(c, target, b.log)
		}
	}()
	return nil
}

func splice(c net.Conn, target string, log *slog.Logger) {
	defer c.Close()
	var d net.Dialer
	up, err := d.DialContext(context.Background(), "tcp", target)
	if err != nil {
		log.Debug("API proxy: dial", "error", err)
		return
	}
	Splice(c, up)
}

// Splice copies between the TCP connections a and b both ways until both
// directions are done, then closes b.
func Splice(a, b net.Conn) {
	defer b.Close()
	done := make(chan struct{}, 2)
	go func() { io.Copy(b, a); b.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() { io.Copy(a, b); a.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	<-done
	<-done
}

// ipPool hands out pod addresses of a node's CIDR, lowest free first.
type ipPool struct {
	prefix netip.Prefix
	used   map[netip.Addr]bool
}

func newIPPool(p netip.Prefix) *ipPool { return &ipPool{prefix: p, used: map[netip.Addr]bool{}} }

func (p *ipPool) get() (netip.Addr, error) {
	// .1–.9 stay free for gateways and the like.
	for a := p.prefix.Addr().Next(); p.prefix.Contains(a); a = a.Next() {
		if a.As4()[3] < 10 || a.As4()[3] == 255 || p.used[a] {
			continue
		}
		p.used[a] = true
		return a, nil
	}
	return netip.Addr{}, fmt.Errorf("pod CIDR %s exhausted", p.prefix)
}

func (p *ipPool) put(a netip.Addr) { delete(p.used, a) }
