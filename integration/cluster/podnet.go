package cluster

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	corev1 "k8s.io/api/core/v1"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// podNet is a pod's network: its namespace, the node-side veth, and the
// servers on its container ports.
type podNet struct {
	ns      netns.NsHandle
	node    *Node
	veth    string
	closers []io.Closer
}

// addPodNet makes the pod's namespace with a veth into the node (netnstest's
// routed-CNI layout, IPv4) and starts a server on each container port that
// answers with the pod's name.
func (b *Bed) addPodNet(n *Node, p *Pod) (_ *podNet, err error) {
	ns, err := kerneltest.CreateNetNS()
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", p.key(), err)
	}
	b.mu.Lock()
	n.nextIf++
	pn := &podNet{ns: ns, node: n, veth: "p" + strconv.Itoa(n.nextIf)}
	b.mu.Unlock()
	defer func() {
		if err != nil {
			pn.close()
		}
	}()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: pn.veth}, PeerName: "eth0", PeerNamespace: netlink.NsFd(int(ns))}
	if err := n.h.LinkAdd(veth); err != nil {
		return nil, fmt.Errorf("pod %s: add veth: %w", p.key(), err)
	}
	host, err := n.h.LinkByName(pn.veth)
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", p.key(), err)
	}
	if err := n.h.AddrAdd(host, kerneltest.Addr(podGateway, 32)); err != nil {
		return nil, fmt.Errorf("pod %s: gateway address: %w", p.key(), err)
	}
	if err := n.h.LinkSetUp(host); err != nil {
		return nil, fmt.Errorf("pod %s: veth up: %w", p.key(), err)
	}
	if err := n.h.RouteAdd(&netlink.Route{LinkIndex: host.Attrs().Index, Dst: kerneltest.HostNet(p.IP), Scope: netlink.SCOPE_LINK}); err != nil {
		return nil, fmt.Errorf("pod %s: route: %w", p.key(), err)
	}
	ph, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("pod %s: netlink: %w", p.key(), err)
	}
	defer ph.Close()
	eth, err := ph.LinkByName("eth0")
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", p.key(), err)
	}
	steps := []struct {
		what string
		fn   func() error
	}{
		{"address", func() error { return ph.AddrAdd(eth, kerneltest.Addr(p.IP, 32)) }},
		{"eth0 up", func() error { return ph.LinkSetUp(eth) }},
		{"gateway route", func() error {
			return ph.RouteAdd(&netlink.Route{LinkIndex: eth.Attrs().Index, Dst: kerneltest.HostNet(podGateway), Scope: netlink.SCOPE_LINK})
		}},
		{"default route", func() error {
			return ph.RouteAdd(&netlink.Route{LinkIndex: eth.Attrs().Index, Gw: podGateway.AsSlice(),
				Dst: &net.IPNet{IP: net.IPv4zero, Mask: net.CIDRMask(0, 32)}})
		}},
	}
	for _, s := range steps {
		if err := s.fn(); err != nil {
			return nil, fmt.Errorf("pod %s: %s: %w", p.key(), s.what, err)
		}
	}
	for _, port := range p.Ports {
		c, err := serve(ns, port, p.Name)
		if err != nil {
			return nil, fmt.Errorf("pod %s: serve %s/%d: %w", p.key(), port.Protocol, port.ContainerPort, err)
		}
		pn.closers = append(pn.closers, c)
	}
	return pn, nil
}

// close stops the servers and removes the veth; the namespace goes with its
// last reference.
func (pn *podNet) close() error {
	var errs []error
	for _, c := range pn.closers {
		errs = append(errs, c.Close())
	}
	if l, err := pn.node.h.LinkByName(pn.veth); err == nil {
		errs = append(errs, pn.node.h.LinkDel(l))
	}
	errs = append(errs, pn.ns.Close())
	return errors.Join(errs...)
}

// serve answers on the container port inside ns: TCP connections get name,
// UDP datagrams an echo of name.
func serve(ns netns.NsHandle, port corev1.ContainerPort, name string) (io.Closer, error) {
	addr := ":" + strconv.Itoa(int(port.ContainerPort))
	var c io.Closer
	err := kerneltest.Do(ns, func() error {
		switch port.Protocol {
		case corev1.ProtocolTCP, "":
			l, err := net.Listen("tcp4", addr)
			if err != nil {
				return err
			}
			c = l
			go func() {
				for {
					conn, err := l.Accept()
					if err != nil {
						return
					}
					conn.Write([]byte(name))
					conn.Close()
				}
			}()
		case corev1.ProtocolUDP:
			pc, err := net.ListenPacket("udp4", addr)
			if err != nil {
				return err
			}
			c = pc
			go func() {
				buf := make([]byte, 64)
				for {
					_, from, err := pc.ReadFrom(buf)
					if err != nil {
						return
					}
					pc.WriteTo([]byte(name), from)
				}
			}()
		default:
			// SCTP: the host kernel here has no SCTP module.
			return fmt.Errorf("protocol %s not served", port.Protocol)
		}
		return nil
	})
	return c, err
}
