package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/bookkeeping"
	"github.com/rollgate/rollgate/internal/health"
	"github.com/rollgate/rollgate/internal/image"
	"github.com/rollgate/rollgate/internal/inplace"
)

// Decide runs one step of the state machine. It branches on the update-phase annotation:
// idle (decide whether to start a rollout), HealthCheck (watch the new version) or RollingBack
// (watch the return to the previous one), and says what the engine carries out besides.
func Decide(in Input) Decision {
	d := decide(in)
	effectsOf(&d, in)
	return d
}

// decide decides the config's annotations, status and events.
func decide(in Input) Decision {
	cfg := in.Config
	d := Decision{Annotations: AnnotationsOf(cfg), Status: *cfg.Status.DeepCopy(), old: &cfg.Status, now: in.Now, follow: cfg.Spec.FollowTag}
	if d.policy, d.policyErr = PolicyOf(cfg.Spec); d.policyErr != nil {
		d.policy = semverPolicy
	}
	d.Status.ObservedGeneration = cfg.Generation
	d.Status.Hold = nil // a gate that still holds the version says so again
	if d.Status.Phase == "" {
		d.Status.Phase = v1alpha1.PhaseIdle
	}

	resetCircuit(&d, cfg)
	actOnRequests(&d, cfg)

	if in.ClaimedBy != "" {
		d.stalled(v1alpha1.EventInvalidSpec, "%s %s is managed by RollingUpgradeConfig %s; a workload takes one config",
			cfg.Spec.TargetRef.Kind, cfg.Spec.TargetRef.Name, in.ClaimedBy)
		return d
	}
	if retarget(&d, in) {
		return d
	}
	switch d.Annotations.Step {
	case StepIdle:
		idle(&d, in)
		d.lookWithin(in.PollAfter)
	case StepHealthCheck:
		healthCheck(&d, in)
	case StepRollingBack:
		rollingBack(&d, in)
	default:
		d.stalled(v1alpha1.EventInvalidSpec, "annotation %s has the unknown value %q; remove it or set %s or %s",
			v1alpha1.UpdatePhaseAnnotation, d.Annotations.Step, StepHealthCheck, StepRollingBack)
	}
	recordInPlace(&d, in)
	noteApprover(&d, cfg)
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
		d.event(WriteStatus, corev1.EventTypeNormal, v1alpha1.EventCircuitReset,
			"circuit breaker reset by %s=%q; automatic rollouts resume", v1alpha1.ResetCircuitAnnotation, token)
	}
}

// RecordedTargetOf is the workload and containers a config's spec names, as a status records
// them: container: web and containers: [web] name one container, and containers are a set.
func RecordedTargetOf(spec v1alpha1.RollingUpgradeConfigSpec) v1alpha1.RecordedTarget {
	t := v1alpha1.RecordedTarget{Kind: spec.TargetRef.Kind, Name: spec.TargetRef.Name, Container: spec.Container}
	switch names := spec.Containers; {
	case len(names) == 1:
		t.Container = names[0]
	case len(names) > 1:
		t.Containers = slices.Sorted(slices.Values(names))
	}
	return t
}

// RecordedImage is status.currentImage when the status was recorded for the workload and
// containers the spec names (or before targets were recorded), else "": the image of another.
func RecordedImage(cfg *v1alpha1.RollingUpgradeConfig) string {
	if rt := cfg.Status.RecordedTarget; rt != nil && !recordedFor(*rt, cfg.Spec) {
		return ""
	}
	return cfg.Status.CurrentImage
}

// recordedFor reports whether t names the workload and containers spec names.
func recordedFor(t v1alpha1.RecordedTarget, spec v1alpha1.RollingUpgradeConfigSpec) bool {
	return equality.Semantic.DeepEqual(t, RecordedTargetOf(spec))
}

