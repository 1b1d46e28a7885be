package rollout

import (
	"time"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/image"
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
//
// A config whose rollouts go through Git (spec.gitWriteBack.mode GitFirst) renders nothing: the
// GitOps tool applies the image Git says (GitImage), except where the last healthy image stands in
// for what Git cannot say, or what the GitOps tool does not apply (StandInSince).
func RenderImage(cfg *v1alpha1.RollingUpgradeConfig, now time.Time) (string, string) {
	if StandsInForGit(cfg) {
		if _, ok := StandInSince(cfg, now); ok {
			return cfg.Status.CurrentImage, ""
		}
		return "", "spec.gitWriteBack.mode is GitFirst: the GitOps tool applies the image from Git"
	}
	return imageToRun(cfg)
}

// GitImage is the image a GitFirst config's workload file in Git must say, or "" when it must
// not be changed: the image the engine wants to run, by the rules RenderImage follows for a
// config that renders it. Nothing is said before the config's record in Git was read
// (status.gitWriteBack): until then a target set by hand may be one that failed before.
func GitImage(cfg *v1alpha1.RollingUpgradeConfig) string {
	if cfg.Status.GitWriteBack == nil {
		return ""
	}
	img, _ := imageToRun(cfg)
	return img
}

// imageToRun is the image the engine wants the workload to run, or "" and why.
func imageToRun(cfg *v1alpha1.RollingUpgradeConfig) (string, string) {
	st := &cfg.Status
	if rt := st.RecordedTarget; rt != nil && !recordedFor(*rt, cfg.Spec) {
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
			if image.Digest(t) == "" {
				// The tag of the pinned current image: the pin stays, or the kubelet would pull
				// whatever the tag names then, unchecked.
				return st.CurrentImage, ""
			}
			return t, ""
		case a.Step == StepHealthCheck && (ImageVersion(cfg.Spec, t) == st.TargetVersion || handTargetProblem(st, cfg.Spec, t) == ""):
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

// StandsInForGit: the config's rollouts go through Git, and it renders only what Git cannot be
// told (RenderImage). A deleted config renders like any other: its rollback ends it.
func StandsInForGit(cfg *v1alpha1.RollingUpgradeConfig) bool {
	return gitFirst(cfg) && cfg.DeletionTimestamp == nil
}
