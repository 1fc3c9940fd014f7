package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// kube-router compatibility: every flag of kube-router 2.x (v2.0.0 to
// v2.11, pkg/options/options.go) is accepted, so that a kube-router
// DaemonSet's arguments start nfrouter unchanged. kubeRouterFlags decides
// each one; the README's table is rendered from it (compatTableMarkdown) and
// a test keeps the two equal.

// flagStatus is what nfrouter does with one kube-router flag.
type flagStatus int

const (
	// flagImplemented flags behave as kube-router documents them.
	flagImplemented flagStatus = iota
	// flagIgnored flags mean nothing here: accepted, and named in one
	// warning at start.
	flagIgnored
	// flagRefused flags would ask for behaviour nfrouter does not have:
	// accepted at the values in accept (kube-router's default, or what
	// nfrouter does anyway), a usage error naming the missing feature
	// otherwise.
	flagRefused
)

func (s flagStatus) String() string {
	switch s {
	case flagImplemented:
		return "implemented"
	case flagIgnored:
		return "accepted, warned"
	default:
		return "refused"
	}
}

// kubeRouterFlag is one row of the compatibility table.
type kubeRouterFlag struct {
	name   string
	status flagStatus
	// kind and def are kube-router's type and default, for the flags that
	// nfrouter registers only for compatibility (ignored and refused ones).
	kind flagKind
	def  string
	// accept lists the values a refused flag may take.
	accept []string
	// missing names, for a refused flag, the feature nfrouter lacks.
	missing string
	// note says what nfrouter does, for the README.
	note string
	// example is an argument list that uses the flag validly, for the test
	// (default: "--name=" plus a value of its kind).
	example []string
}

// flagKind is the pflag type kube-router declares a flag with.
type flagKind int

const (
	kindBool flagKind = iota
	kindDuration
	kindString
	kindStrings
	kindUint
)

// Notes that several rows of the table share.
const (
	noBFD               = "BFD is not implemented (see `--enable-bfd`)"
	noGoBGPAPI          = "no gobgp gRPC API: BGP state is in the metrics (`nfrouter_bgp_*`) and logs"
	noLBAllocator       = "no load-balancer address allocator (see `--run-loadbalancer`)"
	ipvsTimeoutsMissing = "setting IPVS connection timeouts"
	ipvsTimeoutsNote    = "IPVS timeouts stay the kernel's"
)

