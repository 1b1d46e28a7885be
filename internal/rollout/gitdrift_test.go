package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// failedBefore: 1.1.0 failed its health check an hour ago and was rolled back through Git.
func failedBefore(c *v1alpha1.RollingUpgradeConfig) {
	c.Status.FailedVersions = []string{"1.1.0"}
	c.Status.RollbackCount = 1
	c.Status.VersionHistory = []v1alpha1.VersionHistoryEntry{{Version: "1.1.0", Image: repo + ":1.1.0",
		AppliedAt: metav1.NewTime(now.Add(-time.Hour)), Status: v1alpha1.ResultRolledBack}}
}

// Someone reverts rollgate's rollback commit in Git, and the GitOps tool applies the version that
// failed: the status must not go on saying "running 1.0.0". The failed version is reported and
// rolled back again by a new commit (Git already says the same file: the verdict is what is written).
func TestAFailedVersionBroughtBackThroughGitIsRolledBackAgain(t *testing.T) {
	v100 := repo + ":1.0.0"
	reverted := deploymentAt("1.1.0", healthy)
	cfg := config(current("1.0.0"), gitFirstConfig, failedBefore)
	cfg.Status.GitWriteBack.LastWrite = &metav1.Time{Time: now.Add(-time.Hour)}
	cfg = runSteps(t, cfg, av("1.1.0"), []step{
		{name: "the failed version runs, from Git: reported, rolled back by a commit", workload: reverted,
			wantStep: StepRollingBack, wantReason: v1alpha1.ReasonRollingBack, wantEvents: v1alpha1.EventFailedVersionFromGit, wantGit: v100},
		{name: "the GitOps tool has not applied the rollback yet", after: time.Minute, workload: reverted,
			wantStep: StepRollingBack, wantReason: v1alpha1.ReasonRollingBack, wantGit: v100},
		{name: "it has", after: 2 * time.Minute, workload: deploymentAt("1.0.0", healthy),
			wantReason: v1alpha1.EventRollbackComplete, wantEvents: v1alpha1.EventRollbackComplete, wantGit: v100},
	})
	st := cfg.Status
	if history(st) != "1.1.0:RolledBack,1.1.0:RolledBack" || st.RollbackCount != 2 || st.CircuitOpen {
		t.Errorf("history %s, rollbacks %d, circuit %v: the second rollback is one more rollback", history(st), st.RollbackCount, st.CircuitOpen)
	}
	if r := st.VersionHistory[1].Reason; !strings.Contains(r, "Git") {
		t.Errorf("history reason %q names no Git", r)
	}

	// A crash after the status was written and before the annotations: the rollback is not counted
	// twice, and its events go out with the move; one that opened the circuit too.
	for _, max := range []int32{3, 2} {
		fresh := config(current("1.0.0"), gitFirstConfig, failedBefore, func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.MaxRollbacks = max })
		d := Decide(Input{Now: now, Config: fresh, Workload: reverted})
		again := Decide(Input{Now: now.Add(time.Minute), Config: statusOnly(fresh, d), Workload: reverted})
		wantEvents := v1alpha1.EventFailedVersionFromGit
		if max == 2 {
			wantEvents += "," + v1alpha1.EventCircuitOpen
		}
		if again.Annotations.Step != StepRollingBack || again.Status.RollbackCount != 2 || len(again.Status.VersionHistory) != 2 ||
			reasons(again.Events) != wantEvents || reasons(d.Events) != wantEvents {
			t.Errorf("maxRollbacks %d, after a crash between the writes: step %q, rollbacks %d, history %s, events %s then %s",
				max, again.Annotations.Step, again.Status.RollbackCount, history(again.Status), reasons(d.Events), reasons(again.Events))
		}
	}

	// Git was written a minute ago (after an outage, say): the GitOps tool has an apply timeout to
	// bring what it says before the failed version counts as brought back.
	late := config(current("1.0.0"), gitFirstConfig, failedBefore)
	late.Status.GitWriteBack.LastWrite = &metav1.Time{Time: now.Add(-time.Minute)}
	runSteps(t, late, nil, []step{
		{name: "Git written a minute ago: the tool may be on its way", workload: reverted, wantReason: v1alpha1.ReasonAwaitingGitOps, wantGit: v100},
		{name: "an apply timeout later it is not: rolled back", after: 9 * time.Minute, workload: reverted,
			wantStep: StepRollingBack, wantReason: v1alpha1.ReasonRollingBack, wantEvents: v1alpha1.EventFailedVersionFromGit, wantGit: v100},
	})

	// A person's reject of another version since is no verdict: Git is still late, not drifted, and
	// the rollback is not counted again.
	rejectedSince := config(current("1.0.0"), gitFirstConfig, failedBefore, func(c *v1alpha1.RollingUpgradeConfig) {
		c.Status.GitWriteBack.LastWrite = &metav1.Time{Time: now.Add(-time.Minute)}
		c.Status.FailedVersions = append(c.Status.FailedVersions, "1.3.0")
		c.Status.VersionHistory = append(c.Status.VersionHistory, v1alpha1.VersionHistoryEntry{Version: "1.3.0", Image: repo + ":1.3.0",
			AppliedAt: metav1.NewTime(now.Add(-30 * time.Second)), Status: v1alpha1.ResultRejected, RequestedBy: "alice"})
	})
	late2 := runSteps(t, rejectedSince, nil, []step{
		{name: "Git written a minute ago, a rejection since: the tool may be on its way", workload: reverted,
			wantReason: v1alpha1.ReasonAwaitingGitOps, wantGit: v100},
	})
	if late2.Status.RollbackCount != 1 {
		t.Errorf("rollbacks %d after a rejection while Git was late, want 1", late2.Status.RollbackCount)
	}

	// Each time brought back counts: with the circuit open, it is reported, not fought.
	open := config(current("1.0.0"), gitFirstConfig, failedBefore, func(c *v1alpha1.RollingUpgradeConfig) {
		c.Status.RollbackCount, c.Status.CircuitOpen = 3, true
	})
	runSteps(t, open, nil, []step{
		{name: "the circuit is open: stalled, named", workload: reverted,
			wantReason: v1alpha1.EventFailedVersionFromGit, wantEvents: v1alpha1.EventFailedVersionFromGit, wantGit: v100},
		{name: "one Warning", after: time.Minute, workload: reverted, wantReason: v1alpha1.EventFailedVersionFromGit, wantGit: v100},
	})
	d := Decide(Input{Now: now, Config: open, Workload: reverted})
	if r := condition(d, meta.ReadyCondition); !strings.Contains(r.Message, "runs 1.1.0") || condition(d, meta.StalledCondition) == nil {
		t.Errorf("Ready %+v: the config must say that the failed version runs", r)
	}
}

