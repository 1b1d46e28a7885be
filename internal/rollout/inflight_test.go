package rollout

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/health"
	"github.com/rollgate/rollgate/internal/inplace"
)

func retargeted(name string) func(*v1alpha1.RollingUpgradeConfig) {
	return func(c *v1alpha1.RollingUpgradeConfig) {
		c.Status.RecordedTarget = &v1alpha1.RecordedTarget{Kind: v1alpha1.KindDeployment, Name: c.Spec.TargetRef.Name}
		c.Spec.TargetRef.Name = name
	}
}

// containersNamed records the status for the config's container, then names others.
func containersNamed(names ...string) func(*v1alpha1.RollingUpgradeConfig) {
	return func(c *v1alpha1.RollingUpgradeConfig) {
		c.Status.RecordedTarget = &v1alpha1.RecordedTarget{Kind: v1alpha1.KindDeployment, Name: c.Spec.TargetRef.Name}
		c.Spec.Containers = names
	}
}

// The status is bound to the workload it was recorded for: a config pointed at another workload
// abandons its rollout and records the new workload afresh, never carrying an image across, in
// whatever order its writes land.
func TestRetargetingAbandonsAndRecordsAfresh(t *testing.T) {
	started := now.Add(-time.Minute)
	web2 := &Workload{Description: "Deployment web2", Image: repo + ":1.0.0", Verdict: healthy}
	cases := []struct {
		name string
		// inputs
		cfg *v1alpha1.RollingUpgradeConfig
		// expected of the first decision
		wantEvents  string
		wantOutcome Outcome
		wantHistory string
	}{
		{
			name:       "retargeted mid-check: the rollout is abandoned and neither workload is touched",
			cfg:        config(current("1.3.0"), inFlight(StepHealthCheck, repo+":1.3.1", started), retargeted("web2")),
			wantEvents: "UpdateAbandoned", wantOutcome: OutcomeAbandoned, wantHistory: "1.3.1:Abandoned",
		},
		{
			name:       "retargeted mid-rollback: the rollback is abandoned",
			cfg:        config(current("1.3.0"), inFlight(StepRollingBack, "", started), retargeted("web2")),
			wantEvents: "UpdateAbandoned",
		},
		{
			name: "retargeted while idle with the last rollout's target still set: the target goes, not into web2",
			cfg: config(current("1.3.0"), retargeted("web2"), func(c *v1alpha1.RollingUpgradeConfig) {
				c.Annotations[v1alpha1.TargetImageAnnotation] = repo + ":1.3.0"
			}),
		},
		{
			name: "retargeted while idle: the new workload's image is recorded, the old one forgotten",
			cfg:  config(current("1.3.0"), retargeted("web2")),
		},
		{
			name:       "other containers named mid-check: the rollout is abandoned",
			cfg:        config(current("1.3.0"), inFlight(StepHealthCheck, repo+":1.3.1", started), containersNamed("web", "migrate")),
			wantEvents: "UpdateAbandoned", wantOutcome: OutcomeAbandoned, wantHistory: "1.3.1:Abandoned",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(Input{Now: now, Config: tc.cfg, Workload: web2})
			if got := reasons(d.Events); got != tc.wantEvents {
				t.Errorf("events = %s, want %s", got, tc.wantEvents)
			}
			if d.Outcome != tc.wantOutcome {
				t.Errorf("outcome = %q, want %q", d.Outcome, tc.wantOutcome)
			}
			if got := history(d.Status); got != tc.wantHistory {
				t.Errorf("history = %s, want %s", got, tc.wantHistory)
			}
			// Before the engine acts, after either of its writes, and after both, the renderer
			// writes nothing recorded for web into web2.
			statusOnly, annotationsOnly := tc.cfg.DeepCopy(), next(tc.cfg, d)
			statusOnly.Status, annotationsOnly.Status = d.Status, tc.cfg.Status
			for name, cfg := range map[string]*v1alpha1.RollingUpgradeConfig{"before": tc.cfg, "status written": statusOnly,
				"annotations written": annotationsOnly} {
				if img, _ := RenderImage(cfg, now); img != "" && img != web2.Image {
					t.Errorf("%s: renders %q into web2", name, img)
				}
			}
			// Until nothing is in flight, web2 is recorded afresh.
			cfg := next(tc.cfg, d)
			for range 2 {
				d = Decide(Input{Now: now, Config: cfg, Workload: web2})
				cfg = next(cfg, d)
			}
			if cfg.Status.CurrentImage != web2.Image || cfg.Status.CurrentVersion != "1.0.0" || d.Annotations != (Annotations{}) {
				t.Errorf("after: current %s %s, annotations %+v", cfg.Status.CurrentVersion, cfg.Status.CurrentImage, d.Annotations)
			}
			if img, _ := RenderImage(cfg, now); img != web2.Image {
				t.Errorf("renders %q into web2 once recorded", img)
			}
		})
	}
}

