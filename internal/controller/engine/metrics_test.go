package engine

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/inplace"
	"github.com/rollgate/rollgate/internal/rollout"
)

func TestMetricsFollowDecisionsAndGoWithTheConfig(t *testing.T) {
	ruc := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "metrics-test", Name: "web"}}
	ruc.Spec.HealthTimeout = &metav1.Duration{Duration: 10 * time.Minute}
	start := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	inCheck := rollout.Annotations{TargetImage: "ghcr.io/acme/web:1.1.0", Step: rollout.StepHealthCheck, UpdateStarted: start}
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
	m := newRolloutMetrics()
	value := func(series string) float64 { return valueOf(t, seriesIn(t, m, "metrics-test"), series) }

	held := func(reason string) rollout.Decision {
		d := decide(v1alpha1.PhasePending, false, rollout.OutcomeNone)
		d.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: reason}}
		return d
	}
	m.record(ruc, held(v1alpha1.ReasonAwaitingApproval), start, nil)
	m.record(ruc, held(v1alpha1.EventVersionHeld), start, nil)
	if value("rolling_upgrade_pending{web}") != 1 || value("rolling_upgrade_waiting{web,VersionHeld}") != 1 {
		t.Error("pending gauge not set, or not the reason that holds the version")
	}
	if series := seriesIn(t, m, "metrics-test"); series["rolling_upgrade_waiting{web,AwaitingApproval}"] != nil {
		t.Error("the reason that held the version before stays")
	}
	// Pending while a source cannot be read: held still, but by no gate.
	m.record(ruc, held(v1alpha1.EventRegistryUnavailable), start, nil)
	if series := seriesIn(t, m, "metrics-test"); value("rolling_upgrade_pending{web}") != 1 || series["rolling_upgrade_waiting{web,RegistryUnavailable}"] != nil ||
		series["rolling_upgrade_waiting{web,VersionHeld}"] != nil {
		t.Error("rolling_upgrade_waiting names a reason that is no gate")
	}
	// Outcome series exist at zero before the first outcome, so rate() sees the first one.
	series := seriesIn(t, m, "metrics-test")
	for _, s := range []string{"rolling_upgrade_success_total{web}", "rolling_upgrade_failure_total{web}", "rolling_upgrade_rollbacks_total{web}",
		"rolling_upgrade_duration_seconds{web,success}", "rolling_upgrade_duration_seconds{web,rollback}", "pod_upgrade_duration_seconds{web}"} {
		if series[s] == nil {
			t.Errorf("no %s before any rollout, want it at zero", s)
		}
	}
	if series["rolling_upgrade_deadline_timestamp_seconds{web}"] != nil {
		t.Errorf("a deadline while nothing is in flight")
	}

	m.record(ruc, decide(v1alpha1.PhaseInProgress, false, rollout.OutcomeStarted), start, nil)
	if value("rolling_upgrade_active{web}") != 1 || value("rolling_upgrade_pending{web}") != 0 {
		t.Error("active/pending gauges wrong during the health check")
	}
	if series := seriesIn(t, m, "metrics-test"); series["rolling_upgrade_waiting{web,VersionHeld}"] != nil {
		t.Error("rolling_upgrade_waiting stays while nothing waits")
	}
	if got, want := value("rolling_upgrade_deadline_timestamp_seconds{web}"), float64(start.Add(10*time.Minute).Unix()); got != want {
		t.Errorf("deadline %v, want %v", got, want)
	}
	// A GitFirst check waiting for its image has the apply timeout's deadline.
	gitFirst := ruc.DeepCopy()
	gitFirst.Spec.GitWriteBack = &v1alpha1.GitWriteBackReference{Mode: v1alpha1.ModeGitFirst, ApplyTimeout: &metav1.Duration{Duration: 3 * time.Minute}}
	waiting := decide(v1alpha1.PhaseInProgress, false, rollout.OutcomeNone)
	waiting.Annotations.CheckPaused = waiting.Annotations.UpdateStarted // paused since its start: the image has not arrived
	m.record(gitFirst, waiting, start, nil)
	if got, want := value("rolling_upgrade_deadline_timestamp_seconds{web}"), float64(start.Add(3*time.Minute).Unix()); got != want {
		t.Errorf("deadline of a GitFirst check waiting for its image %v, want %v", got, want)
	}
	m.record(ruc, decide(v1alpha1.PhaseCompleted, false, rollout.OutcomeHealthy), start.Add(42*time.Second),
		[]time.Duration{3 * time.Second, 4 * time.Second})
	if seriesIn(t, m, "metrics-test")["rolling_upgrade_deadline_timestamp_seconds{web}"] != nil {
		t.Errorf("the deadline stays after the rollout ended")
	}
	m.record(ruc, decide(v1alpha1.PhaseRollingBack, true, rollout.OutcomeFailed), start.Add(10*time.Minute), nil)
	// Watching the rollback again counts nothing more.
	m.record(ruc, decide(v1alpha1.PhaseRollingBack, true, rollout.OutcomeNone), start.Add(11*time.Minute), nil)
	if value("rolling_upgrade_success_total{web}") != 1 || value("rolling_upgrade_failure_total{web}") != 1 ||
		value("rolling_upgrade_rollbacks_total{web}") != 1 || value("rolling_upgrade_circuit_open{web}") != 1 {
		t.Error("counters or circuit gauge wrong")
	}
	series = seriesIn(t, m, "metrics-test")
	for _, want := range []struct {
		series     string
		count      uint64
		sum        float64
		cumulative map[float64]uint64 // upper bound: observations at or below it
	}{
		{"rolling_upgrade_duration_seconds{web,success}", 1, 42, map[float64]uint64{30: 0, 60: 1, 3600: 1}},
		{"rolling_upgrade_duration_seconds{web,rollback}", 1, 600, map[float64]uint64{300: 0, 600: 1}},
		{"pod_upgrade_duration_seconds{web}", 2, 7, map[float64]uint64{2: 0, 5: 2, 600: 2}},
	} {
		h := series[want.series].GetHistogram()
		if h.GetSampleCount() != want.count || h.GetSampleSum() != want.sum {
			t.Errorf("%s: %d observations summing to %v, want %d and %v", want.series, h.GetSampleCount(), h.GetSampleSum(), want.count, want.sum)
		}
		for _, b := range h.GetBucket() {
			if n, ok := want.cumulative[b.GetUpperBound()]; ok && b.GetCumulativeCount() != n {
				t.Errorf("%s: %d observations at or below %v, want %d", want.series, b.GetCumulativeCount(), b.GetUpperBound(), n)
			}
		}
	}
	// A target removed by hand mid-check is a rollback, not a failure.
	m.record(ruc, decide(v1alpha1.PhaseRollingBack, false, rollout.OutcomeAbandoned), start.Add(time.Minute), nil)
	if value("rolling_upgrade_rollbacks_total{web}") != 2 || value("rolling_upgrade_failure_total{web}") != 1 {
		t.Error("a rollback by hand was not counted as a rollback only")
	}
	// A config retargeted mid-check abandons the rollout and rolls nothing back: no count.
	m.record(ruc, decide(v1alpha1.PhaseIdle, false, rollout.OutcomeAbandoned), start.Add(time.Minute), nil)
	if value("rolling_upgrade_rollbacks_total{web}") != 2 {
		t.Error("a retargeted config counted a rollback")
	}

	m.forget("metrics-test", "web")
	if n := len(seriesIn(t, m, "metrics-test")); n != 0 {
		t.Errorf("%d series left after the config was deleted", n)
	}
}