// A version Git brought that rollgate did not roll out (someone committed it by hand) is checked as
// a target set by hand would be: never called current before it passed.
func TestAVersionGitBroughtIsChecked(t *testing.T) {
	v120 := repo + ":1.2.0"
	cfg := runSteps(t, config(current("1.0.0"), gitFirstConfig), nil, []step{
		{name: "1.2.0 runs, from Git: its check starts", workload: deploymentAt("1.2.0", pending),
			wantStep: StepHealthCheck, wantPaused: true, wantReason: v1alpha1.ReasonAwaitingGitOps, wantEvents: v1alpha1.EventUpdateStarting,
			wantOutcome: OutcomeStarted, wantGit: v120},
		{name: "checked", after: time.Minute, workload: deploymentAt("1.2.0", pending),
			wantStep: StepHealthCheck, wantReason: v1alpha1.ReasonProgressing, wantGit: v120},
		{name: "healthy: current", after: 2 * time.Minute, workload: deploymentAt("1.2.0", healthy),
			wantReason: v1alpha1.EventUpdateComplete, wantEvents: v1alpha1.EventUpdateComplete, wantOutcome: OutcomeHealthy, wantGit: v120},
	})
	if cfg.Status.CurrentVersion != "1.2.0" {
		t.Errorf("current %s", cfg.Status.CurrentVersion)
	}
	// Pinned to its digest by an admission webhook: the tag is what Git says, and what is checked.
	pinned := deploymentAt("1.2.0@sha256:"+strings.Repeat("a", 64), pending)
	if d := Decide(Input{Now: now, Config: config(current("1.0.0"), gitFirstConfig), Workload: pinned}); d.Annotations.TargetImage != v120 {
		t.Errorf("pinned by a webhook: target %q, Ready %+v", d.Annotations.TargetImage, condition(d, meta.ReadyCondition))
	}
	// One that may not start (suspended) is reported, not called current.
	suspended := config(current("1.0.0"), gitFirstConfig, func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.Suspend = true })
	d := Decide(Input{Now: now, Config: suspended, Workload: deploymentAt("1.2.0", healthy)})
	if r := condition(d, meta.ReadyCondition); r.Reason != v1alpha1.ReasonDriftedFromGit || !strings.Contains(r.Message, "1.2.0") || d.Status.CurrentVersion != "1.0.0" {
		t.Errorf("suspended: Ready %+v, current %s", r, d.Status.CurrentVersion)
	}
	// While Git cannot be written, the last healthy image stands in: the renderer corrects the drift.
	down := Decide(Input{Now: now, Config: config(current("1.0.0"), gitFirstConfig, gitWriteFails), Workload: deploymentAt("1.2.0", healthy)})
	if down.Annotations.Step != StepIdle || reasons(down.Events) == v1alpha1.EventUpdateStarting {
		t.Errorf("Git failing: step %q, events %s", down.Annotations.Step, reasons(down.Events))
	}
}

