package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/analysis"
	"github.com/rollgate/rollgate/internal/health"
)

// errorRateCheck is an analysis of one metric: measured every 30s, at most 0.05, inconclusive after
// 2 errors in a row.
func errorRateCheck(count int32) func(*v1alpha1.RollingUpgradeConfig) {
	return func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.Analysis = &v1alpha1.Analysis{Metrics: []v1alpha1.MetricCheck{{
			Name: "error-rate", Query: `errors{version="{{.Version}}"}`, Interval: &metav1.Duration{Duration: 30 * time.Second},
			Count: count, SuccessCondition: v1alpha1.MetricRange{Max: ptr.To("0.05")}, ConsecutiveErrorLimit: 2,
		}}}
	}
}

func soak(d time.Duration) func(*v1alpha1.RollingUpgradeConfig) {
	return func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.SoakTime = &metav1.Duration{Duration: d} }
}

// look is one reconcile of a check in flight that is fed each decision, with the measurements the
// controller took for it.
type look struct {
	name     string
	after    time.Duration // since the start of the check
	workload *Workload
	value    *float64 // the error rate measured, if a measurement is due
	err      string   // or the error measuring it
	// expected
	wantReason  string
	wantEvents  string
	wantOutcome Outcome
	wantMessage string // in Ready's message, or the events'
	wantNext    time.Duration
}

func measured(v float64) *float64 { return &v }

// runLooks checks that each look asks the controller for a measurement exactly when one is due.
func runLooks(t *testing.T, cfg *v1alpha1.RollingUpgradeConfig, started time.Time, looks []look) *v1alpha1.RollingUpgradeConfig {
	t.Helper()
	for _, l := range looks {
		at := started.Add(l.after)
		in := Input{Now: at, Config: cfg, Workload: l.workload, Prometheus: true}
		due := MeasurementsDue(cfg, l.workload, at)
		if (len(due) > 0) != (l.value != nil || l.err != "") {
			t.Fatalf("%s: %d measurements due, want them only where the look has one", l.name, len(due))
		}
		if len(due) > 0 {
			got := analysis.Measurement{Err: l.err}
			if l.value != nil {
				got.Value = *l.value
			}
			in.Measurements = map[string]analysis.Measurement{due[0].Name: got}
		}
		d := Decide(in)
		cfg = next(cfg, d)
		ready := condition(d, meta.ReadyCondition)
		if ready == nil || ready.Reason != l.wantReason {
			t.Errorf("%s: Ready %+v, want reason %s", l.name, ready, l.wantReason)
		}
		if got := reasons(d.Events); got != l.wantEvents {
			t.Errorf("%s: events %q, want %q", l.name, got, l.wantEvents)
		}
		if d.Outcome != l.wantOutcome {
			t.Errorf("%s: outcome %q, want %q", l.name, d.Outcome, l.wantOutcome)
		}
		text := ready.Message
		for _, e := range d.Events {
			text += "\n" + e.Message
		}
		if !strings.Contains(text, l.wantMessage) {
			t.Errorf("%s: messages %q, want %q in them", l.name, text, l.wantMessage)
		}
		if l.wantNext != 0 && d.RequeueAfter != l.wantNext {
			t.Errorf("%s: next look after %s, want %s", l.name, d.RequeueAfter, l.wantNext)
		}
	}
	return cfg
}

// A version that is Ready but fails its analysis is rolled back, with the check, the value, the
// range and the query in the event, and the check and value in the history.
func TestAnalysisRollsBackAReadyVersion(t *testing.T) {
	started := now
	cfg := config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", started), errorRateCheck(3))
	cfg = runLooks(t, cfg, started, []look{
		{name: "the first measurement passes before the workload is healthy", workload: deploymentAt("1.1.0", pending), value: measured(0.01),
			wantReason: v1alpha1.ReasonProgressing, wantNext: 30 * time.Second},
		{name: "healthy, the analysis needs two more", after: 20 * time.Second, workload: deploymentAt("1.1.0", healthy),
			wantReason: v1alpha1.ReasonAnalyzing, wantMessage: "error-rate 1/3", wantNext: 10 * time.Second},
		{name: "the second fails: rolled back", after: 30 * time.Second, workload: deploymentAt("1.1.0", healthy), value: measured(0.31),
			wantReason: v1alpha1.ReasonRollingBack, wantEvents: "UpdateRollback", wantOutcome: OutcomeFailed,
			wantMessage: `failed its analysis: metric error-rate measured 0.31, which is not ≤ 0.05 (1 of 2 measurements failed, 0 allowed); rolling back to ghcr.io/acme/web:1.0.0; query: errors{version="1.1.0"}`},
	})
	h := cfg.Status.VersionHistory
	if len(h) != 1 || h[0].Status != v1alpha1.ResultRolledBack || h[0].Reason != "analysis: error-rate measured 0.31, not ≤ 0.05" {
		t.Errorf("history %+v, want 1.1.0 rolled back for its analysis", h)
	}
	if cfg.Status.FailedVersions[0] != "1.1.0" || cfg.Status.HealthCheck.Metrics[0].Failures != 1 {
		t.Errorf("status %+v, want 1.1.0 failed, and the failed measurement kept", cfg.Status)
	}
}

