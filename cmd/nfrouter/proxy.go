package main

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/nfrouter/nfrouter/ipvs"
	"github.com/nfrouter/nfrouter/watch"
)

// Service proxy modes (--service-proxy).
const (
	proxyModeIPVS     = "ipvs"
	proxyModeNFTables = "nftables"
	proxyModeAuto     = "auto"
)

// drainInterval is how often draining IPVS destinations are checked.
const drainInterval = time.Second

// proxyOptions are the service proxy's flags (--run-service-proxy enables it).
type proxyOptions struct {
	mode                string
	nodePortBindOnAllIP bool
	nodePortAddresses   []string
	gracePeriod         time.Duration
	gracefulTermination bool
	nodePortRange       string
	masqueradeAll       bool
	clusterCIDRs        []string
	serviceCIDRs        []string
	hairpinMode         bool
	healthzBindAddress  string

	// Parsed by validate.
	nodePortMin, nodePortMax uint16
	clusterPrefixes          []netip.Prefix
	servicePrefixes          []netip.Prefix
	// nodePortPrefixes are --nodeport-addresses' CIDRs; nil for "primary"
	// and when not given (nodePortAddressesGiven tells them apart).
	nodePortPrefixes       []netip.Prefix
	nodePortAddressesGiven bool
}

func (p *proxyOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&p.mode, "service-proxy", proxyModeAuto, "Service proxy mode: ipvs, nftables, or auto (IPVS where the kernel offers it).")
	fs.BoolVar(&p.nodePortBindOnAllIP, "nodeport-bindon-all-ip", false, "Serve NodePorts on every address of the Node object, not only on its node IP of each family.")
	fs.StringSliceVar(&p.nodePortAddresses, "nodeport-addresses", nil, "As kube-proxy: serve NodePorts (and load balancers' healthCheckNodePorts) only on the node's addresses within these CIDRs (comma-separated), or on its node IP of each family with \"primary\". Addresses are those the Node object lists. Not with --nodeport-bindon-all-ip. Default: as --nodeport-bindon-all-ip says, and health checks on every address.")
	fs.DurationVar(&p.gracePeriod, "ipvs-graceful-period", 30*time.Second, "How long a removed IPVS destination keeps its connections (at weight 0) before it is deleted; 0 deletes it at once.")
	fs.BoolVar(&p.gracefulTermination, "ipvs-graceful-termination", true, "Drain removed IPVS destinations for --ipvs-graceful-period (kube-router's flag; nfrouter always drains, false deletes at once).")
	fs.StringVar(&p.nodePortRange, "service-node-port-range", "30000-32767", "The cluster's NodePort range; IPVS services on node addresses in it are nfrouter's.")
	fs.BoolVar(&p.masqueradeAll, "masquerade-all", false, "Masquerade all traffic to services, not only traffic from outside the cluster CIDRs.")
	fs.StringSliceVar(&p.clusterCIDRs, "cluster-cidr", nil, "The cluster's pod CIDRs (one per family, comma-separated); traffic to a service from outside them is masqueraded. Default: the pod CIDRs of all Node objects.")
	fs.StringSliceVar(&p.serviceCIDRs, "service-cluster-ip-range", nil, "The cluster's service CIDRs (one per family, comma-separated), as given to the API server: traffic to an address in them that no service has is dropped (both proxies), and to a cluster IP on a port no service has is rejected (nftables proxy; IPVS drops it whatever this says), instead of leaving by the default route. Default: none, not dropped.")
	fs.StringVar(&p.healthzBindAddress, "healthz-bind-address", "0.0.0.0:10256", "Where to serve kube-proxy's /healthz and /livez (HOST:PORT), for load balancers and probes written for kube-proxy; empty disables. A port that cannot be bound is logged, not fatal. Load balancers' healthCheckNodePorts are served on every address, or with --nodeport-addresses on those.")
	fs.BoolVar(&p.hairpinMode, "hairpin-mode", false, "Let every service's endpoints reach themselves through the service (hairpin), not only those of services annotated kube-router.io/service.hairpin.")
}

// parseCIDRs parses a flag of CIDRs (--cluster-cidr, --service-cluster-ip-range).
func parseCIDRs(flag string, in []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range in {
		pfx, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", flag, err)
		}
		if pfx != pfx.Masked() {
			return nil, fmt.Errorf("--%s: %s has host bits set (did you mean %s?)", flag, pfx, pfx.Masked())
		}
		out = append(out, pfx)
	}
	return out, nil
}