// A GitFirst rollback that Git took, but the GitOps tool never applies, leaves the failed version
// up: an apply timeout after the commit, the last healthy image is rendered into the workload too,
// and the config says so, once.
func TestAGitFirstRollbackNotAppliedIsRendered(t *testing.T) {
	v100 := repo + ":1.0.0"
	stuck := deploymentAt("1.1.0", failed)
	cfg := config(current("1.0.0"), gitFirstConfig, inFlight(StepHealthCheck, repo+":1.1.0", now.Add(-time.Minute)),
		func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.HealthTimeout = &metav1.Duration{Duration: time.Hour} })
	cfg = runSteps(t, cfg, nil, []step{
		{name: "the version fails: rolled back through Git", workload: stuck,
			wantStep: StepRollingBack, wantReason: v1alpha1.ReasonRollingBack, wantEvents: v1alpha1.EventUpdateRollback,
			wantOutcome: OutcomeFailed, wantGit: v100},
		{name: "within the apply timeout of the commit: left to the GitOps tool", after: 10*time.Minute - time.Second, workload: stuck,
			wantStep: StepRollingBack, wantReason: v1alpha1.ReasonRollingBack, wantGit: v100},
	})
	if d := Decide(Input{Now: now.Add(4 * time.Minute), Config: cfg, Workload: stuck}); d.RequeueAfter != 6*time.Minute {
		t.Errorf("looks again after %s, want at the apply timeout (6m)", d.RequeueAfter)
	}
	if wait := StandInAfter(cfg, now.Add(4*time.Minute)); wait != 6*time.Minute {
		t.Errorf("the renderer looks again after %s, want 6m", wait)
	}
	// The rollback's start written after Git took it (a crash between the status and the
	// annotations): the apply timeout runs from the start.
	restarted := cfg.DeepCopy()
	restarted.Annotations[v1alpha1.UpdateStartedAnnotation] = now.Add(2 * time.Minute).Format(time.RFC3339)
	if wait := StandInAfter(restarted, now.Add(4*time.Minute)); wait != 8*time.Minute {
		t.Errorf("after a late start the renderer looks again after %s, want 8m", wait)
	}
	runSteps(t, cfg, nil, []step{
		{name: "past it: rendered too, said once", after: 10 * time.Minute, workload: stuck,
			wantStep: StepRollingBack, wantReason: v1alpha1.EventNotAppliedFromGit, wantEvents: v1alpha1.EventNotAppliedFromGit, wantGit: v100, wantRender: v100},
		{name: "still not there", after: 11 * time.Minute, workload: deploymentAt("1.0.0", pending),
			wantStep: StepRollingBack, wantReason: v1alpha1.EventNotAppliedFromGit, wantGit: v100, wantRender: v100},
		{name: "back: nothing rendered any more", after: 12 * time.Minute, workload: deploymentAt("1.0.0", healthy),
			wantReason: v1alpha1.EventRollbackComplete, wantEvents: v1alpha1.EventRollbackComplete, wantGit: v100},
	})
}

