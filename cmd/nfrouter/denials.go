package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/nfrouter/nfrouter/model"
	"github.com/nfrouter/nfrouter/nft/netpol"
	"github.com/nfrouter/nfrouter/nft/nflog"
)

// denialsOptions are the flags of `nfrouter denials`.
type denialsOptions struct {
	source  sourceOptions
	group   uint16
	count   int
	timeout time.Duration
	output  string
	log     toolLog
}

const denialsUsage = `Usage: nfrouter denials [flags]

Prints each packet the firewall drops, as the deny chain logs it to NFLOG
group 100 in this network namespace (run it where the agent runs: the node's
namespace), with source and destination named as pods where the model knows
the addresses, the log prefix, and the policies isolating the pods: the
source's egress policies and the destination's ingress policies. The log is
rate-limited; a drop beyond the limit is not shown. Needs CAP_NET_ADMIN, and
the group to itself (no ulogd on it).

`

func parseDenialsOptions(args []string) (*denialsOptions, error) {
	o := &denialsOptions{}
	fs := newCommandFlags("denials")
	fs.IntVar(&o.count, "count", 0, "Exit after this many packets; 0: run until interrupted.")
	fs.DurationVar(&o.timeout, "timeout", 0, "Exit after this long; 0: run until interrupted.")
	fs.StringVarP(&o.output, "output", "o", "table", "Output format: table, or json (one object per line).")
	fs.Uint16Var(&o.group, "nflog-group", netpol.NFLogGroup, "NFLOG group to read.")
	o.source.addFlags(fs)
	o.log.addFlags(fs)
	if err := parseCommandFlags(fs, denialsUsage, args); err != nil {
		return nil, err
	}
	var errs []string
	if o.count < 0 {
		errs = append(errs, fmt.Sprintf("--count must not be negative, not %d", o.count))
	}
	if o.timeout < 0 {
		errs = append(errs, fmt.Sprintf("--timeout must not be negative, not %s", o.timeout))
	}
	if err := toolFlagsError(errs, o.output, o.log, &o.source); err != nil {
		return nil, err
	}
	return o, nil
}

func runDenials(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseDenialsOptions(args)
	if code, done := flagsDone("nfrouter denials", err, stdout, stderr); done {
		return code
	}
	log := o.log.logger(stderr)
	if err := watchDenials(ctx, o, stdout, log, nil); err != nil {
		log.Error("nfrouter denials failed", "error", err)
		return exitFailure
	}
	return exitOK
}

// denial is one dropped packet, as printed.
type denial struct {
	Time      time.Time   `json:"time"`
	Prefix    string      `json:"prefix"`
	Hook      string      `json:"hook"`
	Protocol  string      `json:"protocol"`
	Port      uint16      `json:"port"` // destination port; ICMP: the type
	From      denialEnd   `json:"from"`
	To        denialEnd   `json:"to"`
	Isolating []isolation `json:"isolating"`
}

type denialEnd struct {
	IP   netip.Addr `json:"ip"`
	Port uint16     `json:"port,omitempty"` // the source's port
	Pod  string     `json:"pod,omitempty"`
	Node string     `json:"node,omitempty"`
}

// isolation is a policy isolating one end of a dropped packet.
type isolation struct {
	Policy    string `json:"policy"`
	Pod       string `json:"pod"`
	Direction string `json:"direction"` // egress (of the source) or ingress (of the destination)
}

// watchDenials reads NFLOG in the current network namespace and prints
// each dropped packet until ctx is done, --count packets came or --timeout
// passed. ready, if not nil, is called once the group is bound.
func watchDenials(ctx context.Context, o *denialsOptions, w io.Writer, log *slog.Logger, ready func()) error {
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	// The informers keep the model current while packets come.
	store, err := openModel(ctx, o.source, log)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil // --timeout ran out before the model was read
	}
	if err != nil {
		return err
	}
	r, err := nflog.Listen(o.group, 0)
	if err != nil {
		return err
	}
	defer r.Close()
	log.Info("Reading dropped packets", "nflogGroup", o.group)
	if ready != nil {
		ready()
	}
	names := &podIndex{}
	if o.output == "table" {
		printDenialHeader(w)
	}
	for n := 0; o.count == 0 || n < o.count; {
		pkt, err := r.Read(ctx)
		switch {
		case errors.Is(err, nflog.ErrOverrun):
			log.Warn("Dropped packets were lost: the reader fell behind", "error", err)
			continue
		case ctx.Err() != nil:
			return nil // interrupted, or --timeout
		case err != nil:
			return err
		}
		d := describeDenial(pkt, names.update(store))
		if err := printDenial(w, d, o.output); err != nil {
			return err
		}
		n++
	}
	return nil
}

