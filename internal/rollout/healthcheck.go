package rollout

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/analysis"
	"github.com/rollgate/rollgate/internal/bookkeeping"
	"github.com/rollgate/rollgate/internal/health"
	"github.com/rollgate/rollgate/internal/image"
	"github.com/rollgate/rollgate/internal/text"
)

// start applies an image: the annotations say HealthCheck from now on. The status is written
// first: if the annotations then fail to be written, the next decision starts again from idle
// instead of finding a rollout whose start was never recorded (or announced).
func start(d *Decision, in Input, img, why string) {
	st := &d.Status
	ver := d.nameOf(img)
	d.Annotations = Annotations{TargetImage: img, Step: StepHealthCheck, UpdateStarted: stamp(in.Now)}
	d.StatusFirst = true
	now := metav1.NewTime(in.Now)
	st.Phase = v1alpha1.PhaseInProgress
	st.TargetVersion = ver
	st.NextWindow = nil
	st.LastUpdate = &now
	// Each check begins without a record of soak and measurements (the last check's goes): the
	// record then belongs to the check of its version, whatever its start became by pauses.
	st.HealthCheck = nil
	rt := RecordedTargetOf(in.Config.Spec)
	st.RecordedTarget = &rt
	timeout := in.Config.Spec.HealthTimeoutOrDefault()
	d.end(OutcomeStarted, img, stamp(in.Now))
	if ref := in.Config.Spec.GitWriteBack; ref.GitFirst() {
		// Git is written first: the health timer waits for the image to reach the workload.
		d.Annotations.CheckPaused = d.Annotations.UpdateStarted
		d.event(WriteAnnotations, corev1.EventTypeNormal, v1alpha1.EventUpdateStarting,
			"rolling out %s (%s) through Git: committing it to %s of GitWriteBack %s; health timeout %s from its arrival", img, why, ref.Path, ref.Name, timeout)
		awaitingCommit(d, in, ver)
		return
	}
	d.event(WriteAnnotations, corev1.EventTypeNormal, v1alpha1.EventUpdateStarting, "rolling out %s (%s); health timeout %s", img, why, timeout)
	checking(d, ver, rt, in.Now.UTC().Truncate(time.Second).Add(timeout), in.Now, "")
}

// checking says that a health check runs. The message stays the same from the start of the check
// to its verdict: it names the deadline, not the time left, nor the workload's progress (which the
// workload shows), since each new message would be a status write per config and look. Between
// looks the workload's events wake the check; the deadline is the one instant nothing announces.
// held, when not "", says what holds the in-place upgrade's next pod: a hold is rare and lasts, so
// the message changes only when one begins or ends.
func checking(d *Decision, ver string, target v1alpha1.RecordedTarget, deadline, now time.Time, held string) {
	if held != "" {
		held = "; " + held
	}
	d.progressing(v1alpha1.ReasonProgressing, "rolling out %s to %s; rolled back at %s unless healthy by then%s",
		ver, describeTarget(target), deadline.UTC().Format(time.RFC3339), held)
	d.RequeueAfter = deadline.Sub(now)
}

// healthCheck watches a rollout until it is healthy, fails, or times out.
func healthCheck(d *Decision, in Input) {
	st := &d.Status
	a := d.Annotations
	started := a.UpdateStarted
	if started.IsZero() {
		d.stalled(v1alpha1.EventInvalidSpec, "annotation %s=%q is not an RFC 3339 time; set it (e.g. %s) or remove %s to end the health check",
			v1alpha1.UpdateStartedAnnotation, a.unreadStarted, in.Now.UTC().Format(time.RFC3339), v1alpha1.UpdatePhaseAnnotation)
		return
	}
	if a.TargetImage == "" {
		// A human removed the target mid-check: the renderer returns to the current image.
		d.end(OutcomeAbandoned, "", started)
		rollBackTo(d, in)
		d.progressing(v1alpha1.ReasonRollingBack, "%s was removed by hand; returning to %s", v1alpha1.TargetImageAnnotation, orNone(st.CurrentImage))
		return
	}
	ver := d.nameOf(a.TargetImage)
	switch {
	case rejectedInFlight(st, ver) && recordedVerdict(st, ver, started) == "":
		// A person rejected it mid-check: no verdict, the renderer returns to the current image.
		d.end(OutcomeAbandoned, a.TargetImage, started)
		rollBackTo(d, in)
		d.progressing(v1alpha1.ReasonRollingBack, "%s was rejected in %s; returning to %s", ver, v1alpha1.RejectAnnotation, orNone(st.CurrentImage))
		return
	case st.TargetVersion != "" && ver != st.TargetVersion && recordedVerdict(st, st.TargetVersion, started) == "":
		// A human changed the target mid-check: the old one gets no verdict, the new one a fresh timer.
		changedByHand(d, in, started)
		return
	case abandonedAt(st, started):
		// Its abandonment was recorded, but the annotations kept the old timer: start it afresh.
		start(d, in, a.TargetImage, "set by hand in "+v1alpha1.TargetImageAnnotation+" during a health check")
		return
	}
	// Until a verdict, the check is in progress.
	st.Phase, st.TargetVersion = v1alpha1.PhaseInProgress, ver
	w, ok := checkWorkload(d, in)
	if !ok || blocked(d, w) {
		pause(d, in.Now)
		d.RequeueAfter = HealthPoll
		return
	}
	if awaitingGit(d, in, w, started) {
		return
	}
	if d.Annotations.Paused() {
		// The resumed timer is written before any verdict: a verdict is keyed by its start, which
		// must not move between a decision and its retry.
		started = resume(d, in.Now, started)
		d.progressing(v1alpha1.ReasonProgressing, "rolling out %s: the health check runs, with %s left", ver,
			(in.Config.Spec.HealthTimeoutOrDefault() - in.Now.Sub(started)).Round(time.Second))
		d.RequeueAfter = time.Second
		return
	}
	judge(d, in, w, ver, started)
}