// kubeRouterFlags is the compatibility table, in kube-router's (alphabetical)
// order.
var kubeRouterFlags = []kubeRouterFlag{
	{name: "advertise-cluster-ip", note: "as kube-router"},
	{name: "advertise-external-ip", note: "as kube-router"},
	{name: "advertise-loadbalancer-ip", note: "as kube-router"},
	{name: "advertise-pod-cidr", note: "as kube-router"},
	{name: "auto-mtu", status: flagIgnored, kind: kindBool, def: "true",
		note: "`--enable-cni` keeps the MTU a user set in the CNI configuration and sets none itself"},
	{name: "bfd-desired-min-tx-interval", status: flagIgnored, kind: kindUint, def: "1000", note: noBFD},
	{name: "bfd-detection-multiplier", status: flagIgnored, kind: kindUint, def: "3", note: noBFD},
	{name: "bfd-port", status: flagIgnored, kind: kindUint, def: "3784", note: noBFD},
	{name: "bfd-required-min-rx-interval", status: flagIgnored, kind: kindUint, def: "1000", note: noBFD},
	{name: "bgp-graceful-restart", note: "as kube-router"},
	{name: "bgp-graceful-restart-deferral-time", note: "as kube-router"},
	{name: "bgp-graceful-restart-time", note: "as kube-router"},
	{name: "bgp-holdtime", note: "as kube-router (at least 3s)"},
	{name: "bgp-port", note: "as kube-router"},
	{name: "cache-sync-timeout", note: "as kube-router"},
	{name: "cleanup-config", note: "removes what nfrouter programmed on the node and exits, as `nfrouter cleanup`",
		example: []string{"--cleanup-config=false"}},
	{name: "cluster-asn", note: "as kube-router"},
	{name: "disable-source-dest-check", status: flagIgnored, kind: kindBool, def: "true",
		note: "nfrouter does not call the AWS EC2 API: disable the source/destination check of the instances yourself"},
	{name: "enable-bfd", status: flagRefused, kind: kindBool, def: "false", accept: []string{"false"},
		missing: "BFD for BGP sessions", note: "BFD is not implemented"},
	{name: "enable-cni", note: "as kube-router (bridge `kube-bridge` + host-local IPAM in `--cni-conf-file`), but off by default: give `--enable-cni` where nfrouter provides the pod network",
		example: []string{"--enable-cni=false"}},
	{name: "enable-ibgp", note: "as kube-router: `false` peers with no node, only with external routers"},
	{name: "enable-ipv4", status: flagRefused, kind: kindBool, def: "true", accept: []string{"true"},
		missing: "turning IPv4 off", note: "nfrouter serves every family the node has an address of"},
	{name: "enable-ipv6", status: flagIgnored, kind: kindBool, def: "false",
		note: "nfrouter serves every family the node has an address of: IPv6 where the Node object lists an IPv6 address"},
	{name: "enable-overlay", note: "as kube-router (ipip)"},
	{name: "enable-pod-egress", note: "as kube-router"},
	{name: "enable-pprof", note: "serves /debug/pprof/ on the metrics listener (`--metrics-port` must be set)",
		example: []string{"--enable-pprof", "--metrics-port=20241"}},
	{name: "excluded-cidrs", status: flagIgnored, kind: kindStrings,
		note: "nfrouter never removes IPVS services it does not own (an address on kube-dummy-if, or a NodePort)"},
	{name: "gobgp-admin-address", status: flagIgnored, kind: kindString, def: "127.0.0.1",
		note: noGoBGPAPI},
	{name: "gobgp-admin-port", status: flagIgnored, kind: kindUint, def: "50051",
		note: noGoBGPAPI},
	{name: "hairpin-mode", note: "as kube-router"},
	{name: "health-addr", note: "as kube-router"},
	{name: "health-port", note: "as kube-router"},
	{name: "help", note: "as kube-router", example: []string{"--help"}},
	{name: "hostname-override", note: "as kube-router"},
	{name: "injected-routes-sync-period", note: "how often installed routes are read back and repaired; wins over `--routes-sync-period`"},
	{name: "iptables-sync-period", status: flagIgnored, kind: kindDuration, def: "5m0s",
		note: "no iptables: nftables changes are applied as they come, and `--sync-period` reads everything back"},
	{name: "ipvs-graceful-period", note: "as kube-router"},
	{name: "ipvs-graceful-termination", note: "nfrouter always drains removed TCP destinations for `--ipvs-graceful-period`; `false` given explicitly deletes them at once. UDP and SCTP destinations are always deleted at once and their conntrack entries deleted, as kube-proxy does"},
	{name: "ipvs-permit-all", status: flagIgnored, kind: kindBool, def: "true",
		note: "nfrouter accepts traffic to the service ports of a virtual address and drops other ports, whatever this says"},
	{name: "ipvs-sync-period", status: flagIgnored, kind: kindDuration, def: "5m0s",
		note: "IPVS changes are applied as they come, and `--sync-period` reads everything back"},
	{name: "kubeconfig", note: "as kube-router"},
	{name: "loadbalancer-default-class", status: flagIgnored, kind: kindBool, def: "true",
		note: noLBAllocator},
	{name: "loadbalancer-ip-range", status: flagIgnored, kind: kindStrings,
		note: "no load-balancer address allocator, and load-balancer IPs are not validated against ranges (see `--strict-external-ip-validation`)"},
	{name: "loadbalancer-sync-period", status: flagIgnored, kind: kindDuration, def: "1m0s",
		note: noLBAllocator},
	{name: "masquerade-all", note: "as kube-router"},
	{name: "master", note: "as kube-router"},
	{name: "metrics-addr", note: "as kube-router"},
	{name: "metrics-path", note: "as kube-router"},
	{name: "metrics-port", note: "as kube-router"},
	{name: "netpol-default-deny", note: "as kube-router"},
	{name: "nodeport-bindon-all-ip", note: "as kube-router; a usage error together with kube-proxy's `--nodeport-addresses`, which nfrouter also has"},
	{name: "nodes-full-mesh", note: "as kube-router"},
	{name: "overlay-encap", status: flagRefused, kind: kindString, def: "ipip", accept: []string{"ipip"},
		missing: "FOU encapsulation", note: "ipip only"},
	{name: "overlay-encap-port", status: flagIgnored, kind: kindUint, def: "5555",
		note: "FOU encapsulation is not implemented (see `--overlay-encap`)"},
	{name: "overlay-type", note: "as kube-router"},
	{name: "override-nexthop", status: flagIgnored, kind: kindBool, def: "false",
		note: "nfrouter advertises its paths with the node's own address as next hop and never passes other nodes' paths to external routers"},
	{name: "peer-router-asns", note: "as kube-router", example: []string{"--peer-router-ips=192.0.2.1", "--peer-router-asns=64513"}},
	{name: "peer-router-ips", note: "as kube-router", example: []string{"--peer-router-ips=192.0.2.1", "--peer-router-asns=64513"}},
	{name: "peer-router-multihop-ttl", note: "as kube-router"},
	{name: "peer-router-passwords", note: "as kube-router (base64)",
		example: []string{"--peer-router-ips=192.0.2.1", "--peer-router-asns=64513", "--peer-router-passwords=c2VjcmV0"}},
	{name: "peer-router-passwords-file", note: "as kube-router", example: []string{"--peer-router-passwords-file="}},
	{name: "peer-router-ports", note: "as kube-router",
		example: []string{"--peer-router-ips=192.0.2.1", "--peer-router-asns=64513", "--peer-router-ports=1790"}},
	{name: "router-id", note: "as kube-router, except `generate` (refused: give an IPv4 address)", example: []string{"--router-id=192.0.2.7"}},
	{name: "routes-sync-period", note: "how often installed routes are read back and repaired (nfrouter advertises changes as they come)"},
	{name: "run-firewall", note: "as kube-router"},
	{name: "run-loadbalancer", status: flagRefused, kind: kindBool, def: "false", accept: []string{"false"},
		missing: "the load-balancer address allocator", note: "no load-balancer address allocator"},
	{name: "run-router", note: "as kube-router"},
	{name: "run-service-proxy", note: "as kube-router"},
	{name: "runtime-endpoint", status: flagIgnored, kind: kindString,
		note: "DSR (`kube-router.io/service.dsr`) is not implemented: such services are served with NAT like the others"},
	{name: "service-cluster-ip-range", note: "the cluster's service CIDRs, but no default (kube-router: 10.96.0.0/12): when given, both proxies drop unallocated addresses and the nftables proxy rejects a cluster IP's unknown ports (IPVS drops them), as kube-proxy does",
		example: []string{"--service-cluster-ip-range=10.96.0.0/12"}},
	{name: "service-external-ip-range", status: flagIgnored, kind: kindStrings,
		note: "external IPs are not validated against ranges (see `--strict-external-ip-validation`)"},
	{name: "service-node-port-range", note: "as kube-router"},
	{name: "service-tcp-timeout", status: flagRefused, kind: kindDuration, def: "0s", accept: []string{"0s"},
		missing: ipvsTimeoutsMissing, note: ipvsTimeoutsNote},
	{name: "service-tcpfin-timeout", status: flagRefused, kind: kindDuration, def: "0s", accept: []string{"0s"},
		missing: ipvsTimeoutsMissing, note: ipvsTimeoutsNote},
	{name: "service-udp-timeout", status: flagRefused, kind: kindDuration, def: "0s", accept: []string{"0s"},
		missing: ipvsTimeoutsMissing, note: ipvsTimeoutsNote},
	{name: "strict-external-ip-validation", status: flagRefused, kind: kindBool, def: "true", accept: []string{"false"},
		missing: "validation of external and load-balancer IPs against ranges",
		note:    "nfrouter serves every external and load-balancer IP a Service has (kube-router 2.11's default rejects those outside the ranges)"},
	{name: "use-nftables-for-netpol", status: flagIgnored, kind: kindBool, def: "false",
		note: "nfrouter's firewall is always nftables"},
	{name: "v", note: "0 logs state changes, 1 and more add per-event detail", example: []string{"-v=2"}},
	{name: "version", note: "as kube-router (also `-V`)", example: []string{"-V"}},
}