func history(st v1alpha1.RollingUpgradeConfigStatus) string {
	var h []string
	for _, e := range st.VersionHistory {
		h = append(h, e.Version+":"+string(e.Status))
	}
	return strings.Join(h, ",")
}

// A health check is timed fairly: a workload that cannot be judged (missing, paused) stops the timer
// until it can. (A target changed mid-check starts a fresh one: handtarget_test.go.)
func TestHealthTimerIsFair(t *testing.T) {
	paused := health.Verdict{State: health.Blocked, Reason: health.ReasonPaused, Message: "Deployment is paused"}
	steps := []struct {
		name     string
		after    time.Duration // since the check started
		workload *Workload
		// expected
		wantPhase  v1alpha1.Phase
		wantReason string
		wantEvents string
	}{
		{name: "the check runs", after: 2 * time.Minute, workload: deploymentAt("1.1.0", pending),
			wantPhase: v1alpha1.PhaseInProgress, wantReason: v1alpha1.ReasonProgressing},
		{name: "the workload is deleted: the timer stops", after: 3 * time.Minute, workload: nil,
			wantPhase: v1alpha1.PhaseInProgress, wantReason: v1alpha1.EventTargetNotFound, wantEvents: "TargetNotFound"},
		{name: "it is back but paused: still stopped", after: 20 * time.Minute, workload: &Workload{Description: "Deployment web", Image: repo + ":1.1.0", Verdict: paused},
			wantPhase: v1alpha1.PhaseInProgress, wantReason: health.ReasonPaused, wantEvents: "Paused"},
		{name: "resumed 30 minutes later, past the 10m timeout by the clock: 1 minute of the check was used, no rollback",
			after: 33 * time.Minute, workload: deploymentAt("1.1.0", pending),
			wantPhase: v1alpha1.PhaseInProgress, wantReason: v1alpha1.ReasonProgressing},
		{name: "the remaining 9 minutes run out: rolled back", after: 42 * time.Minute, workload: deploymentAt("1.1.0", pending),
			wantPhase: v1alpha1.PhaseRollingBack, wantReason: v1alpha1.ReasonRollingBack, wantEvents: "UpdateRollback"},
	}
	started := now
	cfg := config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", started))
	cfg.Status.TargetVersion = "1.1.0"
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			d := Decide(Input{Now: started.Add(step.after), Config: cfg, Workload: step.workload})
			if d.Status.Phase != step.wantPhase {
				t.Errorf("phase = %s, want %s", d.Status.Phase, step.wantPhase)
			}
			if r := condition(d, meta.ReadyCondition); r == nil || r.Reason != step.wantReason {
				t.Errorf("Ready = %+v, want reason %s", r, step.wantReason)
			}
			if got := reasons(d.Events); got != step.wantEvents {
				t.Errorf("events = %s, want %s", got, step.wantEvents)
			}
			cfg = next(cfg, d)
		})
	}
}

