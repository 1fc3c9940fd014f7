package ipvs

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/cloudflare/ipvs"

	"github.com/nfrouter/nfrouter/model"
)

// VSKey identifies a virtual service, as IPVS does.
type VSKey struct {
	Addr  netip.Addr
	Proto model.Protocol
	Port  uint16
}

func (k VSKey) String() string {
	return k.Proto.String() + "/" + netip.AddrPortFrom(k.Addr, k.Port).String()
}

// Compare orders keys by address, protocol and port.
func (k VSKey) Compare(o VSKey) int {
	if c := k.Addr.Compare(o.Addr); c != 0 {
		return c
	}
	if k.Proto != o.Proto {
		return int(k.Proto) - int(o.Proto)
	}
	return int(k.Port) - int(o.Port)
}

// Kind says which part of a service a virtual service stands for.
type Kind uint8

// Kinds of virtual service.
const (
	KindClusterIP Kind = iota
	KindNodePort
	KindExternalIP
	KindLoadBalancer
)

func (k Kind) String() string {
	switch k {
	case KindClusterIP:
		return "cluster-ip"
	case KindNodePort:
		return "node-port"
	case KindExternalIP:
		return "external-ip"
	case KindLoadBalancer:
		return "load-balancer"
	}
	return fmt.Sprintf("kind-%d", uint8(k))
}

// OnDummy reports whether the address of this kind of virtual service belongs
// on the dummy interface: every kind but NodePorts, whose addresses are the
// node's own.
func (k Kind) OnDummy() bool { return k != KindNodePort }

// External reports whether traffic to this kind of virtual service comes from
// outside the cluster, so that externalTrafficPolicy applies to it.
func (k Kind) External() bool { return k != KindClusterIP }

// Dest is a real server of a virtual service.
type Dest struct {
	Addr netip.Addr
	Port uint16
}

func (d Dest) String() string { return netip.AddrPortFrom(d.Addr, d.Port).String() }

// Compare orders destinations by address and port.
func (d Dest) Compare(o Dest) int {
	if c := d.Addr.Compare(o.Addr); c != 0 {
		return c
	}
	return int(d.Port) - int(o.Port)
}

// VirtualService is one desired IPVS virtual service with its destinations.
// It is plain data: the nftables helper rules read the same values.
type VirtualService struct {
	VSKey
	Kind  Kind
	Owner model.ServicePortKey
	// Scheduler is the IPVS scheduler name (rr, wrr, lc, dh, sh, mh).
	Scheduler string
	// Flags are IPVS service flags: persistence and the scheduler options.
	Flags ipvs.Flags
	// Timeout is the persistence timeout in seconds; 0 without persistence.
	Timeout uint32
	// Local says only this node's endpoints are destinations (traffic
	// policy Local or the kube-router.io/service.local annotation).
	Local bool
	// Dests are sorted; every destination has weight 1.
	Dests []Dest
}

// Equal reports whether two virtual services program the same kernel state
// and belong to the same service port.
func (v *VirtualService) Equal(o *VirtualService) bool {
	if v == nil || o == nil {
		return v == o
	}
	if v.VSKey != o.VSKey || v.Kind != o.Kind || v.Owner != o.Owner || v.Scheduler != o.Scheduler ||
		v.Flags != o.Flags || v.Timeout != o.Timeout || v.Local != o.Local || len(v.Dests) != len(o.Dests) {
		return false
	}
	for i := range v.Dests {
		if v.Dests[i] != o.Dests[i] {
			return false
		}
	}
	return true
}

// String is a one-line dump, stable for golden files.
func (v *VirtualService) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s sched=%s", v.VSKey, v.Kind, v.Scheduler)
	if f := v.Flags &^ ipvs.ServicePersistent; f != 0 {
		fmt.Fprintf(&b, " flags=%s", schedFlagNames(f))
	}
	if v.Flags&ipvs.ServicePersistent != 0 {
		fmt.Fprintf(&b, " persistent=%ds", v.Timeout)
	}
	if v.Local {
		b.WriteString(" local")
	}
	fmt.Fprintf(&b, " owner=%s ->", v.Owner)
	if len(v.Dests) == 0 {
		b.WriteString(" (none)")
	}
	for _, d := range v.Dests {
		b.WriteString(" " + d.String())
	}
	return b.String()
}
