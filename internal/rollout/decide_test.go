package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/health"
)

const repo = "ghcr.io/acme/web"

var (
	now     = time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	healthy = health.Verdict{State: health.Healthy, Reason: "RolloutComplete", Message: "3/3 updated"}
	pending = health.Verdict{State: health.Progressing, Reason: "RolloutInProgress", Message: "1/3 updated"}
	failed  = health.Verdict{State: health.Failed, Reason: "ProgressDeadlineExceeded", Message: "timed out progressing"}
)

// config is a RollingUpgradeConfig with no window, a 10m health timeout and 3 max rollbacks.
func config(mods ...func(*v1alpha1.RollingUpgradeConfig)) *v1alpha1.RollingUpgradeConfig {
	c := &v1alpha1.RollingUpgradeConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Generation: 1, Annotations: map[string]string{}},
		Spec: v1alpha1.RollingUpgradeConfigSpec{
			TargetRef:         v1alpha1.WorkloadReference{Kind: v1alpha1.KindDeployment, Name: "web"},
			Image:             repo,
			VersionConstraint: ">=1.0.0",
			HealthTimeout:     &metav1.Duration{Duration: 10 * time.Minute},
			MaxRollbacks:      3,
		},
	}
	for _, m := range mods {
		m(c)
	}
	return c
}

func current(v string) func(*v1alpha1.RollingUpgradeConfig) {
	return func(c *v1alpha1.RollingUpgradeConfig) {
		c.Status.CurrentVersion, c.Status.CurrentImage = v, repo+":"+v
	}
}

func inFlight(phase, target string, started time.Time) func(*v1alpha1.RollingUpgradeConfig) {
	return func(c *v1alpha1.RollingUpgradeConfig) {
		c.Annotations[v1alpha1.UpdatePhaseAnnotation] = phase
		c.Annotations[v1alpha1.UpdateStartedAnnotation] = started.Format(time.RFC3339)
		if target != "" {
			c.Annotations[v1alpha1.TargetImageAnnotation] = target
		}
	}
}

func windowAt(schedule string, dur time.Duration) func(*v1alpha1.RollingUpgradeConfig) {
	return func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.MaintenanceWindow = &v1alpha1.MaintenanceWindow{Schedule: schedule, Duration: &metav1.Duration{Duration: dur}, TimeZone: "Europe/Berlin"}
	}
}

func deploymentAt(tag string, v health.Verdict) *Workload {
	return &Workload{Description: "Deployment web", Image: repo + ":" + tag, Verdict: v}
}

func av(tags ...string) []Candidate {
	var out []Candidate
	for _, t := range tags {
		out = append(out, Candidate{Tag: t, Source: "ApplicationVersion/web"})
	}
	return out
}

func reasons(events []Event) string {
	var r []string
	for _, e := range events {
		r = append(r, e.Reason)
	}
	return strings.Join(r, ",")
}

func condition(d Decision, typ string) *metav1.Condition {
	return apimeta.FindStatusCondition(d.Status.Conditions, typ)
}

// next feeds a decision back as the config the next reconcile reads, as the API server would.
func next(cfg *v1alpha1.RollingUpgradeConfig, d Decision) *v1alpha1.RollingUpgradeConfig {
	c := cfg.DeepCopy()
	c.Status = d.Status
	set := func(k, v string) {
		if v == "" {
			delete(c.Annotations, k)
		} else {
			c.Annotations[k] = v
		}
	}
	for k, v := range d.Annotations.Values() {
		set(k, v)
	}
	return c
}

// statusOnly is the config after a decision whose status was written and whose annotations were not.
func statusOnly(cfg *v1alpha1.RollingUpgradeConfig, d Decision) *v1alpha1.RollingUpgradeConfig {
	c := cfg.DeepCopy()
	c.Status = d.Status
	return c
}

