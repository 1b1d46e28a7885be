package rollout

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/bookkeeping"
	"github.com/rollgate/rollgate/internal/image"
)

// Under GitFirst, Git says what runs, and two things can part the workload from what the config
// says:
//   - Git changes under rollgate (a person reverts its rollback commit, or commits another tag)
//     and the GitOps tool applies it: fromGit judges what came;
//   - Git cannot be told the last healthy image, or says it and the GitOps tool does not bring it:
//     the last healthy image stands in, rendered by rollgate (StandInSince), and a GitOps tool that
//     puts Git's image back over it is a fight like any other (fightCounts).

// StandInSince reports whether the last healthy image of a GitFirst config is rendered into its
// workload, and since when:
//   - while writing to Git fails and no health check runs (through a rollback and after it): Git,
//     and the GitOps tool with it, may still say the broken version until the rollback's commit is
//     pushed; since the write began to fail;
//   - while a rollback Git took has not ended an apply timeout after its commit: the GitOps tool
//     did not apply it (stopped, or applying an older artifact); since then.
func StandInSince(cfg *v1alpha1.RollingUpgradeConfig, now time.Time) (time.Time, bool) {
	st := &cfg.Status
	a := AnnotationsOf(cfg)
	if !StandsInForGit(cfg) || st.CurrentImage == "" || a.Step == StepHealthCheck ||
		(st.RecordedTarget != nil && !recordedFor(*st.RecordedTarget, cfg.Spec)) {
		return time.Time{}, false // nothing recorded for this workload stands in for it
	}
	if c := apimeta.FindStatusCondition(st.Conditions, v1alpha1.ConditionGitWriteBack); c != nil && c.Status == metav1.ConditionFalse {
		return c.LastTransitionTime.Time, true
	}
	if at, ok := rollbackApplyDeadline(cfg.Spec, a, st); ok && !now.Before(at) {
		return at, true
	}
	return time.Time{}, false
}

// StandInAfter is how long until the last healthy image stands in for a GitFirst rollback that Git
// took (StandInSince); 0 when none is due.
func StandInAfter(cfg *v1alpha1.RollingUpgradeConfig, now time.Time) time.Duration {
	if !StandsInForGit(cfg) || cfg.Status.CurrentImage == "" {
		return 0
	}
	if at, ok := rollbackApplyDeadline(cfg.Spec, AnnotationsOf(cfg), &cfg.Status); ok && now.Before(at) {
		return at.Sub(now)
	}
	return 0
}

// rollbackApplyDeadline is the instant a GitFirst rollback Git took must have reached the workload
// by: an apply timeout after its commit, as for a rollout. ok is false when no rollback is in
// flight, or Git cannot be written. The status says the rollback before its start is written to
// the annotations, and the write-back may commit it in between (a crash between the two writes
// moves the start later still): a commit from before the start that Git took last counts from the
// start.
func rollbackApplyDeadline(spec v1alpha1.RollingUpgradeConfigSpec, a Annotations, st *v1alpha1.RollingUpgradeConfigStatus) (time.Time, bool) {
	started := a.UpdateStarted
	g := st.GitWriteBack
	if a.Step != StepRollingBack || started.IsZero() || g == nil || g.LastWrite == nil ||
		!apimeta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionGitWriteBack) {
		return time.Time{}, false
	}
	return later(g.LastWrite.Time, started).Add(spec.GitWriteBack.ApplyTimeoutOrDefault()), true
}

// standInCause says why the last healthy image stands in, for messages.
func standInCause(in Input) string {
	if gitFailing(&in.Config.Status) {
		return "Git cannot be written"
	}
	return "the GitOps tool does not apply the rollback Git took"
}

// rollbackNotApplied watches a GitFirst rollback against its apply timeout: before it, the next
// look is due then; past it, the last healthy image stands in, and the config says so. It reports
// whether it said so.
func rollbackNotApplied(d *Decision, in Input, w *Workload) bool {
	if !gitFirst(in.Config) {
		return false
	}
	at, ok := rollbackApplyDeadline(in.Config.Spec, d.Annotations, &d.Status)
	if !ok {
		return false
	}
	if in.Now.Before(at) {
		d.lookWithin(at.Sub(in.Now))
		return false
	}
	ref := in.Config.Spec.GitWriteBack
	// The message names no progress of the workload: it stays the same, and the Warning goes once.
	d.waiting(v1alpha1.EventNotAppliedFromGit, "returning to %s: Git took the rollback, but it has not reached %s by %s, an apply timeout after "+
		"the commit, so rollgate renders %s into it as well; check that the GitOps tool applies %s of GitWriteBack %s",
		d.Status.CurrentImage, w.Description, at.UTC().Format(time.RFC3339), d.Status.CurrentImage, ref.Path, ref.Name)
	return true
}

