package rollout

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/controllers/bookkeeping"
	"github.com/rollgate/rollgate/controllers/health"
	"github.com/rollgate/rollgate/controllers/image"
	"github.com/rollgate/rollgate/controllers/version"
	"github.com/rollgate/rollgate/controllers/window"
)

// lastCheckRefresh is how stale status.lastCheck may get while nothing changes.
const lastCheckRefresh = 5 * time.Minute

// Decide runs one step of the state machine. It branches on the update-phase annotation:
// idle (decide whether to start a rollout), HealthCheck (watch the new version) or RollingBack
// (watch the return to the previous one).
func Decide(in Input) Decision {
	cfg := in.Config
	d := Decision{Annotations: AnnotationsOf(cfg), Status: *cfg.Status.DeepCopy(), old: &cfg.Status, now: in.Now}
	d.Status.ObservedGeneration = cfg.Generation
	if d.Status.Phase == "" {
		d.Status.Phase = v1alpha1.PhaseIdle
	}

	resetCircuit(&d, cfg)

	if in.ClaimedBy != "" {
		d.stalled(v1alpha1.EventInvalidSpec, "%s %s is managed by RollingUpgradeConfig %s; a workload takes one config",
			cfg.Spec.TargetRef.Kind, cfg.Spec.TargetRef.Name, in.ClaimedBy)
		return d
	}
	switch d.Annotations.UpdatePhase {
	case PhaseIdle:
		idle(&d, in)
		if in.PollAfter > 0 && (d.RequeueAfter == 0 || in.PollAfter < d.RequeueAfter) {
			d.RequeueAfter = in.PollAfter
		}
	case PhaseHealthCheck:
		healthCheck(&d, in)
	case PhaseRollingBack:
		rollingBack(&d, in)
	default:
		d.stalled(v1alpha1.EventInvalidSpec, "annotation %s has the unknown value %q; remove it or set %s or %s",
			v1alpha1.UpdatePhaseAnnotation, d.Annotations.UpdatePhase, PhaseHealthCheck, PhaseRollingBack)
	}
	return d
}

// resetCircuit acts on a new value of the reset-circuit annotation, in any phase.
func resetCircuit(d *Decision, cfg *v1alpha1.RollingUpgradeConfig) {
	token := cfg.GetAnnotations()[v1alpha1.ResetCircuitAnnotation]
	if token == "" || token == d.Status.LastCircuitReset {
		return
	}
	d.Status.LastCircuitReset = token
	if d.Status.CircuitOpen || d.Status.RollbackCount > 0 {
		bookkeeping.ResetCircuit(&d.Status)
		d.event(corev1.EventTypeNormal, v1alpha1.EventCircuitReset,
			"circuit breaker reset by %s=%q; automatic rollouts resume", v1alpha1.ResetCircuitAnnotation, token)
	}
}

// checkWorkload stops the decision with a Stalled condition when the workload or its container
// is missing or runs an image of another repository.
func checkWorkload(d *Decision, in Input) (*Workload, bool) {
	w := in.Workload
	spec := in.Config.Spec
	switch {
	case w == nil:
		d.stalled(v1alpha1.EventTargetNotFound, "%s %s not found in namespace %s", spec.TargetRef.Kind, spec.TargetRef.Name, in.Config.Namespace)
	case w.ImageReverts >= v1alpha1.MaxImageReverts:
		d.stalled(v1alpha1.EventFieldManagerConflict, "field manager %s changed the image of %s back %d times in a row, so rollgate stopped "+
			"rendering it. Let that tool leave the image alone (Flux: a spec.ignore rule for the image path of this workload in its "+
			"Kustomization; Argo CD: ignoreDifferences with managedFieldsManagers: [rollgate] and RespectIgnoreDifferences=true), "+
			"then remove the annotation %s from %s", w.ImageRevertedBy, w.Description, w.ImageReverts, v1alpha1.RevertsAnnotation, w.Description)
	case w.ContainerProblem != "":
		d.stalled(v1alpha1.EventInvalidSpec, "spec.container: %s", w.ContainerProblem)
	case !image.SameRepository(w.Image, spec.Image):
		d.stalled(v1alpha1.EventInvalidSpec, "%s runs %s, which is not an image of spec.image %s", w.Description, w.Image, spec.Image)
	case d.Annotations.TargetImage != "" && !image.SameRepository(d.Annotations.TargetImage, spec.Image):
		d.stalled(v1alpha1.EventInvalidSpec, "annotation %s=%s is not an image of spec.image %s",
			v1alpha1.TargetImageAnnotation, d.Annotations.TargetImage, spec.Image)
	default:
		return w, true
	}
	return nil, false
}

