package rollout

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/bookkeeping"
	"github.com/rollgate/rollgate/internal/image"
)

// A GitFirst config (spec.gitWriteBack.mode) rolls out by commit: the start of a rollout makes Git
// say the new image (the write-back commits GitImage), the GitOps tool applies it, and the health
// check runs once the image has reached the workload. Until then the health timer stands still,
// as it does for a workload that cannot be judged (CheckPaused), and the apply timeout runs
// instead: a version the GitOps tool never brings is withdrawn, not judged.

// maxWithdrawalWait bounds the wait after rollouts withdrawn in a row.
const maxWithdrawalWait = 24 * time.Hour

// gitFirst: the config's rollouts go through Git.
func gitFirst(cfg *v1alpha1.RollingUpgradeConfig) bool { return cfg.Spec.GitWriteBack.GitFirst() }

// gitFailing: the last write to Git failed (condition GitWriteBack False).
func gitFailing(st *v1alpha1.RollingUpgradeConfigStatus) bool {
	return apimeta.IsStatusConditionFalse(st.Conditions, v1alpha1.ConditionGitWriteBack)
}

// Deadline is the instant by which the rollout or rollback in flight must have ended, as the
// annotations a and the check's record hc say: the health timeout after its start (for a health
// check, later by what its soak and analysis may take: gatesEnd), or for a GitFirst health check
// whose image has not arrived yet, the apply timeout after its start (later, if its commit came
// late). ok is false when nothing is in flight.
func Deadline(spec v1alpha1.RollingUpgradeConfigSpec, a Annotations, hc *v1alpha1.HealthCheckStatus) (deadline time.Time, ok bool) {
	started := a.UpdateStarted
	switch {
	case a.Step == StepIdle || started.IsZero():
		return time.Time{}, false
	case spec.GitWriteBack.GitFirst() && awaitingArrival(a):
		return started.Add(spec.GitWriteBack.ApplyTimeoutOrDefault()), true
	case a.Step == StepHealthCheck:
		return gatesEnd(spec, ImageVersion(spec, a.TargetImage), started, hc), true
	}
	return started.Add(spec.HealthTimeoutOrDefault()), true
}

// awaitingArrival: the health check has not seen its image in the workload yet. A GitFirst start
// pauses the timer at the start itself (CheckPaused is UpdateStarted); the image's arrival resumes
// it, which moves the start, so a later pause (a workload that cannot be judged) is no wait for
// Git: the check judges the version from then on, as any other.
func awaitingArrival(a Annotations) bool {
	return a.Step == StepHealthCheck && !a.CheckPaused.IsZero() && a.CheckPaused.Equal(a.UpdateStarted)
}

// awaitingGit holds a GitFirst health check until its image reaches the workload: the timer stands
// still, and the apply timeout runs from the commit; past it the version is withdrawn. It reports
// whether the decision is made; false once the image has arrived.
func awaitingGit(d *Decision, in Input, w *Workload, started time.Time) bool {
	a := d.Annotations
	if !gitFirst(in.Config) || !awaitingArrival(a) || image.Renders(w.Image, a.TargetImage) {
		return false
	}
	ver := d.nameOf(a.TargetImage)
	timeout := in.Config.Spec.GitWriteBack.ApplyTimeoutOrDefault()
	committed, ok := committedSince(&d.Status, started)
	if !ok {
		// Being written, or Git fails: the GitOps tool cannot have it yet. A commit is a start, made
		// while the start is allowed or not at all: one Git has not taken within the apply timeout,
		// or by the time the calendar that let it start closes, is withdrawn, and the start is
		// decided again (rather than land whenever Git comes back, outside its window).
		if why := uncommitted(in, started, timeout); why != "" {
			withdraw(d, in, w, started, why)
			return true
		}
		awaitingCommit(d, in, ver)
		return true
	}
	deadline := committed.Add(timeout)
	if in.Now.Before(deadline) {
		awaiting(d, in, ver, "is committed to", "and is withdrawn at "+deadline.UTC().Format(time.RFC3339)+" unless it does")
		d.RequeueAfter = deadline.Sub(in.Now)
		return true
	}
	withdraw(d, in, w, started, fmt.Sprintf("did not reach %s from Git within %s", w.Description, timeout))
	return true
}

// uncommitted says why a GitFirst start whose commit Git has not taken may no longer be made: the
// apply timeout since the start has passed, or the calendar that let it start has closed (for a
// minute: a push that made it may be on its way to the status); "" while it may. A start the
// calendar did not let in (a target set by hand outside the windows) is bound by the timeout alone.
func uncommitted(in Input, started time.Time, timeout time.Duration) string {
	if !in.Now.Before(started.Add(timeout)) {
		return fmt.Sprintf("was not committed to Git within %s of its start", timeout)
	}
	// Closed now and a commitGrace ago: closed for that long (not a window that opened less than
	// that ago).
	if cal, err := calendarOf(in); err == nil && cal.Open(started) && !cal.Open(in.Now) && !cal.Open(in.Now.Add(-commitGrace)) {
		by := "its calendar"
		if at := cal.At(in.Now); at.By != nil {
			by = at.By.String()
		}
		return "was not committed to Git before the calendar closed (" + by + ")"
	}
	return ""
}

// commitGrace is how long a calendar has been closed before a GitFirst start not yet committed is
// withdrawn for it.
const commitGrace = time.Minute