func TestIdleStartsARollout(t *testing.T) {
	d := Decide(Input{Now: now, Config: config(), Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")})

	want := Annotations{TargetImage: repo + ":1.1.0", Step: StepHealthCheck, UpdateStarted: time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)}
	if d.Annotations != want {
		t.Errorf("annotations = %+v, want %+v", d.Annotations, want)
	}
	st := d.Status
	if st.Phase != v1alpha1.PhaseInProgress || st.TargetVersion != "1.1.0" || st.AvailableVersion != "1.1.0" ||
		st.CurrentVersion != "1.0.0" || st.CurrentImage != repo+":1.0.0" || st.LastUpdate == nil || !d.StatusFirst {
		t.Errorf("status = %+v", st)
	}
	if got := reasons(d.Events); got != "VersionAvailable,UpdateStarting" {
		t.Errorf("events = %s", got)
	}
	if c := condition(d, meta.ReconcilingCondition); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Reconciling = %+v", c)
	}
	if timeout := config().Spec.HealthTimeoutOrDefault(); d.RequeueAfter != timeout {
		t.Errorf("requeue after %s, want %s (the health timeout's end)", d.RequeueAfter, timeout)
	}
	// The check's first looks, before and after the image reaches the workload, write nothing more.
	cfg := next(config(), d)
	for _, w := range []*Workload{deploymentAt("1.0.0", healthy), deploymentAt("1.1.0", pending)} {
		later := Decide(Input{Now: now.Add(3 * time.Second), Config: cfg, Workload: w})
		if !apiequality(later.Status, cfg.Status) || later.Annotations != AnnotationsOf(cfg) || len(later.Events) != 0 {
			t.Errorf("a look at %s during the check changed the config: %+v", w.Image, later.Status.Conditions)
		}
	}
}

