package main

import (
	"encoding/json"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	cfipvs "github.com/cloudflare/ipvs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/nfrouter/nfrouter/ipvs"
	"github.com/nfrouter/nfrouter/nft"
	"github.com/nfrouter/nfrouter/nft/ruleset"
	"github.com/nfrouter/nfrouter/watch"
)

// metricNames records the name of every metric registered with it.
type metricNames map[string]bool

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (m metricNames) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		if s := fqName.FindStringSubmatch(d.String()); s != nil {
			m[s[1]] = true
		}
	}
	return nil
}

func (m metricNames) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = m.Register(c)
	}
}

func (m metricNames) Unregister(prometheus.Collector) bool { return true }

// noIPVS is an IPVS and dummy interface that hold nothing.
type noIPVS struct{}

func (noIPVS) Services() ([]cfipvs.ServiceExtended, error)                       { return nil, nil }
func (noIPVS) CreateService(cfipvs.Service) error                                { return nil }
func (noIPVS) UpdateService(cfipvs.Service) error                                { return nil }
func (noIPVS) RemoveService(cfipvs.Service) error                                { return nil }
func (noIPVS) Destinations(cfipvs.Service) ([]cfipvs.DestinationExtended, error) { return nil, nil }
func (noIPVS) CreateDestination(cfipvs.Service, cfipvs.Destination) error        { return nil }
func (noIPVS) UpdateDestination(cfipvs.Service, cfipvs.Destination) error        { return nil }
func (noIPVS) RemoveDestination(cfipvs.Service, cfipvs.Destination) error        { return nil }
func (noIPVS) Ensure() error                                                     { return nil }
func (noIPVS) List() ([]netip.Addr, error)                                       { return nil, nil }
func (noIPVS) Add(netip.Addr) error                                              { return nil }
func (noIPVS) Delete(netip.Addr) error                                           { return nil }

// exportedMetrics registers every metric nfrouter has, as the agent does
// with every backend on (the nftables backend with all its parts, the IPVS
// proxy, the router), and returns their names.
func exportedMetrics(t *testing.T) metricNames {
	t.Helper()
	names := metricNames{}
	names.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), newBuildInfo())
	watch.NewMetrics(names)
	o, err := parseOptions(nil)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	// Every backend, with the nftables service proxy.
	b, err := newBackends(wiring{o: o, nodeName: "node-1", log: log, proxyMode: proxyModeNFTables, reg: names})
	if err != nil {
		t.Fatal(err)
	}
	b.close(log)
	// The IPVS proxy (without a kernel) and its nftables part.
	if _, err := ipvs.New(ipvs.Config{PlanConfig: ipvs.PlanConfig{NodeName: "node-1"}, IPVS: noIPVS{}, Addresses: noIPVS{},
		SysctlRoot: "-", Logger: log, Registerer: names}); err != nil {
		t.Fatal(err)
	}
	w := wiring{o: o, nodeName: "node-1", log: log, proxyMode: proxyModeIPVS, reg: names}
	if _, err := makeParts(ruleset.NewTable(nft.TableFamily, nft.TableName), []nftPart{ipvsNATPart(w)}); err != nil {
		t.Fatal(err)
	}
	return names
}

// TestDashboardQueriesNameExportedMetrics: every metric a query of
// deploy/grafana's dashboard names is one nfrouter registers (a histogram's
// _bucket, _sum and _count series included).
func TestDashboardQueriesNameExportedMetrics(t *testing.T) {
	names := exportedMetrics(t)
	for _, want := range []string{"nfrouter_syncs_total", "nfrouter_nft_netlink_messages_total", "nfrouter_ipvs_services",
		"nfrouter_bgp_peers", "nfrouter_build_info", "nfrouter_firewall_policies_failed_closed"} {
		if !names[want] {
			t.Fatalf("collecting the registered metrics missed %s (got %d names)", want, len(names))
		}
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "grafana", "nfrouter-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Query any `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	var exprs []string
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		if q, ok := v.Query.(string); ok && strings.Contains(q, "(") {
			exprs = append(exprs, q)
		}
	}
	if len(exprs) < 20 {
		t.Fatalf("%d queries in the dashboard", len(exprs))
	}
	metric := regexp.MustCompile(`\b(?:nfrouter|go|process)_[a-z0-9_]+\b`)
	used := map[string]bool{}
	for _, e := range exprs {
		found := metric.FindAllString(e, -1)
		if len(found) == 0 {
			t.Errorf("query names no nfrouter metric: %s", e)
		}
		for _, m := range found {
			base := m
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(m, suffix); ok && names[b] {
					base = b
				}
			}
			used[base] = true
			if names[base] {
				continue
			}
			t.Errorf("query names %s, which nfrouter does not export: %s", m, e)
		}
	}
	// The list of what the dashboard shows.
	for _, want := range []string{"nfrouter_syncs_total", "nfrouter_sync_duration_seconds", "nfrouter_event_to_sync_seconds",
		"nfrouter_watch_events_total", "nfrouter_nft_netlink_messages_total", "nfrouter_ipvs_netlink_operations_total",
		"nfrouter_firewall_denied_packets_total", "nfrouter_bgp_peers", "nfrouter_bgp_routes_installed", "nfrouter_ipvs_services"} {
		if !used[want] {
			t.Errorf("the dashboard does not show %s", want)
		}
	}
	var unused []string
	for n := range names {
		if strings.HasPrefix(n, "nfrouter_") && !used[n] {
			unused = append(unused, n)
		}
	}
	slices.Sort(unused)
	t.Logf("nfrouter metrics not on the dashboard: %v", unused)
}
