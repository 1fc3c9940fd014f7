package ipvs

import (
	"flag"
	"github.com/nfrouter/nfrouter/integration/golden"
	"slices"

	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudflare/ipvs"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/model/modeltest"
)

var update = flag.Bool("update", false, "rewrite golden files")

const thisNode = "node-a"

// Short names for the model builders the tests use everywhere.
var (
	svc        = modeltest.Svc
	addrs      = modeltest.Addrs
	clusterIPs = modeltest.ClusterIPs
	proto      = modeltest.Proto
	ep         = modeltest.Ep
)

// newState returns a state holding the given service ports, endpoints by
// service port, and this node with the given addresses.
func newState(node *model.Node, ports []*model.ServicePort, eps map[model.ServicePortKey]model.Endpoints) *model.State {
	var nodes []*model.Node
	if node != nil {
		nodes = append(nodes, node)
	}
	return modeltest.NewState(nodes, ports, eps)
}

// dumpPlanner is the canonical text of what a planner wants.
func dumpPlanner(p *Planner) string {
	var b strings.Builder
	for _, vs := range p.Services() {
		b.WriteString(vs.String() + "\n")
	}
	fmt.Fprintf(&b, "vips:")
	for _, a := range p.VIPs() {
		b.WriteString(" " + a.String())
	}
	b.WriteString("\n")
	return b.String()
}

// compareGolden compares got with testdata/<name>.golden; -update rewrites it.
func compareGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Compare(t, filepath.Join("testdata", name+".golden"), got, *update)
}

// dumpKernel reads IPVS and the dummy interface back, real or fake, in the
// canonical text that dumpWant writes for a planner.
func dumpKernel(t testing.TB, k IPVS, a Addresses) string {
	t.Helper()
	svcs, err := k.Services()
	if err != nil {
		t.Fatalf("list services: %v", err)
	}
	var lines []string
	for _, s := range svcs {
		dests, err := k.Destinations(s.Service)
		if err != nil {
			t.Fatalf("list destinations of %s: %v", keyOf(s.Service), err)
		}
		var ds []string
		for _, d := range dests {
			ds = append(ds, fmt.Sprintf("%s w=%d", Dest{d.Address.Unmap(), d.Port}, d.Weight))
		}
		slices.Sort(ds)
		lines = append(lines, dumpServiceLine(keyOf(s.Service), s.Scheduler, s.Flags&^ipvs.ServiceHashed, s.Timeout, s.Netmask.Bits(), ds))
	}
	slices.Sort(lines)
	vips, err := a.List()
	if err != nil {
		t.Fatalf("list addresses: %v", err)
	}
	slices.SortFunc(vips, netip.Addr.Compare)
	return strings.Join(lines, "") + dumpVIPs(vips)
}

// dumpWant is what dumpKernel should read once the planner's wishes are
// programmed, with the given destinations still draining at weight 0.
func dumpWant(p *Planner, draining map[VSKey][]Dest) string {
	var lines []string
	for _, vs := range p.Services() {
		want := kernelService(vs)
		var ds []string
		for _, d := range vs.Dests {
			ds = append(ds, d.String()+" w=1")
		}
		for _, d := range draining[vs.VSKey] {
			ds = append(ds, d.String()+" w=0")
		}
		slices.Sort(ds)
		lines = append(lines, dumpServiceLine(vs.VSKey, want.Scheduler, want.Flags, want.Timeout, want.Netmask.Bits(), ds))
	}
	slices.Sort(lines)
	return strings.Join(lines, "") + dumpVIPs(p.VIPs())
}

func dumpServiceLine(k VSKey, sched string, flags ipvs.Flags, timeout uint32, mask int, dests []string) string {
	return fmt.Sprintf("%s sched=%s flags=%#x timeout=%d mask=/%d -> [%s]\n", k, sched, uint32(flags), timeout, mask, strings.Join(dests, ", "))
}

func dumpVIPs(vips []netip.Addr) string {
	var b strings.Builder
	b.WriteString("kube-dummy-if:")
	for _, a := range vips {
		b.WriteString(" " + a.String())
	}
	return b.String() + "\n"
}