// A workload that can make no progress holds rollouts instead of burning versions.
func TestBlockedWorkloadsHoldRollouts(t *testing.T) {
	cases := []struct {
		name    string
		verdict health.Verdict
		// expected
		wantStalled bool
	}{
		{name: "a paused Deployment holds the rollout", verdict: health.Verdict{State: health.Blocked, Reason: health.ReasonPaused, Message: "paused"}},
		{name: "a workload scaled to 0 holds the rollout", verdict: health.Verdict{State: health.Blocked, Reason: health.ReasonScaledToZero, Message: "0 replicas"}},
		{name: "a partition over every pod holds the rollout", verdict: health.Verdict{State: health.Blocked, Reason: health.ReasonPartitionCoversAll, Message: "partition 3 >= 3 replicas"}},
		{name: "an OnDelete StatefulSet is refused", verdict: health.Verdict{State: health.Blocked, Reason: health.ReasonOnDelete, Message: "OnDelete"}, wantStalled: true},
		{name: "an in-place StatefulSet not OnDelete is refused", verdict: health.Verdict{State: health.Blocked, Reason: health.ReasonNotOnDelete, Message: "RollingUpdate"}, wantStalled: true},
		{name: "an in-place StatefulSet without the gate is refused", verdict: health.Verdict{State: health.Blocked, Reason: inplace.ReasonNoReadinessGate, Message: "no gate"}, wantStalled: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Now: now, Config: config(current("1.0.0")), Workload: &Workload{Description: "Deployment web", Image: repo + ":1.0.0", Verdict: tc.verdict},
				Candidates: av("1.1.0")}
			d := Decide(in)
			if d.Annotations.TargetImage != "" {
				t.Errorf("a rollout started: %+v", d.Annotations)
			}
			if r := condition(d, meta.ReadyCondition); r == nil || r.Reason != tc.verdict.Reason || r.Status != metav1.ConditionFalse {
				t.Errorf("Ready = %+v, want False %s", r, tc.verdict.Reason)
			}
			if got := condition(d, meta.StalledCondition) != nil; got != tc.wantStalled {
				t.Errorf("stalled = %v, want %v", got, tc.wantStalled)
			}
			if got := reasons(d.Events); got != "VersionAvailable,"+tc.verdict.Reason {
				t.Errorf("events = %s, want one Warning %s", got, tc.verdict.Reason)
			}
			in.Config = next(in.Config, d)
			if d2 := Decide(in); len(d2.Events) != 0 {
				t.Errorf("second look: events %s", reasons(d2.Events))
			}
		})
	}
}

// Verdicts bind: once a check's verdict is recorded in status, a decision repeated after the
// annotations failed to be written (a conflict, a crash) gives the same verdict, whatever the
// workload does meanwhile.
func TestVerdictsBind(t *testing.T) {
	started := now.Add(-9 * time.Minute)
	cases := []struct {
		name string
		// inputs
		first, then *Workload
		after       time.Duration
		// expected
		wantOutcome Outcome
		wantEvents  string
	}{
		{name: "healthy, then the pods crash and the timeout passes: still healthy, never failed too",
			first: deploymentAt("1.1.0", healthy), then: deploymentAt("1.1.0", failed), after: 2 * time.Minute,
			wantOutcome: OutcomeHealthy, wantEvents: "UpdateComplete"},
		{name: "failed, then the pods recover: still failed, never current too",
			first: deploymentAt("1.1.0", failed), then: deploymentAt("1.1.0", healthy), after: time.Second,
			wantOutcome: OutcomeFailed, wantEvents: "UpdateRollback"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", started))
			d := Decide(Input{Now: now, Config: cfg, Workload: tc.first})
			d2 := Decide(Input{Now: now.Add(tc.after), Config: statusOnly(cfg, d), Workload: tc.then})
			if d2.Outcome != tc.wantOutcome {
				t.Errorf("outcome = %q, want %q", d2.Outcome, tc.wantOutcome)
			}
			if got := reasons(d2.Events); got != tc.wantEvents {
				t.Errorf("events = %s, want %s", got, tc.wantEvents)
			}
			if len(d2.Status.VersionHistory) != 1 {
				t.Errorf("history = %s, want one entry", history(d2.Status))
			}
			current, failed := d2.Status.CurrentVersion == "1.1.0", len(d2.Status.FailedVersions) > 0
			if current == failed {
				t.Errorf("1.1.0 current %v and failed %v: exactly one must hold", current, failed)
			}
		})
	}
}