// A GitOps tool that puts Git's image back over the last healthy image rollgate renders for it
// (the rollback Git cannot take, or has taken but the tool does not apply) is a fight like any
// other: at the limit, rendering stops and the config says what a person can do. A fight of an
// earlier stand-in does not count.
func TestAGitOpsToolThatRevertsTheStandInIsReported(t *testing.T) {
	cfg := config(current("1.0.0"), gitFirstConfig, gitWriteFails, failedBefore)
	cfg.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-30 * time.Minute))
	w := deploymentAt("1.1.0", healthy)
	w.ImageReverts, w.ImageRevertedBy, w.ImageRevertedAt = v1alpha1.MaxImageReverts, "kustomize-controller", now.Add(-time.Minute)
	d := Decide(Input{Now: now, Config: cfg, Workload: w})
	r := condition(d, meta.ReadyCondition)
	if r.Reason != v1alpha1.EventFieldManagerConflict || !strings.Contains(r.Message, "suspend") || d.Status.CurrentVersion != "1.0.0" {
		t.Errorf("the stand-in lost: Ready %+v, current %s", r, d.Status.CurrentVersion)
	}
	// The same count left from a stand-in before this outage: no fight now.
	w.ImageRevertedAt = now.Add(-time.Hour)
	if r := condition(Decide(Input{Now: now, Config: cfg, Workload: w}), meta.ReadyCondition); r.Reason == v1alpha1.EventFieldManagerConflict {
		t.Errorf("an old stand-in's fight counts: %+v", r)
	}
	// Git written again: the stand-in is over, and so is its fight; what runs is judged as Git's.
	ok := config(current("1.0.0"), gitFirstConfig, failedBefore)
	w.ImageRevertedAt = now.Add(-time.Minute)
	if d := Decide(Input{Now: now, Config: ok, Workload: w}); condition(d, meta.ReadyCondition).Reason == v1alpha1.EventFieldManagerConflict ||
		d.Annotations.Step != StepRollingBack {
		t.Errorf("no stand-in, still a fight: %+v, step %q", condition(d, meta.ReadyCondition), d.Annotations.Step)
	}
	if since, ok := StandInSince(cfg, now); !ok || !since.Equal(now.Add(-30*time.Minute)) {
		t.Errorf("stand-in since %s, %v: want since Git began to fail", since, ok)
	}
}

// What stands in for Git is the last healthy image of this workload only: after a retarget,
// nothing; and a stand-in lost to the GitOps tool never makes what it put back current, not even
// a version that never failed: it is checked once the stand-in ends.
func TestAStandInIsOfThisWorkloadAndRecordsNothing(t *testing.T) {
	retargeted := config(current("1.0.0"), gitFirstConfig, gitWriteFails, func(c *v1alpha1.RollingUpgradeConfig) {
		c.Status.RecordedTarget = &v1alpha1.RecordedTarget{Kind: v1alpha1.KindDeployment, Name: "old-web"}
	})
	if _, ok := StandInSince(retargeted, now); ok {
		t.Error("the image recorded for another workload stands in for this one")
	}
	if img, _ := RenderImage(retargeted, now); img != "" {
		t.Errorf("renders %s into a workload it was not recorded for", img)
	}
	w := deploymentAt("1.2.0", healthy)
	w.ImageReverts, w.ImageRevertedBy, w.ImageRevertedAt = v1alpha1.MaxImageReverts, "kustomize-controller", now
	d := Decide(Input{Now: now, Config: config(current("1.0.0"), gitFirstConfig, gitWriteFails), Workload: w})
	if condition(d, meta.ReadyCondition).Reason != v1alpha1.EventFieldManagerConflict || d.Status.CurrentVersion != "1.0.0" {
		t.Errorf("the stand-in lost: Ready %+v, current %s; want 1.0.0 kept", condition(d, meta.ReadyCondition), d.Status.CurrentVersion)
	}
}
