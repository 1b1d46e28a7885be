package rollout

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/image"
)

// Finalization is what becomes of a deleted config.
type Finalization struct {
	// Release: give up rollgate's hold on the workload (its image field and annotations), then let
	// the config go. Without it, look again after RequeueAfter.
	Release bool
	// Workload: there is a workload of this config's to release.
	Workload     bool
	RequeueAfter time.Duration
	Events       []Event
}

// Finalize decides the deletion of a config. With spec.deletionPolicy Rollback (the default) a
// version in flight first goes back to status.currentImage: the renderer renders it (RenderImage)
// and the config waits until the workload's template runs it, for at most the health timeout after
// the deletion (a renderer that cannot write must not hold the deletion for ever). With Keep, or
// nothing in flight, the workload is released at once.
func Finalize(in Input) Finalization {
	cfg := in.Config
	a := AnnotationsOf(cfg)
	switch {
	case in.ClaimedBy != "" || in.Workload == nil:
		return Finalization{Release: true}
	case !rollsBackOnDeletion(cfg) || a.Step == StepIdle || image.Renders(in.Workload.Image, cfg.Status.CurrentImage):
		return Finalization{Release: true, Workload: true}
	}
	deadline := cfg.DeletionTimestamp.Add(cfg.Spec.HealthTimeoutOrDefault())
	if !in.Now.Before(deadline) {
		return Finalization{Release: true, Workload: true, Events: []Event{{Type: corev1.EventTypeWarning, Reason: v1alpha1.EventRollbackStuck,
			Message: Bounded(in.Workload.Description + " did not return to " + cfg.Status.CurrentImage + " within " +
				cfg.Spec.HealthTimeoutOrDefault().String() + " of the deletion; it is released as it is (" + in.Workload.Image + ")")}}}
	}
	return Finalization{RequeueAfter: min(HealthPoll, deadline.Sub(in.Now))}
}

// rollsBackOnDeletion: a deleted config whose version in flight goes back to the current image.
func rollsBackOnDeletion(cfg *v1alpha1.RollingUpgradeConfig) bool {
	return cfg.Spec.DeletionPolicy != v1alpha1.DeletionKeep && cfg.Status.CurrentImage != "" &&
		(cfg.Status.RecordedTarget == nil || recordedFor(*cfg.Status.RecordedTarget, cfg.Spec))
}