// idle decides whether to start a rollout, and if not, why.
func idle(d *Decision, in Input) {
	spec := in.Config.Spec
	st := &d.Status
	policy, err := version.NewPolicy(spec.VersionConstraint)
	if err != nil {
		d.stalled(v1alpha1.EventInvalidSpec, "spec.versionConstraint: %v", err)
		return
	}
	var win *window.Window
	if mw := spec.MaintenanceWindow; mw != nil {
		var dur time.Duration
		if mw.Duration != nil {
			dur = mw.Duration.Duration
		}
		if win, err = window.Parse(mw.Schedule, dur, mw.TimeZone); err != nil {
			d.stalled(v1alpha1.EventInvalidSpec, "spec.maintenanceWindow: %v", err)
			return
		}
	}
	w, ok := checkWorkload(d, in)
	if !ok {
		return
	}
	target := d.Annotations.TargetImage

	// The first healthy sight of the workload gives the version a rollback returns to.
	if st.CurrentImage == "" && w.Verdict.State == health.Healthy && (target == "" || target == w.Image) {
		st.CurrentImage = w.Image
		if tag := image.Tag(w.Image); tag != "" && version.IsSemver(tag) {
			st.CurrentVersion = tag
		}
	}

	// A target-image that differs from the current image while idle was set by hand: honour it
	// and watch it like any rollout.
	if target != "" && target != st.CurrentImage {
		start(d, in, target, image.Version(target), "set by hand in "+v1alpha1.TargetImageAnnotation)
		return
	}
	if image.DigestPinned(target) {
		st.Phase = restingPhase(st)
		st.TargetVersion, st.NextWindow = "", nil
		d.ready(v1alpha1.ReasonPinned, "%s pins %s by digest: automatic updates are off until the annotation is removed",
			v1alpha1.TargetImageAnnotation, target)
		return
	}

	if st.CurrentImage == "" {
		// Without a recorded healthy image nothing can be compared, nor rolled back to.
		d.waiting(v1alpha1.ReasonWorkloadNotHealthy, "waiting for %s to be healthy to record the version it runs (%s)",
			w.Description, w.Verdict.Message)
		return
	}
	if p := in.SourceProblem; p != nil {
		if p.Terminal {
			d.stalled(p.Reason, "%s", p.Message)
		} else {
			d.waiting(p.Reason, "%s", p.Message)
		}
		return
	}
	tags := make([]string, 0, len(in.Candidates))
	for _, c := range in.Candidates {
		tags = append(tags, c.Tag)
	}
	choice, err := policy.Choose(tags, st.CurrentVersion, st.FailedVersions)
	if err != nil {
		d.stalled(v1alpha1.EventInvalidSpec, "status.currentVersion: %v", err)
		return
	}
	// lastCheck moves when the answer changes, or at most every lastCheckRefresh: an unchanged
	// config is not rewritten on every event about its workload.
	if st.LastCheck == nil || in.Now.Sub(st.LastCheck.Time) >= lastCheckRefresh || choice.Tag != d.old.AvailableVersion {
		now := metav1.NewTime(in.Now)
		st.LastCheck = &now
	}
	ignored := describeIgnored(choice.Skipped, in.Candidates)
	if choice.Tag != "" && choice.Tag != d.old.AvailableVersion {
		d.event(corev1.EventTypeNormal, v1alpha1.EventVersionAvailable, "%s is available (current: %s)", choice.Tag, orNone(st.CurrentVersion))
	}
	st.AvailableVersion = choice.Tag

	switch {
	case spec.Suspend:
		st.Phase = v1alpha1.PhaseSuspended
		st.TargetVersion, st.NextWindow = "", nil
		d.ready(v1alpha1.ReasonSuspended, "spec.suspend is set: no automatic rollout%s", availableNote(choice.Tag))
	case choice.Tag == "":
		st.Phase = restingPhase(st)
		st.TargetVersion, st.NextWindow = "", nil
		if st.CircuitOpen {
			d.stalled(v1alpha1.EventCircuitOpen, "%s", circuitMessage(st, ""))
			return
		}
		d.ready(v1alpha1.ReasonUpToDate, "running %s; no newer eligible version%s", orNone(st.CurrentVersion), ignored)
	case st.CircuitOpen:
		if d.old.Phase != v1alpha1.PhaseFailed || d.old.AvailableVersion != choice.Tag {
			d.event(corev1.EventTypeWarning, v1alpha1.EventVersionAvailableCircuitOpen, "%s", circuitMessage(st, choice.Tag))
		}
		st.Phase = v1alpha1.PhaseFailed
		st.TargetVersion, st.NextWindow = "", nil
		d.stalled(v1alpha1.EventCircuitOpen, "%s", circuitMessage(st, choice.Tag))
	case !win.Open(in.Now):
		next := win.NextOpen(in.Now)
		if d.old.Phase != v1alpha1.PhasePending || d.old.TargetVersion != choice.Tag {
			d.event(corev1.EventTypeNormal, v1alpha1.EventVersionHeld, "%s held until %s (window %s)", choice.Tag, next.Format(time.RFC3339), win)
		}
		st.Phase = v1alpha1.PhasePending
		st.TargetVersion = choice.Tag
		nw := metav1.NewTime(next)
		st.NextWindow = &nw
		d.ready(v1alpha1.EventVersionHeld, "%s held until %s (window %s)", choice.Tag, next.Format(time.RFC3339), win)
		d.RequeueAfter = next.Sub(in.Now)
	case w.Verdict.State != health.Healthy:
		// Never start on a broken workload: its failure would be blamed on the new version.
		st.Phase = restingPhase(st)
		st.TargetVersion, st.NextWindow = "", nil
		d.waiting(v1alpha1.ReasonWorkloadNotHealthy, "%s is not healthy (%s); %s waits until it is", w.Description, w.Verdict.Message, choice.Tag)
	default:
		start(d, in, spec.Image+":"+choice.Tag, choice.Tag, "from "+sourcesOf(choice.Tag, in.Candidates))
	}
}

