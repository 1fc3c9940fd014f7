package model

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Protocol is a layer-4 protocol, valued as its IP protocol number so that
// backends can use it in kernel objects directly.
type Protocol uint8

// The protocols Kubernetes services and network policies can name.
const (
	TCP  Protocol = 6
	UDP  Protocol = 17
	SCTP Protocol = 132
)

func (p Protocol) String() string {
	switch p {
	case TCP:
		return "tcp"
	case UDP:
		return "udp"
	case SCTP:
		return "sctp"
	}
	return fmt.Sprintf("proto-%d", uint8(p))
}

// protocolFromAPI converts a Kubernetes protocol; empty means TCP, as the API
// defaults it.
func protocolFromAPI(p corev1.Protocol) (Protocol, error) {
	switch p {
	case corev1.ProtocolTCP, "":
		return TCP, nil
	case corev1.ProtocolUDP:
		return UDP, nil
	case corev1.ProtocolSCTP:
		return SCTP, nil
	}
	return 0, fmt.Errorf("unknown protocol %q", p)
}