// A healthy version soaks before it passes: it is measured meanwhile, and passes when the soak is
// over and its analysis complete, even past its health timeout.
func TestASoakHoldsAHealthyVersion(t *testing.T) {
	started := now
	cfg := config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", started), errorRateCheck(0), soak(15*time.Minute))
	cfg = runLooks(t, cfg, started, []look{
		{name: "healthy at once: the soak starts", workload: deploymentAt("1.1.0", healthy), value: measured(0),
			wantReason: v1alpha1.ReasonSoaking, wantMessage: "soaks until 2026-12-01T02:15:00Z", wantNext: 30 * time.Second},
		{name: "measured during the soak", after: 30 * time.Second, workload: deploymentAt("1.1.0", healthy), value: measured(0.02),
			wantReason: v1alpha1.ReasonSoaking, wantMessage: "error-rate 2", wantNext: 30 * time.Second},
		{name: "past the health timeout, still soaking", after: 12 * time.Minute, workload: deploymentAt("1.1.0", healthy), value: measured(0.02),
			wantReason: v1alpha1.ReasonSoaking, wantNext: 30 * time.Second},
		{name: "the soak is over", after: 15 * time.Minute, workload: deploymentAt("1.1.0", healthy), value: measured(0.01),
			wantReason: v1alpha1.EventUpdateComplete, wantEvents: "UpdateComplete", wantOutcome: OutcomeHealthy,
			wantMessage: "healthy after 15m0s; soaked 15m0s; analysis passed: error-rate 0.01 after 4 measurements"},
	})
	if cfg.Status.CurrentVersion != "1.1.0" {
		t.Errorf("current version %s, want 1.1.0", cfg.Status.CurrentVersion)
	}
}

// A version that turns unhealthy during its soak is judged as in its health check: before the
// health timeout it waits; after, a pod of its own that stays not Ready rolls it back.
func TestAVersionThatTurnsUnhealthyInItsSoakIsRolledBack(t *testing.T) {
	started := now
	oldPodNotReady := deploymentAt("1.1.0", pending)
	oldPodNotReady.NewPods = &Pods{Count: 3, Ready: 2, OldestUnreadyStart: started}
	cfg := config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", started), soak(30*time.Minute))
	runLooks(t, cfg, started, []look{
		{name: "healthy", after: time.Minute, workload: deploymentAt("1.1.0", healthy), wantReason: v1alpha1.ReasonSoaking, wantNext: 30 * time.Minute},
		{name: "a pod drops out before the health timeout: the check waits", after: 5 * time.Minute, workload: deploymentAt("1.1.0", pending),
			wantReason: v1alpha1.ReasonProgressing},
		{name: "healthy again: the soak goes on from its start", after: 6 * time.Minute, workload: deploymentAt("1.1.0", healthy),
			wantReason: v1alpha1.ReasonSoaking, wantMessage: "soaks until 2026-12-01T02:31:00Z"},
		{name: "a pod of the version not Ready a timeout after it started", after: 20 * time.Minute, workload: oldPodNotReady,
			wantReason: v1alpha1.ReasonRollingBack, wantEvents: "UpdateRollback", wantOutcome: OutcomeFailed,
			wantMessage: "was healthy at 2026-12-01T02:01:00Z, then not healthy after 10m0s"},
	})
}

