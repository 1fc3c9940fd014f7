package bgp

// EventRecorder publishes Kubernetes Events about nodes. The command adapts
// client-go's record.EventRecorder to it.
type EventRecorder interface {
	// NodeEvent records an event of type "Normal" or "Warning" on a node.
	NodeEvent(node, eventType, reason, message string)
}

// Problem is a setting the planners ignored because it was malformed. It is
// reported once (a log line and an Event on Node) until it goes away.
type Problem struct {
	Node    string // the node the Event is recorded on
	Reason  string // CamelCase, e.g. "InvalidAnnotation"
	Message string
}
