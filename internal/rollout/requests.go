package rollout

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/bookkeeping"
	"github.com/rollgate/rollgate/internal/image"
	"github.com/rollgate/rollgate/internal/text"
)

// MaxRequestLength is the longest version a reject or retry may name: the longest tag an image
// may have. The status keeps the value acted on to this length.
const MaxRequestLength = 128

// MaxRequestedByLength is how much of who asked the history keeps.
const MaxRequestedByLength = 256

// maxHistoryReason is how much of a reason the history keeps (the API's limit).
const maxHistoryReason = 256

// request is a person's reject or retry annotation: the version it names, and whether it is new
// (not the value the status says was acted on).
type request struct {
	version, by string
	fresh       bool
}

func requestOf(cfg *v1alpha1.RollingUpgradeConfig, annotation, byAnnotation, last string) request {
	a := cfg.GetAnnotations()
	v := text.Cut(a[annotation], MaxRequestLength, "")
	return request{version: v, by: text.Cut(a[byAnnotation], MaxRequestedByLength, "…"), fresh: v != "" && v != last}
}

// actOnRequests acts on a new reject or retry, each once (status.lastReject, lastRetry), before the
// step decides; an annotation removed clears its record, so that the same version may be named
// again later (rejected, retried, rejected again). While a rollout is in flight they wait for it
// to end, so that its verdict stays the history's newest entry until it is written, except the
// rejection of the version in flight, which rolls it back (rejectedInFlight).
func actOnRequests(d *Decision, cfg *v1alpha1.RollingUpgradeConfig) {
	reject := requestOf(cfg, v1alpha1.RejectAnnotation, v1alpha1.RejectedByAnnotation, d.Status.LastReject)
	retry := requestOf(cfg, v1alpha1.RetryAnnotation, v1alpha1.RetriedByAnnotation, d.Status.LastRetry)
	if reject.version == "" {
		d.Status.LastReject = ""
	}
	if retry.version == "" {
		d.Status.LastRetry = ""
	}
	switch d.Annotations.Step {
	case StepIdle:
	case StepHealthCheck:
		if reject.fresh && reject.version == d.Status.TargetVersion && recordedVerdict(&d.Status, reject.version, d.Annotations.UpdateStarted) == "" {
			actOnReject(d, cfg, reject)
		}
		return
	default:
		return
	}
	if reject.fresh {
		actOnReject(d, cfg, reject)
	}
	if retry.fresh {
		actOnRetry(d, cfg, retry)
	}
}

// actOnReject puts the version on the failed list, unless it runs (a running version is rolled
// forward or back by a target, not rejected) or is there already.
func actOnReject(d *Decision, cfg *v1alpha1.RollingUpgradeConfig, r request) {
	st := &d.Status
	st.LastReject = r.version
	switch {
	case !image.IsTag(cfg.GetAnnotations()[v1alpha1.RejectAnnotation]) && !(d.follow != "" && d.policy.Reads(r.version)):
		d.ignored("%s=%q names no version: it is no image tag%s", v1alpha1.RejectAnnotation, r.version, followedNote(d.follow))
	case r.version == st.CurrentVersion:
		d.ignored("%s=%s names the version that runs: reject a version before it runs or while it rolls out; to leave this one, "+
			"roll out another with %s", v1alpha1.RejectAnnotation, r.version, v1alpha1.TargetImageAnnotation)
	case slices.Contains(st.FailedVersions, r.version):
		d.ignored("%s=%s: %s is on the failed list already", v1alpha1.RejectAnnotation, r.version, r.version)
	default:
		reason := text.Cut(cfg.GetAnnotations()[v1alpha1.RejectReasonAnnotation], maxHistoryReason, "…")
		bookkeeping.Reject(st, r.version, cfg.Spec.Image+":"+r.version, r.by, reason, metav1.NewTime(d.now), d.policy.Compare)
		d.eventAbout(r.version, WriteStatus, corev1.EventTypeNormal, v1alpha1.EventVersionRejected, "%s rejected%s%s: it is on the failed list and is never rolled out",
			r.version, byWhom(r.by), because(reason))
	}
}

// actOnRetry takes the version off the failed list, so that it is a candidate again.
func actOnRetry(d *Decision, cfg *v1alpha1.RollingUpgradeConfig, r request) {
	st := &d.Status
	st.LastRetry = r.version
	if !bookkeeping.Retry(st, r.version, cfg.Spec.Image+":"+r.version, r.by, metav1.NewTime(d.now)) {
		d.ignored("%s=%s: %s is not on the failed list (%s)", v1alpha1.RetryAnnotation, r.version, r.version, orNone(listed(st.FailedVersions)))
		return
	}
	note := ""
	if st.CircuitOpen {
		note = "; the circuit stays open until " + v1alpha1.ResetCircuitAnnotation + " resets it"
	}
	d.eventAbout(r.version, WriteStatus, corev1.EventTypeNormal, v1alpha1.EventVersionRetried, "%s taken off the failed list%s: it may roll out again%s",
		r.version, byWhom(r.by), note)
}

// noteApprover records who approved a rollout (rollgate.dev/approved-by) in the history entry of
// its verdict, when this decision wrote it and the approve annotation names its version.
func noteApprover(d *Decision, cfg *v1alpha1.RollingUpgradeConfig) {
	h := d.Status.VersionHistory
	if len(h) == 0 || (len(d.old.VersionHistory) > 0 && h[len(h)-1] == d.old.VersionHistory[len(d.old.VersionHistory)-1]) {
		return
	}
	e := &h[len(h)-1]
	a := cfg.GetAnnotations()
	if (e.Status == v1alpha1.ResultHealthy || e.Status == v1alpha1.ResultRolledBack) && a[v1alpha1.ApproveAnnotation] == e.Version {
		e.RequestedBy = text.Cut(a[v1alpha1.ApprovedByAnnotation], MaxRequestedByLength, "…")
	}
}

// rejectedInFlight: the version in flight was rejected, the history's newest entry says, and is
// on the failed list: its check ends in a rollback, whatever the workload shows. (No other version
// in flight is on the failed list: a target set by hand that failed before is refused.)
func rejectedInFlight(st *v1alpha1.RollingUpgradeConfigStatus, ver string) bool {
	h := st.VersionHistory
	return ver != "" && slices.Contains(st.FailedVersions, ver) && len(h) > 0 &&
		h[len(h)-1].Version == ver && h[len(h)-1].Status == v1alpha1.ResultRejected
}

// ignored reports a request that names nothing to act on: one Warning, as it is acted on once.
func (d *Decision) ignored(format string, args ...any) {
	d.event(WriteStatus, corev1.EventTypeWarning, v1alpha1.EventRequestIgnored, format, args...)
}

func byWhom(by string) string {
	if by == "" {
		return ""
	}
	return " by " + by
}

func because(reason string) string {
	if reason == "" {
		return ""
	}
	return " (" + reason + ")"
}
