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
var (
	rolloutDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rolling_upgrade_duration_seconds",
		Help:    "Time from the start of a rollout to its health verdict: healthy (result=success) or rolled back (result=rollback).",
		Buckets: []float64{5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600},
	}, []string{"namespace", "name", "result"})
	rolloutActive = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "rolling_upgrade_active",
		Help: "1 while a rollout or its rollback is being watched.",
	}, []string{"namespace", "name"})
	rolloutSuccess = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rolling_upgrade_success_total",
		Help: "Rollouts that passed their health check.",
	}, []string{"namespace", "name"})
	rolloutFailure = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rolling_upgrade_failure_total",
		Help: "Rollouts that failed their health check (each is rolled back).",
	}, []string{"namespace", "name"})
	rolloutRollbacks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rolling_upgrade_rollbacks_total",
		Help: "Rollbacks started.",
	}, []string{"namespace", "name"})
	circuitOpen = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "rolling_upgrade_circuit_open",
		Help: "1 while the circuit breaker of the config is open.",
	}, []string{"namespace", "name"})
	versionPending = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "rolling_upgrade_pending",
		Help: "1 while a version is held for the maintenance window.",
	}, []string{"namespace", "name"})
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
	for _, v := range []*prometheus.MetricVec{rolloutActive.MetricVec, circuitOpen.MetricVec, versionPending.MetricVec,
		rolloutSuccess.MetricVec, rolloutFailure.MetricVec, rolloutRollbacks.MetricVec, rolloutDuration.MetricVec} {
		v.DeletePartialMatch(labels)
	}
}
