package main

import (
	"encoding/base64"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/nfrouter/nfrouter/bgp"
	"github.com/nfrouter/nfrouter/watch"
)

// routerOptions are the BGP router's flags (--run-router enables it), with
// kube-router's names and defaults.
type routerOptions struct {
	routerID                string
	clusterASN              uint32
	bgpPort                 uint16
	holdTime                time.Duration
	gracefulRestart         bool
	gracefulRestartTime     time.Duration
	gracefulRestartDeferral time.Duration
	nodesFullMesh           bool
	enableIBGP              bool
	peerIPs                 []string
	peerASNs                []uint
	peerPorts               []uint
	peerPasswords           []string
	peerPasswordsFile       string
	multihopTTL             uint8
	advertisePodCIDR        bool
	advertiseClusterIP      bool
	advertiseExternalIP     bool
	advertiseLBIP           bool
	enableOverlay           bool
	overlayType             string
	enablePodEgress         bool
	routesSyncPeriod        time.Duration
	// injectedRoutesSyncPeriod is kube-router's name for routesSyncPeriod;
	// given, it wins.
	injectedRoutesSyncPeriod time.Duration

	// Parsed by validate.
	routerAddr  netip.Addr
	peerRouters []bgp.ExternalPeer
}

func (r *routerOptions) addFlags(fs *pflag.FlagSet) {
	d := bgp.DefaultConfig()
	fs.StringVar(&r.routerID, "router-id", "", "BGP router ID; defaults to the node's first internal IPv4 address.")
	fs.Uint32Var(&r.clusterASN, "cluster-asn", d.ClusterASN, "ASN of the nodes' iBGP mesh.")
	fs.Uint16Var(&r.bgpPort, "bgp-port", d.Port, "Port the BGP server listens on and nodes peer on.")
	fs.DurationVar(&r.holdTime, "bgp-holdtime", d.HoldTime, "BGP hold time (at least 3s).")
	fs.BoolVar(&r.gracefulRestart, "bgp-graceful-restart", false, "Enable BGP graceful restart: peers keep this node's routes while it restarts.")
	fs.DurationVar(&r.gracefulRestartTime, "bgp-graceful-restart-time", d.GracefulRestartTime, "Graceful restart time announced to peers.")
	fs.DurationVar(&r.gracefulRestartDeferral, "bgp-graceful-restart-deferral-time", d.GracefulRestartDeferral, "How long a restarted router keeps its old routes waiting for End-of-RIB.")
	fs.BoolVar(&r.nodesFullMesh, "nodes-full-mesh", true, "Peer every node with every other node (iBGP full mesh).")
	fs.BoolVar(&r.enableIBGP, "enable-ibgp", true, "Peer with the other nodes; false peers only with external routers.")
	fs.StringSliceVar(&r.peerIPs, "peer-router-ips", nil, "External BGP peers every node peers with.")
	fs.UintSliceVar(&r.peerASNs, "peer-router-asns", nil, "ASNs of --peer-router-ips, in order.")
	fs.UintSliceVar(&r.peerPorts, "peer-router-ports", nil, "Ports of --peer-router-ips, in order (default 179).")
	fs.StringSliceVar(&r.peerPasswords, "peer-router-passwords", nil, "Base64 TCP MD5 passwords of --peer-router-ips, in order.")
	fs.StringVar(&r.peerPasswordsFile, "peer-router-passwords-file", "", "File with the base64 passwords of --peer-router-ips, comma-separated; --peer-router-passwords wins.")
	fs.Uint8Var(&r.multihopTTL, "peer-router-multihop-ttl", 0, "TTL of eBGP sessions to external peers more than one hop away.")
	fs.BoolVar(&r.advertisePodCIDR, "advertise-pod-cidr", true, "Advertise the node's pod CIDRs.")
	fs.BoolVar(&r.advertiseClusterIP, "advertise-cluster-ip", false, "Advertise service cluster IPs.")
	fs.BoolVar(&r.advertiseExternalIP, "advertise-external-ip", false, "Advertise service external IPs.")
	fs.BoolVar(&r.advertiseLBIP, "advertise-loadbalancer-ip", false, "Advertise service load-balancer IPs.")
	fs.BoolVar(&r.enableOverlay, "enable-overlay", true, "Reach nodes on other subnets through ipip tunnels.")
	fs.StringVar(&r.overlayType, "overlay-type", bgp.OverlaySubnet, "subnet: tunnel only to other subnets; full: tunnel to every node.")
	fs.BoolVar(&r.enablePodEgress, "enable-pod-egress", true, "Masquerade pod traffic leaving the cluster CIDRs.")
	fs.DurationVar(&r.routesSyncPeriod, "routes-sync-period", bgp.DefaultRouteCheckPeriod, "How often installed routes are read back and repaired.")
	fs.DurationVar(&r.injectedRoutesSyncPeriod, "injected-routes-sync-period", bgp.DefaultRouteCheckPeriod, "kube-router's name for --routes-sync-period; given, it wins.")
}