// validate returns one message per invalid flag, and keeps the parsed values.
func (p *proxyOptions) validate() []string {
	var errs []string
	switch p.mode {
	case proxyModeIPVS, proxyModeNFTables, proxyModeAuto:
	default:
		errs = append(errs, fmt.Sprintf("--service-proxy must be ipvs, nftables or auto, not %q", p.mode))
	}
	if p.gracePeriod < 0 {
		errs = append(errs, fmt.Sprintf("--ipvs-graceful-period must not be negative, not %s", p.gracePeriod))
	}
	var err error
	if p.nodePortMin, p.nodePortMax, err = parsePortRange(p.nodePortRange); err != nil {
		errs = append(errs, fmt.Sprintf("--service-node-port-range: %v", err))
	}
	if p.clusterPrefixes, err = parseCIDRs("cluster-cidr", p.clusterCIDRs); err != nil {
		errs = append(errs, err.Error())
	}
	if p.servicePrefixes, err = parseCIDRs("service-cluster-ip-range", p.serviceCIDRs); err != nil {
		errs = append(errs, err.Error())
	}
	if msg := p.parseNodePortAddresses(); msg != "" {
		errs = append(errs, msg)
	}
	return errs
}

// parseNodePortAddresses parses --nodeport-addresses: "primary" alone or
// CIDRs, as kube-proxy; it returns a message when invalid.
func (p *proxyOptions) parseNodePortAddresses() string {
	p.nodePortAddressesGiven = len(p.nodePortAddresses) > 0
	if !p.nodePortAddressesGiven {
		return ""
	}
	if p.nodePortBindOnAllIP {
		return "--nodeport-addresses and --nodeport-bindon-all-ip=true contradict each other: give one"
	}
	if slices.Contains(p.nodePortAddresses, "primary") {
		if len(p.nodePortAddresses) != 1 {
			return fmt.Sprintf("--nodeport-addresses must be \"primary\" alone or a list of CIDRs, not %q", strings.Join(p.nodePortAddresses, ","))
		}
		return ""
	}
	var err error
	if p.nodePortPrefixes, err = parseCIDRs("nodeport-addresses", p.nodePortAddresses); err != nil {
		return err.Error() + ` (want CIDRs or "primary")`
	}
	return ""
}

// parsePortRange parses "30000-32767" (or kube-router's "30000:32767").
func parsePortRange(s string) (lo, hi uint16, err error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		a, b, ok = strings.Cut(s, ":")
	}
	if !ok {
		return 0, 0, fmt.Errorf("want FIRST-LAST, not %q", s)
	}
	l, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 16)
	h, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 16)
	if err1 != nil || err2 != nil || l == 0 || l > h {
		return 0, 0, fmt.Errorf("want FIRST-LAST with 0 < FIRST <= LAST <= 65535, not %q", s)
	}
	return uint16(l), uint16(h), nil
}

// proxyMode resolves --service-proxy against what the kernel offers; probe
// reports whether IPVS is available. auto takes IPVS where the kernel has
// it and the nftables proxy otherwise; why is the second result, for the log.
func proxyMode(requested string, probe func() error) (mode, why string) {
	switch requested {
	case proxyModeIPVS, proxyModeNFTables:
		return requested, "requested"
	}
	if err := probe(); err != nil {
		return proxyModeNFTables, fmt.Sprintf("this kernel offers no IPVS (%v)", err)
	}
	return proxyModeIPVS, "this kernel offers IPVS"
}

// newIPVSProxy builds the IPVS service proxy backend in the current network
// namespace (its nftables objects are ipvsNATPart); close stops its drainer
// and releases its kernel sockets.
func newIPVSProxy(w wiring) (watch.Backend, func() error, error) {
	o, nodeName, log, reg, events := w.o, w.nodeName, w.log, w.reg, w.events
	p, err := ipvs.New(ipvs.Config{
		PlanConfig: ipvs.PlanConfig{NodeName: nodeName, NodePortBindOnAllIPs: o.proxy.nodePortBindOnAllIP,
			NodePortCIDRs: o.proxy.nodePortPrefixes},
		GracePeriod: o.proxy.gracePeriod,
		NodePortMin: o.proxy.nodePortMin,
		NodePortMax: o.proxy.nodePortMax,
		Logger:      log,
		Registerer:  reg,
		Events:      events,
	})
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.RunDrainer(ctx, drainInterval)
	}()
	return p, func() error {
		cancel()
		<-done
		return p.Close()
	}, nil
}
