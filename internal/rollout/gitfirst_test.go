package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// gitFirstConfig rolls out through Git, with a 10m apply timeout; its record in Git was read.
func gitFirstConfig(c *v1alpha1.RollingUpgradeConfig) {
	writesBack(true)(c)
	c.Spec.GitWriteBack.Mode = v1alpha1.ModeGitFirst
	c.Spec.GitWriteBack.ApplyTimeout = &metav1.Duration{Duration: 10 * time.Minute}
}

// gitWriteFails: the write-back's last write to Git failed.
func gitWriteFails(c *v1alpha1.RollingUpgradeConfig) {
	c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionGitWriteBack,
		Status: metav1.ConditionFalse, Reason: v1alpha1.EventGitWriteBackFailed, Message: "writing to Git failed: connection refused"})
}

// step is one look at a config that is fed each decision, as in TestHealthTimerIsFair.
type step struct {
	name     string
	after    time.Duration // since the first look
	workload *Workload
	// expected
	wantStep    Step
	wantPaused  bool
	wantReason  string
	wantEvents  string
	wantOutcome Outcome
	wantGit     string // GitImage
	wantRender  string // RenderImage
}

// runSteps feeds each decision back, and plays the write-back: what Git must say is taken at once
// (status.gitWriteBack.lastWrite) unless writing fails (gitWriteFails).
func runSteps(t *testing.T, cfg *v1alpha1.RollingUpgradeConfig, candidates []Candidate, steps []step) *v1alpha1.RollingUpgradeConfig {
	t.Helper()
	for _, s := range steps {
		d := Decide(Input{Now: now.Add(s.after), Config: cfg, Workload: s.workload, Candidates: candidates})
		before := cfg
		cfg = next(cfg, d)
		// A verdict is written even when it changes no file (writeback.Desire).
		verdict := len(before.Status.VersionHistory) != len(cfg.Status.VersionHistory) ||
			(len(cfg.Status.VersionHistory) > 0 && before.Status.VersionHistory[len(before.Status.VersionHistory)-1] != cfg.Status.VersionHistory[len(cfg.Status.VersionHistory)-1])
		if changed := GitImage(before) != GitImage(cfg) || before.Status.CurrentVersion != cfg.Status.CurrentVersion || verdict; changed && !gitFailing(&cfg.Status) {
			cfg.Status.GitWriteBack.LastWrite = &metav1.Time{Time: now.Add(s.after)}
			apimeta.SetStatusCondition(&cfg.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionGitWriteBack,
				Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonWritten})
		}
		if d.Annotations.Step != s.wantStep {
			t.Errorf("%s: step %q, want %q", s.name, d.Annotations.Step, s.wantStep)
		}
		if paused := d.Annotations.Paused(); paused != s.wantPaused {
			t.Errorf("%s: health timer paused %v, want %v", s.name, paused, s.wantPaused)
		}
		if c := condition(d, meta.ReadyCondition); c == nil || c.Reason != s.wantReason {
			t.Errorf("%s: Ready %+v, want reason %s", s.name, c, s.wantReason)
		}
		if got := reasons(d.Events); got != s.wantEvents {
			t.Errorf("%s: events %q, want %q", s.name, got, s.wantEvents)
		}
		if d.Outcome != s.wantOutcome {
			t.Errorf("%s: outcome %q, want %q", s.name, d.Outcome, s.wantOutcome)
		}
		if got := GitImage(cfg); got != s.wantGit {
			t.Errorf("%s: Git says %q, want %q", s.name, got, s.wantGit)
		}
		if got, _ := RenderImage(cfg, now.Add(s.after)); got != s.wantRender {
			t.Errorf("%s: renders %q, want %q", s.name, got, s.wantRender)
		}
	}
	return cfg
}

