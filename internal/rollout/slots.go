package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// SlotRecheck is how often a version waiting for a calendar's slot looks again, besides when a
// slot is given back (which wakes it at once): a slot left by a config that is gone or never
// started is reclaimed after SlotGrace.
const SlotRecheck = time.Minute

// SlotGrace is how long a slot counts for a config that is not (yet) in flight: the claim is
// written just before the start, and the start may reach another manager's cache a moment later.
// A slot older than this whose config is not in flight was left by a reconcile that failed
// between the two writes.
const SlotGrace = time.Minute

// SlotAnswer is the outcome of a claim of one calendar's slot.
type SlotAnswer struct {
	Granted bool
	// Holders name the rollouts that hold every slot when it was not granted.
	Holders []string
	// Problem says why the claim could not be written.
	Problem string
}

// Holder is what the cache says of the config behind a slot.
type Holder struct {
	State HolderState
	// Stuck is, for a config in flight, when its rollout is stuck by any measure: its health
	// timeout and soak past its check's own deadline (Deadline: the analysis's last measurement, a
	// GitFirst apply timeout), and past each pod's drain grace and readiness timeout for an
	// in-place upgrade. Past it the slot no longer counts, so a check that waits for ever (paused,
	// or an analysis that cannot measure) does not hold the line for ever. Zero: never.
	Stuck time.Time
}

// HolderState says whether the config behind a slot still rolls out.
type HolderState int

const (
	HolderGone     HolderState = iota // no such config (deleted)
	HolderIdle                        // the config exists, with no rollout in flight
	HolderInFlight                    // the config's rollout (or rollback) is in flight
)

// HolderOf is what a config says of the slot s it holds.
func HolderOf(cfg *v1alpha1.RollingUpgradeConfig, s v1alpha1.CalendarRollout) Holder {
	a := AnnotationsOf(cfg)
	switch a.Step {
	case StepHealthCheck, StepRollingBack:
		end := s.Since.Add(checkTime(&cfg.Spec))
		if deadline, ok := Deadline(cfg.Spec, a, cfg.Status.HealthCheck); ok {
			end = later(end, deadline)
		}
		if gitFirst(cfg) && awaitingArrival(a) {
			// Its commit may come an apply timeout after the start, and the image another after it.
			if !a.UpdateStarted.IsZero() {
				end = later(end, a.UpdateStarted.Add(2*cfg.Spec.GitWriteBack.ApplyTimeoutOrDefault()))
			}
		}
		if ip := cfg.Spec.InPlace(); ip != nil && cfg.Status.InPlace != nil {
			end = end.Add(time.Duration(len(cfg.Status.InPlace.Pods)) * (ip.DrainGracePeriodOrDefault() + ip.PodReadyTimeoutOrDefault()))
		}
		return Holder{State: HolderInFlight, Stuck: end.Add(checkTime(&cfg.Spec))}
	}
	return Holder{State: HolderIdle}
}

// Limited are the calendars that cap their configs' rollouts (spec.maxConcurrent), by name: the
// order in which a config claims their slots, the same for every config.
func Limited(cals []*v1alpha1.RolloutCalendar) []*v1alpha1.RolloutCalendar {
	var out []*v1alpha1.RolloutCalendar
	for _, c := range cals {
		if c.Spec.MaxConcurrent != nil {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b *v1alpha1.RolloutCalendar) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Claim is a calendar's slot list after self's claim, at now, for version tag, and whether self
// holds a slot in it. A grant always changes the list (a slot taken or renewed to now), so that
// it is written with the calendar's resourceVersion and two claims of the last slot conflict. When
// the list is full, the slots whose rollouts ended go first: a config gone, one idle past
// SlotGrace, one stuck (Holder.Stuck). Self keeps a slot it holds only within limit (which may
// have been lowered).
func Claim(slots []v1alpha1.CalendarRollout, limit int, self types.NamespacedName, tag string, now time.Time,
	holder func(v1alpha1.CalendarRollout) Holder) ([]v1alpha1.CalendarRollout, bool) {
	others := Release(slots, self)
	if len(others) >= limit {
		others = slices.DeleteFunc(others, func(s v1alpha1.CalendarRollout) bool {
			switch h := holder(s); h.State {
			case HolderGone:
				return true
			case HolderIdle:
				return now.Sub(s.Since.Time) >= SlotGrace
			default:
				return !h.Stuck.IsZero() && !now.Before(h.Stuck)
			}
		})
	}
	if len(others) >= limit {
		return others, false
	}
	return append(others, v1alpha1.CalendarRollout{Namespace: self.Namespace, Name: self.Name, Version: tag, Since: metav1.NewTime(now)}), true
}

// Release is a calendar's slot list without self's slot.
func Release(slots []v1alpha1.CalendarRollout, self types.NamespacedName) []v1alpha1.CalendarRollout {
	return slices.DeleteFunc(slices.Clone(slots), slotOf(self))
}

// Holds reports whether self holds a slot in slots.
func Holds(slots []v1alpha1.CalendarRollout, self types.NamespacedName) bool {
	return slices.ContainsFunc(slots, slotOf(self))
}

func slotOf(self types.NamespacedName) func(v1alpha1.CalendarRollout) bool {
	return func(s v1alpha1.CalendarRollout) bool { return s.Namespace == self.Namespace && s.Name == self.Name }
}

// HolderNames name the rollouts holding slots, for messages: "shop/web (1.4.0)".
func HolderNames(slots []v1alpha1.CalendarRollout) []string {
	out := make([]string, 0, len(slots))
	for _, s := range slots {
		out = append(out, fmt.Sprintf("%s/%s (%s)", s.Namespace, s.Name, s.Version))
	}
	return out
}

// slotsTaken reports whether tag may start as far as the calendars' caps go: each calendar with
// spec.maxConcurrent that picks the config gave it a slot. Before the claims were made it asks for
// them (Slots); a refusal holds the version Pending until a slot is given back.
func slotsTaken(d *Decision, in Input, tag string) bool {
	cals := Limited(in.Calendars)
	if len(cals) == 0 {
		return true
	}
	if in.Slots == nil {
		d.need(Slots{Tag: tag})
		return false
	}
	var refused, by []string
	for _, cal := range cals {
		a, asked := in.Slots[cal.Name]
		switch {
		case !asked || a.Granted: // one refusal ends the claims: those after it are not asked
			continue
		case a.Problem != "":
			refused = append(refused, fmt.Sprintf("a slot of RolloutCalendar %s could not be taken: %s", cal.Name, a.Problem))
		default:
			refused = append(refused, fmt.Sprintf("RolloutCalendar %s allows %d rollouts at once, and %s hold its slots",
				cal.Name, *cal.Spec.MaxConcurrent, strings.Join(a.Holders, ", ")))
		}
		by = append(by, cal.Name)
	}
	if len(refused) == 0 {
		return true
	}
	hold{gate: v1alpha1.GateRolloutSlot, reason: v1alpha1.ReasonAwaitingRolloutSlot, event: v1alpha1.EventRolloutSlotsTaken, recheck: SlotRecheck,
		message: tag + " waits for a rollout slot: " + strings.Join(refused, "; "), calendars: by}.apply(d, tag, in.Now)
	return false
}

// WaitsForSlotOf reports whether a config's status holds a version waiting for a slot of the
// calendar named cal.
func WaitsForSlotOf(st *v1alpha1.RollingUpgradeConfigStatus, cal string) bool {
	return st.Hold != nil && st.Hold.Gate == v1alpha1.GateRolloutSlot && slices.Contains(st.Hold.Calendars, cal)
}
