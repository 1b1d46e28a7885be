package rollout

import (
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// Question is one thing a decision needs to know before it can be made (Decision.Needs). Each is
// answered in a field of Input, then the decision is made again.
type Question interface{ question() }

// BuildTimes asks the registry for the build times of the images of Tags, whose release time
// spec.minReleaseAge needs; answered in Input.Created.
type BuildTimes struct{ Tags []string }

// Freezes asks Prometheus the freezeWhile queries of Input.Calendars; answered in Input.Freezes.
type Freezes struct{}

// ImageLookUp asks the registry about Image (spec.checkImage, spec.pinDigest); answered in
// Input.Image.
type ImageLookUp struct{ Image string }

// Slots claims for Tag, about to start, a slot of each RolloutCalendar with spec.maxConcurrent
// among Input.Calendars; answered in Input.Slots.
type Slots struct{ Tag string }

func (BuildTimes) question()  {}
func (Freezes) question()     {}
func (ImageLookUp) question() {}

// SignatureCheck asks whether Image (pinned by its digest) carries a signature by the key of
// spec.verify; answered in Input.Signature.
type SignatureCheck struct{ Image string }

func (SignatureCheck) question() {}
func (Slots) question()          {}

// need asks q before the decision can be made.
func (d *Decision) need(q Question) { d.Needs = append(d.Needs, q) }

// Effects are what the engine carries out besides writing a decision. LetGo comes before the
// writes; the others after them, in this order, after the decision's metrics are recorded, and a
// failure of one does not keep the next from being tried.
type Effects struct {
	// LetGo: the workload's pods that carry rollgate's readiness gate with no in-place upgrade to
	// move them on go back in service, before the status is written, since the write may drop the
	// record of them (status.inPlace). A former target's pods go too (the engine reads which).
	LetGo bool
	// ReleaseSlots: nothing is in flight, so the calendar slots the config holds are given back.
	ReleaseSlots bool
	// MovePods: the moves of the in-place plan (Workload.InPlace) are written to the pods. Not
	// when the decision started or ended a check (the next look plans for the new step), nor when
	// the pods are let go (the plan's own moves would only put some of them back again).
	MovePods bool
	// DeleteStuckPods: the pods of the failed revision of an OrderedReady StatefulSet that are not
	// Ready are deleted, so that its rollback can proceed.
	DeleteStuckPods bool
}

// effectsOf fills in the effects that follow from the decision made and the workload.
func effectsOf(d *Decision, in Input) {
	w := in.Workload
	d.Effects.LetGo = w != nil && w.ReleaseGates
	d.Effects.ReleaseSlots = d.Annotations.Step == StepIdle
	d.Effects.MovePods = w != nil && w.InPlace != nil && d.Outcome == OutcomeNone && !w.ReleaseGates
}

// KeepingPods is the decision to write when the pods it let go (Effects.LetGo) could not be put
// back in service: the record of them stays for the retry. A decision that drops the record of
// its target (a retarget, at rest) is not written at all (false): the next look lets go again.
func (d Decision) KeepingPods(old *v1alpha1.RollingUpgradeConfigStatus) (Decision, bool) {
	if !equality.Semantic.DeepEqual(d.Status.RecordedTarget, old.RecordedTarget) {
		return d, false
	}
	if d.Status.InPlace == nil {
		d.Status.InPlace = old.InPlace
	}
	return d, true
}