// An analysis that cannot measure is inconclusive: the check says so with one Warning event and
// waits, past its health timeout, without a rollback; a measurement that succeeds ends the wait.
func TestAnInconclusiveAnalysisWaits(t *testing.T) {
	started := now
	cfg := config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", started), errorRateCheck(2))
	refused := "Post \"http://prometheus:9090/api/v1/query\": connection refused"
	cfg = runLooks(t, cfg, started, []look{
		{name: "a first error is retried", workload: deploymentAt("1.1.0", healthy), err: refused, wantReason: v1alpha1.ReasonAnalyzing},
		{name: "the second in a row: inconclusive", after: 30 * time.Second, workload: deploymentAt("1.1.0", healthy), err: refused,
			wantReason: v1alpha1.EventAnalysisInconclusive, wantEvents: v1alpha1.EventAnalysisInconclusive,
			wantMessage: "metric error-rate: 2 errors in a row, the last: " + refused},
		{name: "still down past the health timeout: no rollback, no second event", after: 11 * time.Minute, workload: deploymentAt("1.1.0", healthy),
			err: refused, wantReason: v1alpha1.EventAnalysisInconclusive, wantMessage: "it is not rolled back for that"},
		{name: "Prometheus answers again", after: 11*time.Minute + 30*time.Second, workload: deploymentAt("1.1.0", healthy), value: measured(0),
			wantReason: v1alpha1.ReasonAnalyzing, wantMessage: "error-rate 1/2"},
		{name: "and the count is reached", after: 12 * time.Minute, workload: deploymentAt("1.1.0", healthy), value: measured(0),
			wantReason: v1alpha1.EventUpdateComplete, wantEvents: "UpdateComplete", wantOutcome: OutcomeHealthy},
	})
	if len(cfg.Status.FailedVersions) != 0 {
		t.Errorf("failed versions %v, want none", cfg.Status.FailedVersions)
	}
}

// An analysis that is inconclusive while the workload is not healthy yet says so, and the health
// timeout still applies.
func TestAnInconclusiveAnalysisDoesNotStopTheHealthTimeout(t *testing.T) {
	started := now
	cfg := config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", started), errorRateCheck(2))
	runLooks(t, cfg, started, []look{
		{name: "an error", workload: deploymentAt("1.1.0", pending), err: "no data", wantReason: v1alpha1.ReasonProgressing},
		{name: "inconclusive", after: 30 * time.Second, workload: deploymentAt("1.1.0", pending), err: "no data",
			wantReason: v1alpha1.EventAnalysisInconclusive, wantEvents: v1alpha1.EventAnalysisInconclusive,
			wantMessage: "still rolled back at 2026-12-01T02:10:00Z unless healthy by then", wantNext: 30 * time.Second},
		{name: "never healthy", after: 10 * time.Minute, workload: deploymentAt("1.1.0", pending), err: "no data",
			wantReason: v1alpha1.ReasonRollingBack, wantEvents: "UpdateRollback", wantOutcome: OutcomeFailed},
	})
}

// A config whose analysis could not judge a version starts none: without a Prometheus, or with a
// query that is no template over the variables.
func TestAnAnalysisThatCannotRunStartsNothing(t *testing.T) {
	for _, tc := range []struct {
		name       string
		prometheus bool
		mod        func(*v1alpha1.RollingUpgradeConfig)
		wantReason string
		wantMsg    string
	}{
		{name: "no Prometheus", mod: errorRateCheck(1), wantReason: v1alpha1.ReasonNoPrometheus, wantMsg: "--prometheus-url"},
		{name: "an unknown variable", prometheus: true, mod: func(c *v1alpha1.RollingUpgradeConfig) {
			errorRateCheck(1)(c)
			c.Spec.Analysis.Metrics[0].Query = `errors{tag="{{.Tag}}"}`
		}, wantReason: v1alpha1.EventInvalidSpec, wantMsg: "spec.analysis.metrics[error-rate].query"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(current("1.0.0"), tc.mod)
			d := Decide(Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0"), Prometheus: tc.prometheus})
			ready, stalled := condition(d, meta.ReadyCondition), condition(d, meta.StalledCondition)
			if d.Outcome != OutcomeNone || ready.Reason != tc.wantReason || stalled == nil || !strings.Contains(ready.Message, tc.wantMsg) {
				t.Errorf("outcome %q, Ready %+v, Stalled %+v; want no start, stalled with %s", d.Outcome, ready, stalled, tc.wantReason)
			}
			if len(d.Events) != 1 || d.Events[0].Type != corev1.EventTypeWarning || d.Events[0].Reason != tc.wantReason {
				t.Errorf("events %+v, want one Warning %s", d.Events, tc.wantReason)
			}
			// The same look again: nothing new.
			if again := Decide(Input{Now: now, Config: next(cfg, d), Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0"),
				Prometheus: tc.prometheus}); len(again.Events) != 0 {
				t.Errorf("the next look repeats %s", reasons(again.Events))
			}
		})
	}
}

