package controllers

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/controllers/rollout"
)

func TestMetricsFollowDecisionsAndGoWithTheConfig(t *testing.T) {
	ruc := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "metrics-test", Name: "web"}}
	start := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	decide := func(phase v1alpha1.Phase, circuit bool, reasons ...string) rollout.Decision {
		d := rollout.Decision{Status: v1alpha1.RollingUpgradeConfigStatus{Phase: phase, CircuitOpen: circuit}}
		for _, r := range reasons {
			d.Events = append(d.Events, rollout.Event{Reason: r})
		}
		return d
	}
	recordMetrics(ruc, decide(v1alpha1.PhasePending, false, v1alpha1.EventVersionHeld), time.Time{}, start)
	if testutil.ToFloat64(versionPending.WithLabelValues("metrics-test", "web")) != 1 {
		t.Error("pending gauge not set")
	}
	recordMetrics(ruc, decide(v1alpha1.PhaseInProgress, false, v1alpha1.EventUpdateStarting), start, start)
	if testutil.ToFloat64(rolloutActive.WithLabelValues("metrics-test", "web")) != 1 || testutil.ToFloat64(versionPending.WithLabelValues("metrics-test", "web")) != 0 {
		t.Error("active/pending gauges wrong during the health check")
	}
	recordMetrics(ruc, decide(v1alpha1.PhaseCompleted, false, v1alpha1.EventUpdateComplete), start, start.Add(42*time.Second))
	recordMetrics(ruc, decide(v1alpha1.PhaseRollingBack, true, v1alpha1.EventUpdateRollback, v1alpha1.EventCircuitOpen), start, start.Add(10*time.Minute))
	if testutil.ToFloat64(rolloutSuccess.WithLabelValues("metrics-test", "web")) != 1 ||
		testutil.ToFloat64(rolloutFailure.WithLabelValues("metrics-test", "web")) != 1 ||
		testutil.ToFloat64(rolloutRollbacks.WithLabelValues("metrics-test", "web")) != 1 ||
		testutil.ToFloat64(circuitOpen.WithLabelValues("metrics-test", "web")) != 1 {
		t.Error("counters or circuit gauge wrong")
	}
	if n := seriesOf(rolloutDuration, "metrics-test"); n != 2 {
		t.Errorf("%d duration series, want success and rollback", n)
	}

	forgetMetrics("metrics-test", "web")
	n := 0
	for _, c := range []prometheus.Collector{rolloutActive, circuitOpen, versionPending, rolloutSuccess, rolloutFailure, rolloutRollbacks, rolloutDuration} {
		n += seriesOf(c, "metrics-test")
	}
	if n != 0 {
		t.Errorf("%d series left after the config was deleted", n)
	}
}

// seriesOf counts the series of a collector that belong to one namespace (other tests of the
// package may record metrics of their own configs in the same registry).
func seriesOf(c prometheus.Collector, namespace string) int {
	ch := make(chan prometheus.Metric, 100)
	go func() { c.Collect(ch); close(ch) }()
	n := 0
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			continue
		}
		for _, l := range pb.GetLabel() {
			if l.GetName() == "namespace" && l.GetValue() == namespace {
				n++
			}
		}
	}
	return n
}