func TestWindowHoldsThenApplies(t *testing.T) {
	// 03:00 Berlin is 02:00 UTC; at 01:30 UTC the window is closed.
	cfg := config(current("1.0.0"), windowAt("0 3 * * *", time.Hour))
	early := now.Add(-30 * time.Minute)
	in := Input{Now: early, Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")}
	d := Decide(in)
	if d.Status.Phase != v1alpha1.PhasePending || d.Status.TargetVersion != "1.1.0" || d.Status.NextWindow == nil ||
		!d.Status.NextWindow.Time.Equal(now) || d.Annotations.Step != StepIdle {
		t.Fatalf("status = %+v, annotations %+v", d.Status, d.Annotations)
	}
	if d.RequeueAfter != 30*time.Minute {
		t.Errorf("requeue after %s, want the window opening", d.RequeueAfter)
	}
	if got := reasons(d.Events); got != "VersionAvailable,VersionHeld" {
		t.Errorf("events = %s", got)
	}
	if c := condition(d, meta.ReadyCondition); c == nil || !strings.Contains(c.Message, "1.1.0 held until 2026-12-01T03:00:00+01:00 (window 0 3 * * * Europe/Berlin)") {
		t.Errorf("Ready = %+v", c)
	}

	// Reconciled again while held: no new event.
	in.Config, in.Now = next(cfg, d), early.Add(time.Minute)
	d = Decide(in)
	if len(d.Events) != 0 || d.Status.Phase != v1alpha1.PhasePending {
		t.Errorf("second look: events %s, phase %s", reasons(d.Events), d.Status.Phase)
	}

	// The window opens.
	in.Config, in.Now = next(in.Config, d), now
	d = Decide(in)
	if d.Annotations.Step != StepHealthCheck || d.Status.NextWindow != nil || reasons(d.Events) != "UpdateStarting" {
		t.Errorf("at the window: annotations %+v, events %s", d.Annotations, reasons(d.Events))
	}
}

func TestHealthCheck(t *testing.T) {
	started := now.Add(-time.Minute)
	target := repo + ":1.1.0"
	inCheck := func(started time.Time) Annotations {
		return Annotations{TargetImage: target, Step: StepHealthCheck, UpdateStarted: started}
	}
	// A rollback starts its own timer now.
	rollingBack := Annotations{Step: StepRollingBack, UpdateStarted: now}
	cases := []struct {
		name string
		// inputs
		workload *Workload
		started  time.Time
		// expected
		wantPhase       v1alpha1.Phase
		wantAnnotations Annotations
		wantEvents      string
		wantOutcome     Outcome
		wantStatusFirst bool
	}{
		{name: "a healthy workload on the target completes the rollout", workload: deploymentAt("1.1.0", healthy), started: started,
			wantPhase: v1alpha1.PhaseCompleted, wantAnnotations: Annotations{TargetImage: target}, wantEvents: "UpdateComplete",
			wantOutcome: OutcomeHealthy, wantStatusFirst: true},
		{name: "a digest added by an admission webhook still counts as the target", started: started,
			workload:  &Workload{Description: "Deployment web", Image: target + "@sha256:" + strings.Repeat("a", 64), Verdict: healthy},
			wantPhase: v1alpha1.PhaseCompleted, wantAnnotations: Annotations{TargetImage: target}, wantEvents: "UpdateComplete",
			wantOutcome: OutcomeHealthy, wantStatusFirst: true},
		{name: "a target not rendered yet keeps the check running", workload: deploymentAt("1.0.0", healthy), started: started,
			wantPhase: v1alpha1.PhaseInProgress, wantAnnotations: inCheck(started)},
		{name: "a rendered target still progressing keeps the check running", workload: deploymentAt("1.1.0", pending), started: started,
			wantPhase: v1alpha1.PhaseInProgress, wantAnnotations: inCheck(started)},
		{name: "a target not healthy at the timeout is rolled back", workload: deploymentAt("1.1.0", pending), started: now.Add(-10 * time.Minute),
			wantPhase: v1alpha1.PhaseRollingBack, wantAnnotations: rollingBack, wantEvents: "UpdateRollback", wantOutcome: OutcomeFailed, wantStatusFirst: true},
		{name: "a progress deadline exceeded rolls back before the timeout", workload: deploymentAt("1.1.0", failed), started: started,
			wantPhase: v1alpha1.PhaseRollingBack, wantAnnotations: rollingBack, wantEvents: "UpdateRollback", wantOutcome: OutcomeFailed, wantStatusFirst: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(current("1.0.0"), inFlight(StepHealthCheck, target, tc.started))
			d := Decide(Input{Now: now, Config: cfg, Workload: tc.workload})
			if d.Status.Phase != tc.wantPhase {
				t.Errorf("phase = %s, want %s", d.Status.Phase, tc.wantPhase)
			}
			if d.Annotations != tc.wantAnnotations {
				t.Errorf("annotations = %+v, want %+v", d.Annotations, tc.wantAnnotations)
			}
			if got := reasons(d.Events); got != tc.wantEvents {
				t.Errorf("events = %s, want %s", got, tc.wantEvents)
			}
			if d.Outcome != tc.wantOutcome {
				t.Errorf("outcome = %q, want %q", d.Outcome, tc.wantOutcome)
			}
			if d.StatusFirst != tc.wantStatusFirst {
				t.Errorf("statusFirst = %v, want %v", d.StatusFirst, tc.wantStatusFirst)
			}
			if deadline := tc.started.Add(cfg.Spec.HealthTimeoutOrDefault()); tc.wantPhase == v1alpha1.PhaseInProgress && d.RequeueAfter != deadline.Sub(now) {
				t.Errorf("requeue after %s, want %s (the health timeout's end)", d.RequeueAfter, deadline.Sub(now))
			}
		})
	}
}

