package bgp

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	peers           *prometheus.GaugeVec
	pathsAdvertised prometheus.Gauge
	pathsReceived   prometheus.Gauge
	routesInstalled prometheus.Gauge
	routeSync       prometheus.Histogram
	routeErrors     prometheus.Counter
	invalidSettings prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		peers: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "nfrouter", Subsystem: "bgp", Name: "peers",
			Help: "BGP peers by session state."}, []string{"state"}),
		pathsAdvertised: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "nfrouter", Subsystem: "bgp", Name: "paths_advertised",
			Help: "Paths this node originates."}),
		pathsReceived: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "nfrouter", Subsystem: "bgp", Name: "paths_received",
			Help: "Best paths learned from peers."}),
		routesInstalled: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "nfrouter", Subsystem: "bgp", Name: "routes_installed",
			Help: "Kernel routes installed by the router."}),
		routeSync: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "nfrouter", Subsystem: "bgp", Name: "route_sync_duration_seconds",
			Help: "Duration of a read-back and repair of the kernel routes.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		routeErrors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "nfrouter", Subsystem: "bgp", Name: "route_errors_total",
			Help: "Kernel route operations that failed."}),
		invalidSettings: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "nfrouter", Subsystem: "bgp", Name: "invalid_settings_total",
			Help: "Malformed annotations and settings ignored."}),
	}
	if reg != nil {
		reg.MustRegister(m.peers, m.pathsAdvertised, m.pathsReceived, m.routesInstalled, m.routeSync, m.routeErrors, m.invalidSettings)
	}
	return m
}