// A GitFirst rollout is a commit: Git says the new image at once, the renderer leaves the workload
// to the GitOps tool, and the health timer starts only when the image has reached the workload.
func TestAGitFirstRolloutIsTimedFromTheImagesArrival(t *testing.T) {
	v110 := repo + ":1.1.0"
	cfg := runSteps(t, config(current("1.0.0"), gitFirstConfig), av("1.1.0"), []step{
		{name: "the rollout starts: Git gets 1.1.0, the workload is left alone", workload: deploymentAt("1.0.0", healthy),
			wantStep: StepHealthCheck, wantPaused: true, wantReason: v1alpha1.ReasonAwaitingGitOps, wantEvents: "VersionAvailable,UpdateStarting",
			wantOutcome: OutcomeStarted, wantGit: v110},
		{name: "the GitOps tool has not applied it yet", after: 9 * time.Minute, workload: deploymentAt("1.0.0", healthy),
			wantStep: StepHealthCheck, wantPaused: true, wantReason: v1alpha1.ReasonAwaitingGitOps, wantGit: v110},
		{name: "it arrives: the health timer starts", after: 9*time.Minute + 30*time.Second, workload: deploymentAt("1.1.0", pending),
			wantStep: StepHealthCheck, wantReason: v1alpha1.ReasonProgressing, wantGit: v110},
		{name: "a health timeout after the start, but not after the arrival: still checked", after: 19 * time.Minute, workload: deploymentAt("1.1.0", pending),
			wantStep: StepHealthCheck, wantReason: v1alpha1.ReasonProgressing, wantGit: v110},
		{name: "healthy: completed, and Git keeps 1.1.0", after: 19*time.Minute + 10*time.Second, workload: deploymentAt("1.1.0", healthy),
			wantReason: v1alpha1.EventUpdateComplete, wantEvents: v1alpha1.EventUpdateComplete, wantOutcome: OutcomeHealthy, wantGit: v110},
	})
	if cfg.Status.CurrentVersion != "1.1.0" || history(cfg.Status) != "1.1.0:Healthy" {
		t.Errorf("current %s, history %s", cfg.Status.CurrentVersion, history(cfg.Status))
	}
	if want := now.Add(9*time.Minute + 30*time.Second); !cfg.Status.VersionHistory[0].AppliedAt.Time.Equal(want) {
		t.Errorf("applied at %s, want the arrival %s", cfg.Status.VersionHistory[0].AppliedAt, want)
	}
}

// A version the GitOps tool never brings is withdrawn, not judged: Git gets the last healthy image
// back, the version stays eligible, and the next rollout waits, longer after each withdrawal.
func TestAGitFirstVersionThatNeverArrivesIsWithdrawn(t *testing.T) {
	v100, v110 := repo+":1.0.0", repo+":1.1.0"
	old := deploymentAt("1.0.0", healthy)
	cfg := runSteps(t, config(current("1.0.0"), gitFirstConfig), av("1.1.0"), []step{
		{name: "the rollout starts", workload: old,
			wantStep: StepHealthCheck, wantPaused: true, wantReason: v1alpha1.ReasonAwaitingGitOps, wantEvents: "VersionAvailable,UpdateStarting",
			wantOutcome: OutcomeStarted, wantGit: v110},
		{name: "the apply timeout passes: withdrawn, Git returns to 1.0.0", after: 10 * time.Minute, workload: old,
			wantReason: v1alpha1.EventNotAppliedFromGit, wantEvents: v1alpha1.EventNotAppliedFromGit, wantOutcome: OutcomeWithdrawn, wantGit: v100},
		{name: "the next rollout waits an apply timeout", after: 19 * time.Minute, workload: old,
			wantReason: v1alpha1.EventNotAppliedFromGit, wantGit: v100},
		{name: "then starts again", after: 20 * time.Minute, workload: old,
			wantStep: StepHealthCheck, wantPaused: true, wantReason: v1alpha1.ReasonAwaitingGitOps, wantEvents: v1alpha1.EventUpdateStarting,
			wantOutcome: OutcomeStarted, wantGit: v110},
		{name: "withdrawn again", after: 30 * time.Minute, workload: old,
			wantReason: v1alpha1.EventNotAppliedFromGit, wantEvents: v1alpha1.EventNotAppliedFromGit, wantOutcome: OutcomeWithdrawn, wantGit: v100},
		{name: "the second wait is twice as long", after: 49 * time.Minute, workload: old,
			wantReason: v1alpha1.EventNotAppliedFromGit, wantGit: v100},
		{name: "and ends", after: 50 * time.Minute, workload: old,
			wantStep: StepHealthCheck, wantPaused: true, wantReason: v1alpha1.ReasonAwaitingGitOps, wantEvents: v1alpha1.EventUpdateStarting,
			wantOutcome: OutcomeStarted, wantGit: v110},
	})
	st := cfg.Status
	if history(st) != "1.1.0:Withdrawn,1.1.0:Withdrawn" || len(st.FailedVersions) != 0 || st.RollbackCount != 0 || st.CircuitOpen {
		t.Errorf("history %s, failed %v, rollbacks %d, circuit %v: a withdrawal judges nothing", history(st), st.FailedVersions, st.RollbackCount, st.CircuitOpen)
	}
}

