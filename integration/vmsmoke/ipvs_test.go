package vmsmoke

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/cloudflare/ipvs"
	"github.com/cloudflare/ipvs/netmask"

	"github.com/nfrouter/nfrouter/integration/vm/kerneltest"
)

// schedulers are the IPVS schedulers nfrouter supports.
var schedulers = []string{"rr", "wrr", "lc", "dh", "sh", "mh"}

func TestIPVSServicesReadBack(t *testing.T) {
	kerneltest.RequireRoot(t)
	for _, sched := range schedulers {
		t.Run(sched, func(t *testing.T) {
			ns := kerneltest.NewNetNS(t)
			c := ipvsAt(t, ns)
			svc := ipvs.Service{
				Address:   netip.MustParseAddr("10.96.0.10"),
				Netmask:   netmask.MaskFrom(32, 32), // the kernel refuses a service without one
				Port:      80,
				Family:    ipvs.INET,
				Protocol:  ipvs.TCP,
				Scheduler: sched,
			}
			if err := c.CreateService(svc); err != nil {
				t.Fatalf("create service: %v", err)
			}
			want := []ipvs.Destination{
				{Address: netip.MustParseAddr("10.0.0.2"), Port: 8080, Family: ipvs.INET, FwdMethod: ipvs.Masquerade, Weight: 1},
				{Address: netip.MustParseAddr("10.0.0.3"), Port: 8080, Family: ipvs.INET, FwdMethod: ipvs.Masquerade, Weight: 2},
			}
			for _, d := range want {
				if err := c.CreateDestination(svc, d); err != nil {
					t.Fatalf("create destination %s: %v", d.Address, err)
				}
			}

			got, err := c.Service(svc)
			if err != nil {
				t.Fatalf("read service back: %v", err)
			}
			if got.Scheduler != sched || got.Address != svc.Address || got.Port != svc.Port || got.Netmask != svc.Netmask {
				t.Errorf("service read back as %+v, want %+v", got.Service, svc)
			}
			dests, err := c.Destinations(svc)
			if err != nil {
				t.Fatalf("read destinations back: %v", err)
			}
			var gotDests []ipvs.Destination
			for _, d := range dests {
				gotDests = append(gotDests, ipvs.Destination{
					Address: d.Address, Port: d.Port, Family: d.Family, FwdMethod: d.FwdMethod, Weight: d.Weight,
				})
			}
			slices.SortFunc(gotDests, func(a, b ipvs.Destination) int { return a.Address.Compare(b.Address) })
			if !slices.Equal(gotDests, want) {
				t.Errorf("destinations read back as %+v, want %+v", gotDests, want)
			}
		})
	}
}
