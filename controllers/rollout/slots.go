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
// written before the start, and the start may reach the cache a moment later. A slot older than
// this whose config is not in flight was left by a reconcile that failed between the two writes.
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
type Holder int

const (
	HolderGone     Holder = iota // no such config (deleted)
	HolderIdle                   // the config exists, with no rollout in flight
	HolderInFlight               // the config's rollout (or rollback) is in flight
)

// Limited are the calendars that cap their configs' rollouts (spec.maxConcurrent).
func Limited(cals []*v1alpha1.RolloutCalendar) []*v1alpha1.RolloutCalendar {
	var out []*v1alpha1.RolloutCalendar
	for _, c := range cals {
		if c.Spec.MaxConcurrent != nil {
			out = append(out, c)
		}
	}
	return out
}

// Claim is a calendar's slot list after self's claim for version tag: the slots of rollouts that
// ended go (their config is gone, or idle past SlotGrace), and self gets a slot if one of limit is
// free, or keeps (renewed for tag) the one it holds. It reports whether self holds a slot.
func Claim(slots []v1alpha1.CalendarRollout, limit int, self types.NamespacedName, tag string, now time.Time,
	holder func(v1alpha1.CalendarRollout) Holder) ([]v1alpha1.CalendarRollout, bool) {
	out := make([]v1alpha1.CalendarRollout, 0, len(slots)+1)
	mine := -1
	for _, s := range slots {
		if s.Namespace == self.Namespace && s.Name == self.Name {
			mine = len(out)
			out = append(out, s)
			continue
		}
		switch holder(s) {
		case HolderGone:
			continue
		case HolderIdle:
			if now.Sub(s.Since.Time) >= SlotGrace {
				continue
			}
		}
		out = append(out, s)
	}
	switch {
	case mine >= 0:
		if out[mine].Version != tag {
			out[mine].Version, out[mine].Since = tag, metav1.NewTime(now)
		}
	case len(out) < limit:
		out = append(out, v1alpha1.CalendarRollout{Namespace: self.Namespace, Name: self.Name, Version: tag, Since: metav1.NewTime(now)})
		mine = len(out) - 1
	}
	return out, mine >= 0
}

// Release is a calendar's slot list without self's slot.
func Release(slots []v1alpha1.CalendarRollout, self types.NamespacedName) []v1alpha1.CalendarRollout {
	return slices.DeleteFunc(slices.Clone(slots), func(s v1alpha1.CalendarRollout) bool {
		return s.Namespace == self.Namespace && s.Name == self.Name
	})
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
// them (Decision.ClaimSlot); a refusal holds the version Pending until a slot is given back.
func slotsTaken(d *Decision, in Input, tag string) bool {
	cals := Limited(in.Calendars)
	if len(cals) == 0 {
		return true
	}
	if in.Slots == nil {
		d.ClaimSlot = tag
		return false
	}
	var refused []string
	for _, cal := range cals {
		a, asked := in.Slots[cal.Name]
		switch {
		case !asked || a.Granted: // one refusal ends the claims: those after it are not asked
		case a.Problem != "":
			refused = append(refused, fmt.Sprintf("a slot of RolloutCalendar %s could not be taken: %s", cal.Name, a.Problem))
		default:
			refused = append(refused, fmt.Sprintf("RolloutCalendar %s allows %d rollouts at once, and %s hold its slots",
				cal.Name, *cal.Spec.MaxConcurrent, strings.Join(a.Holders, ", ")))
		}
	}
	if len(refused) == 0 {
		return true
	}
	hold{reason: v1alpha1.ReasonAwaitingRolloutSlot, event: v1alpha1.EventRolloutSlotsTaken, recheck: SlotRecheck,
		message: tag + " waits for a rollout slot: " + strings.Join(refused, "; ")}.apply(d, tag, in.Now)
	return false
}
