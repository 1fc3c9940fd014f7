package svcproxy

import (
	"fmt"
	"strconv"
	"time"

	"github.com/nfrouter/nfrouter/model"
)

// Names of the service proxy's chains and sets. Every one starts with
// "service" so that they never meet the firewall's or another part's.
const (
	ChainNATPrerouting  = "services-nat-prerouting"
	ChainNATOutput      = "services-nat-output"
	ChainNATPostrouting = "services-nat-postrouting"
	ChainNATInput       = "services-nat-input"
	ChainDispatch       = "services"
	ChainInternal       = "services-internal"
	ChainSticky         = "services-sticky"
	ChainRemember       = "services-remember"
	ChainFilterInput    = "services-filter-input"
	ChainFilterForward  = "services-filter-forward"
	ChainFilterOutput   = "services-filter-output"
	ChainFirewallPre    = "services-firewall-prerouting"
	ChainFirewallOutput = "services-firewall-output"
)

// PrecreatedClasses are the endpoint counts whose class sets and rules exist
// whenever the family is in use, so that a service growing or shrinking
// within them edits elements only.
const PrecreatedClasses = 16

func fam(v6 bool) string {
	if v6 {
		return "v6"
	}
	return "v4"
}

// Protocols are the transport protocols of service ports. Endpoint maps
// are one per protocol (see ruleset.Set.DataProto).
var Protocols = []model.Protocol{model.TCP, model.UDP, model.SCTP}

// EndpointsMap names the map from service address . protocol . port . slot
// to endpoint address . port, of protocol proto.
func EndpointsMap(proto model.Protocol, v6 bool) string {
	return "service-endpoints-" + proto.String() + "-" + fam(v6)
}

// ClassSet names the set of service addresses . protocol . port with n
// endpoints.
func ClassSet(n int, v6 bool) string { return fmt.Sprintf("services-with-%d-endpoints-%s", n, fam(v6)) }

// InternalClassSet names the set of external service addresses . protocol
// . port of traffic policy Local whose in-cluster clients have n endpoints.
func InternalClassSet(n int, v6 bool) string {
	return fmt.Sprintf("services-internal-with-%d-endpoints-%s", n, fam(v6))
}

// InternalEndpointsMap names the map from an external address of traffic
// policy Local . protocol . port . slot to the endpoint of in-cluster
// clients, of protocol proto.
func InternalEndpointsMap(proto model.Protocol, v6 bool) string {
	return "service-internal-endpoints-" + proto.String() + "-" + fam(v6)
}

// LocalExternalSet names the set of external service addresses . protocol .
// port of traffic policy Local: the node's own connections to them are
// masqueraded (they would leave with the address as their source).
func LocalExternalSet(v6 bool) string { return "service-external-local-ips-" + fam(v6) }

// NoEndpointsSet names the set of service addresses . protocol . port that
// have no endpoint to send a new connection to.
func NoEndpointsSet(v6 bool) string { return "services-without-endpoints-" + fam(v6) }

// NoLocalEndpointsSet names the set of external addresses of traffic policy
// Local . protocol . port whose endpoints are all on other nodes: clients
// outside the cluster are dropped there.
func NoLocalEndpointsSet(v6 bool) string { return "services-without-local-endpoints-" + fam(v6) }

// MasqueradeSet names the set of service addresses . protocol . port whose
// connections from outside the cluster are masqueraded.
func MasqueradeSet(v6 bool) string { return "service-ips-" + fam(v6) }

// MasqueradeAlwaysSet names the set of external service addresses .
// protocol . port (NodePorts, external and load-balancer IPs of external
// traffic policy Cluster) whose connections are all masqueraded.
func MasqueradeAlwaysSet(v6 bool) string { return "service-external-ips-" + fam(v6) }

// ClusterCIDRsSet names the interval set of the cluster's pod CIDRs.
func ClusterCIDRsSet(v6 bool) string { return "service-cluster-cidrs-" + fam(v6) }

// ClusterIPsSet names the set of cluster IPs in use: traffic to one of
// them that no service port translated is rejected.
func ClusterIPsSet(v6 bool) string { return "service-cluster-ips-" + fam(v6) }

// ServiceCIDRsSet names the interval set of the service CIDRs: traffic to
// an address in them that no service has is dropped.
func ServiceCIDRsSet(v6 bool) string { return "service-cidrs-" + fam(v6) }

// HairpinSet names the set of local endpoint . same endpoint pairs.
func HairpinSet(v6 bool) string { return "service-hairpin-" + fam(v6) }

// portID names a service port inside object names: namespace/name/protocol,
// and the port's name when it has one.
func portID(k model.ServicePortKey) string {
	id := k.Namespace + "/" + k.Name + "/" + k.Protocol.String()
	if k.Port != "" {
		id += "/" + k.Port
	}
	return id
}

// SourceRangesSet names the interval set of the clients allowed to reach
// the load-balancer IPs of one service port (loadBalancerSourceRanges).
func SourceRangesSet(k model.ServicePortKey, v6 bool) string {
	return "service-lb-sources-" + fam(v6) + "/" + portID(k)
}

// AffinityMap names the dynamic map from client address to the endpoint
// address it sticks to, for one service port, family and timeout. The
// timeout is part of the name so that a new timeout makes a new map instead
// of redefining one in place.
func AffinityMap(k model.ServicePortKey, v6 bool, timeout time.Duration) string {
	return "service-affinity-" + fam(v6) + "/" + portID(k) + "/" + strconv.Itoa(int(timeout.Seconds())) + "s"
}

// AffinityEndpointsSet names the set of endpoint address . protocol . port of
// one service port with session affinity: a connection translated to one of
// them refreshes its client's entry in AffinityMap.
func AffinityEndpointsSet(k model.ServicePortKey, v6 bool, timeout time.Duration) string {
	return "service-affinity-endpoints-" + fam(v6) + "/" + portID(k) + "/" + strconv.Itoa(int(timeout.Seconds())) + "s"
}
