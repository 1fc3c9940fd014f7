package model

import (
	"cmp"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Labels and annotations that decide whether and how nfrouter proxies a service.
const (
	// LabelServiceProxyName hands a service to another proxy when set.
	LabelServiceProxyName = "service.kubernetes.io/service-proxy-name"
	// LabelHeadless marks the EndpointSlices of headless services.
	LabelHeadless = "service.kubernetes.io/headless"

	AnnotationScheduler  = "kube-router.io/service.scheduler"
	AnnotationSchedFlags = "kube-router.io/service.schedflags"
	AnnotationLocal      = "kube-router.io/service.local"
	AnnotationHairpin    = "kube-router.io/service.hairpin"
	AnnotationDSR        = "kube-router.io/service.dsr"

	// The router's per-service overrides of --advertise-cluster-ip,
	// --advertise-external-ip and --advertise-loadbalancer-ip.
	AnnotationAdvertiseClusterIP      = "kube-router.io/service.advertise.clusterip"
	AnnotationAdvertiseExternalIP     = "kube-router.io/service.advertise.externalip"
	AnnotationAdvertiseLoadBalancerIP = "kube-router.io/service.advertise.loadbalancerip"
)

// ServiceKey names a service.
type ServiceKey struct{ Namespace, Name string }

func (k ServiceKey) String() string { return k.Namespace + "/" + k.Name }

// ServicePortKey names one port of a service: the unit the proxy programs and
// that EndpointSlice ports refer to by name and protocol.
type ServicePortKey struct {
	Namespace, Name string
	Port            string // the port's name; "" for a single unnamed port
	Protocol        Protocol
}

// Service returns the key of the service the port belongs to.
func (k ServicePortKey) Service() ServiceKey { return ServiceKey{k.Namespace, k.Name} }

func (k ServicePortKey) String() string {
	return fmt.Sprintf("%s/%s:%s/%s", k.Namespace, k.Name, k.Port, k.Protocol)
}

// Compare orders keys by namespace, name, port name and protocol.
func (k ServicePortKey) Compare(o ServicePortKey) int {
	return cmp.Or(cmp.Compare(k.Namespace, o.Namespace), cmp.Compare(k.Name, o.Name),
		cmp.Compare(k.Port, o.Port), cmp.Compare(k.Protocol, o.Protocol))
}

// ServicePort is one port of a proxied service with everything the proxy needs.
type ServicePort struct {
	Key             ServicePortKey
	ClusterIPs      []netip.Addr // one per family, sorted
	Port            uint16
	NodePort        uint16 // 0 when none
	ExternalIPs     []netip.Addr
	LoadBalancerIPs []netip.Addr
	// LoadBalancerSourceRanges (spec.loadBalancerSourceRanges) are the only
	// clients that may reach the load-balancer IPs; empty: everyone.
	LoadBalancerSourceRanges []netip.Prefix
	// AffinityTimeout is the ClientIP session affinity timeout in seconds; 0
	// means no affinity.
	AffinityTimeout      int32
	ExternalTrafficLocal bool
	InternalTrafficLocal bool
	// HealthCheckNodePort (spec.healthCheckNodePort) is where the node
	// tells load balancers whether it has local endpoints of the service;
	// 0 when none (a service of external traffic policy Local and type
	// LoadBalancer has one).
	HealthCheckNodePort uint16
	// TrafficDistribution is the service's preference for close endpoints
	// (spec.trafficDistribution or the topology-mode annotation).
	TrafficDistribution TrafficDistribution
	Options             ProxyOptions
}

// ProxyOptions are kube-router's per-service annotations, kept as given; the
// proxy validates them, so that it can keep a service's previous programming
// when a new value is malformed.
type ProxyOptions struct {
	Scheduler  string // kube-router.io/service.scheduler
	SchedFlags string // kube-router.io/service.schedflags, comma-separated
	Local      bool   // kube-router.io/service.local: "true"
	Hairpin    bool   // kube-router.io/service.hairpin present
	DSR        string // kube-router.io/service.dsr

	// The router's advertise overrides, "" when absent; the router validates
	// them ("true" or "false").
	AdvertiseClusterIP      string // kube-router.io/service.advertise.clusterip
	AdvertiseExternalIP     string // kube-router.io/service.advertise.externalip
	AdvertiseLoadBalancerIP string // kube-router.io/service.advertise.loadbalancerip
}

// Equal reports whether two service ports, either of which may be nil, are the
// same.
func (s *ServicePort) Equal(o *ServicePort) bool {
	if s == nil || o == nil {
		return s == o
	}
	return reflect.DeepEqual(s, o)
}

// Proxied reports whether nfrouter proxies the service at all: not headless,
// not ExternalName, not handed to another proxy.
func Proxied(svc *corev1.Service) bool {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return false
	}
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return false
	}
	if _, other := svc.Labels[LabelServiceProxyName]; other {
		return false
	}
	return true
}