// addKubeRouterFlags registers the table's ignored and refused flags, with
// kube-router's types and defaults; the implemented ones are nfrouter's own.
func addKubeRouterFlags(fs *pflag.FlagSet) {
	for _, f := range kubeRouterFlags {
		if f.status == flagImplemented {
			continue
		}
		usage := "kube-router's; " + f.status.String() + ": " + stripMarkdown(f.note) + "."
		switch f.kind {
		case kindBool:
			fs.Bool(f.name, f.def == "true", usage)
		case kindDuration:
			d, _ := time.ParseDuration(f.def) // "" is 0
			fs.Duration(f.name, d, usage)
		case kindString:
			fs.String(f.name, f.def, usage)
		case kindStrings:
			fs.StringSlice(f.name, nil, usage)
		case kindUint:
			n, _ := strconv.ParseUint(f.def, 10, 0) // "" is 0
			fs.Uint(f.name, uint(n), usage)
		}
		fs.Lookup(f.name).Hidden = true
	}
}

// checkKubeRouterFlags returns the ignored flags that were given, for the
// start warning, and one error message per refused flag given a value
// nfrouter cannot honour.
func checkKubeRouterFlags(fs *pflag.FlagSet) (ignored, errs []string) {
	for _, f := range kubeRouterFlags {
		fl := fs.Lookup(f.name)
		if fl == nil || !fl.Changed {
			continue
		}
		switch f.status {
		case flagIgnored:
			ignored = append(ignored, "--"+f.name)
		case flagRefused:
			if v := fl.Value.String(); !slices.Contains(f.accept, v) {
				errs = append(errs, fmt.Sprintf("--%s=%s: nfrouter does not implement %s (accepted: %s)",
					f.name, v, f.missing, strings.Join(f.accept, ", ")))
			}
		}
	}
	return ignored, errs
}

// compatTableMarkdown renders kubeRouterFlags as the README's table.
func compatTableMarkdown() string {
	var b strings.Builder
	b.WriteString("| kube-router flag | in nfrouter | what nfrouter does |\n|---|---|---|\n")
	for _, f := range kubeRouterFlags {
		status := f.status.String()
		if f.status == flagRefused {
			status = "refused unless " + strings.Join(f.accept, " or ")
		}
		fmt.Fprintf(&b, "| `--%s` | %s | %s |\n", f.name, status, f.note)
	}
	return b.String()
}

// stripMarkdown drops the backquotes of a note for --help.
func stripMarkdown(s string) string { return strings.ReplaceAll(s, "`", "") }
