package rollout

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/health"
	"github.com/rollgate/rollgate/internal/image"
)

// rollingBack watches the return to the current image until it is healthy again. The rollback has
// the health timeout too: past it the config is Stalled RollbackStuck (the previous image is not
// healthy either, which needs a person), and it goes on watching. A target-image set by hand during
// a rollback is honoured like any other.
func rollingBack(d *Decision, in Input) {
	st := &d.Status
	a := d.Annotations
	refused := ""
	if a.TargetImage != "" {
		if refused = handTargetProblem(st, in.Config.Spec, a.TargetImage); refused == "" {
			if _, ok := checkWorkload(d, in); ok {
				start(d, in, a.TargetImage, "set by hand in "+v1alpha1.TargetImageAnnotation+" during a rollback")
			}
			return
		}
		// A refused target does not stop the rollback: it is watched to its end as usual.
		d.Annotations.TargetImage = ""
	}
	w, ok := checkWorkload(d, in)
	if !ok {
		return
	}
	if st.CurrentImage == "" {
		d.stalled(v1alpha1.EventInvalidSpec, "rolled back, but no healthy image of %s was ever recorded to return to; set %s to a good image",
			w.Description, v1alpha1.TargetImageAnnotation)
		return
	}
	if image.Renders(w.Image, st.CurrentImage) && w.Verdict.State == health.Healthy {
		rolledBack(d, w)
		return
	}
	st.Phase = v1alpha1.PhaseRollingBack
	// Only once the StatefulSet controller has seen the rolled-back template: before, its
	// updateRevision still names the failed revision, and the stuck pods would be the good ones.
	d.Effects.DeleteStuckPods = w.OrderedReadyStatefulSet && w.GenerationObserved && image.Renders(w.Image, st.CurrentImage)
	timeout := in.Config.Spec.HealthTimeoutOrDefault()
	started := a.UpdateStarted
	known := !started.IsZero()
	switch {
	case d.Effects.DeleteStuckPods:
		// A stuck pod that stays stuck changes nothing the manager watches: look again.
		d.RequeueAfter = HealthPoll
	case known && in.Now.Before(started.Add(timeout)):
		// The workload's events wake the watch; the deadline is the one instant nothing announces.
		d.RequeueAfter = started.Add(timeout).Sub(in.Now)
	}
	if known && in.Now.Sub(started) >= timeout {
		// The message stays the same while stuck, so the Warning goes out once; the counts are in the workload.
		d.stalled(v1alpha1.EventRollbackStuck, "%s is not healthy on %s %s after the rollback started; find out why (kubectl describe), "+
			"or set %s to a good image", w.Description, st.CurrentImage, timeout, v1alpha1.TargetImageAnnotation)
		return
	}
	if refused != "" {
		d.stalledAbout(d.nameOf(a.TargetImage), v1alpha1.ReasonTargetRefused, "%s=%s is not applied during the rollback: %s", v1alpha1.TargetImageAnnotation, a.TargetImage, refused)
		return
	}
	if rollbackNotApplied(d, in, w) {
		return
	}
	d.progressing(v1alpha1.ReasonRollingBack, "returning to %s: %s", st.CurrentImage, w.Verdict.Message)
}

// rolledBack ends a rollback whose workload is healthy again on the recorded image.
func rolledBack(d *Decision, w *Workload) {
	st := &d.Status
	d.event(WriteAnnotations, corev1.EventTypeNormal, v1alpha1.EventRollbackComplete, "%s is healthy again on %s", w.Description, st.CurrentImage)
	d.Annotations = Annotations{}
	// The rollout it undid did not succeed, whether it failed, was rejected or was taken back by
	// hand: the config rests Idle (Failed with the circuit open), never Completed.
	st.Phase = v1alpha1.PhaseIdle
	if st.CircuitOpen {
		st.Phase = v1alpha1.PhaseFailed
		d.stalled(v1alpha1.EventCircuitOpen, "%s", circuitMessage(st, ""))
		return
	}
	d.ready(v1alpha1.EventRollbackComplete, "rolled back to %s", orNone(st.CurrentVersion))
}
