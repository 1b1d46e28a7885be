package notify

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Reasons a notice was dropped, the values of the reason label.
const (
	// DroppedQueueFull: the sink's queue was full when the notice was recorded.
	DroppedQueueFull = "QueueFull"
	// DroppedRefused: the receiver refused it for good (a 4xx answer other than 408 and 429, or a
	// redirect).
	DroppedRefused = "Refused"
	// DroppedStopped: the manager stopped before it was sent.
	DroppedStopped = "Stopped"
)

// The series of each sink exist from the start (at 0), so that an alert on their increase sees
// the first drop.
var (
	sentTotal = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rollgate_notifications_sent_total",
		Help: "Notifications a sink's receiver took."}, []string{"sink"})
	failuresTotal = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rollgate_notification_failures_total",
		Help: "Tries to send a notification that failed and are tried again (no answer, a timeout, 408, 429 or 5xx)."}, []string{"sink"})
	droppedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rollgate_notifications_dropped_total",
		Help: "Notifications never sent, by reason: QueueFull (the sink's queue was full), Refused (the receiver refused it " +
			"for good) or Stopped (the manager stopped first)."}, []string{"sink", "reason"})
	queued = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "rollgate_notifications_queued",
		Help: "Notifications waiting for a sink's receiver, the one being sent included."}, []string{"sink"})
)

func init() {
	metrics.Registry.MustRegister(sentTotal, failuresTotal, droppedTotal, queued)
}

// sinkMetrics are the series of one sink.
type sinkMetrics struct {
	sent, failures                prometheus.Counter
	full, refused, stoppedDropped prometheus.Counter
	queued                        prometheus.Gauge
}

func metricsOf(sink string) sinkMetrics {
	return sinkMetrics{
		sent: sentTotal.WithLabelValues(sink), failures: failuresTotal.WithLabelValues(sink),
		full: droppedTotal.WithLabelValues(sink, DroppedQueueFull), refused: droppedTotal.WithLabelValues(sink, DroppedRefused),
		stoppedDropped: droppedTotal.WithLabelValues(sink, DroppedStopped), queued: queued.WithLabelValues(sink),
	}
}
