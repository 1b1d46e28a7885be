package rollout

import (
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	"github.com/fluxcd/pkg/apis/meta"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/controllers/version"
)

// needsApproval reports whether version tag waits for a person under policy, given the running
// version and the version the approve annotation names. An approval names one version exactly,
// so one left behind for an earlier version approves nothing new.
func needsApproval(policy v1alpha1.ApprovalPolicy, current, tag, approved string) bool {
	if tag == approved {
		return false
	}
	switch policy {
	case v1alpha1.ApprovalRequired:
		return true
	case v1alpha1.ApprovalMajor:
		return version.NewMajor(current, tag)
	}
	return false
}

// awaitApproval holds tag until a person approves it: Pending, with the command that does it.
// The event goes out once per version, when it starts to wait.
func awaitApproval(d *Decision, cfg *v1alpha1.RollingUpgradeConfig, tag string) {
	st := &d.Status
	msg := approvalMessage(cfg, tag)
	if !heldBefore(d, tag, v1alpha1.ReasonAwaitingApproval) {
		d.event(WriteStatus, corev1.EventTypeNormal, v1alpha1.EventApprovalRequired, "%s", msg)
	}
	st.Phase, st.TargetVersion, st.NextWindow = v1alpha1.PhasePending, tag, nil
	d.ready(v1alpha1.ReasonAwaitingApproval, "%s", msg)
}

func approvalMessage(cfg *v1alpha1.RollingUpgradeConfig, tag string) string {
	msg := tag + " waits for approval (spec.approval " + string(cfg.Spec.Approval) + "): kubectl -n " + cfg.Namespace + " annotate ruc " + cfg.Name +
		" " + v1alpha1.ApproveAnnotation + "=" + tag + " --overwrite"
	if approved := cfg.GetAnnotations()[v1alpha1.ApproveAnnotation]; approved != "" {
		msg += "; " + v1alpha1.ApproveAnnotation + " names " + approved + ", which approves no other version"
	}
	return msg
}

// heldBefore: the config was Pending with tag already, held by the same gate, so the event that
// says why was emitted then. A wait in between for something else (a source that could not be
// read, a workload that went missing) is no new hold: the phase and target stayed.
func heldBefore(d *Decision, tag, reason string) bool {
	if d.old.Phase != v1alpha1.PhasePending || d.old.TargetVersion != tag {
		return false
	}
	was := HoldReason(d.old)
	return was == "" || was == reason
}

// HoldReason is the gate that holds a config's version: while Pending, the window (VersionHeld), a
// deny window (Frozen),
// a missing approval (AwaitingApproval), the release age (AwaitingReleaseAge) or an image the
// registry does not have (ImageNotFound); in a health check, the verdict's own gates once the
// workload is healthy: the soak (Soaking), the analysis's missing measurements (Analyzing) or an
// analysis that cannot measure (AnalysisInconclusive, also before the workload is healthy). ""
// when no gate holds it (Ready says it waits for something else, or nothing waits).
func HoldReason(st *v1alpha1.RollingUpgradeConfigStatus) string {
	r := apimeta.FindStatusCondition(st.Conditions, meta.ReadyCondition)
	if r == nil {
		return ""
	}
	switch {
	case st.Phase == v1alpha1.PhasePending && (r.Reason == v1alpha1.EventVersionHeld || r.Reason == v1alpha1.ReasonFrozen || r.Reason == v1alpha1.ReasonAwaitingApproval ||
		r.Reason == v1alpha1.ReasonAwaitingReleaseAge || r.Reason == v1alpha1.ReasonImageNotFound),
		st.Phase == v1alpha1.PhaseInProgress && (r.Reason == v1alpha1.ReasonSoaking || r.Reason == v1alpha1.ReasonAnalyzing ||
			r.Reason == v1alpha1.EventAnalysisInconclusive):
		return r.Reason
	}
	return ""
}