// A registry with 10,000 CI tags neither breaks the status nor floods it.
func TestTenThousandNonSemverTagsKeepMessagesShort(t *testing.T) {
	var cands []Candidate
	for i := range 10000 {
		cands = append(cands, Candidate{Tag: fmt.Sprintf("sha-%07x", i), Source: "registry ghcr.io/acme/web"})
	}
	cands = append(cands, Candidate{Tag: "1.1.0", Source: "registry ghcr.io/acme/web"})
	d := Decide(Input{Now: now, Config: config(current("1.1.0")), Workload: deploymentAt("1.1.0", healthy), Candidates: cands})
	r := condition(d, meta.ReadyCondition)
	if r == nil || r.Reason != v1alpha1.ReasonUpToDate {
		t.Fatalf("Ready = %+v", r)
	}
	if len(r.Message) > maxMessage {
		t.Errorf("Ready message has %d bytes, want at most %d", len(r.Message), maxMessage)
	}
	if !strings.Contains(r.Message, "sha-0000000 from registry ghcr.io/acme/web") || !strings.Contains(r.Message, "more") {
		t.Errorf("Ready message = %q", r.Message)
	}
}

func TestMessagesAreBounded(t *testing.T) {
	cases := []struct {
		name string
		in   string
		// expected
		wantLen  int
		wantTail string
	}{
		{name: "a short message is kept", in: "running 1.0.0", wantLen: 13, wantTail: "1.0.0"},
		{name: "a long message is cut with a mark", in: strings.Repeat("x", 5000), wantLen: maxMessage, wantTail: " …"},
		{name: "a cut never splits a character", in: strings.Repeat("ä", 3000), wantTail: "ä …"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Bounded(tc.in)
			if tc.wantLen > 0 && len(got) != tc.wantLen {
				t.Errorf("len = %d, want %d", len(got), tc.wantLen)
			}
			if len(got) > maxMessage {
				t.Errorf("len = %d, over %d", len(got), maxMessage)
			}
			if !strings.HasSuffix(got, tc.wantTail) {
				t.Errorf("ends with %q, want %q", got[max(0, len(got)-8):], tc.wantTail)
			}
		})
	}
	if got := listed([]string{"a", "b"}); got != "a, b" {
		t.Errorf("listed = %q", got)
	}
}

// After rollgate stops rendering because another tool keeps reverting the image, the status does
// not claim a completed rollout of the version the workload no longer runs.
func TestAFightLostIsNotCompleted(t *testing.T) {
	cfg := config(current("1.1.0"), func(c *v1alpha1.RollingUpgradeConfig) {
		c.Status.Phase = v1alpha1.PhaseCompleted
		c.Status.VersionHistory = []v1alpha1.VersionHistoryEntry{{Version: "1.1.0", Image: repo + ":1.1.0", Status: v1alpha1.ResultHealthy}}
	})
	w := &Workload{Description: "Deployment web", Image: repo + ":1.0.0", Verdict: healthy, ImageReverts: 3, ImageRevertedBy: "kustomize-controller"}
	d := Decide(Input{Now: now, Config: cfg, Workload: w})
	if d.Status.Phase == v1alpha1.PhaseCompleted {
		t.Errorf("phase = Completed while the workload runs 1.0.0")
	}
	if s := condition(d, meta.StalledCondition); s == nil || !strings.Contains(s.Message, "Deployment web now runs "+repo+":1.0.0") {
		t.Errorf("Stalled = %+v", s)
	}
}

