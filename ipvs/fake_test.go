package ipvs

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync"

	"github.com/cloudflare/ipvs"
	"golang.org/x/sys/unix"
)

// fakeKernel is IPVS and the dummy interface in memory, answering like the
// kernel: every operation checks everything first and changes state only when
// it succeeds, with the kernel's errnos (EEXIST, ESRCH for a missing
// service, ENOENT for a missing destination or scheduler, EINVAL without a
// netmask, EAFNOSUPPORT for a destination of the other family), and the
// kernel adds the hashed flag. dumpKernel reads it back like the real one.
type fakeKernel struct {
	// mu protects the fields below.
	mu       sync.Mutex
	services map[VSKey]*fakeService
	dummy    bool
	addrs    map[netip.Addr]bool
	// fail makes the next operation with this name fail with EIO.
	fail string
}

type fakeService struct {
	svc   ipvs.Service
	dests map[Dest]*ipvs.DestinationExtended
}

func newFakeKernel() *fakeKernel {
	return &fakeKernel{services: map[VSKey]*fakeService{}, addrs: map[netip.Addr]bool{}}
}

func (f *fakeKernel) failing(op string) error {
	if f.fail == op {
		f.fail = ""
		return fmt.Errorf("fake %s: %w", op, unix.EIO)
	}
	return nil
}

func (f *fakeKernel) Services() ([]ipvs.ServiceExtended, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failing("list_services"); err != nil {
		return nil, err
	}
	var out []ipvs.ServiceExtended
	for _, k := range slices.SortedFunc(maps.Keys(f.services), VSKey.Compare) {
		out = append(out, ipvs.ServiceExtended{Service: f.services[k].svc})
	}
	return out, nil
}

func (f *fakeKernel) checkService(s ipvs.Service) error {
	if !s.Netmask.IsValid() {
		return unix.EINVAL
	}
	if !slices.Contains(Schedulers, s.Scheduler) {
		return unix.ENOENT
	}
	return nil
}

func (f *fakeKernel) CreateService(s ipvs.Service) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failing("create_service"); err != nil {
		return err
	}
	if err := f.checkService(s); err != nil {
		return err
	}
	k := keyOf(s)
	if f.services[k] != nil {
		return unix.EEXIST
	}
	s.Flags |= ipvs.ServiceHashed
	f.services[k] = &fakeService{svc: s, dests: map[Dest]*ipvs.DestinationExtended{}}
	return nil
}

func (f *fakeKernel) UpdateService(s ipvs.Service) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failing("update_service"); err != nil {
		return err
	}
	if err := f.checkService(s); err != nil {
		return err
	}
	fs := f.services[keyOf(s)]
	if fs == nil {
		return unix.ESRCH
	}
	s.Flags |= ipvs.ServiceHashed
	fs.svc = s
	return nil
}

func (f *fakeKernel) RemoveService(s ipvs.Service) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failing("remove_service"); err != nil {
		return err
	}
	if f.services[keyOf(s)] == nil {
		return unix.ESRCH
	}
	delete(f.services, keyOf(s))
	return nil
}

func (f *fakeKernel) Destinations(s ipvs.Service) ([]ipvs.DestinationExtended, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failing("list_destinations"); err != nil {
		return nil, err
	}
	fs := f.services[keyOf(s)]
	if fs == nil {
		return nil, nil // the kernel's empty dump
	}
	var out []ipvs.DestinationExtended
	for _, d := range slices.SortedFunc(maps.Keys(fs.dests), Dest.Compare) {
		out = append(out, *fs.dests[d])
	}
	return out, nil
}

func (f *fakeKernel) destOp(op string, s ipvs.Service, d ipvs.Destination, fn func(fs *fakeService, k Dest) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failing(op); err != nil {
		return err
	}
	fs := f.services[keyOf(s)]
	if fs == nil {
		return unix.ESRCH
	}
	if d.Address.Is4() != fs.svc.Address.Is4() {
		return unix.EAFNOSUPPORT
	}
	return fn(fs, Dest{Addr: d.Address, Port: d.Port})
}

func (f *fakeKernel) CreateDestination(s ipvs.Service, d ipvs.Destination) error {
	return f.destOp("create_destination", s, d, func(fs *fakeService, k Dest) error {
		if fs.dests[k] != nil {
			return unix.EEXIST
		}
		fs.dests[k] = &ipvs.DestinationExtended{Destination: d}
		return nil
	})
}

func (f *fakeKernel) UpdateDestination(s ipvs.Service, d ipvs.Destination) error {
	return f.destOp("update_destination", s, d, func(fs *fakeService, k Dest) error {
		old := fs.dests[k]
		if old == nil {
			return unix.ENOENT
		}
		old.Destination = d
		return nil
	})
}

func (f *fakeKernel) RemoveDestination(s ipvs.Service, d ipvs.Destination) error {
	return f.destOp("remove_destination", s, d, func(fs *fakeService, k Dest) error {
		if fs.dests[k] == nil {
			return unix.ENOENT
		}
		delete(fs.dests, k)
		return nil
	})
}

// setConnections sets the connection counters of a destination, as traffic
// would.
func (f *fakeKernel) setConnections(k VSKey, d Dest, active, inactive uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fd := f.services[k].dests[d]
	fd.ActiveConnections, fd.InactiveConnections = active, inactive
}

// fakeAddrs is the dummy interface side of the fake.
type fakeAddrs struct{ f *fakeKernel }

func (f *fakeKernel) addresses() Addresses { return fakeAddrs{f} }

func (a fakeAddrs) Ensure() error {
	a.f.mu.Lock()
	defer a.f.mu.Unlock()
	if err := a.f.failing("ensure_interface"); err != nil {
		return err
	}
	a.f.dummy = true
	return nil
}

func (a fakeAddrs) List() ([]netip.Addr, error) {
	a.f.mu.Lock()
	defer a.f.mu.Unlock()
	if !a.f.dummy {
		return nil, unix.ENODEV
	}
	return slices.SortedFunc(maps.Keys(a.f.addrs), netip.Addr.Compare), nil
}

func (a fakeAddrs) Add(addr netip.Addr) error {
	a.f.mu.Lock()
	defer a.f.mu.Unlock()
	if err := a.f.failing("add_address"); err != nil {
		return err
	}
	if !a.f.dummy {
		return unix.ENODEV
	}
	if a.f.addrs[addr] {
		return unix.EEXIST
	}
	a.f.addrs[addr] = true
	return nil
}

func (a fakeAddrs) Delete(addr netip.Addr) error {
	a.f.mu.Lock()
	defer a.f.mu.Unlock()
	if !a.f.dummy {
		return unix.ENODEV
	}
	if !a.f.addrs[addr] {
		return unix.EADDRNOTAVAIL
	}
	delete(a.f.addrs, addr)
	return nil
}
