package rollout

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fluxcd/pkg/apis/meta"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/health"
	"github.com/rollgate/rollgate/internal/inplace"
	"github.com/rollgate/rollgate/internal/version"
)

// Write is one of the two writes a decision makes. Each event belongs to the write that records the
// transition it reports, and is emitted once that write succeeded (or had nothing to change): a
// retry after the other write failed decides the same event again only if its write never happened,
// so every event goes out exactly once.
type Write int

const (
	// WriteStatus: the event reports a change recorded in status (a version seen, held, a
	// condition that begins, a circuit reset).
	WriteStatus Write = iota
	// WriteAnnotations: the event reports a move of the update-phase annotation (a rollout starts,
	// ends, or its rollback ends).
	WriteAnnotations
)

// Event to emit once its write succeeded.
type Event struct {
	Type    string // corev1.EventTypeNormal or corev1.EventTypeWarning
	Reason  string
	Message string
	After   Write
	// Version is the version the event is about (a notification's revision): the one held,
	// started, judged or asked for, or, when the event is about none, the one that runs.
	Version string
}

// Outcome says what a decision did to the rollout in flight. It is the one place the end of a
// rollout is told: metrics, pod timing and any other end-of-rollout side effect read it.
type Outcome string

const (
	// OutcomeNone: no rollout started or ended.
	OutcomeNone Outcome = ""
	// OutcomeStarted: a rollout started; its health check runs.
	OutcomeStarted Outcome = "Started"
	// OutcomeHealthy: the health check passed.
	OutcomeHealthy Outcome = "Healthy"
	// OutcomeFailed: the health check failed; the version is on the failed list and is rolled back.
	OutcomeFailed Outcome = "Failed"
	// OutcomeAbandoned: a person ended the health check (removed or changed the target, or retargeted
	// the config): no verdict on the version, which is not put on the failed list.
	OutcomeAbandoned Outcome = "Abandoned"
	// OutcomeWithdrawn: a version committed to Git (GitFirst) never reached the workload: no
	// verdict, Git gets the current image back.
	OutcomeWithdrawn Outcome = "Withdrawn"
)

// Ends reports whether the outcome ends a health check.
func (o Outcome) Ends() bool {
	return o == OutcomeHealthy || o == OutcomeFailed || o == OutcomeAbandoned || o == OutcomeWithdrawn
}

// Rollout identifies the rollout an outcome is about.
type Rollout struct {
	Image   string
	Started time.Time
}

// Decision is what becomes of the config.
type Decision struct {
	// Annotations is the in-flight state to write; the controller writes it only if it differs.
	Annotations Annotations
	// Status is the whole new status; the controller writes it only if it differs.
	Status v1alpha1.RollingUpgradeConfigStatus
	// StatusFirst: write status before annotations. Starting and finishing a rollout record it in
	// status first, so that a crash in between repeats the (idempotent) record instead of losing it.
	StatusFirst bool
	// Events to emit, each after its write.
	Events []Event
	// Outcome of the rollout in flight, and which rollout it is (set when Outcome is not None).
	Outcome Outcome
	Rollout Rollout
	// RequeueAfter > 0 asks for another look after this long even if nothing changes.
	RequeueAfter time.Duration
	// Needs are what the decision must know before it can be made: the engine answers them in the
	// Input and decides again. Nothing else of a decision that has needs is carried out.
	Needs []Question
	// Effects are what the engine carries out besides the two writes.
	Effects Effects
	// PodUpgrades are the times pods changed in place took to be ready, for the pods that came
	// through in this decision (pod_upgrade_duration_seconds).
	PodUpgrades []time.Duration

	old *v1alpha1.RollingUpgradeConfigStatus
	now time.Time
	// policy reads the config's tags as versions (PolicyOf); while policyErr says its rules cannot
	// be read, it is semver's.
	policy    *version.Policy
	policyErr error
	// follow is spec.followTag: versions are named by tag and digest (ImageVersion).
	follow string
}

// lookWithin asks for another look after at most after (when it is positive), keeping a sooner
// one already asked for.
func (d *Decision) lookWithin(after time.Duration) {
	if after > 0 && (d.RequeueAfter <= 0 || after < d.RequeueAfter) {
		d.RequeueAfter = after
	}
}

// event is about the version in flight or held, if any, otherwise the one that runs.
func (d *Decision) event(after Write, typ, reason, format string, args ...any) {
	ver := d.Status.TargetVersion
	if ver == "" {
		ver = d.Status.CurrentVersion
	}
	d.eventAbout(ver, after, typ, reason, format, args...)
}

