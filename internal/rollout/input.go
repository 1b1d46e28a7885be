// Package rollout is the state machine of a RollingUpgradeConfig as a pure function: given the
// config as read, the facts gathered about its workload and sources, and the time, Decide says what
// the config's annotations and status become, which events to emit and when to look again. It
// makes no API calls; the controller gathers the Input and carries out the Decision.
package rollout

import (
	"time"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/analysis"
	"github.com/rollgate/rollgate/internal/health"
	"github.com/rollgate/rollgate/internal/inplace"
)

// Step is a value of the rollgate.dev/update-phase annotation: the step of the rollout in flight.
// (The status has phases of its own, v1alpha1.Phase*, which say more than the step.)
type Step = string

// Values of the rollgate.dev/update-phase annotation.
const (
	StepIdle        Step = ""
	StepHealthCheck Step = "HealthCheck"
	StepRollingBack Step = "RollingBack"
)

// HealthPoll is the longest a health check goes without a look at the workload, even when no
// event about it arrives.
const HealthPoll = 15 * time.Second

// Input is everything Decide looks at.
type Input struct {
	Now    time.Time
	Config *v1alpha1.RollingUpgradeConfig // as read from the API server; never modified
	// Workload is nil when the target does not exist.
	Workload *Workload
	// ClaimedBy names another config that manages the same workload; this one then does nothing.
	ClaimedBy string
	// Candidates are the versions the sources announce, in source order.
	Candidates []Candidate
	// SourceProblem is set when a source could not be read; Candidates is then empty.
	SourceProblem *Problem
	// PollAfter > 0: a source must be read again after this long (a registry listing).
	PollAfter time.Duration
	// Prometheus: the manager has a Prometheus to run spec.analysis against (--prometheus-url).
	Prometheus bool
	// Measurements answer the metric checks due at Now (MeasurementsDue), by check name.
	Measurements map[string]analysis.Measurement
	// Calendars are the RolloutCalendars that pick the config; their windows join its own.
	Calendars []*v1alpha1.RolloutCalendar
	// Freezes answer the freezeWhile queries of Calendars, by "calendar/name", once a decision
	// asked (Freezes); nil before.
	Freezes map[string]FreezeAnswer
	// Image is the registry's answer about the image a decision asked for (ImageLookUp),
	// for spec.checkImage and spec.pinDigest; nil before it asked.
	Image *ImageLookup
	// Signature answers a SignatureCheck (spec.verify); nil before it asked.
	Signature *SignatureAnswer
	// Slots answer the claims of a Slots question, by calendar name; nil before it asked.
	Slots map[string]SlotAnswer
	// Created answers BuildTimes: the build times of the versions' images, by tag;
	// nil before it asked.
	Created map[string]CreatedAnswer
}

// CreatedAnswer is what the registry said of the build time of one version's image.
type CreatedAnswer struct {
	At      time.Time // zero when the image has none
	Problem string    // why it could not be read
}

// FreezeAnswer is what Prometheus said of one freezeWhile query.
type FreezeAnswer struct {
	Series  int    // how many series it returned
	Problem string // why it could not be answered
}

// SignatureAnswer is what the check of one image's signatures found.
type SignatureAnswer struct {
	Image string
	// Signed: a signature by the key names the image's digest.
	Signed bool
	// Unsigned says why it is not signed, when the check could be made.
	Unsigned string
	// Problem says why the check could not be made (the registry, the key's Secret).
	Problem string
}

// ImageLookup is what the registry said of one image.
type ImageLookup struct {
	Image string
	// Digest is the manifest's digest, sha256:…, when the registry has it.
	Digest string
	// NotFound: the registry answered that it has no such image.
	NotFound bool
	// Problem says why the registry could not be asked, or did not answer.
	Problem string
}