// retarget keeps the record bound to the workload it was made for. When spec.targetRef or
// spec.container names another workload or container, the recorded image belongs to the old one.
// It goes in two decisions, so that no write order can carry an image across:
//   - first the annotations are cleared (a rollout in flight is abandoned, recorded in status
//     first; a target left from the last rollout goes too) while the status keeps the old record,
//     under which the renderer renders nothing into the new workload;
//   - then, with nothing in flight, the record is dropped and the new workload's image recorded
//     afresh.
//
// It reports whether the decision is made.
func retarget(d *Decision, in Input) bool {
	st := &d.Status
	want := RecordedTargetOf(in.Config.Spec)
	switch {
	case st.RecordedTarget == nil && st.CurrentImage != "":
		st.RecordedTarget = &want // recorded before targets were: it can only be this one
		return false
	case st.RecordedTarget == nil || recordedFor(*st.RecordedTarget, in.Config.Spec):
		return false
	}
	a := d.Annotations
	if a == (Annotations{}) {
		st.CurrentImage, st.CurrentVersion, st.RecordedTarget, st.TargetVersion = "", "", nil, ""
		st.Phase = restingPhase(st)
		return false
	}
	if a.Step != StepIdle {
		started := a.UpdateStarted
		if ver := d.nameOf(a.TargetImage); a.Step == StepHealthCheck && ver != "" {
			bookkeeping.Abandon(st, ver, a.TargetImage, metav1.NewTime(started))
			d.end(OutcomeAbandoned, a.TargetImage, started)
		}
		d.event(WriteAnnotations, corev1.EventTypeWarning, v1alpha1.EventUpdateAbandoned,
			"the config now names %s instead of %s: the rollout in flight (%s) is abandoned and neither workload is touched",
			describeTarget(want), describeTarget(*st.RecordedTarget), orNone(a.TargetImage))
		d.StatusFirst = true
	}
	d.Annotations = Annotations{}
	st.Phase, st.TargetVersion = restingPhase(st), ""
	d.progressing(v1alpha1.ReasonProgressing, "%s is now the target: recording the image it runs", describeTarget(want))
	d.RequeueAfter = time.Second
	return true
}

func describeTarget(t v1alpha1.RecordedTarget) string {
	s := string(t.Kind) + " " + t.Name
	switch {
	case len(t.Containers) > 0:
		s += " containers " + strings.Join(t.Containers, ", ")
	case t.Container != "":
		s += " container " + t.Container
	}
	return s
}

// checkWorkload stops the decision with a Stalled condition when the workload or its container
// is missing or runs an image that is neither of spec.image nor the recorded current image (which
// may be of the repository spec.image named before a registry move).
func checkWorkload(d *Decision, in Input) (*Workload, bool) {
	w := in.Workload
	spec := in.Config.Spec
	switch {
	case w == nil:
		d.stalled(v1alpha1.EventTargetNotFound, "%s %s not found in namespace %s", spec.TargetRef.Kind, spec.TargetRef.Name, in.Config.Namespace)
	case w.ImageReverts >= v1alpha1.MaxImageReverts && fightCounts(in, w):
		lostFight(d, in, w)
	case w.ContainerProblem != "":
		field := "spec.container"
		if len(spec.Containers) > 0 {
			field = "spec.containers"
		}
		d.stalled(v1alpha1.EventInvalidSpec, "%s: %s", field, w.ContainerProblem)
	case !image.SameRepository(w.Image, spec.Image) && (d.Status.CurrentImage == "" || !image.Renders(w.Image, d.Status.CurrentImage)):
		d.stalled(v1alpha1.EventInvalidSpec, "%s runs %s, which is not an image of spec.image %s", w.Description, w.Image, spec.Image)
	case d.Annotations.TargetImage != "" && !image.SameRepository(d.Annotations.TargetImage, spec.Image):
		d.stalled(v1alpha1.EventInvalidSpec, "annotation %s=%s is not an image of spec.image %s",
			v1alpha1.TargetImageAnnotation, d.Annotations.TargetImage, spec.Image)
	default:
		return w, true
	}
	return nil, false
}

// fightCounts: the reverts the workload records are of a fight that goes on. A GitFirst config
// fights only over the image that stands in for Git (StandInSince), and only the reverts of that
// stand-in count: those of one before are of a fight that ended with it.
func fightCounts(in Input, w *Workload) bool {
	if !StandsInForGit(in.Config) {
		return true
	}
	since, ok := StandInSince(in.Config, in.Now)
	return ok && !w.ImageRevertedAt.Before(since.Truncate(time.Second))
}