// abandonedAt: the history's last entry abandoned the check that started at started.
func abandonedAt(st *v1alpha1.RollingUpgradeConfigStatus, started time.Time) bool {
	_, result, ok := bookkeeping.Recorded(st, started)
	return ok && result == v1alpha1.ResultAbandoned
}

// judge gives the verdict on a health check, or says how far it got. A verdict recorded before
// binds: a decision repeated after a failed write (or a crash) records and announces the same one,
// never the other.
func judge(d *Decision, in Input, w *Workload, ver string, started time.Time) {
	rendered := image.Renders(w.Image, d.Annotations.TargetImage)
	healthy := rendered && w.Verdict.State == health.Healthy
	verdict := recordedVerdict(&d.Status, ver, started)
	g := observeGates(d, in, w, ver, started, healthy, verdict != "")
	if verdict == "" {
		var decided bool
		if verdict, decided = reach(d, in, w, g, ver, started, rendered, healthy); decided {
			return
		}
	}
	// Ending a health check records it in status (idempotent, keyed by version and start) and moves
	// the annotations out of HealthCheck; the events go with that move, which happens once.
	switch verdict {
	case v1alpha1.ResultHealthy:
		pass(d, in, g, ver, started)
	case v1alpha1.ResultRolledBack:
		fail(d, in, w, g, ver, started, rendered)
	default:
		held := ""
		if w.InPlace != nil {
			held = w.InPlace.Held
		}
		deadline := started.Add(in.Config.Spec.HealthTimeoutOrDefault())
		checking(d, ver, RecordedTargetOf(in.Config.Spec), deadline, in.Now, held)
		g.inconclusive(d, ver, deadline)
		g.lookAgain(d)
	}
}

// reach is the verdict this look reaches on a check that has none recorded: none while it goes on.
// It reports whether it made the decision itself: a healthy version held by its gates (the soak,
// the analysis), or one past a deadline whose new pods have yet to give evidence.
func reach(d *Decision, in Input, w *Workload, g gates, ver string, started time.Time, rendered, healthy bool) (v1alpha1.RolloutResult, bool) {
	timeout := in.Config.Spec.HealthTimeoutOrDefault()
	switch {
	case g.j.Failed:
		return v1alpha1.ResultRolledBack, false
	case healthy && g.passed(in.Now):
		return v1alpha1.ResultHealthy, false
	case healthy:
		// Healthy, but soaking or waiting for its analysis: no deadline runs against it; one that
		// turns unhealthy is judged again as below.
		g.hold(d, ver, in.Now)
		return "", true
	case rendered && w.Verdict.State == health.Failed, in.Now.Sub(started) >= timeout:
		// Past the health timeout, or the Deployment gave up on its progress deadline, which a
		// control plane that has fallen behind passes too: the version fails on its own evidence
		// alone, judged against the deadline it passed.
		own := timeout
		if rendered && w.Verdict.State == health.Failed {
			own = w.ProgressDeadline
		}
		if next, wait := notFailedYet(w, rendered, own, in.Now); wait {
			waitForEvidence(d, in, ver, next)
			g.lookAgain(d)
			return "", true
		}
		return v1alpha1.ResultRolledBack, false
	}
	return "", false
}