// validate returns one message per invalid flag, and keeps the parsed values.
func (r *routerOptions) validate() []string {
	var out []string
	var err error
	if r.peerRouters, err = r.parsePeers(); err != nil {
		out = append(out, err.Error())
	}
	if r.routerID == "generate" {
		out = append(out, "--router-id=generate: nfrouter does not implement generated router IDs; give an IPv4 address, or none to take the node's")
	} else if r.routerID != "" {
		if r.routerAddr, err = netip.ParseAddr(r.routerID); err != nil || !r.routerAddr.Is4() {
			out = append(out, fmt.Sprintf("--router-id %q: want an IPv4 address", r.routerID))
		}
	}
	if r.overlayType != bgp.OverlaySubnet && r.overlayType != bgp.OverlayFull {
		out = append(out, fmt.Sprintf("--overlay-type %q: want subnet or full", r.overlayType))
	}
	if r.routesSyncPeriod <= 0 {
		out = append(out, "--routes-sync-period: must be positive")
	}
	if r.holdTime < 3*time.Second {
		out = append(out, "--bgp-holdtime: at least 3s")
	}
	return out
}

// parsePeers joins the --peer-router-* lists.
func (r *routerOptions) parsePeers() ([]bgp.ExternalPeer, error) {
	passwords := r.peerPasswords
	if len(passwords) == 0 && r.peerPasswordsFile != "" {
		b, err := os.ReadFile(r.peerPasswordsFile)
		if err != nil {
			return nil, fmt.Errorf("--peer-router-passwords-file: %w", err)
		}
		passwords = strings.Split(strings.TrimSpace(string(b)), ",")
	}
	if len(r.peerASNs) != len(r.peerIPs) {
		return nil, fmt.Errorf("--peer-router-asns: %d values for %d --peer-router-ips", len(r.peerASNs), len(r.peerIPs))
	}
	var out []bgp.ExternalPeer
	for i, ip := range r.peerIPs {
		a, err := netip.ParseAddr(strings.TrimSpace(ip))
		if err != nil {
			return nil, fmt.Errorf("--peer-router-ips %q: %w", ip, err)
		}
		if r.peerASNs[i] == 0 || r.peerASNs[i] > 1<<32-1 {
			return nil, fmt.Errorf("--peer-router-asns: %d out of range", r.peerASNs[i])
		}
		p := bgp.ExternalPeer{Addr: a, ASN: uint32(r.peerASNs[i])}
		if i < len(r.peerPorts) {
			if r.peerPorts[i] > 65535 {
				return nil, fmt.Errorf("--peer-router-ports: %d out of range", r.peerPorts[i])
			}
			p.Port = uint16(r.peerPorts[i])
		}
		if i < len(passwords) && passwords[i] != "" {
			pw, err := decodePassword(passwords[i])
			if err != nil {
				return nil, fmt.Errorf("--peer-router-passwords: peer %s: %w", ip, err)
			}
			p.Password = pw
		}
		out = append(out, p)
	}
	return out, nil
}

// newRouter builds the BGP router backend (its nftables object is
// podEgressPart); close stops it.
func newRouter(w wiring) (watch.Backend, func() error, error) {
	o, nodeName, log, reg, events := w.o, w.nodeName, w.log, w.reg, w.events
	r := o.router
	cfg := bgp.DefaultConfig()
	cfg.NodeName, cfg.RouterID = nodeName, r.routerAddr
	cfg.ClusterASN, cfg.Port, cfg.HoldTime = r.clusterASN, r.bgpPort, r.holdTime
	cfg.GracefulRestart, cfg.GracefulRestartTime, cfg.GracefulRestartDeferral = r.gracefulRestart, r.gracefulRestartTime, r.gracefulRestartDeferral
	cfg.DisableIBGP = !r.enableIBGP
	cfg.NodesFullMesh, cfg.MultihopTTL, cfg.PeerRouters = r.nodesFullMesh, r.multihopTTL, r.peerRouters
	cfg.AdvertisePodCIDR, cfg.AdvertiseClusterIP, cfg.AdvertiseExternalIP, cfg.AdvertiseLoadBalancerIP =
		r.advertisePodCIDR, r.advertiseClusterIP, r.advertiseExternalIP, r.advertiseLBIP
	cfg.EnableOverlay, cfg.OverlayType, cfg.RouteCheckPeriod = r.enableOverlay, r.overlayType, r.routesSyncPeriod
	cfg.Logger, cfg.Registerer, cfg.Events = log, reg, events
	router, err := bgp.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	return router, router.Close, nil
}

func decodePassword(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return "", fmt.Errorf("not base64: %w", err)
	}
	return string(b), nil
}