// A GitFirst rollback is a commit of the last healthy image; only while Git cannot be written is it
// rendered into the workload too, so that a broken version never stays up because Git is down.
func TestAGitFirstRollbackIsRenderedOnlyWhileGitFails(t *testing.T) {
	v100 := repo + ":1.0.0"
	checking := config(current("1.0.0"), gitFirstConfig, inFlight(StepHealthCheck, repo+":1.1.0", now.Add(-time.Minute)))
	steps := []step{
		{name: "the version fails: rolled back through Git", workload: deploymentAt("1.1.0", failed),
			wantStep: StepRollingBack, wantReason: v1alpha1.ReasonRollingBack, wantEvents: v1alpha1.EventUpdateRollback,
			wantOutcome: OutcomeFailed, wantGit: v100},
		{name: "the GitOps tool brings 1.0.0 back", after: time.Minute, workload: deploymentAt("1.0.0", healthy),
			wantReason: v1alpha1.EventRollbackComplete, wantEvents: v1alpha1.EventRollbackComplete, wantGit: v100},
	}
	runSteps(t, checking.DeepCopy(), nil, steps)

	// Git fails: the rollback is rendered, and stays rendered after it: Git, and the GitOps tool
	// with it, still says 1.1.0 until the rollback's commit is pushed.
	steps[0].wantRender, steps[1].wantRender = v100, v100
	runSteps(t, config(current("1.0.0"), gitFirstConfig, gitWriteFails, inFlight(StepHealthCheck, repo+":1.1.0", now.Add(-time.Minute))), nil, steps)
	if img, _ := RenderImage(config(current("1.0.0"), gitFirstConfig, gitWriteFails, inFlight(StepHealthCheck, repo+":1.1.0", now)), now); img != "" {
		t.Errorf("while a check runs, a failing Git renders %q", img)
	}
}

// A GitFirst rollout is a commit: while Git cannot be written none starts, and a check whose commit
// is not pushed yet is not timed (a version is withdrawn only an apply timeout after its commit).
func TestAGitFirstRolloutWaitsForGit(t *testing.T) {
	v100, v110 := repo+":1.0.0", repo+":1.1.0"
	old := deploymentAt("1.0.0", healthy)
	down := runSteps(t, config(current("1.0.0"), gitFirstConfig, gitWriteFails), av("1.1.0"), []step{
		{name: "Git fails: the version waits", workload: old, wantReason: v1alpha1.EventGitWriteBackFailed,
			wantEvents: v1alpha1.EventVersionAvailable, wantGit: v100, wantRender: v100},
	})
	if down.Status.Phase == v1alpha1.PhaseInProgress || down.Annotations[v1alpha1.UpdatePhaseAnnotation] != "" {
		t.Errorf("started while Git fails: %s, %v", down.Status.Phase, down.Annotations)
	}

	// A target set by hand starts all the same, and waits for its commit; Git's last write, from
	// before it, says nothing of it.
	hand := config(current("1.0.0"), gitFirstConfig, gitWriteFails, func(c *v1alpha1.RollingUpgradeConfig) {
		c.Annotations[v1alpha1.TargetImageAnnotation] = v110
		c.Status.GitWriteBack.LastWrite = &metav1.Time{Time: now.Add(-time.Hour)}
	})
	cfg := runSteps(t, hand, nil, []step{
		{name: "a target set by hand starts", workload: old, wantStep: StepHealthCheck, wantPaused: true,
			wantReason: v1alpha1.ReasonAwaitingGitOps, wantEvents: v1alpha1.EventUpdateStarting, wantOutcome: OutcomeStarted, wantGit: v110},
		{name: "within the apply timeout, its commit is not pushed yet: it waits", after: 9 * time.Minute, workload: old,
			wantStep: StepHealthCheck, wantPaused: true, wantReason: v1alpha1.ReasonAwaitingGitOps, wantGit: v110},
	})
	// Git takes the commit 9 minutes late: the apply timeout runs from then.
	cfg.Status.Conditions = nil
	cfg.Status.GitWriteBack.LastWrite = &metav1.Time{Time: now.Add(time.Hour)}
	apimeta.SetStatusCondition(&cfg.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionGitWriteBack, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonWritten})
	runSteps(t, cfg, nil, []step{
		{name: "committed: the GitOps tool has an apply timeout from the commit", after: time.Hour + 9*time.Minute, workload: old,
			wantStep: StepHealthCheck, wantPaused: true, wantReason: v1alpha1.ReasonAwaitingGitOps, wantGit: v110},
		{name: "and no more", after: time.Hour + 10*time.Minute, workload: old,
			wantReason: v1alpha1.EventNotAppliedFromGit, wantEvents: v1alpha1.EventNotAppliedFromGit, wantOutcome: OutcomeWithdrawn, wantGit: v100},
	})
}

