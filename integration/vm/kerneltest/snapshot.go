package kerneltest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// LinksAndRoutes lists the links and the routes of every table that h sees,
// one line each ("link TYPE NAME", "route DST table N proto N"), sorted, for
// tests that compare a namespace before and after a cleanup.
func LinksAndRoutes(t testing.TB, h *netlink.Handle) []string {
	t.Helper()
	var out []string
	links, err := h.LinkList()
	if err != nil {
		t.Fatalf("list links: %v", err)
	}
	for _, l := range links {
		out = append(out, "link "+l.Type()+" "+l.Attrs().Name)
	}
	routes, err := h.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	if err != nil {
		t.Fatalf("list routes: %v", err)
	}
	for _, r := range routes {
		out = append(out, fmt.Sprintf("route %s table %d proto %d", r.Dst, r.Table, r.Protocol))
	}
	slices.Sort(out)
	return out
}