// podIndex finds pods by address in the latest model.
type podIndex struct {
	st    *model.State
	byIP  map[netip.Addr]*model.Pod
	nodes map[netip.Addr]string
}

// update takes the store's latest state, reindexing when it changed.
func (x *podIndex) update(store *model.Store) *podIndex {
	st, changes := store.Snapshot()
	if x.st != nil && changes.Len() == 0 {
		return x
	}
	x.st, x.byIP, x.nodes = st, map[netip.Addr]*model.Pod{}, map[netip.Addr]string{}
	// Keys in reverse order: of pods sharing an address, the first by key is
	// written last and wins, as in explain.
	for _, k := range slices.SortedFunc(st.Pods.Keys(), func(a, b model.PodKey) int { return cmp.Compare(b.String(), a.String()) }) {
		for _, ip := range st.Pods.Get(k).IPs {
			x.byIP[ip] = st.Pods.Get(k)
		}
	}
	for name, n := range st.Nodes.All() {
		for _, ip := range slices.Concat(n.InternalIPs, n.ExternalIPs) {
			x.nodes[ip] = name
		}
	}
	return x
}

// describeDenial names the packet's ends and the policies isolating them.
func describeDenial(pkt nflog.Packet, x *podIndex) denial {
	d := denial{Time: pkt.Received, Prefix: pkt.Prefix, Hook: nflog.HookName(pkt.Hook), Protocol: protocolName(pkt.Proto), Port: pkt.DPort,
		From: denialEnd{IP: pkt.Src, Port: pkt.SPort}, To: denialEnd{IP: pkt.Dst}, Isolating: []isolation{}}
	for _, end := range []struct {
		e         *denialEnd
		isIngress bool
	}{{&d.From, false}, {&d.To, true}} {
		pod := x.byIP[end.e.IP]
		if pod == nil {
			end.e.Node = x.nodes[end.e.IP]
			continue
		}
		end.e.Pod, end.e.Node = pod.Key().String(), pod.Node
		var keys []model.PolicyKey
		for k, pol := range x.st.Policies.All() {
			if pol.Selects(pod) && ((end.isIngress && pol.Ingress) || (!end.isIngress && pol.Egress)) {
				keys = append(keys, k)
			}
		}
		slices.SortFunc(keys, func(a, b model.PolicyKey) int { return cmp.Compare(a.String(), b.String()) })
		for _, k := range keys {
			iso := isolation{Policy: k.String(), Pod: end.e.Pod, Direction: "egress"}
			if end.isIngress {
				iso.Direction = "ingress"
			}
			d.Isolating = append(d.Isolating, iso)
		}
	}
	return d
}

func protocolName(p uint8) string {
	switch p {
	case 1:
		return "ICMP"
	case 58:
		return "ICMPv6"
	}
	return strings.ToUpper(model.Protocol(p).String())
}

const denialColumns = "%-12s  %-28s  %-10s  %-36s  %-36s  %s\n"

func printDenialHeader(w io.Writer) {
	fmt.Fprintf(w, denialColumns, "TIME", "PREFIX", "PROTO", "FROM", "TO", "ISOLATED BY")
}

func printDenial(w io.Writer, d denial, format string) error {
	if format == "json" {
		return json.NewEncoder(w).Encode(d)
	}
	end := func(e denialEnd) string {
		s := e.IP.String()
		if e.Pod != "" {
			s = e.Pod + " (" + s + ")"
		} else if e.Node != "" {
			s = "node " + e.Node + " (" + s + ")"
		}
		return s
	}
	var iso []string
	for _, i := range d.Isolating {
		iso = append(iso, fmt.Sprintf("%s of %s: %s", i.Direction, i.Pod, i.Policy))
	}
	if len(iso) == 0 {
		iso = []string{"-"}
	}
	prefix := strings.TrimRight(d.Prefix, ": ") // the firewall's end in ": " for the kernel log
	if prefix == "" {
		prefix = "-"
	}
	_, err := fmt.Fprintf(w, denialColumns, d.Time.Format("15:04:05.000"), prefix,
		fmt.Sprintf("%s/%d", d.Protocol, d.Port), end(d.From), end(d.To), strings.Join(iso, "; "))
	return err
}