// The versions, conditions and hold of the status last written are series an alert can name them
// by; when they change, the series of the old ones go.
func TestMetricsNameTheVersionsConditionsAndHold(t *testing.T) {
	ruc := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "versions-test", Name: "web"}}
	since := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	m := newRolloutMetrics()
	m.record(ruc, rollout.Decision{Status: v1alpha1.RollingUpgradeConfigStatus{Phase: v1alpha1.PhasePending, CurrentVersion: "1.0.0", TargetVersion: "1.1.0",
		Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue}, {Type: v1alpha1.ConditionGitWriteBack, Status: metav1.ConditionFalse}},
		Hold:       &v1alpha1.Hold{Gate: v1alpha1.GateApproval, Version: "1.1.0", Since: &metav1.Time{Time: since}}}}, since.Add(time.Hour), nil)
	got := seriesIn(t, m, "versions-test")
	for _, want := range []string{"rolling_upgrade_info{web,1.0.0,1.1.0,}", "rolling_upgrade_condition{web,Ready,True}",
		"rolling_upgrade_condition{web,GitWriteBack,False}", "rolling_upgrade_held_since_timestamp_seconds{web,1.1.0,Approval}"} {
		if got[want] == nil || got[want].GetGauge().GetValue() == 0 {
			t.Errorf("no %s", want)
		}
	}
	if v := got["rolling_upgrade_held_since_timestamp_seconds{web,1.1.0,Approval}"].GetGauge().GetValue(); v != float64(since.Unix()) {
		t.Errorf("held since %v, want %d", v, since.Unix())
	}

	m.record(ruc, rollout.Decision{Status: v1alpha1.RollingUpgradeConfigStatus{Phase: v1alpha1.PhaseIdle, CurrentVersion: "1.1.0", FailedVersions: []string{"1.0.1", "1.2.0"},
		Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionFalse}, {Type: meta.StalledCondition, Status: metav1.ConditionTrue}}}},
		since.Add(2*time.Hour), nil)
	got = seriesIn(t, m, "versions-test")
	for name, want := range map[string]bool{"rolling_upgrade_info{web,1.1.0,,1.2.0}": true, "rolling_upgrade_condition{web,Ready,False}": true,
		"rolling_upgrade_condition{web,Stalled,True}": true, "rolling_upgrade_info{web,1.0.0,1.1.0,}": false, "rolling_upgrade_condition{web,Ready,True}": false,
		"rolling_upgrade_condition{web,GitWriteBack,False}": false, "rolling_upgrade_held_since_timestamp_seconds{web,1.1.0,Approval}": false} {
		if (got[name] != nil) != want {
			t.Errorf("%s: present %v, want %v", name, got[name] != nil, want)
		}
	}
}