// One fight lost is one Warning, whatever the workload runs from one look to the next (rollgate's
// last render, then the other tool's image), and the status names what the workload runs: the
// version rollgate rendered is no longer current.
func TestAFightLostIsOneWarningAndNamesWhatRuns(t *testing.T) {
	cfg := config(current("1.1.0"), func(c *v1alpha1.RollingUpgradeConfig) { c.Status.Phase = v1alpha1.PhaseCompleted })
	lost := func(version string) *Workload {
		return &Workload{Description: "Deployment web", Image: repo + ":" + version, Verdict: healthy, ImageReverts: 3, ImageRevertedBy: "kustomize-controller"}
	}
	d := Decide(Input{Now: now, Config: cfg, Workload: lost("1.1.0")}) // rollgate's third render, not yet reverted
	if reasons(d.Events) != v1alpha1.EventFieldManagerConflict {
		t.Fatalf("events %s, want one FieldManagerConflict", reasons(d.Events))
	}
	d = Decide(Input{Now: now.Add(time.Second), Config: next(cfg, d), Workload: lost("1.0.0")})
	if len(d.Events) != 0 {
		t.Errorf("the other tool's image back: events %s, want none (the same fight)", reasons(d.Events))
	}
	if d.Status.CurrentVersion != "1.0.0" || d.Status.CurrentImage != repo+":1.0.0" {
		t.Errorf("status names %s (%s) while the workload runs 1.0.0", d.Status.CurrentVersion, d.Status.CurrentImage)
	}
}

// A paused check that resumes writes its moved timer before any verdict: a verdict is keyed by the
// timer's start, which must be the same in a decision and its retry.
func TestAResumedCheckIsJudgedOnlyOnceItsTimerIsWritten(t *testing.T) {
	started := now.Add(-5 * time.Minute)
	cfg := config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", started), func(c *v1alpha1.RollingUpgradeConfig) {
		c.Annotations[v1alpha1.CheckPausedAnnotation] = now.Add(-4 * time.Minute).Format(time.RFC3339)
		c.Status.TargetVersion = "1.1.0"
	})
	d := Decide(Input{Now: now, Config: cfg, Workload: deploymentAt("1.1.0", healthy)})
	if d.Outcome != OutcomeNone || d.Annotations.Paused() || !d.Annotations.UpdateStarted.Equal(now.Add(-time.Minute)) {
		t.Fatalf("resume: outcome %q, annotations %+v", d.Outcome, d.Annotations)
	}
	cfg = next(cfg, d)
	d = Decide(Input{Now: now.Add(time.Second), Config: cfg, Workload: deploymentAt("1.1.0", healthy)})
	if d.Outcome != OutcomeHealthy {
		t.Fatalf("verdict: outcome %q", d.Outcome)
	}
	// Only the status was written; the pods then crash and the clock passes the timeout.
	d = Decide(Input{Now: now.Add(20 * time.Minute), Config: statusOnly(cfg, d), Workload: deploymentAt("1.1.0", failed)})
	if d.Outcome != OutcomeHealthy || history(d.Status) != "1.1.0:Healthy" {
		t.Errorf("retry: outcome %q, history %s", d.Outcome, history(d.Status))
	}
}

