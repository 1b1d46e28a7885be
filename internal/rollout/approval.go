package rollout

import (
	"time"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/version"
)

// needsApproval reports whether version tag waits for a person under policy, given the running
// version and the version the approve annotation names. An approval names one version exactly,
// so one left behind for an earlier version approves nothing new. Only semver has majors: under
// a tag policy (a build number, a date) Major holds every version, as Required does.
func needsApproval(policy v1alpha1.ApprovalPolicy, semver bool, current, tag, approved string) bool {
	if tag == approved {
		return false
	}
	switch policy {
	case v1alpha1.ApprovalRequired:
		return true
	case v1alpha1.ApprovalMajor:
		return !semver || version.NewMajor(current, tag)
	}
	return false
}

// awaitApproval holds tag until a person approves it: Pending, with the command that does it.
// The event goes out once per version, when it starts to wait.
func awaitApproval(d *Decision, cfg *v1alpha1.RollingUpgradeConfig, tag string, now time.Time) {
	hold{gate: v1alpha1.GateApproval, reason: v1alpha1.ReasonAwaitingApproval, event: v1alpha1.EventApprovalRequired, message: approvalMessage(cfg, tag)}.apply(d, tag, now)
}

func approvalMessage(cfg *v1alpha1.RollingUpgradeConfig, tag string) string {
	msg := tag + " waits for approval (spec.approval " + string(cfg.Spec.Approval) + "): kubectl -n " + cfg.Namespace + " annotate ruc " + cfg.Name +
		" " + v1alpha1.ApproveAnnotation + "=" + tag + " --overwrite"
	if approved := cfg.GetAnnotations()[v1alpha1.ApproveAnnotation]; approved != "" {
		msg += "; " + v1alpha1.ApproveAnnotation + " names " + approved + ", which approves no other version"
	}
	return msg
}