// ServicePortsFromAPI converts a service into its ports. Services nfrouter does
// not proxy yield none. A service without a cluster IP (still being allocated)
// yields none too.
func ServicePortsFromAPI(svc *corev1.Service) ([]*ServicePort, error) {
	if !Proxied(svc) {
		return nil, nil
	}
	clusterIPs := svc.Spec.ClusterIPs
	if len(clusterIPs) == 0 && svc.Spec.ClusterIP != "" {
		clusterIPs = []string{svc.Spec.ClusterIP}
	}
	vips, err := parseAddrs(clusterIPs)
	if err != nil {
		return nil, fmt.Errorf("service %s/%s: cluster IP: %w", svc.Namespace, svc.Name, err)
	}
	if len(vips) == 0 {
		return nil, nil
	}
	external, err := parseAddrs(svc.Spec.ExternalIPs)
	if err != nil {
		return nil, fmt.Errorf("service %s/%s: external IP: %w", svc.Namespace, svc.Name, err)
	}
	var lbStrings []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		// ipMode Proxy: the load balancer proxies to the node, so the
		// address must not be taken over here (kube-proxy neither).
		if in.IPMode != nil && *in.IPMode == corev1.LoadBalancerIPModeProxy {
			continue
		}
		lbStrings = append(lbStrings, in.IP)
	}
	lbs, err := parseAddrs(lbStrings)
	if err != nil {
		return nil, fmt.Errorf("service %s/%s: load-balancer IP: %w", svc.Namespace, svc.Name, err)
	}
	var affinity int32
	if svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		affinity = corev1.DefaultClientIPServiceAffinitySeconds
		if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			affinity = *c.ClientIP.TimeoutSeconds
		}
	}
	opts := proxyOptions(svc.Annotations)
	dist := trafficDistribution(svc)
	out := make([]*ServicePort, 0, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		proto, err := protocolFromAPI(p.Protocol)
		if err != nil {
			return nil, fmt.Errorf("service %s/%s: port %q: %w", svc.Namespace, svc.Name, p.Name, err)
		}
		if p.Port < 1 || p.Port > 65535 || p.NodePort < 0 || p.NodePort > 65535 {
			return nil, fmt.Errorf("service %s/%s: port %q: out of range", svc.Namespace, svc.Name, p.Name)
		}
		sp := &ServicePort{
			Key:                      ServicePortKey{svc.Namespace, svc.Name, p.Name, proto},
			ClusterIPs:               vips,
			Port:                     uint16(p.Port),
			ExternalIPs:              external,
			LoadBalancerIPs:          lbs,
			LoadBalancerSourceRanges: sourceRanges(svc.Spec.LoadBalancerSourceRanges),
			AffinityTimeout:          affinity,
			ExternalTrafficLocal:     svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal,
			InternalTrafficLocal:     svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal,
			TrafficDistribution:      dist,
			Options:                  opts,
		}
		if svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
			sp.NodePort = uint16(p.NodePort)
		}
		if sp.ExternalTrafficLocal && svc.Spec.HealthCheckNodePort > 0 && svc.Spec.HealthCheckNodePort <= 65535 {
			sp.HealthCheckNodePort = uint16(svc.Spec.HealthCheckNodePort)
		}
		out = append(out, sp)
	}
	return out, nil
}

// sourceRanges parses spec.loadBalancerSourceRanges. The API server
// validates them; one that does not parse is skipped, as kube-proxy does,
// rather than leaving the whole service unprogrammed.
func sourceRanges(in []string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range in {
		if p, err := parsePrefix(strings.TrimSpace(s)); err == nil {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		return cmp.Or(a.Addr().Compare(b.Addr()), cmp.Compare(a.Bits(), b.Bits()))
	})
	return slices.Compact(out)
}

func proxyOptions(ann map[string]string) ProxyOptions {
	_, hairpin := ann[AnnotationHairpin]
	return ProxyOptions{
		Scheduler:  strings.TrimSpace(ann[AnnotationScheduler]),
		SchedFlags: strings.TrimSpace(ann[AnnotationSchedFlags]),
		Local:      ann[AnnotationLocal] == "true",
		Hairpin:    hairpin,
		DSR:        strings.TrimSpace(ann[AnnotationDSR]),

		AdvertiseClusterIP:      strings.TrimSpace(ann[AnnotationAdvertiseClusterIP]),
		AdvertiseExternalIP:     strings.TrimSpace(ann[AnnotationAdvertiseExternalIP]),
		AdvertiseLoadBalancerIP: strings.TrimSpace(ann[AnnotationAdvertiseLoadBalancerIP]),
	}
}
