package rollout

import (
	"fmt"
	"hash/fnv"
	"time"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// staggerOf is the config's part of its calendars' jitter (the longest among them): a fixed
// fraction of it, in whole seconds, from a hash of the config's namespace and name, so that the
// configs of one calendar start spread over it, each at the same point every time. The calendar
// that asks for the longest jitter is named in messages.
func staggerOf(in Input) (time.Duration, *v1alpha1.RolloutCalendar) {
	var by *v1alpha1.RolloutCalendar
	var jitter time.Duration
	for _, cal := range in.Calendars {
		if j := v1alpha1.DurationOrZero(cal.Spec.Jitter); j > jitter {
			jitter, by = j, cal
		}
	}
	if jitter <= 0 {
		return 0, nil
	}
	h := fnv.New64a()
	h.Write([]byte(in.Config.Namespace + "/" + in.Config.Name))
	return time.Duration(h.Sum64() % uint64(jitter)).Truncate(time.Second), by
}

// staggered holds tag for the config's part of the jitter past the moment it could first have
// started: now, for a version that was not held before; the end of the hold it came out of, for
// one the calendar or its release age held (so that configs a window opening sets free start
// spread over the jitter). A version that waited for a gate checked after this one (a freeze
// query, its image, a slot) or for a person has served its part. It reports whether tag is held.
func staggered(d *Decision, in Input, tag string) bool {
	offset, by := staggerOf(in)
	if offset <= 0 {
		return false
	}
	old := d.old
	var until time.Time
	switch reason := HoldReason(old); {
	case old.Phase != v1alpha1.PhasePending || old.TargetVersion != tag:
		until = in.Now.Add(offset)
	case old.NextWindow == nil:
		return false
	case reason == v1alpha1.ReasonStaggered:
		until = old.NextWindow.Time
	case reason == v1alpha1.EventVersionHeld || reason == v1alpha1.ReasonFrozen || reason == v1alpha1.ReasonAwaitingReleaseAge:
		until = old.NextWindow.Add(offset)
	default:
		return false
	}
	if !in.Now.Before(until) {
		return false
	}
	h := calendarHold(v1alpha1.ReasonStaggered, fmt.Sprintf("%s held until %s: RolloutCalendar %s spreads the starts of its configs over %s (jitter), and this config's part is %s",
		tag, until.UTC().Format(time.RFC3339), by.Name, v1alpha1.DurationOrZero(by.Spec.Jitter), offset), until, 0)
	h.same = append(h.same, v1alpha1.ReasonStaggered, v1alpha1.ReasonAwaitingReleaseAge)
	h.apply(d, tag, in.Now)
	return true
}