// start applies an image: the annotations say HealthCheck from now on.
func start(d *Decision, in Input, image, ver, why string) {
	st := &d.Status
	d.Annotations = Annotations{TargetImage: image, UpdatePhase: PhaseHealthCheck, UpdateStarted: in.Now.UTC().Format(time.RFC3339)}
	now := metav1.NewTime(in.Now)
	st.Phase = v1alpha1.PhaseInProgress
	st.TargetVersion = ver
	st.NextWindow = nil
	st.LastUpdate = &now
	timeout := in.Config.Spec.HealthTimeoutOrDefault()
	d.event(corev1.EventTypeNormal, v1alpha1.EventUpdateStarting, "rolling out %s (%s); health timeout %s", image, why, timeout)
	d.progressing(v1alpha1.ReasonProgressing, "rolling out %s; health timeout %s", ver, timeout)
	d.RequeueAfter = HealthPoll
}

// healthCheck watches a rollout until it is healthy, fails, or times out.
func healthCheck(d *Decision, in Input) {
	st := &d.Status
	a := d.Annotations
	started, err := time.Parse(time.RFC3339, a.UpdateStarted)
	if err != nil {
		d.stalled(v1alpha1.EventInvalidSpec, "annotation %s=%q is not an RFC 3339 time; set it (e.g. %s) or remove %s to end the health check",
			v1alpha1.UpdateStartedAnnotation, a.UpdateStarted, in.Now.UTC().Format(time.RFC3339), v1alpha1.UpdatePhaseAnnotation)
		return
	}
	if a.TargetImage == "" {
		// A human removed the target mid-check: the renderer returns to the current image.
		d.Annotations.UpdatePhase = PhaseRollingBack
		st.Phase, st.TargetVersion = v1alpha1.PhaseRollingBack, ""
		d.progressing(v1alpha1.ReasonRollingBack, "%s was removed by hand; returning to %s", v1alpha1.TargetImageAnnotation, orNone(st.CurrentImage))
		d.RequeueAfter = HealthPoll
		return
	}
	w, ok := checkWorkload(d, in)
	if !ok {
		return
	}
	ver := image.Version(a.TargetImage)
	appliedAt := metav1.NewTime(started)
	elapsed := in.Now.Sub(started)
	timeout := in.Config.Spec.HealthTimeoutOrDefault()
	rendered := w.Image == a.TargetImage

	// Ending a health check records it in status (idempotent, keyed by version and start) and moves
	// the annotations out of HealthCheck. The events go with that move, which happens once: if the
	// status was written but the annotations were not (a conflict, a crash), no event went out, and
	// the repeated decision emits it.
	switch {
	case rendered && w.Verdict.State == health.Healthy:
		bookkeeping.Success(st, ver, a.TargetImage, appliedAt)
		d.event(corev1.EventTypeNormal, v1alpha1.EventUpdateComplete, "%s is healthy after %s", a.TargetImage, elapsed.Round(time.Second))
		d.Annotations.UpdatePhase, d.Annotations.UpdateStarted = PhaseIdle, ""
		d.StatusFirst = true
		st.Phase, st.TargetVersion = v1alpha1.PhaseCompleted, ""
		d.ready(v1alpha1.EventUpdateComplete, "running %s", ver)
	case (rendered && w.Verdict.State == health.Failed) || elapsed >= timeout:
		verdict := strings.TrimSuffix(w.Verdict.Message, ".")
		why := fmt.Sprintf("not healthy after %s (%s)", timeout, verdict)
		if elapsed < timeout {
			why = fmt.Sprintf("failed after %s: %s: %s", elapsed.Round(time.Second), w.Verdict.Reason, verdict)
		}
		recorded, opened := bookkeeping.Rollback(st, ver, a.TargetImage, appliedAt, in.Config.Spec.MaxRollbacks)
		d.event(corev1.EventTypeWarning, v1alpha1.EventUpdateRollback, "%s %s; rolling back to %s", a.TargetImage, why, orNone(st.CurrentImage))
		// The circuit opened now, or (a repeated decision) with the record written last time.
		if opened || (!recorded && st.CircuitOpen) {
			d.event(corev1.EventTypeWarning, v1alpha1.EventCircuitOpen, "%s", circuitMessage(st, ""))
		}
		d.Annotations.TargetImage, d.Annotations.UpdatePhase = "", PhaseRollingBack
		d.StatusFirst = true
		st.Phase, st.TargetVersion = v1alpha1.PhaseRollingBack, ""
		d.progressing(v1alpha1.ReasonRollingBack, "%s %s; rolling back to %s", ver, why, orNone(st.CurrentImage))
		d.RequeueAfter = HealthPoll
	default:
		st.Phase, st.TargetVersion = v1alpha1.PhaseInProgress, ver
		progress := w.Verdict.Message
		if !rendered {
			progress = "waiting for the image to be rendered into " + w.Description
		}
		left := timeout - elapsed
		d.progressing(v1alpha1.ReasonProgressing, "rolling out %s: %s; rollback in %s unless healthy", ver, progress, left.Round(time.Second))
		d.RequeueAfter = min(HealthPoll, left)
	}
}

