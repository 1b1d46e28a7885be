package controllers

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/controllers/rollout"
)

// The manager's rollout metrics, registered next to controller-runtime's own. Labels are per config
// (namespace, name) and, for outcomes, the result: nothing per version or per pod, so the series
// grow with the number of configs only.
// configLabels are the labels of every series: one config.
var configLabels = []string{"namespace", "name"}

func configGauge(name, help string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, configLabels)
}

func configCounter(name, help string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, configLabels)
}

var (
	rolloutDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rolling_upgrade_duration_seconds",
		Help:    "Time from the start of a rollout to its health verdict: healthy (result=success) or rolled back (result=rollback).",
		Buckets: []float64{5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600},
	}, append(configLabels, "result"))
	rolloutActive    = configGauge("rolling_upgrade_active", "1 while a rollout or its rollback is being watched.")
	rolloutSuccess   = configCounter("rolling_upgrade_success_total", "Rollouts that passed their health check.")
	rolloutFailure   = configCounter("rolling_upgrade_failure_total", "Rollouts that failed their health check (each is rolled back).")
	rolloutRollbacks = configCounter("rolling_upgrade_rollbacks_total", "Rollbacks started.")
	circuitOpen      = configGauge("rolling_upgrade_circuit_open", "1 while the circuit breaker of the config is open.")
	versionPending   = configGauge("rolling_upgrade_pending", "1 while a version is held for the maintenance window.")

	// allVecs are every metric of this file, for forgetting a config.
	allVecs = []*prometheus.MetricVec{rolloutDuration.MetricVec, rolloutActive.MetricVec, rolloutSuccess.MetricVec,
		rolloutFailure.MetricVec, rolloutRollbacks.MetricVec, circuitOpen.MetricVec, versionPending.MetricVec}
)

func init() {
	metrics.Registry.MustRegister(rolloutDuration, rolloutActive, rolloutSuccess, rolloutFailure, rolloutRollbacks, circuitOpen, versionPending)
}

// recordMetrics updates the metrics of one config after its decision was written.
func recordMetrics(ruc *v1alpha1.RollingUpgradeConfig, d rollout.Decision, started time.Time, now time.Time) {
	ns, name := ruc.Namespace, ruc.Name
	st := d.Status
	gauge := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	rolloutActive.WithLabelValues(ns, name).Set(gauge(st.Phase == v1alpha1.PhaseInProgress || st.Phase == v1alpha1.PhaseRollingBack))
	circuitOpen.WithLabelValues(ns, name).Set(gauge(st.CircuitOpen))
	versionPending.WithLabelValues(ns, name).Set(gauge(st.Phase == v1alpha1.PhasePending))
	for _, e := range d.Events {
		switch e.Reason {
		case v1alpha1.EventUpdateComplete:
			rolloutSuccess.WithLabelValues(ns, name).Inc()
			if !started.IsZero() {
				rolloutDuration.WithLabelValues(ns, name, "success").Observe(now.Sub(started).Seconds())
			}
		case v1alpha1.EventUpdateRollback:
			rolloutFailure.WithLabelValues(ns, name).Inc()
			rolloutRollbacks.WithLabelValues(ns, name).Inc()
			if !started.IsZero() {
				rolloutDuration.WithLabelValues(ns, name, "rollback").Observe(now.Sub(started).Seconds())
			}
		}
	}
}

// forgetMetrics removes every series of a deleted config, so no stale gauge stays at 1.
func forgetMetrics(namespace, name string) {
	labels := prometheus.Labels{"namespace": namespace, "name": name}
	for _, v := range allVecs {
		v.DeletePartialMatch(labels)
	}
}
