package ipvs

import "github.com/nfrouter/nfrouter/model"

// EventRecorder publishes Kubernetes Events about services, and about the
// node (a sysctl the proxy cannot set). The command adapts client-go's
// record.EventRecorder to it.
type EventRecorder interface {
	// ServiceEvent records an event of type "Normal" or "Warning" on a
	// service.
	ServiceEvent(svc model.ServiceKey, eventType, reason, message string)
	// NodeEvent records an event of type "Normal" or "Warning" on a node.
	NodeEvent(node, eventType, reason, message string)
}