// eventAbout is an event about ver, where the decision tells of another version besides the one
// in flight (one seen, asked for, or started in the place of another).
func (d *Decision) eventAbout(ver string, after Write, typ, reason, format string, args ...any) {
	d.Events = append(d.Events, Event{Type: typ, Reason: reason, Message: Bounded(fmt.Sprintf(format, args...)), After: after, Version: ver})
}

func (d *Decision) setCondition(typ string, status metav1.ConditionStatus, reason, msg string) {
	apimeta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: d.Status.ObservedGeneration,
		LastTransitionTime: metav1.NewTime(d.now),
	})
}

// ready: the config is where it should be (kstatus Current).
func (d *Decision) ready(reason, format string, args ...any) {
	d.setCondition(meta.ReadyCondition, metav1.ConditionTrue, reason, Bounded(fmt.Sprintf(format, args...)))
	apimeta.RemoveStatusCondition(&d.Status.Conditions, meta.ReconcilingCondition)
	apimeta.RemoveStatusCondition(&d.Status.Conditions, meta.StalledCondition)
}

// progressing: a rollout or rollback is under way (kstatus InProgress).
func (d *Decision) progressing(reason, format string, args ...any) {
	msg := Bounded(fmt.Sprintf(format, args...))
	d.setCondition(meta.ReadyCondition, metav1.ConditionFalse, reason, msg)
	d.setCondition(meta.ReconcilingCondition, metav1.ConditionTrue, reason, msg)
	apimeta.RemoveStatusCondition(&d.Status.Conditions, meta.StalledCondition)
}

// waiting: not ready, for a reason that may go away by itself (kstatus InProgress).
func (d *Decision) waiting(reason, format string, args ...any) {
	msg := Bounded(fmt.Sprintf(format, args...))
	d.progressing(reason, "%s", msg)
	d.warnOnChange("", reason, msg)
}

// stalled: nothing happens until a human acts (kstatus Failed). The Warning event goes out when
// the reason or message is new, so a stuck config does not repeat it on every reconcile.
func (d *Decision) stalled(reason, format string, args ...any) {
	d.stalledAbout("", reason, format, args...)
}

// stalledAbout is stalled, its Warning about ver rather than the version in flight or held: a
// target refused, or a version brought back from Git.
func (d *Decision) stalledAbout(ver, reason, format string, args ...any) {
	msg := Bounded(fmt.Sprintf(format, args...))
	d.setCondition(meta.ReadyCondition, metav1.ConditionFalse, reason, msg)
	d.setCondition(meta.StalledCondition, metav1.ConditionTrue, reason, msg)
	apimeta.RemoveStatusCondition(&d.Status.Conditions, meta.ReconcilingCondition)
	d.warnOnChange(ver, reason, msg)
}

// warnOnChange emits a Warning event with the reason (when it is an event reason), about ver (if
// not empty), unless the old Ready condition already said the same (for a reason in
// warnOncePerReason: the same reason).
func (d *Decision) warnOnChange(ver, reason, msg string) {
	if old := apimeta.FindStatusCondition(d.old.Conditions, meta.ReadyCondition); old != nil &&
		old.Status == metav1.ConditionFalse && old.Reason == reason && (old.Message == msg || warnOncePerReason[reason]) {
		return
	}
	switch {
	case !warningReasons[reason]:
	case ver != "":
		d.eventAbout(ver, WriteStatus, corev1.EventTypeWarning, reason, "%s", msg)
	default:
		d.event(WriteStatus, corev1.EventTypeWarning, reason, "%s", msg)
	}
}

// warnOncePerReason are the reasons whose message follows what the workload shows from one look to
// the next (a fight lost: what runs now), while the problem stays one: one Warning when it begins.
var warnOncePerReason = map[string]bool{v1alpha1.EventFieldManagerConflict: true}

// warningReasons are the condition reasons that come with a Warning event when they begin: what
// needs a person, or holds every rollout until something changes.
var warningReasons = map[string]bool{
	v1alpha1.EventInvalidSpec: true, v1alpha1.EventTargetNotFound: true, v1alpha1.EventSourceNotFound: true,
	v1alpha1.EventRegistryUnavailable: true, v1alpha1.EventFieldManagerConflict: true, v1alpha1.EventRollbackStuck: true,
	v1alpha1.ReasonTargetRefused: true, v1alpha1.ReasonNoPrometheus: true, v1alpha1.ReasonImageNotFound: true, v1alpha1.ReasonUnsigned: true,
	health.ReasonPaused: true, health.ReasonOnDelete: true, health.ReasonPartitionCoversAll: true, health.ReasonScaledToZero: true,
	health.ReasonNotOnDelete: true, inplace.ReasonNoReadinessGate: true,
	v1alpha1.EventFailedVersionFromGit: true, v1alpha1.ReasonDriftedFromGit: true, v1alpha1.EventNotAppliedFromGit: true,
}
