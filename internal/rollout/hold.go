package rollout

import (
	"slices"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// heldBefore: the config was Pending with tag already, held by the same gate (one of reasons), so
// the event that says why was emitted then. A wait in between for something else (a source that
// could not be read, a workload that went missing) is no new hold: the phase and target stayed.
func heldBefore(d *Decision, tag string, reasons ...string) bool {
	if d.old.Phase != v1alpha1.PhasePending || d.old.TargetVersion != tag {
		return false
	}
	was := HoldReason(d.old)
	return was == "" || slices.Contains(reasons, was)
}

// hold is a gate holding a version Pending: which gate, what Ready says, the event that announces
// the hold when it begins, and until when.
type hold struct {
	gate          v1alpha1.HoldGate
	reason, event string
	message       string
	readyNote     string   // appended to Ready's message, not the event's
	same          []string // other Ready reasons of the same hold: going from one to another announces nothing
	until         time.Time
	recheck       time.Duration // the next look when until is zero; 0: none asked
	calendars     []string      // the RolloutCalendars that hold it
}

// apply holds tag.
func (h hold) apply(d *Decision, tag string, now time.Time) {
	if !heldBefore(d, tag, append([]string{h.reason}, h.same...)...) {
		d.eventAbout(tag, WriteStatus, corev1.EventTypeNormal, h.event, "%s", h.message)
	}
	st := &d.Status
	st.Phase, st.TargetVersion, st.NextWindow = v1alpha1.PhasePending, tag, nil
	if h.recheck > 0 {
		d.RequeueAfter = h.recheck
	}
	if !h.until.IsZero() {
		until := metav1.NewTime(h.until)
		st.NextWindow = &until
		d.RequeueAfter = h.until.Sub(now)
	}
	msg := Bounded(h.message + h.readyNote)
	d.ready(h.reason, "%s", msg)
	d.holdBy(h.gate, h.reason, msg, h.until, h.calendars)
}

// holdBy records in status.hold the gate that holds the target version, with Ready's reason and
// message, and since when some gate holds that version. Times are kept to the second, as the API
// server keeps them, so that the next look finds the same hold and writes nothing; the calendars
// are cut to the first the API takes.
func (d *Decision) holdBy(gate v1alpha1.HoldGate, reason, msg string, until time.Time, calendars []string) {
	version := d.Status.TargetVersion
	h := &v1alpha1.Hold{Gate: gate, Reason: reason, Message: msg, Version: version,
		Since: &metav1.Time{Time: d.now.Truncate(time.Second)}, Calendars: calendars[:min(len(calendars), v1alpha1.MaxHoldCalendars)]}
	if was := d.old.Hold; was != nil && was.Version == version && was.Since != nil {
		h.Since = was.Since.DeepCopy()
	}
	if !until.IsZero() {
		h.Until = &metav1.Time{Time: until.Truncate(time.Second)}
	}
	d.Status.Hold = h
}

// HoldReason is the Ready reason of the gate that holds a config's version (status.hold): while
// Pending, the window (VersionHeld), a deny window (Frozen), a missing approval
// (AwaitingApproval), the release age (AwaitingReleaseAge), an image the registry does not have
// (ImageNotFound), a RolloutCalendar's slots all taken (AwaitingRolloutSlot) or its jitter
// (Staggered); in a health check, the verdict's own gates once the workload is healthy: the soak
// (Soaking), the analysis's missing measurements (Analyzing) or an analysis that cannot measure
// (AnalysisInconclusive, also before the workload is healthy). "" when no gate holds it.
func HoldReason(st *v1alpha1.RollingUpgradeConfigStatus) string {
	if st.Hold != nil {
		return st.Hold.Reason
	}
	return heldByReady(st)
}

// heldByReady reads the hold of a status written by a manager before status.hold, from the
// reason of its Ready condition, until this manager writes it again.
func heldByReady(st *v1alpha1.RollingUpgradeConfigStatus) string {
	r := apimeta.FindStatusCondition(st.Conditions, meta.ReadyCondition)
	if r == nil {
		return ""
	}
	switch {
	case st.Phase == v1alpha1.PhasePending && (r.Reason == v1alpha1.EventVersionHeld || r.Reason == v1alpha1.ReasonFrozen || r.Reason == v1alpha1.ReasonAwaitingApproval ||
		r.Reason == v1alpha1.ReasonAwaitingReleaseAge || r.Reason == v1alpha1.ReasonImageNotFound ||
		r.Reason == v1alpha1.ReasonAwaitingRolloutSlot || r.Reason == v1alpha1.ReasonStaggered),
		st.Phase == v1alpha1.PhaseInProgress && (r.Reason == v1alpha1.ReasonSoaking || r.Reason == v1alpha1.ReasonAnalyzing ||
			r.Reason == v1alpha1.EventAnalysisInconclusive):
		return r.Reason
	}
	return ""
}