// Workload holds the facts about the target that the decision needs.
type Workload struct {
	// Description names it for messages, e.g. "Deployment web".
	Description string
	// Image is the image the managed containers run in the workload's template (Running), and
	// Container the name of the first of them, the {{.Container}} of analysis queries.
	Image, Container string
	// ContainerProblem is set when a managed container does not exist, or several run different
	// images with none recorded.
	ContainerProblem string
	// Verdict on the rollout of the workload's current template.
	Verdict health.Verdict
	// OrderedReadyStatefulSet: a StatefulSet whose pods start one after the other; a pod of a
	// failed revision that never becomes Ready blocks its rollback (kubernetes/kubernetes#67250).
	OrderedReadyStatefulSet bool
	// GenerationObserved: the workload's controller has seen its current spec, so its status (a
	// StatefulSet's updateRevision among it) describes that spec and not the one before.
	GenerationObserved bool
	// ImageReverts counts how often in a row another field manager (ImageRevertedBy) changed back
	// the rendered image; at v1alpha1.MaxImageReverts the renderer stopped.
	ImageReverts    int
	ImageRevertedBy string
	// ImageRevertedAt is when the last of them was seen (zero when unknown).
	ImageRevertedAt time.Time
	// ProgressDeadline is a Deployment's spec.progressDeadlineSeconds; 0 for a StatefulSet.
	ProgressDeadline time.Duration
	// NewPods are the workload's pods that run the target image, read only when the verdict needs
	// them (NeedsPods); nil otherwise. A controller that has fallen behind (a
	// few thousand rollouts at once) reports stale counts in its status: the pods tell whether the
	// version itself fails.
	NewPods *Pods
	// InPlace is the plan of an in-place upgrade's moves (spec.strategy InPlace), made from the
	// pods; its verdict is Verdict.
	InPlace *inplace.Plan
	// ReleaseGates: its pods may carry rollgate's readiness gate with no in-place upgrade to move
	// them on (the upgrade is blocked, failed at rest, or no longer asked for): they go back in
	// service (Effects.LetGo).
	ReleaseGates bool
}

// Pods sums up the pods of one version.
type Pods struct {
	Count, Ready int
	// OldestUnreadyStart is the earliest status.startTime (when a node's kubelet took the pod,
	// before it pulled the image) among those that are not Ready; zero when none of them has
	// started. A pod that no node has started yet says nothing about the version: rollgate
	// changes only the image, so scheduling is the cluster's matter, not the version's.
	OldestUnreadyStart time.Time
}

// NeedsPods reports whether the decision needs the new version's pods (Workload.NewPods): the
// health check in flight has reached its health timeout and the workload is not healthy (a
// healthy one past it soaks, and needs no pods), or its Deployment gave up on its progress
// deadline. Either may be the control plane's delay rather than the version's failure, and the
// pods tell which.
func NeedsPods(cfg *v1alpha1.RollingUpgradeConfig, w *Workload, now time.Time) bool {
	if cfg.Spec.InPlace() != nil {
		return false // its pods are judged one by one, each against its own readiness timeout
	}
	healthy := w != nil && w.Verdict.State == health.Healthy
	return (PastDeadline(cfg, now) && !healthy) || (w != nil && w.Verdict.State == health.Failed && AnnotationsOf(cfg).Step == StepHealthCheck)
}

// PastDeadline reports whether the health check in flight has reached its health timeout.
func PastDeadline(cfg *v1alpha1.RollingUpgradeConfig, now time.Time) bool {
	a := AnnotationsOf(cfg)
	return a.Step == StepHealthCheck && !a.Paused() && !a.UpdateStarted.IsZero() && !now.Before(a.UpdateStarted.Add(cfg.Spec.HealthTimeoutOrDefault()))
}

// Candidate is one announced version.
type Candidate struct {
	Tag    string
	Source string // e.g. ApplicationVersion/web
	// ReleasedAt is when the version was released, if the source says (an ApplicationVersion's
	// spec.releasedAt); zero otherwise.
	ReleasedAt time.Time
}

// Problem is a source that could not be read. Terminal problems need a change by the user; the
// others may resolve themselves (an object synced a moment later).
type Problem struct {
	Reason   string
	Message  string
	Terminal bool
}