// Nothing is measured while the check is paused, and its soak begins afresh when it resumes (a
// soak watches without a break); the measurements so far stay.
func TestAPauseRestartsTheSoak(t *testing.T) {
	started := now
	paused := deploymentAt("1.1.0", health.Verdict{State: health.Blocked, Reason: health.ReasonPaused, Message: "paused"})
	cfg := config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", started), errorRateCheck(3), soak(5*time.Minute))
	cfg = runLooks(t, cfg, started, []look{
		{name: "healthy and measured", workload: deploymentAt("1.1.0", healthy), value: measured(0), wantReason: v1alpha1.ReasonSoaking},
		{name: "the Deployment is paused: not measured", after: time.Minute, workload: paused, wantReason: health.ReasonPaused, wantEvents: health.ReasonPaused},
		{name: "still paused, nothing due", after: 2 * time.Minute, workload: paused, wantReason: health.ReasonPaused},
		{name: "resumed: the timer goes on", after: 3 * time.Minute, workload: deploymentAt("1.1.0", healthy), wantReason: v1alpha1.ReasonProgressing},
	})
	hc := cfg.Status.HealthCheck
	if moved, _ := time.Parse(time.RFC3339, cfg.Annotations[v1alpha1.UpdateStartedAnnotation]); !moved.Equal(started.Add(2 * time.Minute)) {
		t.Errorf("the timer started at %s after the pause, want 2m later", moved)
	}
	if len(hc.Metrics) != 1 || hc.Metrics[0].Measurements != 1 || hc.HealthySince != nil {
		t.Errorf("after the pause: %+v; want the measurement kept and the soak to begin afresh", hc)
	}
	runLooks(t, cfg, started.Add(2*time.Minute), []look{
		{name: "healthy again: the soak begins", after: time.Minute + 30*time.Second, workload: deploymentAt("1.1.0", healthy), value: measured(0),
			wantReason: v1alpha1.ReasonSoaking, wantMessage: "soaks until 2026-12-01T02:08:30Z"},
	})
}

// The resumed timer and the soak that begins afresh are written status first: whichever write
// fails, no look finds the old soak running on.
func TestAResumedSoakSurvivesAFailedWrite(t *testing.T) {
	started := now
	cfg := config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", started), soak(5*time.Minute))
	since := metav1.NewTime(started)
	cfg.Status.HealthCheck = &v1alpha1.HealthCheckStatus{Version: "1.1.0", Started: metav1.NewTime(started), HealthySince: &since}
	cfg.Annotations[v1alpha1.CheckPausedAnnotation] = started.Add(time.Minute).Format(time.RFC3339)
	d := Decide(Input{Now: started.Add(10 * time.Minute), Config: cfg, Workload: deploymentAt("1.1.0", healthy)})
	if !d.StatusFirst || d.Status.HealthCheck.HealthySince != nil {
		t.Fatalf("resume: statusFirst %v, record %+v; want the soak's end written first", d.StatusFirst, d.Status.HealthCheck)
	}
	// The status went through, the annotations did not: the retry resumes again, and the soak
	// still begins afresh.
	again := Decide(Input{Now: started.Add(10*time.Minute + time.Second), Config: statusOnly(cfg, d), Workload: deploymentAt("1.1.0", healthy)})
	if c := condition(again, meta.ReadyCondition); again.Status.HealthCheck.HealthySince != nil || c.Reason != v1alpha1.ReasonProgressing {
		t.Errorf("retry: record %+v, Ready %+v; want no soak running", again.Status.HealthCheck, c)
	}
}

// Nothing is measured before the image is in the workload: a query would measure the version it
// replaces.
func TestNothingIsMeasuredBeforeTheImageArrives(t *testing.T) {
	cfg := config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", now), errorRateCheck(3))
	if due := MeasurementsDue(cfg, deploymentAt("1.0.0", healthy), now); len(due) != 0 {
		t.Errorf("%d measurements due before the image arrived", len(due))
	}
	d := Decide(Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", healthy), Prometheus: true,
		Measurements: map[string]analysis.Measurement{"error-rate": {Value: 1}}})
	if d.Outcome != OutcomeNone || d.Status.HealthCheck.Metrics != nil {
		t.Errorf("outcome %q, record %+v: a measurement of the old version was taken", d.Outcome, d.Status.HealthCheck)
	}
}

