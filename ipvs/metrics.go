package ipvs

import "github.com/prometheus/client_golang/prometheus"

// metrics of the IPVS service proxy.
type metrics struct {
	services          prometheus.Gauge
	destinations      prometheus.Gauge
	draining          prometheus.Gauge
	invalid           prometheus.Gauge
	operations        *prometheus.CounterVec
	operationsPerSync prometheus.Histogram
	syncDuration      prometheus.Histogram
	syncs             *prometheus.CounterVec
	sysctlsUnset      prometheus.Gauge
	sysctlFailures    *prometheus.CounterVec
	flowsDeleted      prometheus.Counter
	flowErrors        prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	const ns, sub = "nfrouter", "ipvs"
	m := &metrics{
		services: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub,
			Name: "services", Help: "IPVS virtual services programmed."}),
		destinations: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub,
			Name: "destinations", Help: "IPVS destinations programmed, draining ones included."}),
		draining: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub,
			Name: "draining_destinations", Help: "Destinations with weight 0 waiting for their connections to end."}),
		invalid: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub,
			Name: "invalid_service_ports", Help: "Service ports with an invalid annotation or an address conflict."}),
		operations: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "netlink_operations_total", Help: "Netlink requests, by operation."}, []string{"op"}),
		operationsPerSync: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub,
			Name: "sync_operations", Help: "Netlink requests per sync.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 10)}),
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub,
			Name: "sync_duration_seconds", Help: "Time to plan and program one sync.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}),
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "syncs_total", Help: "Syncs, by kind (full, incremental, drain) and result (ok, error)."}, []string{"kind", "result"}),
		sysctlsUnset: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub,
			Name: "sysctls_unset", Help: "IPVS sysctls that are not set and could not be written at start."}),
		sysctlFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "sysctl_failures_total", Help: "IPVS sysctls found unset that could not be written."}, []string{"sysctl"}),
		flowsDeleted: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "conntrack_entries_deleted_total", Help: "Conntrack entries of UDP and SCTP flows deleted because their destination went or their service got destinations."}),
		flowErrors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "conntrack_errors_total", Help: "Failed passes over the conntrack table to delete stale UDP and SCTP flows (tried again after the next sync)."}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.services, m.destinations, m.draining, m.invalid, m.operations,
		m.operationsPerSync, m.syncDuration, m.syncs, m.sysctlsUnset, m.sysctlFailures, m.flowsDeleted, m.flowErrors} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) observe(kind string, s Stats, invalid int, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.syncs.WithLabelValues(kind, result).Inc()
	for op, n := range s.Ops {
		m.operations.WithLabelValues(op).Add(float64(n))
	}
	if kind != "drain" {
		m.operationsPerSync.Observe(float64(s.Total()))
	}
	m.services.Set(float64(s.Services))
	m.destinations.Set(float64(s.Destinations))
	m.draining.Set(float64(s.Draining))
	m.invalid.Set(float64(invalid))
}