// A GitFirst start is a commit made while the start is allowed: one that Git does not take in time
// (an outage right after the start) is withdrawn, and the start decided again, rather than land
// whenever Git comes back: past the apply timeout from the start, or once the calendar that let it
// start has closed.
func TestAGitFirstCommitNotMadeWhileAllowedIsWithdrawn(t *testing.T) {
	v100, v110 := repo+":1.0.0", repo+":1.1.0"
	old := deploymentAt("1.0.0", healthy)
	longApply := func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.GitWriteBack.ApplyTimeout = &metav1.Duration{Duration: 2 * time.Hour}
	}
	started := runSteps(t, config(current("1.0.0"), gitFirstConfig, longApply, windowAt("0 3 * * *", time.Hour)), av("1.1.0"), []step{
		{name: "the window is open: the rollout starts", workload: old,
			wantStep: StepHealthCheck, wantPaused: true, wantReason: v1alpha1.ReasonAwaitingGitOps, wantEvents: "VersionAvailable,UpdateStarting",
			wantOutcome: OutcomeStarted, wantGit: v110},
	})
	// Git goes down before the commit is pushed.
	apimeta.SetStatusCondition(&started.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionGitWriteBack,
		Status: metav1.ConditionFalse, Reason: v1alpha1.EventGitWriteBackFailed, Message: "writing to Git failed: connection refused"})
	started.Status.GitWriteBack.LastWrite = &metav1.Time{Time: now.Add(-time.Hour)}
	runSteps(t, started.DeepCopy(), av("1.1.0"), []step{
		{name: "the window opened less than a minute ago: it waits for its commit", after: 30 * time.Second, workload: old,
			wantStep: StepHealthCheck, wantPaused: true, wantReason: v1alpha1.ReasonAwaitingGitOps, wantGit: v110},
		{name: "the window still open: it waits for its commit", after: 30 * time.Minute, workload: old,
			wantStep: StepHealthCheck, wantPaused: true, wantReason: v1alpha1.ReasonAwaitingGitOps, wantGit: v110},
		{name: "the window closed, nothing committed: withdrawn, Git to say 1.0.0", after: 61 * time.Minute, workload: old,
			wantReason: v1alpha1.EventNotAppliedFromGit, wantEvents: v1alpha1.EventNotAppliedFromGit, wantOutcome: OutcomeWithdrawn, wantGit: v100, wantRender: v100},
	})
	// A target set by hand outside the window (the calendar did not let it in) waits for its
	// commit up to the apply timeout, not withdrawn at once for a calendar that is closed.
	hand := started.DeepCopy()
	hand.Annotations[v1alpha1.UpdateStartedAnnotation] = now.Add(2 * time.Hour).Format(time.RFC3339)
	hand.Annotations[v1alpha1.CheckPausedAnnotation] = hand.Annotations[v1alpha1.UpdateStartedAnnotation]
	runSteps(t, hand, nil, []step{
		{name: "a target set by hand outside the window: it waits for its commit", after: 2*time.Hour + 5*time.Minute, workload: old,
			wantStep: StepHealthCheck, wantPaused: true, wantReason: v1alpha1.ReasonAwaitingGitOps, wantGit: v110},
	})
	// An admin's calendar that let it start and closes withdraws it the same way.
	admin := started.DeepCopy()
	admin.Spec.MaintenanceWindow = nil
	ops := &v1alpha1.RolloutCalendar{ObjectMeta: metav1.ObjectMeta{Name: "ops"}, Spec: v1alpha1.RolloutCalendarSpec{Windows: []v1alpha1.CalendarWindow{
		{Name: "mornings", Schedule: "0 2 * * *", Duration: &metav1.Duration{Duration: 30 * time.Minute}, TimeZone: "UTC"}}}}
	for _, tc := range []struct {
		after    time.Duration
		outcome  Outcome
		withdraw bool
	}{{20 * time.Minute, OutcomeNone, false}, {30*time.Minute + 30*time.Second, OutcomeNone, false}, {31 * time.Minute, OutcomeWithdrawn, true}} {
		d := Decide(Input{Now: now.Add(tc.after), Config: admin, Workload: old, Calendars: []*v1alpha1.RolloutCalendar{ops}})
		if d.Outcome != tc.outcome {
			t.Errorf("the admin's calendar, %s after the start: outcome %q, want %q", tc.after, d.Outcome, tc.outcome)
		}
		if r := condition(d, meta.ReadyCondition); tc.withdraw && !strings.Contains(r.Message, "was not committed to Git before the calendar closed (window mornings of RolloutCalendar ops") {
			t.Errorf("the admin's calendar closed: Ready %+v", r)
		}
	}
	if !NeedsCalendars(admin) {
		t.Error("a GitFirst start not yet committed reads no RolloutCalendar")
	}
	// No window: the apply timeout from the start bounds the wait for the commit.
	nowindow := started.DeepCopy()
	nowindow.Spec.MaintenanceWindow, nowindow.Spec.GitWriteBack.ApplyTimeout = nil, &metav1.Duration{Duration: 10 * time.Minute}
	runSteps(t, nowindow, av("1.1.0"), []step{
		{name: "within the apply timeout: it waits", after: 9 * time.Minute, workload: old,
			wantStep: StepHealthCheck, wantPaused: true, wantReason: v1alpha1.ReasonAwaitingGitOps, wantGit: v110},
		{name: "past it, nothing committed: withdrawn", after: 10 * time.Minute, workload: old,
			wantReason: v1alpha1.EventNotAppliedFromGit, wantEvents: v1alpha1.EventNotAppliedFromGit, wantOutcome: OutcomeWithdrawn, wantGit: v100, wantRender: v100},
	})
}

