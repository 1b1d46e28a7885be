package rollout

import (
	"fmt"
	"hash/fnv"
	"time"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/window"
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
	_, _ = h.Write([]byte(in.Config.Namespace + "/" + in.Config.Name)) // a hash.Hash never fails a write
	return time.Duration(h.Sum64() % uint64(jitter)).Truncate(time.Second), by
}

// staggered holds tag for the config's part of the jitter past the moment it could first have
// started: now, for a version that was not held before; the end of the hold it came out of (or
// now, if that hold ended early: a freeze lifted), for one the calendar or its release age held,
// so that configs a window opening sets free start spread over the jitter. A newer version does
// not start the wait again, and a version that waited for a gate checked after this one (a freeze
// query, its image, a slot), for a person or for anything else has served its part. The part is
// fitted into the time the calendar stays open (less the check, with spec.checkFitsWindow): a
// jitter longer than the window never keeps a config from starting. It reports whether tag is
// held.
func staggered(d *Decision, in Input, calendar *window.Calendar, tag string) bool {
	offset, by := staggerOf(in)
	if offset <= 0 {
		return false
	}
	old, now := d.old, in.Now
	pending := old.Phase == v1alpha1.PhasePending && old.NextWindow != nil
	var anchor, until time.Time
	switch reason := HoldReason(old); {
	case pending && reason == v1alpha1.ReasonStaggered:
		until = old.NextWindow.Time
	case pending && old.TargetVersion == tag && (reason == v1alpha1.EventVersionHeld || reason == v1alpha1.ReasonFrozen || reason == v1alpha1.ReasonAwaitingReleaseAge):
		anchor = earliest(old.NextWindow.Time, now)
	case old.Phase == v1alpha1.PhasePending && old.TargetVersion == tag:
		return false
	default:
		anchor = now
	}
	// The latest instant a start may wait for: before the calendar closes, leaving the check
	// its time when it must fit.
	latest := calendar.ClosesAt(now)
	if !latest.IsZero() && in.Config.Spec.CheckFitsWindow {
		latest = latest.Add(-checkTime(&in.Config.Spec))
	}
	if until.IsZero() {
		if room := latest.Sub(anchor); !latest.IsZero() && offset >= room {
			if room < time.Second {
				return false
			}
			offset = (offset % room).Truncate(time.Second)
		}
		until = anchor.Add(offset)
	}
	until = earliest(until, now.Add(offset))
	if !now.Before(until) || (!latest.IsZero() && !until.Before(latest)) {
		return false
	}
	h := calendarHold(v1alpha1.ReasonStaggered, fmt.Sprintf("%s held until %s: RolloutCalendar %s spreads the starts of its configs over %s (jitter), and this config's part is %s",
		tag, until.UTC().Format(time.RFC3339), by.Name, v1alpha1.DurationOrZero(by.Spec.Jitter), offset), until, 0)
	h.same, h.calendars = append(h.same, v1alpha1.ReasonAwaitingReleaseAge), []string{by.Name}
	h.apply(d, tag, now)
	return true
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
