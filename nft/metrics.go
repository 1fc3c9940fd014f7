package nft

import "github.com/prometheus/client_golang/prometheus"

// metrics of the nftables backend.
type metrics struct {
	transactions    *prometheus.CounterVec
	messages        prometheus.Histogram
	netlinkMessages *prometheus.CounterVec
	elementsAdded   prometheus.Counter
	elementsRemoved prometheus.Counter
	chainsRewritten prometheus.Counter
	syncDuration    prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	const ns, sub = "nfrouter", "nft"
	m := &metrics{
		transactions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "transactions_total", Help: "nftables transactions sent, by result (ok, error)."}, []string{"result"}),
		messages: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub,
			Name: "transaction_messages", Help: "Netlink messages per nftables transaction.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 9)}),
		netlinkMessages: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "netlink_messages_total", Help: "Netlink messages sent, by nftables message type."}, []string{"type"}),
		elementsAdded: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "elements_added_total", Help: "Set and map elements added."}),
		elementsRemoved: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "elements_removed_total", Help: "Set and map elements removed."}),
		chainsRewritten: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "chains_rewritten_total", Help: "Existing chains flushed and refilled because their rules changed."}),
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub,
			Name: "sync_duration_seconds", Help: "Time to plan and program one sync.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.transactions, m.messages, m.netlinkMessages, m.elementsAdded,
		m.elementsRemoved, m.chainsRewritten, m.syncDuration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) observe(s Stats, err error) {
	if s.Messages == 0 && err == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.transactions.WithLabelValues(result).Inc()
	m.messages.Observe(float64(s.Messages))
	for t, n := range s.ByType {
		m.netlinkMessages.WithLabelValues(t).Add(float64(n))
	}
	if err == nil {
		m.elementsAdded.Add(float64(s.ElementsAdded))
		m.elementsRemoved.Add(float64(s.ElementsRemoved))
		m.chainsRewritten.Add(float64(s.ChainsRewritten))
	}
}