// Once its image has reached the workload, a GitFirst check judges the version as any other: an
// image that leaves again is no wait for Git, and does not make a withdrawal of a version that ran.
func TestAGitFirstCheckIsJudgedOnceItsImageArrived(t *testing.T) {
	v110 := repo + ":1.1.0"
	runSteps(t, config(current("1.0.0"), gitFirstConfig), av("1.1.0"), []step{
		{name: "the rollout starts", workload: deploymentAt("1.0.0", healthy), wantStep: StepHealthCheck, wantPaused: true,
			wantReason: v1alpha1.ReasonAwaitingGitOps, wantEvents: "VersionAvailable,UpdateStarting", wantOutcome: OutcomeStarted, wantGit: v110},
		{name: "it arrives", after: time.Minute, workload: deploymentAt("1.1.0", pending),
			wantStep: StepHealthCheck, wantReason: v1alpha1.ReasonProgressing, wantGit: v110},
		{name: "the workload is back on 1.0.0, as someone had it", after: 9 * time.Minute, workload: deploymentAt("1.0.0", healthy),
			wantStep: StepHealthCheck, wantReason: v1alpha1.ReasonProgressing, wantGit: v110},
		{name: "the health timeout from its arrival passes: a verdict, not a withdrawal", after: 20 * time.Minute, workload: deploymentAt("1.0.0", healthy),
			wantStep: StepRollingBack, wantReason: v1alpha1.ReasonRollingBack, wantEvents: v1alpha1.EventUpdateRollback,
			wantOutcome: OutcomeFailed, wantGit: repo + ":1.0.0"},
	})
}

