package rollout

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fluxcd/pkg/apis/meta"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// Annotations is the in-flight state kept in the config's annotations; "" means absent.
type Annotations struct {
	TargetImage   string
	UpdatePhase   string
	UpdateStarted string
}

// AnnotationsOf reads the in-flight state of a config.
func AnnotationsOf(cfg *v1alpha1.RollingUpgradeConfig) Annotations {
	a := cfg.GetAnnotations()
	return Annotations{
		TargetImage:   a[v1alpha1.TargetImageAnnotation],
		UpdatePhase:   a[v1alpha1.UpdatePhaseAnnotation],
		UpdateStarted: a[v1alpha1.UpdateStartedAnnotation],
	}
}

// Event to emit once the decision has been written.
type Event struct {
	Type    string // corev1.EventTypeNormal or corev1.EventTypeWarning
	Reason  string
	Message string
}

// Decision is what becomes of the config.
type Decision struct {
	// Annotations is the in-flight state to write; the controller writes it only if it differs.
	Annotations Annotations
	// Status is the whole new status; the controller writes it only if it differs.
	Status v1alpha1.RollingUpgradeConfigStatus
	// StatusFirst: write status before annotations. Finishing a rollout records it in status
	// first, so that a crash in between repeats the (idempotent) record instead of losing it.
	StatusFirst bool
	// Events to emit after the writes succeeded.
	Events []Event
	// RequeueAfter > 0 asks for another look after this long even if nothing changes.
	RequeueAfter time.Duration
	// DeleteStuckPods asks the controller to delete the pods of the failed revision of an
	// OrderedReady StatefulSet that are not Ready, so that its rollback can proceed.
	DeleteStuckPods bool

	old *v1alpha1.RollingUpgradeConfigStatus
	now time.Time
}

func (d *Decision) event(typ, reason, format string, args ...any) {
	d.Events = append(d.Events, Event{typ, reason, fmt.Sprintf(format, args...)})
}

func (d *Decision) setCondition(typ string, status metav1.ConditionStatus, reason, msg string) {
	apimeta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: d.Status.ObservedGeneration,
		LastTransitionTime: metav1.NewTime(d.now),
	})
}

// ready: the config is where it should be (kstatus Current).
func (d *Decision) ready(reason, format string, args ...any) {
	d.setCondition(meta.ReadyCondition, metav1.ConditionTrue, reason, fmt.Sprintf(format, args...))
	apimeta.RemoveStatusCondition(&d.Status.Conditions, meta.ReconcilingCondition)
	apimeta.RemoveStatusCondition(&d.Status.Conditions, meta.StalledCondition)
}

// progressing: a rollout or rollback is under way (kstatus InProgress).
func (d *Decision) progressing(reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	d.setCondition(meta.ReadyCondition, metav1.ConditionFalse, reason, msg)
	d.setCondition(meta.ReconcilingCondition, metav1.ConditionTrue, reason, msg)
	apimeta.RemoveStatusCondition(&d.Status.Conditions, meta.StalledCondition)
}

// waiting: not ready, for a reason that may go away by itself (kstatus InProgress).
func (d *Decision) waiting(reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	d.progressing(reason, "%s", msg)
	d.warnOnChange(reason, msg)
}

// stalled: nothing happens until a human acts (kstatus Failed). The Warning event goes out when
// the reason or message is new, so a stuck config does not repeat it on every reconcile.
func (d *Decision) stalled(reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	d.setCondition(meta.ReadyCondition, metav1.ConditionFalse, reason, msg)
	d.setCondition(meta.StalledCondition, metav1.ConditionTrue, reason, msg)
	apimeta.RemoveStatusCondition(&d.Status.Conditions, meta.ReconcilingCondition)
	d.warnOnChange(reason, msg)
}

// warnOnChange emits a Warning event with the reason (when it is an event reason) unless the old
// Ready condition already said the same.
func (d *Decision) warnOnChange(reason, msg string) {
	if old := apimeta.FindStatusCondition(d.old.Conditions, meta.ReadyCondition); old != nil &&
		old.Status == metav1.ConditionFalse && old.Reason == reason && old.Message == msg {
		return
	}
	switch reason {
	case v1alpha1.EventInvalidSpec, v1alpha1.EventTargetNotFound, v1alpha1.EventSourceNotFound, v1alpha1.EventRegistryUnavailable,
		v1alpha1.EventFieldManagerConflict:
		d.event(corev1.EventTypeWarning, reason, "%s", msg)
	}
}