// TestATimeoutFailsAVersionOnlyOnItsOwnEvidence: a control plane that has fallen behind (5,000
// rollouts at once) takes part of the health timeout: its controller has not seen the template,
// or has created no pod of the version yet, its scheduler or kubelets have not started them, or
// it has not counted their readiness nor removed the old pods. Past the timeout the version fails
// only when one of its own pods has been started on a node (status.startTime) a whole health
// timeout ago and is still not Ready; until then the check waits and writes once.
func TestATimeoutFailsAVersionOnlyOnItsOwnEvidence(t *testing.T) {
	timeout := 10 * time.Minute
	started := now.Add(-timeout - time.Minute)
	notObserved := health.Verdict{State: health.Progressing, Reason: health.ReasonGenerationNotObserved, Message: "generation 5 not yet observed"}
	cases := []evidenceCase{
		{name: "the controller has not seen the new template", workload: withPods(deploymentAt("1.1.0", notObserved), Pods{}),
			wantPhase: v1alpha1.PhaseInProgress, wantRequeue: HealthPoll},
		{name: "no pod of the version yet", workload: withPods(deploymentAt("1.1.0", pending), Pods{}),
			wantPhase: v1alpha1.PhaseInProgress, wantRequeue: HealthPoll},
		{name: "its pods are Ready; the controller has yet to count them and remove the old ones",
			workload:  withPods(deploymentAt("1.1.0", pending), Pods{Count: 1, Ready: 1}),
			wantPhase: v1alpha1.PhaseInProgress, wantRequeue: HealthPoll},
		{name: "its pod was created right at the start, but no node has started it yet",
			workload:  withPods(deploymentAt("1.1.0", pending), Pods{Count: 1}),
			wantPhase: v1alpha1.PhaseInProgress, wantRequeue: HealthPoll},
		{name: "a pod not Ready, started a minute ago: the version has its full timeout from then",
			workload:  withPods(deploymentAt("1.1.0", pending), Pods{Count: 2, Ready: 1, OldestUnreadyStart: now.Add(-time.Minute)}),
			wantPhase: v1alpha1.PhaseInProgress, wantRequeue: timeout - time.Minute},
		{name: "a pod not Ready a whole timeout after it started: rolled back",
			workload:  withPods(deploymentAt("1.1.0", pending), Pods{Count: 2, Ready: 1, OldestUnreadyStart: started.Add(2 * time.Second)}),
			wantPhase: v1alpha1.PhaseRollingBack, wantEvents: "UpdateRollback", wantRequeue: HealthPoll},
		{name: "the image never reached the workload: rolled back", workload: withPods(deploymentAt("1.0.0", healthy), Pods{}),
			wantPhase: v1alpha1.PhaseRollingBack, wantEvents: "UpdateRollback", wantRequeue: HealthPoll},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", started))
			if !PastDeadline(cfg, now) {
				t.Fatal("the check is past its deadline, PastDeadline says it is not")
			}
			d := tc.decide(t, cfg)
			if tc.wantPhase == v1alpha1.PhaseInProgress {
				// Waiting writes once: the next look with the same facts changes nothing.
				again := Decide(Input{Now: now.Add(HealthPoll), Config: next(cfg, d), Workload: tc.workload})
				if !apiequality(again.Status, next(cfg, d).Status) || len(again.Events) != 0 || len(d.Status.VersionHistory) != 0 {
					t.Errorf("waiting past the deadline rewrote the config or recorded a verdict: %+v", again.Status.Conditions)
				}
			}
		})
	}
}

// A Deployment that reports ProgressDeadlineExceeded gave up on its progress deadline, which a
// control plane that has fallen behind passes too (its scheduler, kubelets and controller slow):
// the version fails only if one of its pods is not Ready that long after a node started it.
func TestAProgressDeadlineFailsAVersionOnlyOnItsOwnEvidence(t *testing.T) {
	deadline := time.Minute // the Deployment's progressDeadlineSeconds
	started := now.Add(-2 * time.Minute)
	exceeded := health.Verdict{State: health.Failed, Reason: health.ReasonProgressDeadlineExceeded, Message: `ReplicaSet "web-1" has timed out progressing.`}
	gaveUp := func(pods Pods) *Workload {
		w := withPods(deploymentAt("1.1.0", exceeded), pods)
		w.ProgressDeadline = deadline
		return w
	}
	cases := []evidenceCase{
		{name: "its pod was created, but no node has started it: the control plane's delay, not the version's",
			workload: gaveUp(Pods{Count: 1}), wantPhase: v1alpha1.PhaseInProgress, wantRequeue: HealthPoll},
		{name: "its pod started 20s ago: it has the progress deadline from then",
			workload: gaveUp(Pods{Count: 1, OldestUnreadyStart: now.Add(-20 * time.Second)}), wantPhase: v1alpha1.PhaseInProgress, wantRequeue: 40 * time.Second},
		{name: "its pods are Ready: the controller is behind",
			workload: gaveUp(Pods{Count: 1, Ready: 1}), wantPhase: v1alpha1.PhaseInProgress, wantRequeue: HealthPoll},
		{name: "its pod is not Ready a progress deadline after it started: rolled back",
			workload: gaveUp(Pods{Count: 1, OldestUnreadyStart: now.Add(-deadline)}), wantPhase: v1alpha1.PhaseRollingBack, wantEvents: "UpdateRollback", wantRequeue: HealthPoll},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", started))
			if !NeedsPods(cfg, tc.workload, now) {
				t.Fatal("NeedsPods: no pods read for a Deployment that gave up")
			}
			tc.decide(t, cfg)
		})
	}
}