// rollingBack watches the return to the current image until it is healthy again.
func rollingBack(d *Decision, in Input) {
	st := &d.Status
	w, ok := checkWorkload(d, in)
	if !ok {
		return
	}
	if st.CurrentImage == "" {
		d.stalled(v1alpha1.EventInvalidSpec, "rolled back, but no healthy image of %s was ever recorded to return to; set %s to a good image",
			w.Description, v1alpha1.TargetImageAnnotation)
		return
	}
	if w.Image == st.CurrentImage && w.Verdict.State == health.Healthy {
		d.event(corev1.EventTypeNormal, v1alpha1.EventRollbackComplete, "%s is healthy again on %s", w.Description, st.CurrentImage)
		d.Annotations.UpdatePhase, d.Annotations.UpdateStarted = PhaseIdle, ""
		st.Phase = restingPhase(st)
		if st.CircuitOpen {
			d.stalled(v1alpha1.EventCircuitOpen, "%s", circuitMessage(st, ""))
			return
		}
		d.ready(v1alpha1.EventRollbackComplete, "rolled back to %s", orNone(st.CurrentVersion))
		return
	}
	st.Phase = v1alpha1.PhaseRollingBack
	d.DeleteStuckPods = w.OrderedReadyStatefulSet && w.Image == st.CurrentImage
	d.progressing(v1alpha1.ReasonRollingBack, "returning to %s: %s", st.CurrentImage, w.Verdict.Message)
	d.RequeueAfter = HealthPoll
}

// restingPhase is the phase when nothing is in flight.
func restingPhase(st *v1alpha1.RollingUpgradeConfigStatus) v1alpha1.Phase {
	switch n := len(st.VersionHistory); {
	case st.CircuitOpen:
		return v1alpha1.PhaseFailed
	case n > 0 && st.VersionHistory[n-1].Status == v1alpha1.ResultHealthy:
		return v1alpha1.PhaseCompleted
	}
	return v1alpha1.PhaseIdle
}

func circuitMessage(st *v1alpha1.RollingUpgradeConfigStatus, available string) string {
	return fmt.Sprintf("circuit breaker open after %d consecutive rollbacks%s; set annotation %s to a new value to resume",
		st.RollbackCount, availableNote(available), v1alpha1.ResetCircuitAnnotation)
}

func availableNote(tag string) string {
	if tag == "" {
		return ""
	}
	return "; " + tag + " is available but not applied"
}

// describeIgnored lists candidates that were not semver or came from a source twice, so a user can
// see why an announced tag does nothing.
func describeIgnored(skipped []version.Skip, cands []Candidate) string {
	var parts []string
	for _, s := range skipped {
		if s.Reason == version.SkipNotSemver {
			parts = append(parts, fmt.Sprintf("%s from %s is not semver", s.Tag, sourcesOf(s.Tag, cands)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; ignored: " + strings.Join(parts, ", ")
}

func sourcesOf(tag string, cands []Candidate) string {
	var src []string
	for _, c := range cands {
		if c.Tag == tag {
			src = append(src, c.Source)
		}
	}
	return strings.Join(src, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