// pass ends the check of a healthy version: it is current now.
func pass(d *Decision, in Input, g gates, ver string, started time.Time) {
	st, a := &d.Status, d.Annotations
	current := d.versionOf(a.TargetImage)
	// A person forced an older version than the one it replaces, by the config's rules.
	c, comparable := d.policy.Compare(current, st.CurrentVersion)
	bookkeeping.Success(st, ver, current, a.TargetImage, metav1.NewTime(started), comparable && c < 0, d.policy.Compare)
	d.end(OutcomeHealthy, a.TargetImage, started)
	d.event(WriteAnnotations, corev1.EventTypeNormal, v1alpha1.EventUpdateComplete, "%s is healthy after %s%s",
		a.TargetImage, in.Now.Sub(started).Round(time.Second), g.passedNote())
	d.Annotations.Step, d.Annotations.UpdateStarted = StepIdle, time.Time{}
	d.StatusFirst = true
	// The version is current now, no longer a candidate: the look that follows finds the status
	// as it should be and writes nothing.
	st.Phase, st.TargetVersion = v1alpha1.PhaseCompleted, ""
	if st.AvailableVersion == ver {
		st.AvailableVersion = ""
	}
	d.ready(v1alpha1.EventUpdateComplete, "running %s", ver)
}

// fail ends the check of a version that failed: it goes on the failed list and is rolled back.
func fail(d *Decision, in Input, w *Workload, g gates, ver string, started time.Time, rendered bool) {
	st, a := &d.Status, d.Annotations
	timeout := in.Config.Spec.HealthTimeoutOrDefault()
	// A failed analysis names its query last: it may be long, and the message is cut. The history
	// keeps why, after the events are gone.
	why, query := g.unhealthyAgain(failure(w, in.Now.Sub(started), timeout, rendered)), ""
	reason := text.Cut(why, maxHistoryReason, "…")
	if g.j.Failed {
		why, reason = g.j.Why, analysis.Short(in.Config.Spec.Analysis, g.hc, 256)
		query = "; query: " + failedQuery(g.j.Query, QueryVars(in.Config, a.TargetImage, w.Container))
	}
	recorded, opened := bookkeeping.Rollback(st, ver, a.TargetImage, reason, metav1.NewTime(started), in.Config.Spec.MaxRollbacks, d.policy.Compare)
	d.end(OutcomeFailed, a.TargetImage, started)
	d.event(WriteAnnotations, corev1.EventTypeWarning, v1alpha1.EventUpdateRollback, "%s %s; rolling back to %s%s", a.TargetImage, why, orNone(st.CurrentImage), query)
	// The circuit opened now, or (a repeated decision) with the record written last time.
	if opened || (!recorded && st.CircuitOpen) {
		d.event(WriteAnnotations, corev1.EventTypeWarning, v1alpha1.EventCircuitOpen, "%s", circuitMessage(st, ""))
	}
	rollBackTo(d, in)
	d.progressing(v1alpha1.ReasonRollingBack, "%s %s; rolling back to %s%s", ver, why, orNone(st.CurrentImage), query)
}

// notFailedYet reports whether a check past its health timeout (or, with the Deployment's
// progress deadline for timeout, one whose Deployment gave up) must not fail the version yet, and
// when to look again. The timeout is the version's time to become healthy in the cluster, and a
// control plane that has fallen behind (thousands of rollouts at once) takes some of it: its
// controller may not have seen the new template yet or created the version's pods, its scheduler
// and kubelets may not have started them, and it may lag in counting their readiness and removing
// the old pods. A version fails only on its own evidence: one of its pods is still not Ready a
// whole health timeout after a node started it. Until then the check waits, as it does for a
// blocked workload; a workload that never gets there keeps the rollout in flight
// (RollgateRolloutStuck), which is no worse than not rolling out.
func notFailedYet(w *Workload, rendered bool, timeout time.Duration, now time.Time) (time.Duration, bool) {
	if w.InPlace != nil && rendered {
		// An in-place upgrade's evidence is each pod's own: one not ready within its readiness
		// timeout (Verdict Failed), or, past the health timeout, one changed to the version that is
		// not ready (it came through, then crashed). A slow upgrade of many pods is no failure.
		return HealthPoll, w.Verdict.State != health.Failed && !w.InPlace.Unready
	}
	pods := w.NewPods
	switch {
	case !rendered || pods == nil:
		return 0, false
	case w.Verdict.Reason == health.ReasonGenerationNotObserved, pods.Count == 0, pods.Ready == pods.Count, pods.OldestUnreadyStart.IsZero():
		// Not seen, no pod yet, all Ready but not counted, or none of the unready ones started.
		return HealthPoll, true
	case now.Sub(pods.OldestUnreadyStart) < timeout:
		return pods.OldestUnreadyStart.Add(timeout).Sub(now), true
	}
	return 0, false
}