// evidenceCase is a check past its deadline and what it decides.
type evidenceCase struct {
	name     string
	workload *Workload
	// expected
	wantPhase   v1alpha1.Phase
	wantEvents  string
	wantRequeue time.Duration
}

// decide decides the case's check of cfg, and fails unless it decides as expected.
func (tc evidenceCase) decide(t *testing.T, cfg *v1alpha1.RollingUpgradeConfig) Decision {
	t.Helper()
	d := Decide(Input{Now: now, Config: cfg, Workload: tc.workload})
	if d.Status.Phase != tc.wantPhase || reasons(d.Events) != tc.wantEvents || d.RequeueAfter != tc.wantRequeue {
		t.Fatalf("phase %s, events %q, requeue %s; want %s, %q, %s (%s)", d.Status.Phase, reasons(d.Events), d.RequeueAfter,
			tc.wantPhase, tc.wantEvents, tc.wantRequeue, condition(d, meta.ReadyCondition).Message)
	}
	return d
}

func withPods(w *Workload, pods Pods) *Workload {
	w.NewPods = &pods
	return w
}

// A check waiting past its deadline for the version's own evidence writes once, whatever the
// control plane does meanwhile: its message names no stage, since each new message is a status
// write, and a control plane that has fallen behind (5,000 rollouts in one window) moves each
// version through every stage: bench-scale measured 2 such writes per rollout more.
func TestWaitingPastTheDeadlineWritesOnceThroughEveryStage(t *testing.T) {
	timeout := 10 * time.Minute
	notObserved := health.Verdict{State: health.Progressing, Reason: health.ReasonGenerationNotObserved, Message: "generation 5 not yet observed"}
	exceeded := health.Verdict{State: health.Failed, Reason: health.ReasonProgressDeadlineExceeded, Message: `ReplicaSet "web-1" has timed out progressing.`}
	gaveUp := func(w *Workload) *Workload { w.ProgressDeadline = timeout; return w }
	stages := []*Workload{
		withPods(deploymentAt("1.1.0", notObserved), Pods{}),
		withPods(deploymentAt("1.1.0", pending), Pods{}),
		gaveUp(withPods(deploymentAt("1.1.0", exceeded), Pods{Count: 1})),
		withPods(deploymentAt("1.1.0", pending), Pods{Count: 1}),
		gaveUp(withPods(deploymentAt("1.1.0", exceeded), Pods{Count: 2, Ready: 1, OldestUnreadyStart: now.Add(-time.Minute)})),
		withPods(deploymentAt("1.1.0", pending), Pods{Count: 2, Ready: 1, OldestUnreadyStart: now.Add(-30 * time.Second)}),
		withPods(deploymentAt("1.1.0", pending), Pods{Count: 2, Ready: 2}),
	}
	cfg := config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", now.Add(-timeout-time.Minute)))
	first := Decide(Input{Now: now, Config: cfg, Workload: stages[0]})
	cfg = next(cfg, first)
	for i, w := range stages[1:] {
		d := Decide(Input{Now: now.Add(time.Duration(i+1) * HealthPoll), Config: cfg, Workload: w})
		if d.Status.Phase != v1alpha1.PhaseInProgress || !apiequality(d.Status, cfg.Status) || len(d.Events) != 0 {
			t.Fatalf("stage %d rewrote the config: phase %s, Ready %q, was %q", i+1, d.Status.Phase,
				condition(d, meta.ReadyCondition).Message, condition(first, meta.ReadyCondition).Message)
		}
	}
}