// Thousands of configs, each with many versions and pods: the series grow with the configs only,
// and carry no label but the config's, the result and the histogram bucket.
func TestMetricCardinalityIsPerConfig(t *testing.T) {
	const configs, rollouts = 2000, 5
	m := newRolloutMetrics()
	for i := range configs {
		ruc := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "cardinality-test", Name: fmt.Sprintf("app-%d", i)}}
		start := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
		for v := range rollouts {
			d := rollout.Decision{Outcome: rollout.OutcomeHealthy,
				Rollout: rollout.Rollout{Image: fmt.Sprintf("ghcr.io/acme/app:1.%d.0", v), Started: start},
				Status: v1alpha1.RollingUpgradeConfigStatus{CurrentVersion: fmt.Sprintf("1.%d.0", v), TargetVersion: fmt.Sprintf("1.%d.0", v+1),
					Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue}},
					Hold:       &v1alpha1.Hold{Gate: v1alpha1.GateApproval, Version: fmt.Sprintf("1.%d.0", v+1), Since: &metav1.Time{Time: start}}}}
			if v%2 == 1 {
				d.Outcome, d.Annotations.Step = rollout.OutcomeFailed, rollout.StepRollingBack
			}
			m.record(ruc, d, start.Add(time.Minute), []time.Duration{time.Second, 2 * time.Second, 3 * time.Second})
		}
	}

	// Per config: 3 gauges (the deadline is absent while idle), 3 counters, 2 rollout duration
	// histograms (success, rollback), 1 pod upgrade histogram, and one series each for the versions
	// the status names now, its one condition and its hold. The labels that name a version or a
	// condition name the config's present state: a series of a version it left goes.
	allowed := map[string]bool{"namespace": true, "name": true, "result": true, "current_version": true, "target_version": true, "last_failed_version": true,
		"version": true, "gate": true, "type": true, "status": true}
	series := 0
	for _, f := range gathered(t, m) {
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if !allowed[l.GetName()] {
					t.Fatalf("label %s=%s: series must not be per version or per pod", l.GetName(), l.GetValue())
				}
			}
			series++
		}
	}
	if want := configs * (3 + 3 + 2 + 1 + 3); series != want {
		t.Errorf("%d series for %d configs, want %d (12 per config)", series, configs, want)
	}
}