// NeedsCalendars reports whether a decision on cfg reads the RolloutCalendars that pick it: to
// start a version, or to judge whether a GitFirst start not yet committed may still be.
func NeedsCalendars(cfg *v1alpha1.RollingUpgradeConfig) bool {
	a := AnnotationsOf(cfg)
	return cfg.DeletionTimestamp == nil && (a.Step == StepIdle || (gitFirst(cfg) && awaitingArrival(a)))
}

// committedSince is when Git last took what the config's status says, if that was at since or
// later: for a GitFirst check that started at since, when its commit was pushed.
func committedSince(st *v1alpha1.RollingUpgradeConfigStatus, since time.Time) (time.Time, bool) {
	g := st.GitWriteBack
	if g == nil || g.LastWrite == nil || g.LastWrite.Time.Before(since) || !apimeta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionGitWriteBack) {
		return time.Time{}, false
	}
	return g.LastWrite.Time, true
}

// awaiting says that a version waits for Git, or for the GitOps tool. The message stays the same
// until the commit is pushed and again until the image's arrival (it names the deadline, not the
// time left), but for what the write-back says of Git: each new message is a status write.
func awaiting(d *Decision, in Input, ver, where, until string) {
	ref := in.Config.Spec.GitWriteBack
	d.progressing(v1alpha1.ReasonAwaitingGitOps, "%s %s %s of GitWriteBack %s%s; its health check starts when the GitOps tool brings it to %s, %s",
		ver, where, ref.Path, ref.Name, gitNote(&d.Status), describeTarget(RecordedTargetOf(in.Config.Spec)), until)
}

// awaitingCommit says that the version waits for its commit. The write-back's answer wakes the
// check (gitWritten); the poll is for a lost one.
func awaitingCommit(d *Decision, in Input, ver string) {
	awaiting(d, in, ver, "is being committed to", "once it is committed, and is withdrawn an apply timeout after that unless it does")
	d.RequeueAfter = HealthPoll
}

// gitNote says that writing to Git fails, if it does.
func gitNote(st *v1alpha1.RollingUpgradeConfigStatus) string {
	if c := apimeta.FindStatusCondition(st.Conditions, v1alpha1.ConditionGitWriteBack); c != nil && c.Status == metav1.ConditionFalse {
		return " (but " + c.Message + ")"
	}
	return ""
}

// withdraw ends a GitFirst rollout whose image never reached the workload: no verdict, the version
// stays eligible, and Git gets the current image back (GitImage of an idle config). The workload
// never ran the version, so there is no rollback to watch; the next rollout waits.
func withdraw(d *Decision, in Input, w *Workload, started time.Time, why string) {
	st := &d.Status
	target := d.Annotations.TargetImage
	ver := d.nameOf(target)
	bookkeeping.Withdraw(st, ver, target, metav1.NewTime(started), why)
	d.end(OutcomeWithdrawn, target, started)
	next := retryAfterWithdrawals(in.Config, st)
	d.event(WriteAnnotations, corev1.EventTypeWarning, v1alpha1.EventNotAppliedFromGit,
		"%s %s (it runs %s%s): withdrawn without a verdict, Git gets %s back; the next rollout waits until %s. Check that the GitOps tool applies %s",
		target, why, w.Image, gitNote(st), orNone(st.CurrentImage), next.UTC().Format(time.RFC3339), in.Config.Spec.GitWriteBack.Path)
	d.Annotations = Annotations{}
	d.StatusFirst = true
	st.Phase, st.TargetVersion = restingPhase(st), ""
	heldAfterWithdrawals(d, in, ver, next)
}

// retryAfterWithdrawals is when a GitFirst config may start a rollout after the rollouts at the
// end of its history that were withdrawn in a row: an apply timeout after the last of them for the
// first, twice as long for each further one, at most maxWithdrawalWait. Each withdrawn rollout is
// recorded by its start, at least an apply timeout before its withdrawal; the wait is counted from
// there. Zero when the last rollout was not withdrawn. A person's reject or retry since is no
// rollout, and does not end the row.
func retryAfterWithdrawals(cfg *v1alpha1.RollingUpgradeConfig, st *v1alpha1.RollingUpgradeConfigStatus) time.Time {
	h := bookkeeping.Rollouts(st)
	n := 0
	for n < len(h) && h[len(h)-1-n].Status == v1alpha1.ResultWithdrawn {
		n++
	}
	if n == 0 || !gitFirst(cfg) {
		return time.Time{}
	}
	timeout := cfg.Spec.GitWriteBack.ApplyTimeoutOrDefault()
	wait := timeout
	for i := 1; i < n && wait < maxWithdrawalWait; i++ {
		wait *= 2
	}
	return h[len(h)-1].AppliedAt.Add(timeout + min(wait, maxWithdrawalWait))
}

// heldAfterWithdrawals says that the next rollout waits after withdrawn ones, until retry
// (retryAfterWithdrawals).
func heldAfterWithdrawals(d *Decision, in Input, tag string, retry time.Time) {
	ref := in.Config.Spec.GitWriteBack
	last := bookkeeping.LastRollout(&d.Status) // withdrawn: there is one
	d.progressing(v1alpha1.EventNotAppliedFromGit, "%s waits until %s: %s, to be committed to %s of GitWriteBack %s, %s; "+
		"check that Git can be written and that the GitOps tool applies it", tag, retry.UTC().Format(time.RFC3339), last.Version, ref.Path, ref.Name, last.Reason)
	d.RequeueAfter = retry.Sub(in.Now)
}
