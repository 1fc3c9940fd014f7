package nft

import (
	"sync"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/nfrouter/nfrouter/nft/internal/nftconn"
	"github.com/nfrouter/nfrouter/nft/netpol"
)

// deniedCollector exports the packets the firewall's deny chains dropped,
// read from their counters at scrape time: the kernel counts, nfrouter
// keeps no copy.
type deniedCollector struct {
	nsFd int
	desc *prometheus.Desc
	// mu protects chains, the deny chains of the last planned table.
	mu     sync.Mutex
	chains []netpol.DenyChain
}

func newDeniedCollector(nsFd int) *deniedCollector {
	return &deniedCollector{nsFd: nsFd, desc: prometheus.NewDesc("nfrouter_firewall_denied_packets_total",
		"Packets dropped because no network policy allowed them, by the namespace whose policies isolate the pod "+
			"and direction (empty: addresses of the node's pod CIDRs that are no known pod).",
		[]string{"namespace", "direction"}, nil)}
}

// set records the deny chains the table now holds.
func (c *deniedCollector) set(chains []netpol.DenyChain) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.chains = chains
}

func (c *deniedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect lists each deny chain's rules and reports its counter. A chain
// that cannot be read (not programmed yet) is left out.
func (c *deniedCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	chains := c.chains
	c.mu.Unlock()
	conn, err := nftconn.Open(c.nsFd)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	tbl := &nftables.Table{Family: nftables.TableFamilyINet, Name: netpol.Table}
	for _, dc := range chains {
		rules, err := conn.GetRules(tbl, &nftables.Chain{Name: dc.Chain, Table: tbl})
		if err != nil {
			continue
		}
		dir := ""
		if dc.Namespace != "" {
			dir = "egress"
			if dc.Ingress {
				dir = "ingress"
			}
		}
		for _, r := range rules {
			for _, e := range r.Exprs {
				if cnt, ok := e.(*expr.Counter); ok {
					ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(cnt.Packets), dc.Namespace, dir)
				}
			}
		}
	}
}
