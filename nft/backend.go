package nft

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/google/nftables"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/ruleset"
)

// nfrouter's one table; every part writes into it.
const (
	TableFamily = "inet"
	TableName   = "nfrouter"
)

// Part is one planner's share of nfrouter's table: the firewall, the service
// proxy's NAT, pod egress masquerading. Each writes chains and sets under
// names of its own into the ruleset.Table it was made with; the Backend
// programs all of them in one transaction per sync.
type Part interface {
	// Name names the part in logs.
	Name() string
	// Kinds are the model kinds the part reads.
	Kinds() model.Kinds
	// Plan brings the part's objects in line with state. changes holds only
	// the part's kinds, or is Full: then the part compares state with what it
	// planned last.
	Plan(ctx context.Context, state *model.State, changes *model.Changes)
}

// Applied is implemented by parts with work to do once the kernel holds the
// table they planned (sysctls, for instance). An error makes the next sync
// full.
type Applied interface {
	Applied(ctx context.Context, full bool) error
}

// Config configures the nftables backend.
type Config struct {
	Logger     *slog.Logger          // nil: slog.Default()
	Registerer prometheus.Registerer // nil: no metrics
	// NetNSFd is an open network namespace to program; 0 means the current
	// one. Tests use it.
	NetNSFd int
}

// Backend programs nfrouter's nftables table from its parts: it implements
// watch.Backend. An incremental sync with nothing to change sends nothing; a
// full sync (first, periodic, after a failure) reads the table back and
// repairs what differs.
type Backend struct {
	log     *slog.Logger
	metrics *metrics

	// mu serializes Sync and guards the fields below.
	mu       sync.Mutex
	table    *ruleset.Table
	parts    []Part
	applier  *applier
	needFull bool
	last     Stats
}

// New opens the netlink socket and returns a backend without parts; it
// programs nothing until the first Sync.
func New(cfg Config) (*Backend, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("nftables: register metrics: %w", err)
	}
	a, err := newApplier(nftables.TableFamilyINet, TableName, cfg.NetNSFd)
	if err != nil {
		return nil, fmt.Errorf("nftables: %w", err)
	}
	return &Backend{log: log.With("backend", "nftables"), metrics: m,
		table: ruleset.NewTable(TableFamily, TableName), applier: a, needFull: true}, nil
}

// Table is the desired table the parts write into.
func (b *Backend) Table() *ruleset.Table { return b.table }

// Add adds a part; call it before the first Sync.
func (b *Backend) Add(p Part) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.parts = append(b.parts, p)
	b.needFull = true
}

// Name implements watch.Backend.
func (b *Backend) Name() string { return "nftables" }

// Kinds implements watch.Backend: what any part reads.
func (b *Backend) Kinds() model.Kinds {
	b.mu.Lock()
	defer b.mu.Unlock()
	var k model.Kinds
	for _, p := range b.parts {
		k |= p.Kinds()
	}
	return k
}

// Sync implements watch.Backend.
func (b *Backend) Sync(ctx context.Context, state *model.State, changes *model.Changes) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	start := time.Now()
	full := b.needFull || changes == nil || changes.Full
	if full {
		changes = &model.Changes{Full: true}
	}
	for _, p := range b.parts {
		if ch := changes.Only(p.Kinds()); full || !ch.Empty() {
			p.Plan(ctx, state, ch)
		}
	}
	planned := time.Now()
	stats, err := b.applier.apply(b.table, full)
	b.metrics.observe(stats, err)
	b.metrics.syncDuration.Observe(time.Since(start).Seconds())
	b.last = stats
	if err != nil {
		b.needFull = true
		return fmt.Errorf("nftables: %w", err)
	}
	for _, p := range b.parts {
		if a, ok := p.(Applied); ok {
			if err := a.Applied(ctx, full); err != nil {
				b.needFull = true
				return fmt.Errorf("nftables: %s: %w", p.Name(), err)
			}
		}
	}
	b.needFull = false
	if stats.Messages > 0 {
		lvl := slog.LevelDebug
		if full || stats.ChainsRewritten > 0 {
			lvl = slog.LevelInfo
		}
		b.log.Log(ctx, lvl, "programmed nftables", "full", full, "messages", stats.Messages, "bytes", stats.Bytes,
			"elements_added", stats.ElementsAdded, "elements_removed", stats.ElementsRemoved,
			"chains_rewritten", stats.ChainsRewritten, "plan", planned.Sub(start), "duration", time.Since(start))
	}
	return nil
}

// LastStats returns the statistics of the last transaction Sync attempted.
func (b *Backend) LastStats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

// Close closes the netlink socket; the programmed table stays.
func (b *Backend) Close() error { return b.applier.close() }

// Render writes the table that parts would program for state, in nft syntax,
// touching nothing (--dry-run). The output loads with `nft -f`. newParts
// makes the parts on the table they are to write into.
func Render(ctx context.Context, w io.Writer, state *model.State, newParts func(*ruleset.Table) ([]Part, error)) error {
	t := ruleset.NewTable(TableFamily, TableName)
	parts, err := newParts(t)
	if err != nil {
		return err
	}
	if len(parts) == 0 {
		return errors.New("nothing to render: no part of the nftables table is enabled")
	}
	for _, p := range parts {
		p.Plan(ctx, state, &model.Changes{Full: true})
	}
	return ruleset.Render(w, t)
}