// waitForEvidence says that a check past its deadline waits for the version's own evidence. The
// message names no stage of the control plane's progress: each stage would be another status
// write, and a control plane that has fallen behind takes each version through all of them.
func waitForEvidence(d *Decision, in Input, ver string, next time.Duration) {
	d.progressing(v1alpha1.ReasonProgressing, "rolling out %s to %s: its deadline (the health timeout, or the Deployment's progress deadline) has passed, "+
		"but the control plane has yet to give the version's pods a fair check; it is rolled back only if one of them is not Ready "+
		"that long after a node started it (their status.startTime)", ver, describeTarget(RecordedTargetOf(in.Config.Spec)))
	d.RequeueAfter = next
}

// failure says why a health check failed.
func failure(w *Workload, elapsed, timeout time.Duration, rendered bool) string {
	verdict := strings.TrimSuffix(w.Verdict.Message, ".")
	if !rendered {
		verdict = "the image never reached " + w.Description
	}
	if elapsed < timeout {
		return fmt.Sprintf("failed after %s: %s: %s", elapsed.Round(time.Second), w.Verdict.Reason, verdict)
	}
	return fmt.Sprintf("not healthy after %s (%s)", timeout, verdict)
}

// recordedVerdict is the verdict the history already holds for the rollout of ver started at
// started, or "".
func recordedVerdict(st *v1alpha1.RollingUpgradeConfigStatus, ver string, started time.Time) v1alpha1.RolloutResult {
	if v, result, ok := bookkeeping.Recorded(st, started); ok && v == ver {
		return result
	}
	return ""
}

// rollBackTo moves the annotations to RollingBack: the target goes, the renderer returns to the
// current image, and the rollback's own timer starts.
func rollBackTo(d *Decision, in Input) {
	d.Annotations = Annotations{Step: StepRollingBack, UpdateStarted: stamp(in.Now)}
	d.StatusFirst = true
	d.Status.Phase, d.Status.TargetVersion = v1alpha1.PhaseRollingBack, ""
	d.RequeueAfter = HealthPoll
}

// changedByHand ends the check of the old target without a verdict and starts the new one. The
// abandonment is recorded in status (with its event) before the annotations restart the timer; a
// retry after the second write failed finds it there (abandonedAt) and only restarts.
func changedByHand(d *Decision, in Input, started time.Time) {
	st := &d.Status
	old := in.Config.Spec.Image + ":" + st.TargetVersion
	bookkeeping.Abandon(st, st.TargetVersion, old, metav1.NewTime(started))
	d.event(WriteStatus, corev1.EventTypeNormal, v1alpha1.EventUpdateAbandoned, "%s was replaced by hand with %s before its verdict",
		st.TargetVersion, d.Annotations.TargetImage)
	target := d.Annotations.TargetImage
	if problem := handTargetProblem(st, in.Config.Spec, target); problem != "" {
		d.end(OutcomeAbandoned, old, started)
		rollBackTo(d, in)
		d.stalledAbout(d.nameOf(target), v1alpha1.ReasonTargetRefused, "%s=%s is not applied: %s", v1alpha1.TargetImageAnnotation, target, problem)
		return
	}
	start(d, in, target, "set by hand in "+v1alpha1.TargetImageAnnotation+" during the health check of "+st.TargetVersion)
}

// pause stops the health timer while the workload cannot be judged.
func pause(d *Decision, now time.Time) {
	if !d.Annotations.Paused() {
		d.Annotations.CheckPaused = stamp(now)
	}
}

// resume restarts a paused health timer: the pause is added to its start.
func resume(d *Decision, now, started time.Time) time.Time {
	paused := d.Annotations.CheckPaused
	d.Annotations.CheckPaused, d.Annotations.unreadPaused = time.Time{}, ""
	if paused.IsZero() || now.Before(paused) {
		return started
	}
	started = stamp(started.Add(now.Sub(paused)))
	d.Annotations.UpdateStarted = started
	// A soak watches a workload without a break: one that could not be judged soaks afresh. The
	// status goes first, so that no retry finds the timer resumed and the old soak still running.
	if hc := d.Status.HealthCheck; hc != nil && hc.HealthySince != nil {
		d.Status.HealthCheck = hc.DeepCopy()
		d.Status.HealthCheck.HealthySince = nil
		d.StatusFirst = true
	}
	return started
}
