package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// A target-image set by hand is health-checked like any rollout and bound by the same rules: it does
// not start while suspended, with the circuit open, or when it failed before (so a target declared in
// Git does not loop rollout, rollback for ever). The renderer does not render it either.
func TestHandTargetsFollowTheRules(t *testing.T) {
	target := repo + ":1.2.0"
	cases := []struct {
		name string
		mod  func(*v1alpha1.RollingUpgradeConfig)
		// expected
		wantStarted bool
		wantSays    string
	}{
		{name: "a target set by hand starts outside the window", mod: windowAt("0 3 * * *", time.Hour), wantStarted: true},
		{name: "a target set by hand waits while suspended", mod: func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.Suspend = true },
			wantSays: "spec.suspend is set"},
		{name: "a target set by hand waits while the circuit is open", mod: func(c *v1alpha1.RollingUpgradeConfig) {
			c.Status.CircuitOpen, c.Status.RollbackCount = true, 3
		}, wantSays: "the circuit breaker is open"},
		{name: "a target that failed before is not retried", mod: func(c *v1alpha1.RollingUpgradeConfig) {
			c.Status.FailedVersions = []string{"1.2.0"}
		}, wantSays: "1.2.0 failed its health check before"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(current("1.0.0"), tc.mod, func(c *v1alpha1.RollingUpgradeConfig) { c.Annotations[v1alpha1.TargetImageAnnotation] = target })
			in := Input{Now: now.Add(-30 * time.Minute), Config: cfg, Workload: deploymentAt("1.0.0", healthy)}
			d := Decide(in)
			started := d.Annotations.Step == StepHealthCheck
			if started != tc.wantStarted {
				t.Errorf("started = %v, want %v", started, tc.wantStarted)
			}
			rendered, _ := RenderImage(cfg, now)
			if got := rendered == target; got != tc.wantStarted {
				t.Errorf("renderer renders %q", rendered)
			}
			if tc.wantStarted {
				return
			}
			if s := condition(d, meta.StalledCondition); s == nil || s.Reason != v1alpha1.ReasonTargetRefused || !strings.Contains(s.Message, tc.wantSays) {
				t.Errorf("Stalled = %+v, want TargetRefused saying %q", s, tc.wantSays)
			}
			if got := reasons(d.Events); got != v1alpha1.ReasonTargetRefused {
				t.Errorf("events = %s, want one TargetRefused", got)
			}
		})
	}
}

// A rollback has a deadline, and a person may still pick a version during it.
func TestRollbackDeadlineAndHandTarget(t *testing.T) {
	started := now.Add(-11 * time.Minute)
	cfg := config(current("1.0.0"), inFlight(StepRollingBack, "", started))
	in := Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", pending)}
	d := Decide(in)
	if s := condition(d, meta.StalledCondition); s == nil || s.Reason != v1alpha1.EventRollbackStuck {
		t.Errorf("Stalled = %+v, want RollbackStuck", s)
	}
	if got := reasons(d.Events); got != v1alpha1.EventRollbackStuck {
		t.Errorf("events = %s, want one RollbackStuck", got)
	}
	if d.Annotations.Step != StepRollingBack || d.Status.Phase != v1alpha1.PhaseRollingBack {
		t.Errorf("the rollback is no longer watched: %+v, phase %s", d.Annotations, d.Status.Phase)
	}
	in.Config, in.Now = next(cfg, d), now.Add(time.Minute)
	if d = Decide(in); len(d.Events) != 0 {
		t.Errorf("second look: events %s", reasons(d.Events))
	}

	in.Config = next(in.Config, d)
	in.Config.Annotations[v1alpha1.TargetImageAnnotation] = repo + ":1.0.1"
	d = Decide(in)
	if d.Annotations.Step != StepHealthCheck || d.Annotations.TargetImage != repo+":1.0.1" || reasons(d.Events) != "UpdateStarting" {
		t.Errorf("a target set by hand during the rollback: annotations %+v, events %s", d.Annotations, reasons(d.Events))
	}
}

// A target changed by hand mid-check restarts the timer even when the annotations' write failed:
// the abandonment recorded in status says the old timer is void.
func TestATargetChangedByHandRestartsAcrossAFailedWrite(t *testing.T) {
	cfg := config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.2.0", now.Add(-9*time.Minute)), func(c *v1alpha1.RollingUpgradeConfig) {
		c.Status.TargetVersion = "1.1.0"
	})
	d := Decide(Input{Now: now, Config: cfg, Workload: deploymentAt("1.1.0", pending)})
	if got := reasons(d.Events); got != "UpdateAbandoned,UpdateStarting" {
		t.Fatalf("events = %s", got)
	}
	if !d.Annotations.UpdateStarted.Equal(now) || len(d.Status.FailedVersions) != 0 {
		t.Errorf("annotations %+v, failed %v: want a fresh timer and nothing judged", d.Annotations, d.Status.FailedVersions)
	}
	later := now.Add(time.Minute)
	d = Decide(Input{Now: later, Config: statusOnly(cfg, d), Workload: deploymentAt("1.1.0", pending)})
	if !d.Annotations.UpdateStarted.Equal(later) || d.Annotations.TargetImage != repo+":1.2.0" {
		t.Errorf("retry: annotations %+v, want 1.2.0 with a fresh timer", d.Annotations)
	}
	if got := reasons(d.Events); got != "UpdateStarting" {
		t.Errorf("retry: events = %s, want UpdateStarting only", got)
	}
	if got := history(d.Status); got != "1.1.0:Abandoned" {
		t.Errorf("retry: history = %s", got)
	}
}

// A target refused during a rollback does not stop the rollback from being watched to its end.
func TestARefusedTargetDuringARollbackStillEndsIt(t *testing.T) {
	cfg := config(current("1.0.0"), inFlight(StepRollingBack, repo+":1.2.0", now.Add(-time.Minute)), func(c *v1alpha1.RollingUpgradeConfig) {
		c.Status.FailedVersions = []string{"1.2.0"}
	})
	d := Decide(Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", pending)})
	if s := condition(d, meta.StalledCondition); s == nil || s.Reason != v1alpha1.ReasonTargetRefused {
		t.Errorf("Stalled = %+v, want TargetRefused", s)
	}
	if d.Annotations.Step != StepRollingBack {
		t.Errorf("annotations = %+v", d.Annotations)
	}
	d = Decide(Input{Now: now, Config: next(cfg, d), Workload: deploymentAt("1.0.0", healthy)})
	if got := reasons(d.Events); got != "RollbackComplete" {
		t.Errorf("events = %s, want RollbackComplete", got)
	}
}

// A circuit reset and a target set by hand in one go: the target is not refused for a circuit the
// same decision closed.
func TestAResetAndATargetInOneGo(t *testing.T) {
	cfg := config(current("1.0.0"), func(c *v1alpha1.RollingUpgradeConfig) {
		c.Status.CircuitOpen, c.Status.RollbackCount = true, 3
		c.Annotations[v1alpha1.ResetCircuitAnnotation] = "t1"
		c.Annotations[v1alpha1.TargetImageAnnotation] = repo + ":1.0.1"
	})
	d := Decide(Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", healthy)})
	if got := reasons(d.Events); got != "CircuitReset,UpdateStarting" {
		t.Errorf("events = %s", got)
	}
}
