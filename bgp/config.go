package bgp

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults, as kube-router's.
const (
	DefaultClusterASN              = 64512
	DefaultPort                    = 179
	DefaultHoldTime                = 90 * time.Second
	DefaultGracefulRestartTime     = 90 * time.Second
	DefaultGracefulRestartDeferral = 360 * time.Second
	DefaultRouteCheckPeriod        = time.Minute
)

// Overlay types: tunnel only to nodes on another subnet, or to every node.
const (
	OverlaySubnet = "subnet"
	OverlayFull   = "full"
)

// Config is what the router needs from the command line.
type Config struct {
	NodeName string
	// RouterID overrides the router ID taken from the node's first internal
	// IPv4 address.
	RouterID   netip.Addr
	ClusterASN uint32
	// Port is where the server listens; peers between nodes use it too.
	Port     uint16
	HoldTime time.Duration

	GracefulRestart         bool
	GracefulRestartTime     time.Duration
	GracefulRestartDeferral time.Duration

	NodesFullMesh bool
	// DisableIBGP peers with no node at all (kube-router's
	// --enable-ibgp=false): full mesh and route reflectors are off, only
	// external routers remain.
	DisableIBGP bool
	// PeerRouters are external routers every node peers with.
	PeerRouters []ExternalPeer
	// MultihopTTL is the TTL of eBGP sessions to external routers; 0 or 1
	// means directly connected.
	MultihopTTL uint8

	AdvertisePodCIDR        bool
	AdvertiseClusterIP      bool
	AdvertiseExternalIP     bool
	AdvertiseLoadBalancerIP bool

	EnableOverlay bool
	OverlayType   string

	// RouteCheckPeriod is how often installed routes are read back.
	RouteCheckPeriod time.Duration

	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Events     EventRecorder
}

// ExternalPeer is a router outside the cluster.
type ExternalPeer struct {
	Addr     netip.Addr
	ASN      uint32
	Port     uint16 // 0: DefaultPort
	Password string
}

// DefaultConfig returns kube-router's defaults.
func DefaultConfig() Config {
	return Config{
		ClusterASN:              DefaultClusterASN,
		Port:                    DefaultPort,
		HoldTime:                DefaultHoldTime,
		GracefulRestartTime:     DefaultGracefulRestartTime,
		GracefulRestartDeferral: DefaultGracefulRestartDeferral,
		NodesFullMesh:           true,
		AdvertisePodCIDR:        true,
		OverlayType:             OverlaySubnet,
		RouteCheckPeriod:        DefaultRouteCheckPeriod,
	}
}

// Validate reports every invalid setting.
func (c *Config) Validate() error {
	var errs []error
	if c.NodeName == "" {
		errs = append(errs, errors.New("node name is empty"))
	}
	if c.ClusterASN == 0 {
		errs = append(errs, errors.New("cluster ASN is 0"))
	}
	if c.RouterID.IsValid() && !c.RouterID.Is4() {
		errs = append(errs, fmt.Errorf("router ID %s: not IPv4", c.RouterID))
	}
	if c.HoldTime != 0 && c.HoldTime < 3*time.Second {
		errs = append(errs, fmt.Errorf("hold time %s: below 3s", c.HoldTime))
	}
	if c.OverlayType != OverlaySubnet && c.OverlayType != OverlayFull {
		errs = append(errs, fmt.Errorf("overlay type %q: want %q or %q", c.OverlayType, OverlaySubnet, OverlayFull))
	}
	for _, p := range c.PeerRouters {
		if !p.Addr.IsValid() || p.ASN == 0 {
			errs = append(errs, fmt.Errorf("peer router %s: address and ASN required", p.Addr))
		}
	}
	return errors.Join(errs...)
}
