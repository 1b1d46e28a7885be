package rollout

import (
	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/controllers/image"
)

// RenderImage is the image the renderer writes into a config's workload, or "" when it must leave
// the workload alone, and why. It is the renderer's whole policy, kept next to the engine's so
// both read the config the same way:
//   - nothing, when the status was recorded for another workload or container: an image recorded
//     for one workload never lands in another;
//   - the target-image annotation while its health check runs (a target changed by hand mid-check
//     only when it breaks no rule), or when the current image runs it;
//   - a target-image set by hand that the engine has not started yet, when it breaks no rule
//     (suspend, circuit, failed list; see handTargetProblem), so the renderer alone serves hand-set
//     targets too;
//   - for a deleted config, status.currentImage while a version is in flight under deletionPolicy
//     Rollback, else nothing;
//   - otherwise status.currentImage, the last healthy image: that is how a rollback happens. It may
//     be of the repository spec.image named before a registry move.
func RenderImage(cfg *v1alpha1.RollingUpgradeConfig) (string, string) {
	st := &cfg.Status
	if rt := st.RecordedTarget; rt != nil && *rt != recordedTargetOf(cfg.Spec) {
		return "", "the status was recorded for " + describeTarget(*rt) + ", not for this workload"
	}
	a := AnnotationsOf(cfg)
	if cfg.DeletionTimestamp != nil {
		if !rollsBackOnDeletion(cfg) || a.Step == StepIdle {
			return "", "the config is being deleted and nothing is in flight, or it keeps the workload as it is"
		}
		return st.CurrentImage, ""
	}
	if t := a.TargetImage; t != "" {
		switch {
		case !image.SameRepository(t, cfg.Spec.Image):
			return "", t + " is not an image of spec.image " + cfg.Spec.Image
		case st.CurrentImage != "" && image.Renders(st.CurrentImage, t):
			return t, ""
		case a.Step == StepHealthCheck && (image.Version(t) == st.TargetVersion || handTargetProblem(st, cfg.Spec, t) == ""):
			// The check the engine started, or a target changed by hand mid-check that it will start.
			return t, ""
		case a.Step == StepIdle && handTargetProblem(st, cfg.Spec, t) == "":
			return t, ""
		}
	}
	if st.CurrentImage == "" {
		return "", "no image recorded yet"
	}
	return st.CurrentImage, ""
}