// fromGit acts on a GitFirst workload at rest that runs an image the config did not roll out: Git
// changed under rollgate, and the GitOps tool applied it. The status never names as current what
// does not run, nor what was not checked:
//   - a version that failed before is rolled back again, by a new commit of the last healthy image
//     (the verdict is written to Git even when it changes no file), and counted as a rollback: with
//     the circuit open it is reported, not fought;
//   - any other is checked as a target set by hand would be, or reported when one may not start.
//
// While the last healthy image stands in (StandInSince), the renderer puts it back instead. It
// reports whether the decision is made.
func fromGit(d *Decision, in Input, w *Workload) bool {
	st := &d.Status
	img := w.Image
	if !StandsInForGit(in.Config) || img == "" || image.Renders(img, st.CurrentImage) || !image.SameRepository(img, in.Config.Spec.Image) {
		return false
	}
	if _, ok := StandInSince(in.Config, in.Now); ok {
		return false
	}
	if i := strings.LastIndex(img, "@"); i >= 0 && image.Tag(img) != "" {
		img = img[:i] // the digest an admission webhook pinned goes: Git takes tags
	}
	ref := in.Config.Spec.GitWriteBack
	ver := d.nameOf(img)
	if gitLate(d, in, w, ver) {
		return true
	}
	if !slices.Contains(st.FailedVersions, ver) {
		if problem := handTargetProblem(st, in.Config.Spec, img); problem != "" {
			st.Phase, st.TargetVersion = restingPhase(st), ""
			d.stalledAbout(ver, v1alpha1.ReasonDriftedFromGit, "%s runs %s, which Git brought (%s of GitWriteBack %s changed under rollgate), not %s; "+
				"it is not checked: %s", w.Description, img, ref.Path, ref.Name, orNone(st.CurrentImage), problem)
			return true
		}
		if !blocked(d, w) {
			start(d, in, img, "brought by Git: "+ref.Path+" changed under rollgate")
		}
		return true
	}
	// The rollback is recorded by its start, now; one recorded already (the annotations' write
	// failed after the status') is not counted again, and its events go out again with the move.
	last := bookkeeping.LastRollout(st)
	recorded := last != nil && st.Phase == v1alpha1.PhaseRollingBack && last.Version == ver && last.Status == v1alpha1.ResultRolledBack
	if !recorded && st.CircuitOpen {
		st.Phase, st.TargetVersion = restingPhase(st), ""
		d.stalledAbout(ver, v1alpha1.EventFailedVersionFromGit, "%s runs %s, which failed before, from Git (%s of GitWriteBack %s); %s. Put %s back in Git, "+
			"or, if Git says it already, find why the GitOps tool does not apply it (Flux: flux get kustomizations), then reset the circuit",
			w.Description, ver, ref.Path, ref.Name, circuitMessage(st, ""), orNone(st.CurrentVersion))
		return true
	}
	opened := false
	if !recorded {
		_, opened = bookkeeping.Rollback(st, ver, img, "brought back through Git: "+ref.Path+" changed under rollgate",
			metav1.NewTime(in.Now.UTC().Truncate(time.Second)), in.Config.Spec.MaxRollbacks, d.policy.Compare)
	}
	d.eventAbout(ver, WriteAnnotations, corev1.EventTypeWarning, v1alpha1.EventFailedVersionFromGit,
		"%s runs %s, which failed before, from Git (%s of GitWriteBack %s changed under rollgate): rolling back to %s by a new commit",
		w.Description, img, ref.Path, ref.Name, orNone(st.CurrentImage))
	if opened || (recorded && st.CircuitOpen) {
		d.eventAbout(ver, WriteAnnotations, corev1.EventTypeWarning, v1alpha1.EventCircuitOpen, "%s", circuitMessage(st, ""))
	}
	rollBackTo(d, in)
	d.progressing(v1alpha1.ReasonRollingBack, "%s came back from Git, and failed before; rolling back to %s", ver, orNone(st.CurrentImage))
	return true
}

// gitLate: the workload runs the version of the last verdict, rolled back or withdrawn, while the
// GitOps tool may still be on its way to what Git says since (the last write, an apply timeout
// ago at most): a tool that is slow, or was stopped while Git could not be written, is no change
// in Git. The config says so and looks again then.
func gitLate(d *Decision, in Input, w *Workload, ver string) bool {
	st := &d.Status
	last := bookkeeping.LastRollout(st) // a person's reject or retry since is no verdict
	g := st.GitWriteBack
	if last == nil || last.Version != ver || g == nil || g.LastWrite == nil ||
		(last.Status != v1alpha1.ResultRolledBack && last.Status != v1alpha1.ResultWithdrawn) {
		return false
	}
	until := g.LastWrite.Add(in.Config.Spec.GitWriteBack.ApplyTimeoutOrDefault())
	if !in.Now.Before(until) {
		return false
	}
	ref := in.Config.Spec.GitWriteBack
	d.progressing(v1alpha1.ReasonAwaitingGitOps, "%s runs %s; %s of GitWriteBack %s says %s since %s: waiting until %s for the GitOps tool to apply it",
		w.Description, ver, ref.Path, ref.Name, orNone(st.CurrentVersion), g.LastWrite.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))
	d.lookWithin(until.Sub(in.Now))
	return true
}
