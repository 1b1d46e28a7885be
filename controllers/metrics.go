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

// Results of a rollout, the values of the result label.
const (
	resultSuccess  = "success"
	resultRollback = "rollback"
)

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
	podUpgradeDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "pod_upgrade_duration_seconds",
		Help:    "Time from the creation of a pod running the new version to its Ready condition, observed when the rollout's health verdict is reached.",
		Buckets: []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600},
	}, configLabels)
	rolloutActive    = configGauge("rolling_upgrade_active", "1 while a rollout or its rollback is being watched.")
	rolloutSuccess   = configCounter("rolling_upgrade_success_total", "Rollouts that passed their health check.")
	rolloutFailure   = configCounter("rolling_upgrade_failure_total", "Rollouts that failed their health check (each is rolled back).")
	rolloutRollbacks = configCounter("rolling_upgrade_rollbacks_total", "Rollbacks started: failed health checks and targets removed by hand mid-check.")
	circuitOpen      = configGauge("rolling_upgrade_circuit_open", "1 while the circuit breaker of the config is open.")
	versionPending   = configGauge("rolling_upgrade_pending", "1 while a version is held for the maintenance window.")
	rolloutDeadline  = configGauge("rolling_upgrade_deadline_timestamp_seconds",
		"While a rollout or its rollback is in flight: the Unix time its health timeout ends. A rollout in flight long after it is stuck.")

	// allVecs are every metric of this file, for forgetting a config.
	allVecs = []*prometheus.MetricVec{rolloutDuration.MetricVec, podUpgradeDuration.MetricVec, rolloutActive.MetricVec,
		rolloutSuccess.MetricVec, rolloutFailure.MetricVec, rolloutRollbacks.MetricVec, circuitOpen.MetricVec,
		versionPending.MetricVec, rolloutDeadline.MetricVec}
)

func init() {
	metrics.Registry.MustRegister(rolloutDuration, podUpgradeDuration, rolloutActive, rolloutSuccess, rolloutFailure,
		rolloutRollbacks, circuitOpen, versionPending, rolloutDeadline)
}

// recordMetrics updates the metrics of one config after its decision was written; podUpgrades are
// the pod upgrade times measured when a rollout ended. Outcomes are counted from the decision's
// Outcome, which only a decision that moves the update-phase annotation out of a health check has;
// that move is written once, so a decision repeated after a failed write counts nothing twice.
func recordMetrics(ruc *v1alpha1.RollingUpgradeConfig, d rollout.Decision, now time.Time, podUpgrades []time.Duration) {
	ns, name := ruc.Namespace, ruc.Name
	st := d.Status
	gauge := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	// Counters and histograms exist at zero from the first sight of a config: a first increment
	// from nothing is invisible to rate() and increase().
	success, failure, rollbacks := rolloutSuccess.WithLabelValues(ns, name), rolloutFailure.WithLabelValues(ns, name), rolloutRollbacks.WithLabelValues(ns, name)
	rolloutDuration.WithLabelValues(ns, name, resultSuccess)
	rolloutDuration.WithLabelValues(ns, name, resultRollback)
	pods := podUpgradeDuration.WithLabelValues(ns, name)

	active := st.Phase == v1alpha1.PhaseInProgress || st.Phase == v1alpha1.PhaseRollingBack
	rolloutActive.WithLabelValues(ns, name).Set(gauge(active))
	circuitOpen.WithLabelValues(ns, name).Set(gauge(st.CircuitOpen))
	versionPending.WithLabelValues(ns, name).Set(gauge(st.Phase == v1alpha1.PhasePending))
	if t, err := time.Parse(time.RFC3339, d.Annotations.UpdateStarted); active && err == nil {
		rolloutDeadline.WithLabelValues(ns, name).Set(float64(t.Add(ruc.Spec.HealthTimeoutOrDefault()).Unix()))
	} else {
		rolloutDeadline.DeleteLabelValues(ns, name)
	}

	result := resultSuccess
	switch d.Outcome {
	case rollout.OutcomeHealthy:
		success.Inc()
	case rollout.OutcomeFailed:
		failure.Inc()
		rollbacks.Inc()
		result = resultRollback
	case rollout.OutcomeAbandoned:
		// A target removed by hand mid-check is rolled back without a verdict on the version; a
		// config retargeted mid-check touches no workload.
		if d.Annotations.Step != rollout.StepRollingBack {
			return
		}
		rollbacks.Inc()
		result = resultRollback
	default:
		return
	}
	if !d.Rollout.Started.IsZero() {
		rolloutDuration.WithLabelValues(ns, name, result).Observe(now.Sub(d.Rollout.Started).Seconds())
	}
	for _, p := range podUpgrades {
		pods.Observe(p.Seconds())
	}
}

// forgetMetrics removes every series of a deleted config, so no stale gauge stays at 1.
func forgetMetrics(namespace, name string) {
	labels := prometheus.Labels{"namespace": namespace, "name": name}
	for _, v := range allVecs {
		v.DeletePartialMatch(labels)
	}
}