func TestRetryAfterWithdrawals(t *testing.T) {
	entry := func(result v1alpha1.RolloutResult, minutesAgo int) v1alpha1.VersionHistoryEntry {
		return v1alpha1.VersionHistoryEntry{Version: "1.1.0", Status: result, AppliedAt: metav1.NewTime(now.Add(-time.Duration(minutesAgo) * time.Minute))}
	}
	withdrawals := func(n int) []v1alpha1.VersionHistoryEntry {
		var h []v1alpha1.VersionHistoryEntry
		for range n {
			h = append(h, entry(v1alpha1.ResultWithdrawn, 0))
		}
		return h
	}
	cases := []struct {
		name      string
		history   []v1alpha1.VersionHistoryEntry
		clusterly bool // the config renders (ClusterFirst)
		wantWait  time.Duration
	}{
		{name: "no history: no wait", wantWait: 0},
		{name: "the last rollout was healthy: no wait", history: []v1alpha1.VersionHistoryEntry{entry(v1alpha1.ResultWithdrawn, 0), entry(v1alpha1.ResultHealthy, 0)}},
		{name: "one withdrawal: an apply timeout after it", history: withdrawals(1), wantWait: 20 * time.Minute},
		{name: "two in a row: twice that", history: withdrawals(2), wantWait: 30 * time.Minute},
		{name: "three in a row", history: withdrawals(3), wantWait: 50 * time.Minute},
		{name: "only those in a row count", history: append([]v1alpha1.VersionHistoryEntry{entry(v1alpha1.ResultWithdrawn, 0), entry(v1alpha1.ResultRolledBack, 0)}, withdrawals(1)...), wantWait: 20 * time.Minute},
		{name: "a person's reject or retry after them is no rollout: they still count",
			history: append(withdrawals(2), entry(v1alpha1.ResultRejected, 0), entry(v1alpha1.ResultRetried, 0)), wantWait: 30 * time.Minute},
		{name: "fifty in a row: a day at most", history: withdrawals(50), wantWait: 10*time.Minute + 24*time.Hour},
		{name: "a ClusterFirst config never waits", history: withdrawals(1), clusterly: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(gitFirstConfig)
			if tc.clusterly {
				cfg.Spec.GitWriteBack.Mode = v1alpha1.ModeClusterFirst
			}
			cfg.Status.VersionHistory = tc.history
			got := retryAfterWithdrawals(cfg, &cfg.Status)
			if tc.wantWait == 0 {
				if !got.IsZero() {
					t.Errorf("waits until %s", got)
				}
				return
			}
			if wait := got.Sub(now); wait != tc.wantWait {
				t.Errorf("waits %s, want %s", wait, tc.wantWait)
			}
		})
	}
}

// A config that writes back records no image before its record in Git was read: the record says
// which version last passed, and a rebuilt cluster may run another (a GitFirst rollout that was in
// flight when the cluster was lost).
func TestNothingIsRecordedBeforeTheGitRecordIsRead(t *testing.T) {
	cfg := config(gitFirstConfig, func(c *v1alpha1.RollingUpgradeConfig) { c.Status.GitWriteBack = nil })
	d := Decide(Input{Now: now, Config: cfg, Workload: deploymentAt("1.2.0", healthy)})
	if d.Status.CurrentImage != "" {
		t.Errorf("recorded %s before reading the record", d.Status.CurrentImage)
	}
	read := next(cfg, d)
	read.Status.GitWriteBack = &v1alpha1.GitWriteBackStatus{Written: "sha256:0"}
	if d := Decide(Input{Now: now, Config: read, Workload: deploymentAt("1.2.0", healthy)}); d.Status.CurrentImage != repo+":1.2.0" {
		t.Errorf("after the record was read (it named no version): recorded %q", d.Status.CurrentImage)
	}
}