// gathered is what a collector exposes, through a pedantic registry: it also checks the series
// against the collector's descriptions.
func gathered(t *testing.T, c prometheus.Collector) []*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// seriesIn is the series of one namespace, by metric name and the other label values in order:
// "rolling_upgrade_active{web}", "rolling_upgrade_duration_seconds{web,success}",
// "rolling_upgrade_info{web,1.0.0,1.1.0,}".
func seriesIn(t *testing.T, c prometheus.Collector, namespace string) map[string]*dto.Metric {
	t.Helper()
	series := map[string]*dto.Metric{}
	for _, f := range gathered(t, c) {
		for _, s := range f.GetMetric() {
			inNamespace := false
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
				inNamespace = inNamespace || (l.GetName() == "namespace" && l.GetValue() == namespace)
			}
			if !inNamespace {
				continue
			}
			key := f.GetName() + "{" + labels["name"]
			for _, extra := range []string{"result", "reason", "current_version", "target_version", "last_failed_version", "version", "gate", "type", "status"} {
				if v, ok := labels[extra]; ok {
					key += "," + v
				}
			}
			series[key+"}"] = s
		}
	}
	return series
}

// valueOf is the value of a gauge or counter among series.
func valueOf(t *testing.T, series map[string]*dto.Metric, name string) float64 {
	t.Helper()
	s := series[name]
	switch {
	case s == nil:
		t.Fatalf("no series %s", name)
	case s.GetGauge() != nil:
		return s.GetGauge().GetValue()
	case s.GetCounter() != nil:
		return s.GetCounter().GetValue()
	}
	t.Fatalf("%s is neither a gauge nor a counter", name)
	return 0
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
		configMetrics.record(ruc, d, start.Add(time.Minute), []time.Duration{2 * time.Second, 3 * time.Second})
	}
	b.Cleanup(func() {
		for i := range configs {
			configMetrics.forget(ns, fmt.Sprintf("app-%d", i))
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

// BenchmarkMetricsOf5000Configs measures the heap the rollout metrics of 5,000 configs keep, each
// after a rollout, and the time to forget them all (the configs deleted).
func BenchmarkMetricsOf5000Configs(b *testing.B) {
	const configs = 5000
	start := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	var ms runtime.MemStats
	var kept uint64
	var forgetting time.Duration
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		before := ms.HeapAlloc
		m := newRolloutMetrics()
		for i := range configs {
			ruc := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "bench-memory", Name: fmt.Sprintf("app-%d", i)}}
			d := rollout.Decision{Outcome: rollout.OutcomeHealthy, Rollout: rollout.Rollout{Image: "ghcr.io/acme/app:1.1.0", Started: start}}
			m.record(ruc, d, start.Add(time.Minute), []time.Duration{2 * time.Second})
		}
		runtime.GC()
		runtime.ReadMemStats(&ms)
		kept = ms.HeapAlloc - before
		t0 := time.Now()
		for i := range configs {
			m.forget("bench-memory", fmt.Sprintf("app-%d", i))
		}
		forgetting = time.Since(t0)
	}
	b.ReportMetric(float64(kept)/configs, "B/config")
	b.ReportMetric(float64(forgetting.Microseconds())/1000, "ms-to-forget-all")
}

// While pods of an in-place upgrade are out of their Service by rollgate's gate, the config's
// series says since when the one out longest left it (the alert RollgateInPlacePodHeldOut reads
// it); none once every pod is back.
func TestTheLongestPodOutOfServiceIsExported(t *testing.T) {
	ruc := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "metrics-inplace", Name: "db"}}
	start := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: start.Add(d)} }
	m := newRolloutMetrics()
	d := rollout.Decision{Status: v1alpha1.RollingUpgradeConfigStatus{Phase: v1alpha1.PhaseInProgress, InPlace: &v1alpha1.InPlaceStatus{Pods: []v1alpha1.InPlacePod{
		{Name: "db-2", State: string(inplace.StateDone), Since: at(0)},
		{Name: "db-1", State: string(inplace.StateChanging), Since: at(2 * time.Minute)},
		{Name: "db-0", State: string(inplace.StateDraining), Since: at(3 * time.Minute)},
	}}}}
	m.record(ruc, d, start, nil)
	if got := valueOf(t, seriesIn(t, m, "metrics-inplace"), "rolling_upgrade_inplace_pod_out_since_timestamp_seconds{db}"); got != float64(start.Add(2*time.Minute).Unix()) {
		t.Errorf("out since %v, want db-1's change", got)
	}
	for i := range d.Status.InPlace.Pods {
		d.Status.InPlace.Pods[i].State = string(inplace.StateDone)
	}
	m.record(ruc, d, start, nil)
	if seriesIn(t, m, "metrics-inplace")["rolling_upgrade_inplace_pod_out_since_timestamp_seconds{db}"] != nil {
		t.Error("the series stays once every pod is back in service")
	}
}