// A check without a count passes only on a measurement taken while the workload was healthy.
func TestACheckWithoutACountMeasuresTheHealthyVersion(t *testing.T) {
	started := now
	cfg := config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", started), errorRateCheck(0))
	runLooks(t, cfg, started, []look{
		{name: "measured while progressing", workload: deploymentAt("1.1.0", pending), value: measured(0), wantReason: v1alpha1.ReasonProgressing},
		{name: "healthy: no measurement of it yet", after: 10 * time.Second, workload: deploymentAt("1.1.0", healthy),
			wantReason: v1alpha1.ReasonAnalyzing, wantNext: 20 * time.Second},
		{name: "measured healthy: passed", after: 30 * time.Second, workload: deploymentAt("1.1.0", healthy), value: measured(0),
			wantReason: v1alpha1.EventUpdateComplete, wantEvents: "UpdateComplete", wantOutcome: OutcomeHealthy},
	})
}

// A check renamed mid-check is measured afresh, and the old name's record goes: the record keeps
// within the checks the spec has.
func TestARenamedCheckIsMeasuredAfresh(t *testing.T) {
	started := now
	cfg := config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", started), errorRateCheck(3))
	cfg = runLooks(t, cfg, started, []look{
		{name: "measured", workload: deploymentAt("1.1.0", pending), value: measured(0), wantReason: v1alpha1.ReasonProgressing},
	})
	cfg.Spec.Analysis.Metrics[0].Name = "errors"
	cfg = runLooks(t, cfg, started, []look{
		{name: "renamed: due at once", after: time.Second, workload: deploymentAt("1.1.0", pending), value: measured(0), wantReason: v1alpha1.ReasonProgressing},
	})
	if m := cfg.Status.HealthCheck.Metrics; len(m) != 1 || m[0].Name != "errors" || m[0].Measurements != 1 {
		t.Errorf("records %+v, want the renamed check's alone", m)
	}
}

// A config with neither soak nor analysis never writes status.healthCheck.
func TestNoGatesNoRecord(t *testing.T) {
	cfg := config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", now))
	for _, w := range []*Workload{deploymentAt("1.1.0", pending), deploymentAt("1.1.0", healthy)} {
		if d := Decide(Input{Now: now, Config: cfg, Workload: w}); d.Status.HealthCheck != nil || MeasurementsDue(cfg, w, now) != nil {
			t.Errorf("%s: status.healthCheck %+v", w.Verdict.State, d.Status.HealthCheck)
		}
	}
}

// A rollout is stuck past the end its soak and analysis may take, not past its health timeout
// alone: a version soaking for an hour is no stuck rollout.
func TestTheDeadlineCoversTheSoakAndTheAnalysis(t *testing.T) {
	started := now
	healthyAt := func(d time.Duration) *v1alpha1.HealthCheckStatus {
		since := metav1.NewTime(started.Add(d))
		return &v1alpha1.HealthCheckStatus{Version: "1.1.0", Started: metav1.NewTime(started), HealthySince: &since}
	}
	for _, tc := range []struct {
		name string
		mods []func(*v1alpha1.RollingUpgradeConfig)
		hc   *v1alpha1.HealthCheckStatus
		want time.Duration // after the start
	}{
		{name: "no gates: the health timeout", want: 10 * time.Minute},
		{name: "a soak not begun: at the latest from the timeout", mods: []func(*v1alpha1.RollingUpgradeConfig){soak(time.Hour)}, want: 70 * time.Minute},
		{name: "a soak begun: from the first healthy look", mods: []func(*v1alpha1.RollingUpgradeConfig){soak(time.Hour)}, hc: healthyAt(2 * time.Minute), want: 62 * time.Minute},
		{name: "a short soak ends before the timeout", mods: []func(*v1alpha1.RollingUpgradeConfig){soak(time.Minute)}, hc: healthyAt(time.Minute), want: 10 * time.Minute},
		{name: "an analysis of 40 measurements every 30s", mods: []func(*v1alpha1.RollingUpgradeConfig){errorRateCheck(40)}, want: 19*time.Minute + 30*time.Second},
		{name: "a record of another version is ignored", mods: []func(*v1alpha1.RollingUpgradeConfig){soak(time.Hour)},
			hc: &v1alpha1.HealthCheckStatus{Version: "1.0.9", HealthySince: &metav1.Time{Time: started}}, want: 70 * time.Minute},
	} {
		cfg := config(append(tc.mods, inFlight(StepHealthCheck, repo+":1.1.0", started))...)
		got, ok := Deadline(cfg.Spec, AnnotationsOf(cfg), tc.hc)
		if !ok || !got.Equal(started.Add(tc.want)) {
			t.Errorf("%s: deadline %s after the start, want %s", tc.name, got.Sub(started), tc.want)
		}
	}
}
