package ipvs

import (
	"errors"
	"net/netip"
	"os"

	"github.com/cloudflare/ipvs"
	"github.com/cloudflare/ipvs/netmask"
	"golang.org/x/sys/unix"

	"github.com/nfrouter/nfrouter/model"
)

// IPVS is the part of github.com/cloudflare/ipvs's Client the applier uses.
// Every call is one netlink request.
type IPVS interface {
	Services() ([]ipvs.ServiceExtended, error)
	CreateService(ipvs.Service) error
	UpdateService(ipvs.Service) error
	RemoveService(ipvs.Service) error
	Destinations(ipvs.Service) ([]ipvs.DestinationExtended, error)
	CreateDestination(ipvs.Service, ipvs.Destination) error
	UpdateDestination(ipvs.Service, ipvs.Destination) error
	RemoveDestination(ipvs.Service, ipvs.Destination) error
}

// Addresses is the dummy interface that carries the virtual addresses.
type Addresses interface {
	// Ensure creates the interface when it is missing and sets it up.
	Ensure() error
	// List returns the interface's addresses, without link-local ones.
	List() ([]netip.Addr, error)
	Add(netip.Addr) error
	Delete(netip.Addr) error
}

// The kernel's answers that idempotent operations accept.
func isExist(err error) bool { return errors.Is(err, unix.EEXIST) }

func isGone(err error) bool {
	return errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EADDRNOTAVAIL)
}

// kernelService is the IPVS service for a desired virtual service.
func kernelService(vs *VirtualService) ipvs.Service {
	s := serviceID(vs.VSKey)
	s.Scheduler = vs.Scheduler
	s.Flags = vs.Flags
	s.Timeout = vs.Timeout
	return s
}

// serviceID is the identity of a virtual service, with the netmask IPVS
// requires: the persistence granularity, one client address.
func serviceID(k VSKey) ipvs.Service {
	s := ipvs.Service{Address: k.Addr, Port: k.Port, Protocol: ipvs.Protocol(k.Proto), Family: ipvs.INET,
		Netmask: netmask.MaskFrom(32, 32)}
	if !k.Addr.Is4() {
		s.Family = ipvs.INET6
		s.Netmask = netmask.MaskFrom(128, 128)
	}
	return s
}

// keyOf returns the key of a service read from the kernel.
func keyOf(s ipvs.Service) VSKey {
	return VSKey{Addr: s.Address.Unmap(), Proto: model.Protocol(s.Protocol), Port: s.Port}
}

// sameParams reports whether a service read back has the wanted scheduler,
// flags, timeout and netmask. The kernel adds the hashed flag.
func sameParams(got, want ipvs.Service) bool {
	return got.Scheduler == want.Scheduler && got.Flags&^ipvs.ServiceHashed == want.Flags &&
		got.Timeout == want.Timeout && got.Netmask.Bits() == want.Netmask.Bits()
}

// kernelDest is the IPVS destination for d with weight w.
func kernelDest(d Dest, w uint32) ipvs.Destination {
	fam := ipvs.INET
	if !d.Addr.Is4() {
		fam = ipvs.INET6
	}
	return ipvs.Destination{Address: d.Addr, Port: d.Port, Family: fam, FwdMethod: ipvs.Masquerade, Weight: w}
}

// dumpClient adapts cloudflare/ipvs's client: it reports an empty dump as
// os.ErrNotExist, and the kernel answers a dump of the destinations of a
// missing service with an empty dump too; both mean "none" here.
type dumpClient struct{ ipvs.Client }

func (c dumpClient) Services() ([]ipvs.ServiceExtended, error) {
	s, err := c.Client.Services()
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return s, err
}

func (c dumpClient) Destinations(svc ipvs.Service) ([]ipvs.DestinationExtended, error) {
	d, err := c.Client.Destinations(svc)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return d, err
}