func TestSuccessIsRecordedOnce(t *testing.T) {
	started := now.Add(-time.Minute)
	cfg := config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", started))
	in := Input{Now: now, Config: cfg, Workload: deploymentAt("1.1.0", healthy)}
	d := Decide(in)
	h := d.Status.VersionHistory
	if len(h) != 1 || h[0].Version != "1.1.0" || h[0].Status != v1alpha1.ResultHealthy || !h[0].AppliedAt.Time.Equal(started) ||
		d.Status.CurrentVersion != "1.1.0" || d.Status.RollbackCount != 0 {
		t.Fatalf("status = %+v", d.Status)
	}
	// The status was written, then the manager died before the annotations (so before the events):
	// the same decision again records nothing twice and emits the event that was not emitted.
	d2 := Decide(Input{Now: now.Add(time.Second), Config: statusOnly(cfg, d), Workload: deploymentAt("1.1.0", healthy)})
	if len(d2.Status.VersionHistory) != 1 || reasons(d2.Events) != v1alpha1.EventUpdateComplete || d2.Annotations.Step != StepIdle {
		t.Errorf("second decision: history %d, events %s, annotations %+v", len(d2.Status.VersionHistory), reasons(d2.Events), d2.Annotations)
	}
}

// TestACompletedRolloutSettlesWithoutAnotherWrite: the looks that follow a successful rollout
// (its own annotation write wakes one) find the status as the verdict left it, and write nothing.
func TestACompletedRolloutSettlesWithoutAnotherWrite(t *testing.T) {
	cfg := config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", now.Add(-time.Minute)), func(c *v1alpha1.RollingUpgradeConfig) {
		c.Status.AvailableVersion, c.Status.LastCheck = "1.1.0", &metav1.Time{Time: now.Add(-time.Minute)} // as the start left them
	})
	cfg = next(cfg, Decide(Input{Now: now, Config: cfg, Workload: deploymentAt("1.1.0", healthy)}))
	for _, cands := range [][]Candidate{av("1.1.0"), av("1.0.0", "1.1.0")} {
		d := Decide(Input{Now: now.Add(time.Second), Config: cfg, Workload: deploymentAt("1.1.0", healthy), Candidates: cands})
		if !apiequality(d.Status, cfg.Status) || len(d.Events) != 0 {
			t.Errorf("candidates %v: the look after completion rewrote the status:\n%+v\nwas\n%+v", cands, d.Status.Conditions, cfg.Status.Conditions)
		}
	}
}

