package nft

import "github.com/nfrouter/nfrouter/model"

// EventRecorder publishes Kubernetes Events about network policies. The
// command adapts client-go's record.EventRecorder to it.
type EventRecorder interface {
	// PolicyEvent records an event of type "Normal" or "Warning" on a policy.
	PolicyEvent(policy model.PolicyKey, eventType, reason, message string)
}
