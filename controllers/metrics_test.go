package controllers

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/controllers/rollout"
)

func TestMetricsFollowDecisionsAndGoWithTheConfig(t *testing.T) {
	ruc := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "metrics-test", Name: "web"}}
	ruc.Spec.HealthTimeout = &metav1.Duration{Duration: 10 * time.Minute}
	start := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	inCheck := rollout.Annotations{TargetImage: "ghcr.io/acme/web:1.1.0", Step: rollout.StepHealthCheck, UpdateStarted: start.Format(time.RFC3339)}
	decide := func(phase v1alpha1.Phase, circuit bool, outcome rollout.Outcome) rollout.Decision {
		d := rollout.Decision{Status: v1alpha1.RollingUpgradeConfigStatus{Phase: phase, CircuitOpen: circuit}, Outcome: outcome}
		if outcome != rollout.OutcomeNone {
			d.Rollout = rollout.Rollout{Image: inCheck.TargetImage, Started: start}
		}
		switch phase {
		case v1alpha1.PhaseInProgress:
			d.Annotations = inCheck
		case v1alpha1.PhaseRollingBack:
			d.Annotations = rollout.Annotations{Step: rollout.StepRollingBack, UpdateStarted: inCheck.UpdateStarted}
		}
		return d
	}
	value := func(c prometheus.Collector) float64 { return testutil.ToFloat64(c) }

	recordMetrics(ruc, decide(v1alpha1.PhasePending, false, rollout.OutcomeNone), start, nil)
	if value(versionPending.WithLabelValues("metrics-test", "web")) != 1 {
		t.Error("pending gauge not set")
	}
	// Outcome series exist at zero before the first outcome, so rate() sees the first one.
	for _, c := range []prometheus.Collector{rolloutSuccess, rolloutFailure, rolloutRollbacks} {
		if n := seriesOf(c, "metrics-test"); n != 1 {
			t.Errorf("%d series of a counter before any rollout, want 1 at zero", n)
		}
	}
	if n := seriesOf(rolloutDuration, "metrics-test"); n != 2 {
		t.Errorf("%d duration series before any rollout, want success and rollback at zero", n)
	}
	if n := seriesOf(rolloutDeadline, "metrics-test"); n != 0 {
		t.Errorf("a deadline while nothing is in flight")
	}

	recordMetrics(ruc, decide(v1alpha1.PhaseInProgress, false, rollout.OutcomeStarted), start, nil)
	if value(rolloutActive.WithLabelValues("metrics-test", "web")) != 1 || value(versionPending.WithLabelValues("metrics-test", "web")) != 0 {
		t.Error("active/pending gauges wrong during the health check")
	}
	if got, want := value(rolloutDeadline.WithLabelValues("metrics-test", "web")), float64(start.Add(10*time.Minute).Unix()); got != want {
		t.Errorf("deadline %v, want %v", got, want)
	}
	recordMetrics(ruc, decide(v1alpha1.PhaseCompleted, false, rollout.OutcomeHealthy), start.Add(42*time.Second),
		[]time.Duration{3 * time.Second, 4 * time.Second})
	if n := seriesOf(rolloutDeadline, "metrics-test"); n != 0 {
		t.Errorf("the deadline stays after the rollout ended")
	}
	recordMetrics(ruc, decide(v1alpha1.PhaseRollingBack, true, rollout.OutcomeFailed), start.Add(10*time.Minute), nil)
	// Watching the rollback again counts nothing more.
	recordMetrics(ruc, decide(v1alpha1.PhaseRollingBack, true, rollout.OutcomeNone), start.Add(11*time.Minute), nil)
	if value(rolloutSuccess.WithLabelValues("metrics-test", "web")) != 1 ||
		value(rolloutFailure.WithLabelValues("metrics-test", "web")) != 1 ||
		value(rolloutRollbacks.WithLabelValues("metrics-test", "web")) != 1 ||
		value(circuitOpen.WithLabelValues("metrics-test", "web")) != 1 {
		t.Error("counters or circuit gauge wrong")
	}
	if count, sum := histogramOf(t, rolloutDuration, "metrics-test"); count != 2 || sum != 642 {
		t.Errorf("rollout durations: %d observations summing to %vs, want 2 and 642s", count, sum)
	}
	if count, sum := histogramOf(t, podUpgradeDuration, "metrics-test"); count != 2 || sum != 7 {
		t.Errorf("pod upgrade durations: %d observations summing to %vs, want 2 and 7s", count, sum)
	}
	// A target removed by hand mid-check is a rollback, not a failure.
	recordMetrics(ruc, decide(v1alpha1.PhaseRollingBack, false, rollout.OutcomeAbandoned), start.Add(time.Minute), nil)
	if value(rolloutRollbacks.WithLabelValues("metrics-test", "web")) != 2 || value(rolloutFailure.WithLabelValues("metrics-test", "web")) != 1 {
		t.Error("a rollback by hand was not counted as a rollback only")
	}
	// A config retargeted mid-check abandons the rollout and rolls nothing back: no count.
	recordMetrics(ruc, decide(v1alpha1.PhaseIdle, false, rollout.OutcomeAbandoned), start.Add(time.Minute), nil)
	if value(rolloutRollbacks.WithLabelValues("metrics-test", "web")) != 2 {
		t.Error("a retargeted config counted a rollback")
	}

	forgetMetrics("metrics-test", "web")
	n := 0
	for _, v := range allVecs {
		n += seriesOf(v, "metrics-test")
	}
	if n != 0 {
		t.Errorf("%d series left after the config was deleted", n)
	}
}