// lostFight reports a fight over the image that rollgate lost: it stopped rendering. The workload
// runs the other tool's image, so the status must not claim a completed rollout, nor name as
// current a version the workload does not run (one that failed is never named: the message says
// it runs). Once the fight is mended, a version newer than what runs is rolled out again, with its
// check.
func lostFight(d *Decision, in Input, w *Workload) {
	spec := in.Config.Spec
	if d.Annotations.Step == StepIdle {
		if d.Status.Phase == v1alpha1.PhaseCompleted {
			d.Status.Phase = v1alpha1.PhaseIdle
		}
		// Under GitFirst the image the tool put back is checked once the stand-in ends (fromGit).
		if w.Verdict.State == health.Healthy && image.SameRepository(w.Image, spec.Image) && !image.Renders(w.Image, d.Status.CurrentImage) &&
			!slices.Contains(d.Status.FailedVersions, d.nameOf(w.Image)) && !StandsInForGit(in.Config) {
			d.recordRunning(w.Image)
		}
	}
	if StandsInForGit(in.Config) {
		d.stalled(v1alpha1.EventFieldManagerConflict, "field manager %s put the image Git says back %d times over %s, which rollgate renders into %s "+
			"while %s, so rollgate stopped rendering it; %s now runs %s. Stop that tool from applying %s until Git says %s and it can "+
			"apply that (Flux: flux suspend kustomization <name>; Argo CD: turn off automated sync), then remove the annotation %s from %s: "+
			"rollgate renders %s again", w.ImageRevertedBy, w.ImageReverts, d.Status.CurrentImage, w.Description, standInCause(in),
			w.Description, w.Image, w.Description, d.Status.CurrentImage, v1alpha1.RevertsAnnotation, w.Description, d.Status.CurrentImage)
		return
	}
	d.stalled(v1alpha1.EventFieldManagerConflict, "field manager %s changed the image of %s back %d times since rollgate rendered it, "+
		"so rollgate stopped rendering it; %s now runs %s. Let that tool leave the image alone (Flux: a spec.ignore rule for the image "+
		"path of this workload in its Kustomization; Argo CD: ignoreDifferences with managedFieldsManagers: [rollgate] and "+
		"RespectIgnoreDifferences=true), then remove the annotation %s from %s", w.ImageRevertedBy, w.Description, w.ImageReverts,
		w.Description, w.Image, v1alpha1.RevertsAnnotation, w.Description)
}

// blocked holds the decision when the workload can make no progress until a person changes it (a
// paused Deployment, an OnDelete StatefulSet, a partition over every pod, 0 replicas): a health
// check against it could only time out and burn the version.
func blocked(d *Decision, w *Workload) bool {
	v := w.Verdict
	if v.State != health.Blocked {
		return false
	}
	if v.Reason == health.ReasonOnDelete || v.Reason == health.ReasonNotOnDelete || v.Reason == inplace.ReasonNoReadinessGate {
		d.stalled(v.Reason, "%s: %s", w.Description, v.Message)
	} else {
		d.waiting(v.Reason, "%s: %s", w.Description, v.Message)
	}
	return true
}

// end records the outcome of the rollout in flight.
func (d *Decision) end(o Outcome, img string, started time.Time) {
	d.Outcome, d.Rollout = o, Rollout{Image: img, Started: started}
}

// rest: nothing is held, nothing starts.
func (d *Decision) rest() {
	st := &d.Status
	st.Phase = restingPhase(st)
	st.TargetVersion, st.NextWindow = "", nil
}

// restingPhase is the phase when nothing is in flight.
func restingPhase(st *v1alpha1.RollingUpgradeConfigStatus) v1alpha1.Phase {
	switch last := bookkeeping.LastRollout(st); {
	case st.CircuitOpen:
		return v1alpha1.PhaseFailed
	case last != nil && last.Status == v1alpha1.ResultHealthy:
		return v1alpha1.PhaseCompleted
	}
	return v1alpha1.PhaseIdle
}

func circuitMessage(st *v1alpha1.RollingUpgradeConfigStatus, available string) string {
	return fmt.Sprintf("circuit breaker open after %d consecutive rollbacks%s; set annotation %s to a new value to resume",
		st.RollbackCount, availableNote(available), v1alpha1.ResetCircuitAnnotation)
}

// describeIgnored lists candidates the config's rules could not read (why says so), so a user can
// see why an announced tag does nothing; a registry with thousands of CI tags is summed up (see
// listed).
func describeIgnored(why string, unread []string, cands []Candidate) string {
	if len(unread) == 0 {
		return ""
	}
	// One pass over the candidates: a registry may announce thousands of tags, and looking up the
	// sources of each one in turn would be quadratic.
	from := map[string][]string{}
	for _, c := range cands {
		from[c.Tag] = append(from[c.Tag], c.Source)
	}
	parts := make([]string, 0, len(unread))
	for _, tag := range unread {
		parts = append(parts, tag+" from "+strings.Join(from[tag], ", "))
	}
	return "; ignored, " + why + ": " + listed(parts)
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
