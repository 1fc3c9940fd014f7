package watch

import "github.com/prometheus/client_golang/prometheus"

// Event results, the "result" label of nfrouter_watch_events_total.
const (
	resultChanged = "changed" // the model changed
	resultIgnored = "ignored" // nothing the model holds changed
	resultInvalid = "invalid" // the object could not be converted; the model keeps what it had
)

// Metrics are the watch layer's and the Runner's Prometheus metrics.
type Metrics struct {
	events       *prometheus.CounterVec
	syncs        *prometheus.CounterVec
	syncDuration *prometheus.HistogramVec
	syncLatency  *prometheus.HistogramVec
	programming  *prometheus.HistogramVec
	changedKeys  *prometheus.HistogramVec
}

// NewMetrics creates the metrics and registers them on reg (when not nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "nfrouter", Subsystem: "watch", Name: "events_total",
			Help: "Kubernetes object events by kind and result (changed, ignored, invalid).",
		}, []string{"kind", "result"}),
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "nfrouter", Name: "syncs_total",
			Help: "Backend syncs by backend, reason (initial, change, periodic, retry) and result (ok, error).",
		}, []string{"backend", "reason", "result"}),
		syncDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "nfrouter", Name: "sync_duration_seconds",
			Help:    "Time a backend took to sync.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, []string{"backend"}),
		syncLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "nfrouter", Name: "event_to_sync_seconds",
			Help:    "Time from the oldest change a sync carried being observed to the backend having programmed it.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 12),
		}, []string{"backend"}),
		programming: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "nfrouter", Name: "network_programming_duration_seconds",
			Help: "Time from an endpoint change's trigger (the EndpointSlice's endpoints.kubernetes.io/last-change-trigger-time, " +
				"e.g. a pod becoming ready) to the backend having programmed it: kube-proxy's network programming latency SLI.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 18),
		}, []string{"backend"}),
		changedKeys: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "nfrouter", Name: "sync_changed_keys",
			Help:    "Model keys changed per sync.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 8),
		}, []string{"backend"}),
	}
	if reg != nil {
		reg.MustRegister(m.events, m.syncs, m.syncDuration, m.syncLatency, m.programming, m.changedKeys)
	}
	return m
}