// Thousands of configs, each with many versions and pods: the series grow with the configs only,
// and carry no label but the config's, the result and the histogram bucket.
func TestMetricCardinalityIsPerConfig(t *testing.T) {
	const configs, rollouts = 2000, 5
	ns := "cardinality-test"
	for i := range configs {
		ruc := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("app-%d", i)}}
		start := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
		for v := range rollouts {
			d := rollout.Decision{Outcome: rollout.OutcomeHealthy,
				Rollout: rollout.Rollout{Image: fmt.Sprintf("ghcr.io/acme/app:1.%d.0", v), Started: start}}
			if v%2 == 1 {
				d.Outcome, d.Annotations.Step = rollout.OutcomeFailed, rollout.StepRollingBack
			}
			recordMetrics(ruc, d, start.Add(time.Minute), []time.Duration{time.Second, 2 * time.Second, 3 * time.Second})
		}
	}
	t.Cleanup(func() {
		for i := range configs {
			forgetMetrics(ns, fmt.Sprintf("app-%d", i))
		}
	})

	// Per config: 3 gauges (the deadline is absent while idle), 3 counters, 2 rollout duration
	// histograms (success, rollback) and 1 pod upgrade histogram.
	allowed := map[string]bool{"namespace": true, "name": true, "result": true}
	series := 0
	for _, v := range allVecs {
		var c prometheus.Collector = v
		ch := make(chan prometheus.Metric, 1024)
		go func() { c.Collect(ch); close(ch) }()
		for m := range ch {
			var pb dto.Metric
			if err := m.Write(&pb); err != nil {
				t.Fatal(err)
			}
			inNamespace := false
			for _, l := range pb.GetLabel() {
				if !allowed[l.GetName()] {
					t.Fatalf("label %s=%s: series must not be per version or per pod", l.GetName(), l.GetValue())
				}
				inNamespace = inNamespace || (l.GetName() == "namespace" && l.GetValue() == ns)
			}
			if inNamespace {
				series++
			}
		}
	}
	if want := configs * (3 + 3 + 2 + 1); series != want {
		t.Errorf("%d series for %d configs, want %d (9 per config)", series, configs, want)
	}
}

// histogramOf sums the observations of a histogram's series in one namespace.
func histogramOf(t *testing.T, c prometheus.Collector, namespace string) (uint64, float64) {
	t.Helper()
	ch := make(chan prometheus.Metric, 100)
	go func() { c.Collect(ch); close(ch) }()
	var count uint64
	var sum float64
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		for _, l := range pb.GetLabel() {
			if l.GetName() == "namespace" && l.GetValue() == namespace {
				count += pb.GetHistogram().GetSampleCount()
				sum += pb.GetHistogram().GetSampleSum()
			}
		}
	}
	return count, sum
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

// BenchmarkScrapeWith2000Configs measures one scrape of the manager's registry (rollgate's and
// controller-runtime's metrics, text format) with 2,000 configs that each had rollouts: its time,
// its allocations, its size and its number of series.
func BenchmarkScrapeWith2000Configs(b *testing.B) {
	const configs = 2000
	ns := "bench-scrape"
	start := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	for i := range configs {
		ruc := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("app-%d", i)}}
		d := rollout.Decision{Outcome: rollout.OutcomeHealthy, Rollout: rollout.Rollout{Image: "ghcr.io/acme/app:1.1.0", Started: start}}
		recordMetrics(ruc, d, start.Add(time.Minute), []time.Duration{2 * time.Second, 3 * time.Second})
	}
	b.Cleanup(func() {
		for i := range configs {
			forgetMetrics(ns, fmt.Sprintf("app-%d", i))
		}
	})
	var size, series int
	for b.Loop() {
		families, err := ctrlmetrics.Registry.Gather()
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
		series = 0
		for _, f := range families {
			if err := enc.Encode(f); err != nil {
				b.Fatal(err)
			}
			for _, m := range f.GetMetric() {
				if h := m.GetHistogram(); h != nil {
					series += len(h.GetBucket()) + 3 // buckets, +Inf, _sum, _count
				} else {
					series++
				}
			}
		}
		size = buf.Len()
	}
	b.ReportMetric(float64(size)/1024, "KiB/scrape")
	b.ReportMetric(float64(series), "series")
}
