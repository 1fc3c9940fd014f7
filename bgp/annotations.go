package bgp

import (
	"encoding/base64"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/nfrouter/nfrouter/model"
)

// Node annotations, kube-router's names.
const (
	AnnotationNodeASN  = "kube-router.io/node.asn"
	AnnotationRRServer = "kube-router.io/rr.server"
	AnnotationRRClient = "kube-router.io/rr.client"
	// AnnotationPeers lists a node's own external peers as YAML:
	//   - remoteip: 192.0.2.1
	//     remoteasn: 65000
	//     port: 179            # optional
	//     password: c2VjcmV0   # optional, base64
	AnnotationPeers = "kube-router.io/peers"
)

// nodeSettings are a node's BGP annotations, parsed. A malformed annotation
// leaves its field zero and adds a Problem.
type nodeSettings struct {
	asn      uint32 // 0: the cluster ASN
	rrServer string // route-reflector cluster ID when a server
	rrClient string // route-reflector cluster ID when a client
	peers    []ExternalPeer
}

func parseNodeSettings(n *model.Node) (nodeSettings, []Problem) {
	var s nodeSettings
	var problems []Problem
	bad := func(key, value string, err error) {
		problems = append(problems, Problem{Node: n.Name, Reason: "InvalidAnnotation",
			Message: fmt.Sprintf("annotation %s=%q ignored: %v", key, value, err)})
	}
	if v, ok := n.Annotations[AnnotationNodeASN]; ok {
		asn, err := parseASN(v)
		if err != nil {
			bad(AnnotationNodeASN, v, err)
		} else {
			s.asn = asn
		}
	}
	for _, a := range []struct {
		key string
		dst *string
	}{{AnnotationRRServer, &s.rrServer}, {AnnotationRRClient, &s.rrClient}} {
		v, ok := n.Annotations[a.key]
		if !ok {
			continue
		}
		id, err := parseClusterID(v)
		if err != nil {
			bad(a.key, v, err)
			continue
		}
		*a.dst = id
	}
	if v, ok := n.Annotations[AnnotationPeers]; ok {
		peers, err := parsePeers(v)
		if err != nil {
			bad(AnnotationPeers, v, err)
		} else {
			s.peers = peers
		}
	}
	return s, problems
}

func parseASN(v string) (uint32, error) {
	asn, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("not a 32-bit number: %w", err)
	}
	if asn == 0 || asn == 23456 || asn == 65535 || asn == 4294967295 {
		return 0, fmt.Errorf("ASN %d is reserved", asn)
	}
	return uint32(asn), nil
}

// parseClusterID accepts a route-reflector cluster ID as a number or an IPv4
// address, as gobgp does, and returns it as an IPv4 address.
func parseClusterID(v string) (string, error) {
	v = strings.TrimSpace(v)
	if a, err := netip.ParseAddr(v); err == nil && a.Is4() {
		return a.String(), nil
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return "", fmt.Errorf("cluster ID: want a 32-bit number or an IPv4 address")
	}
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}).String(), nil
}

type peerYAML struct {
	RemoteIP  string `json:"remoteip"`
	RemoteASN uint32 `json:"remoteasn"`
	Port      uint16 `json:"port"`
	Password  string `json:"password"`
}

// parsePeers parses the kube-router.io/peers annotation; one bad entry
// rejects the whole annotation, so that a typo never leaves half a list.
func parsePeers(v string) ([]ExternalPeer, error) {
	var in []peerYAML
	if err := yaml.UnmarshalStrict([]byte(v), &in); err != nil {
		return nil, fmt.Errorf("peer list: %w", err)
	}
	out := make([]ExternalPeer, 0, len(in))
	for i, p := range in {
		addr, err := netip.ParseAddr(p.RemoteIP)
		if err != nil {
			return nil, fmt.Errorf("peer %d: remoteip: %w", i, err)
		}
		if p.RemoteASN == 0 {
			return nil, fmt.Errorf("peer %d: remoteasn missing", i)
		}
		pw, err := base64.StdEncoding.DecodeString(p.Password)
		if err != nil {
			return nil, fmt.Errorf("peer %d: password: not base64: %w", i, err)
		}
		out = append(out, ExternalPeer{Addr: addr.Unmap(), ASN: p.RemoteASN, Port: p.Port, Password: string(pw)})
	}
	return out, nil
}
