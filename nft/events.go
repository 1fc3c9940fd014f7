package nft

import "github.com/nfrouter/nfrouter/model"

// EventRecorder publishes the firewall's Kubernetes Events: about network
// policies, and about the node (a sysctl it cannot set). The command adapts
// client-go's record.EventRecorder to it.
type EventRecorder interface {
	// PolicyEvent records an event of type "Normal" or "Warning" on a policy.
	PolicyEvent(policy model.PolicyKey, eventType, reason, message string)
	// NodeEvent records an event of type "Normal" or "Warning" on a node.
	NodeEvent(node, eventType, reason, message string)
}
