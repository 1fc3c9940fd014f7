package cluster

import (
	"context"
	"fmt"
	"strings"
)

// Summary is what one nfrouter reports about its work, read from its metrics
// endpoint, plus the execve count from strace.
type Summary struct {
	Node            string
	EventsChanged   float64 // events that changed the model
	EventsIgnored   float64 // events that changed nothing nfrouter reads
	Syncs           float64 // nftables backend syncs, all reasons
	Transactions    float64 // nftables transactions sent
	NetlinkMessages float64
	ElementsAdded   float64
	ElementsRemoved float64
	ChainsRewritten float64
	CPUSeconds      float64 // user and system CPU of the nfrouter process, from /proc
	Execs           int
}

// SummaryOf builds a Summary from a scrape, an execve count and the CPU
// time used.
func SummaryOf(node string, m Metrics, execs int, cpu float64) Summary {
	return Summary{
		Node:            node,
		EventsChanged:   m.Sum("nfrouter_watch_events_total", `result="changed"`),
		EventsIgnored:   m.Sum("nfrouter_watch_events_total", `result="ignored"`),
		Syncs:           m.Sum("nfrouter_syncs_total", `backend="nftables"`),
		Transactions:    m.Sum("nfrouter_nft_transactions_total"),
		NetlinkMessages: m.Sum("nfrouter_nft_netlink_messages_total"),
		ElementsAdded:   m.Sum("nfrouter_nft_elements_added_total"),
		ElementsRemoved: m.Sum("nfrouter_nft_elements_removed_total"),
		ChainsRewritten: m.Sum("nfrouter_nft_chains_rewritten_total"),
		CPUSeconds:      cpu,
		Execs:           execs,
	}
}

// Minus is the work done between two summaries.
func (s Summary) Minus(o Summary) Summary {
	return Summary{Node: s.Node, EventsChanged: s.EventsChanged - o.EventsChanged, EventsIgnored: s.EventsIgnored - o.EventsIgnored,
		Syncs: s.Syncs - o.Syncs, Transactions: s.Transactions - o.Transactions, NetlinkMessages: s.NetlinkMessages - o.NetlinkMessages,
		ElementsAdded: s.ElementsAdded - o.ElementsAdded, ElementsRemoved: s.ElementsRemoved - o.ElementsRemoved,
		ChainsRewritten: s.ChainsRewritten - o.ChainsRewritten, CPUSeconds: s.CPUSeconds - o.CPUSeconds, Execs: s.Execs - o.Execs}
}

func (s Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: events changed=%.0f ignored=%.0f, nftables syncs=%.0f, transactions=%.0f (netlink messages=%.0f, elements +%.0f/-%.0f, chains rewritten=%.0f), CPU=%.2fs, execve=%d",
		s.Node, s.EventsChanged, s.EventsIgnored, s.Syncs, s.Transactions, s.NetlinkMessages,
		s.ElementsAdded, s.ElementsRemoved, s.ChainsRewritten, s.CPUSeconds, s.Execs)
	return b.String()
}

// PerReplacement says what one pod replacement cost: the work between two
// summaries divided by the number of replacements, in the field report's
// terms (kube-router spent ~1.1 CPU-seconds and 65 processes on each).
func (s Summary) PerReplacement(n int) string {
	if n == 0 {
		return s.Node + ": no pod replaced"
	}
	return fmt.Sprintf("%s: per pod replacement: %.1f ms CPU, %.1f transactions, %.1f netlink messages, %d processes started in all",
		s.Node, 1000*s.CPUSeconds/float64(n), s.Transactions/float64(n), s.NetlinkMessages/float64(n), s.Execs)
}

// Summary scrapes r and counts its execs.
func (r *NFRouter) Summary(ctx context.Context) (Summary, error) {
	m, err := r.Metrics(ctx)
	if err != nil {
		return Summary{}, err
	}
	n, _, err := r.Execs()
	if err != nil {
		return Summary{}, err
	}
	cpu, err := r.CPUSeconds()
	if err != nil {
		return Summary{}, err
	}
	return SummaryOf(r.Node.Name, m, n, cpu), nil
}