func TestRollbackBookkeepingAndCircuit(t *testing.T) {
	cfg := config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.2.2", now.Add(-11*time.Minute)), func(c *v1alpha1.RollingUpgradeConfig) {
		c.Status.RollbackCount = 2
		c.Status.FailedVersions = []string{"1.2.0", "1.2.1"}
	})
	d := Decide(Input{Now: now, Config: cfg, Workload: deploymentAt("1.2.2", pending)})
	st := d.Status
	if st.RollbackCount != 3 || !st.CircuitOpen || strings.Join(st.FailedVersions, ",") != "1.2.0,1.2.1,1.2.2" ||
		st.VersionHistory[len(st.VersionHistory)-1].Status != v1alpha1.ResultRolledBack {
		t.Errorf("status = %+v", st)
	}
	if got := reasons(d.Events); got != "UpdateRollback,CircuitOpen" {
		t.Errorf("events = %s", got)
	}
	// The status was written but the annotations were not: the repeated decision counts nothing
	// twice and emits the events that never went out.
	if d2 := Decide(Input{Now: now.Add(time.Second), Config: statusOnly(cfg, d), Workload: deploymentAt("1.2.2", pending)}); d2.Status.RollbackCount != 3 ||
		len(d2.Status.FailedVersions) != 3 || reasons(d2.Events) != "UpdateRollback,CircuitOpen" {
		t.Errorf("repeated: rollbacks %d, failed %v, events %s", d2.Status.RollbackCount, d2.Status.FailedVersions, reasons(d2.Events))
	}

	// The rollback finishes: the workload is healthy on the current image again.
	cfg = next(cfg, d)
	d = Decide(Input{Now: now.Add(time.Minute), Config: cfg, Workload: deploymentAt("1.0.0", healthy)})
	if d.Status.Phase != v1alpha1.PhaseFailed || d.Annotations != (Annotations{}) || reasons(d.Events) != "RollbackComplete" {
		t.Errorf("after rollback: phase %s, annotations %+v, events %s", d.Status.Phase, d.Annotations, reasons(d.Events))
	}
	if c := condition(d, meta.StalledCondition); c == nil || c.Reason != v1alpha1.EventCircuitOpen {
		t.Errorf("Stalled = %+v", c)
	}

	// A new good version: not applied while the circuit is open, one event for it.
	cfg = next(cfg, d)
	in := Input{Now: now.Add(2 * time.Minute), Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.3.0")}
	d = Decide(in)
	if d.Annotations.TargetImage != "" || d.Status.Phase != v1alpha1.PhaseFailed || reasons(d.Events) != "VersionAvailable,VersionAvailableCircuitOpen" {
		t.Errorf("circuit open: annotations %+v, phase %s, events %s", d.Annotations, d.Status.Phase, reasons(d.Events))
	}
	in.Config = next(cfg, d)
	if d = Decide(in); len(d.Events) != 0 {
		t.Errorf("second look with the circuit open: events %s", reasons(d.Events))
	}

	// A human resets the circuit: 1.3.0 goes out.
	cfg = next(in.Config, d)
	cfg.Annotations[v1alpha1.ResetCircuitAnnotation] = "ticket-42"
	d = Decide(Input{Now: now.Add(3 * time.Minute), Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.3.0")})
	if d.Status.CircuitOpen || d.Status.RollbackCount != 0 || d.Status.LastCircuitReset != "ticket-42" ||
		d.Annotations.TargetImage != repo+":1.3.0" || reasons(d.Events) != "CircuitReset,UpdateStarting" {
		t.Errorf("after reset: status %+v, annotations %+v, events %s", d.Status, d.Annotations, reasons(d.Events))
	}
	// The same token again does nothing.
	cfg = next(cfg, d)
	cfg.Status.CircuitOpen, cfg.Status.RollbackCount = true, 3
	d = Decide(Input{Now: now.Add(4 * time.Minute), Config: cfg, Workload: deploymentAt("1.3.0", pending)})
	if !d.Status.CircuitOpen {
		t.Error("an old reset token reset the circuit again")
	}
}

func TestFailedVersionIsNotRetried(t *testing.T) {
	cfg := config(current("1.0.0"), func(c *v1alpha1.RollingUpgradeConfig) { c.Status.FailedVersions = []string{"1.1.0"} })
	d := Decide(Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")})
	if d.Annotations.TargetImage != "" || d.Status.AvailableVersion != "" || len(d.Events) != 0 {
		t.Errorf("annotations %+v, available %q, events %s", d.Annotations, d.Status.AvailableVersion, reasons(d.Events))
	}
	if c := condition(d, meta.ReadyCondition); c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonUpToDate {
		t.Errorf("Ready = %+v", c)
	}
}

func TestStatefulSetRollbackDeletesStuckPods(t *testing.T) {
	cfg := config(current("1.0.0"), inFlight(StepRollingBack, "", now.Add(-time.Minute)))
	w := deploymentAt("1.0.0", pending)
	w.Description, w.OrderedReadyStatefulSet = "StatefulSet web", true
	if d := Decide(Input{Now: now, Config: cfg, Workload: w}); d.Effects.DeleteStuckPods {
		t.Error("pods deleted before the StatefulSet controller saw the rolled-back template: its update revision is still the failed one")
	}
	w.GenerationObserved = true
	if d := Decide(Input{Now: now, Config: cfg, Workload: w}); !d.Effects.DeleteStuckPods || d.Status.Phase != v1alpha1.PhaseRollingBack {
		t.Errorf("DeleteStuckPods %v, phase %s", d.Effects.DeleteStuckPods, d.Status.Phase)
	}
	// Not before the template is back on the good image, and never for a Deployment.
	w.Image = repo + ":1.1.0"
	if d := Decide(Input{Now: now, Config: cfg, Workload: w}); d.Effects.DeleteStuckPods {
		t.Error("pods deleted before the template was rolled back")
	}
	if d := Decide(Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", pending)}); d.Effects.DeleteStuckPods {
		t.Error("pods of a Deployment deleted")
	}
}

func TestManualOverrideAndPinning(t *testing.T) {
	cfg := config(current("1.0.0"), func(c *v1alpha1.RollingUpgradeConfig) {
		c.Annotations[v1alpha1.TargetImageAnnotation] = repo + ":0.9.0" // older than current: still honoured
	})
	d := Decide(Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")})
	if d.Annotations.TargetImage != repo+":0.9.0" || d.Annotations.Step != StepHealthCheck || d.Status.TargetVersion != "0.9.0" {
		t.Errorf("hand-set image not rolled out: %+v %+v", d.Annotations, d.Status)
	}

	pinned := repo + "@sha256:" + strings.Repeat("0", 64)
	cfg = config(func(c *v1alpha1.RollingUpgradeConfig) {
		c.Annotations[v1alpha1.TargetImageAnnotation] = pinned
		c.Status.CurrentImage = pinned
	})
	d = Decide(Input{Now: now, Config: cfg, Workload: &Workload{Description: "Deployment web", Image: pinned, Verdict: healthy}, Candidates: av("1.1.0")})
	if d.Annotations.TargetImage != pinned || d.Annotations.Step != StepIdle {
		t.Errorf("pinned config was updated: %+v", d.Annotations)
	}
	if c := condition(d, meta.ReadyCondition); c == nil || c.Reason != v1alpha1.ReasonPinned {
		t.Errorf("Ready = %+v", c)
	}
}

// TestUnchangedInputsDecideNothingNew: deciding again on the state a decision produced, with
// nothing else changed, gives the same status and no events, so nothing is written.
func TestUnchangedInputsDecideNothingNew(t *testing.T) {
	cases := map[string]Input{
		"up to date": {Config: config(current("1.1.0")), Workload: deploymentAt("1.1.0", healthy), Candidates: av("1.1.0", "latest")},
		"held":       {Config: config(current("1.0.0"), windowAt("0 3 * * *", time.Hour)), Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")},
		"waiting":    {Config: config(current("1.0.0")), Workload: deploymentAt("1.0.0", pending), Candidates: av("1.1.0")},
		"stalled":    {Config: config(current("1.0.0")), Candidates: av("1.1.0")},
		"suspended": {Config: config(current("1.0.0"), func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.Suspend = true }),
			Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")},
		"circuit open, newer version available": {Config: config(current("1.0.0"), func(c *v1alpha1.RollingUpgradeConfig) {
			c.Status.CircuitOpen, c.Status.RollbackCount = true, 3
		}), Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")},
		"invalid spec": {Config: config(current("1.0.0"), func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.VersionConstraint = "newest please" }),
			Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")},
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			in.Now = now.Add(-2 * time.Hour)
			first := Decide(in)
			for i := 1; i <= 20; i++ {
				in.Config, in.Now = next(in.Config, first), in.Now.Add(time.Second)
				d := Decide(in)
				if len(d.Events) != 0 || !apiequality(d.Status, in.Config.Status) || d.Annotations != AnnotationsOf(in.Config) {
					t.Fatalf("reconcile %d changed something: events %s\nstatus %+v\nwas    %+v", i, reasons(d.Events), d.Status, in.Config.Status)
				}
			}
		})
	}
}

// TestPollsThatFindNothingNewWriteNothing: a registry source is read again every interval; while
// it gives the same answer, the config is not rewritten (at thousands of configs, a timestamp
// refreshed on each poll would be thousands of writes an hour for nothing).
func TestPollsThatFindNothingNewWriteNothing(t *testing.T) {
	in := Input{Now: now, Config: config(current("1.1.0")), Workload: deploymentAt("1.1.0", healthy), Candidates: av("1.1.0"),
		PollAfter: time.Hour}
	in.Config = next(in.Config, Decide(in))
	for i := 1; i <= 5; i++ {
		in.Now = in.Now.Add(time.Hour)
		if d := Decide(in); !apiequality(d.Status, in.Config.Status) || len(d.Events) != 0 {
			t.Fatalf("poll %d rewrote the status: lastCheck %v, was %v", i, d.Status.LastCheck, in.Config.Status.LastCheck)
		}
	}
	in.Candidates = av("1.1.0", "1.2.0")
	if d := Decide(in); d.Status.LastCheck == nil || !d.Status.LastCheck.Time.Equal(in.Now) {
		t.Errorf("a new answer left lastCheck at %v, want %v", d.Status.LastCheck, in.Now)
	}
}

// TestInFlightRepeatsWriteNothing: while a rollout or rollback is watched and its workload does not
// change, a repeated decision writes nothing and emits nothing (a status that counted down would be
// a write per config per look), and looks again exactly when the health timeout ends.
func TestInFlightRepeatsWriteNothing(t *testing.T) {
	started := now.Add(-time.Minute)
	for name, in := range map[string]Input{
		"health check": {Config: config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", started)), Workload: deploymentAt("1.1.0", pending)},
		"rollback":     {Config: config(current("1.0.0"), inFlight(StepRollingBack, "", started)), Workload: deploymentAt("1.1.0", pending)},
	} {
		t.Run(name, func(t *testing.T) {
			in.Now = now
			in.Config = next(in.Config, Decide(in))
			for i := 1; i <= 20; i++ {
				in.Now = in.Now.Add(5 * time.Second)
				d := Decide(in)
				if len(d.Events) != 0 || !apiequality(d.Status, in.Config.Status) || d.Annotations != AnnotationsOf(in.Config) {
					t.Fatalf("reconcile %d changed something: events %s\nstatus %+v\nwas    %+v", i, reasons(d.Events), d.Status, in.Config.Status)
				}
				if deadline := started.Add(in.Config.Spec.HealthTimeoutOrDefault()); d.RequeueAfter != deadline.Sub(in.Now) {
					t.Fatalf("reconcile %d looks again after %s, want %s (the health timeout's end)", i, d.RequeueAfter, deadline.Sub(in.Now))
				}
			}
		})
	}
}

func apiequality(a, b v1alpha1.RollingUpgradeConfigStatus) bool {
	return equality.Semantic.DeepEqual(a, b)
}

// TestRegistryDownWaitsWithOneWarning: a registry that fails holds rollouts with Ready=False and
// one Warning event, never touches the workload, and polls again when the cache says.
func TestRegistryDownWaitsWithOneWarning(t *testing.T) {
	in := Input{Now: now, Config: config(current("1.0.0")), Workload: deploymentAt("1.0.0", healthy), PollAfter: 30 * time.Second,
		SourceProblem: &Problem{Reason: v1alpha1.EventRegistryUnavailable, Message: "listing the tags of ghcr.io/acme/web: registry failed (500)"}}
	d := Decide(in)
	r := condition(d, meta.ReadyCondition)
	if r == nil || r.Status != metav1.ConditionFalse || r.Reason != v1alpha1.EventRegistryUnavailable || condition(d, meta.StalledCondition) != nil {
		t.Errorf("conditions %+v", d.Status.Conditions)
	}
	if reasons(d.Events) != "RegistryUnavailable" || d.Events[0].Type != corev1.EventTypeWarning || d.Annotations != (Annotations{}) {
		t.Errorf("events %s, annotations %+v", reasons(d.Events), d.Annotations)
	}
	if d.RequeueAfter != 30*time.Second {
		t.Errorf("requeue after %s, want the next listing", d.RequeueAfter)
	}
	in.Config = next(in.Config, d)
	if d = Decide(in); len(d.Events) != 0 {
		t.Errorf("second look: events %s", reasons(d.Events))
	}
	// A registry source that lists fine also brings the next poll.
	in.SourceProblem, in.Candidates = nil, []Candidate{{Tag: "1.0.0", Source: "registry"}}
	if d = Decide(in); d.RequeueAfter != 30*time.Second {
		t.Errorf("idle with a registry source: requeue after %s", d.RequeueAfter)
	}
}

// writesBack gives the config a GitWriteBack; read: its record in Git was read once
// (status.gitWriteBack is set).
func writesBack(read bool) func(*v1alpha1.RollingUpgradeConfig) {
	return func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.GitWriteBack = &v1alpha1.GitWriteBackReference{Name: "fleet", Path: "shop/kustomization.yaml"}
		if read {
			c.Status.GitWriteBack = &v1alpha1.GitWriteBackStatus{Written: "sha256:0"}
		}
	}
}

// TestAConfigThatWritesBackRollsOutOnlyAfterReadingItsRecord: a rebuilt cluster's config knows
// nothing of the versions that failed before until it has read its record in Git; neither a
// candidate nor a target set by hand starts before that.
func TestAConfigThatWritesBackRollsOutOnlyAfterReadingItsRecord(t *testing.T) {
	hand := func(c *v1alpha1.RollingUpgradeConfig) {
		c.Annotations[v1alpha1.TargetImageAnnotation] = repo + ":1.1.0"
	}
	for name, cfg := range map[string]*v1alpha1.RollingUpgradeConfig{
		"a candidate":          config(current("1.0.0"), writesBack(false)),
		"a target set by hand": config(current("1.0.0"), writesBack(false), hand),
	} {
		t.Run(name, func(t *testing.T) {
			d := Decide(Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")})
			if d.Annotations.Step != "" || d.Outcome != OutcomeNone || len(d.Events) != 0 {
				t.Errorf("started before the record was read: %+v, events %s", d.Annotations, reasons(d.Events))
			}
			if c := condition(d, meta.ReadyCondition); c == nil || c.Reason != v1alpha1.ReasonAwaitingGitRecord {
				t.Errorf("Ready = %+v", c)
			}
			read := cfg.DeepCopy()
			writesBack(true)(read)
			d = Decide(Input{Now: now, Config: read, Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")})
			if d.Annotations.Step != StepHealthCheck || d.Annotations.TargetImage != repo+":1.1.0" {
				t.Errorf("not started once the record was read: %+v", d.Annotations)
			}
		})
	}
}

// A rollback's history entry says why its version failed, as the event did: once the events are
// gone, history and why still tell a timeout from a crash.
func TestARollbackRecordsWhyInTheHistory(t *testing.T) {
	cases := []struct {
		name     string
		workload *Workload
		started  time.Time
		want     string
	}{
		{name: "not healthy at the timeout", workload: deploymentAt("1.1.0", pending), started: now.Add(-10 * time.Minute),
			want: "not healthy after 10m0s (1/3 updated)"},
		{name: "a progress deadline exceeded", workload: deploymentAt("1.1.0", failed), started: now.Add(-time.Minute),
			want: "failed after 1m0s: ProgressDeadlineExceeded: timed out progressing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(Input{Now: now, Config: config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", tc.started)), Workload: tc.workload})
			h := d.Status.VersionHistory
			if len(h) != 1 || h[0].Status != v1alpha1.ResultRolledBack || h[0].Reason != tc.want {
				t.Errorf("history %+v, want 1.1.0 RolledBack because %q", h, tc.want)
			}
		})
	}
}
