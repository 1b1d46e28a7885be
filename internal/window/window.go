// Package window decides whether a maintenance window is open: a cron schedule of five fields opens
// it at each fire time, in an IANA time zone, for a fixed duration of elapsed time.
package window

import (
	"errors"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

var (
	// ErrInvalidSchedule: the cron expression cannot be parsed.
	ErrInvalidSchedule = errors.New("invalid cron schedule")
	// ErrUnknownTimeZone: the time zone is not in the IANA database.
	ErrUnknownTimeZone = errors.New("unknown time zone")
	// ErrInvalidDuration: the window would never be open.
	ErrInvalidDuration = errors.New("invalid window duration")
	// ErrNeverFires: the schedule has no fire time in the next five years (30 February).
	ErrNeverFires = errors.New("the schedule has no fire time in the next five years")
)

// parser reads the five standard fields; descriptors such as @daily are not part of the API.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// Window is a parsed maintenance window. The nil *Window is the absent window: always open.
//
// The schedule is evaluated on the wall clock of the zone, then mapped to instants, so that a day
// with a daylight-saving change still has exactly one window: a fire time the clocks skip (spring
// forward) opens the window the moment they jump, and a fire time they repeat (fall back) opens it
// the first time. The duration is elapsed time.
type Window struct {
	schedule cron.Schedule // evaluated in UTC on wall-clock readings of loc
	loc      *time.Location
	duration time.Duration
	spec     string
	zone     string
}

// maxZoneShift bounds how far a wall-clock reading and its instant can move apart across a change
// of offset; real changes are at most two hours.
const maxZoneShift = 3 * time.Hour

// Parse reads a window. timeZone "" means UTC.
func Parse(schedule string, duration time.Duration, timeZone string) (*Window, error) {
	if timeZone == "" {
		timeZone = "UTC"
	}
	loc, err := time.LoadLocation(timeZone)
	if err != nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownTimeZone, timeZone)
	}
	if duration <= 0 {
		return nil, fmt.Errorf("%w %s: it must be positive", ErrInvalidDuration, duration)
	}
	s, err := parser.Parse(schedule)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrInvalidSchedule, schedule, err)
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrInvalidSchedule, schedule)
	}
	spec.Location = time.UTC
	return &Window{schedule: spec, loc: loc, duration: duration, spec: schedule, zone: timeZone}, nil
}

// Check fails with ErrNeverFires when the window does not open in the five years after now. Such a
// schedule (0 3 30 2 *) parses, but a window that never opens would hold every version for ever;
// its evaluation stays bounded anyway.
func (w *Window) Check(now time.Time) error {
	if w != nil && w.nextFire(now).IsZero() {
		return fmt.Errorf("%w: %q", ErrNeverFires, w.spec)
	}
	return nil
}

// Open reports whether now falls in [fire, fire+duration) for some fire time of the schedule.
func (w *Window) Open(now time.Time) bool {
	if w == nil {
		return true
	}
	open, _ := w.interval(now)
	return open
}

// interval reports whether now falls in one of the window's intervals, and the end of the
// earliest one that holds it (the intervals of a schedule that fires more often than its
// duration overlap).
func (w *Window) interval(now time.Time) (bool, time.Time) {
	// The earliest fire after now-duration opens the earliest interval that can hold now.
	f := w.nextFire(now.Add(-w.duration))
	return !f.IsZero() && !f.After(now), f.Add(w.duration)
}

// nextFire is the earliest fire instant strictly after the given one, or the zero time when the
// schedule does not fire in the five years after it (robfig/cron's own search limit).
func (w *Window) nextFire(after time.Time) time.Time {
	// instant() never decreases as the wall clock advances, so the first fire past "after" in wall
	// order is the earliest one. Starting maxZoneShift early cannot miss a fire, and only the fires
	// of those few hours come before it.
	for f := w.schedule.Next(w.wall(after).Add(-maxZoneShift)); !f.IsZero(); f = w.schedule.Next(f) {
		if i := w.instant(f); i.After(after) {
			return i
		}
	}
	return time.Time{}
}

// wall is the wall-clock reading of t in the window's zone, written as a UTC time (a clock with
// no gaps and no repeats).
func (w *Window) wall(t time.Time) time.Time {
	l := t.In(w.loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}

// instant maps a wall-clock reading back to an instant: the earliest one that shows it, or, for a
// reading the clocks skip, the instant they jump.
func (w *Window) instant(wall time.Time) time.Time {
	var best time.Time
	// A reading is shown under the offset in force a day before or a day after it (no zone changes
	// its offset twice within two days).
	for _, probe := range []time.Time{wall.Add(-24 * time.Hour), wall.Add(24 * time.Hour)} {
		_, offset := probe.In(w.loc).Zone()
		i := wall.Add(-time.Duration(offset) * time.Second)
		if w.wall(i).Equal(wall) && (best.IsZero() || i.Before(best)) {
			best = i
		}
	}
	if !best.IsZero() {
		return best
	}
	// Skipped: under the old offset the reading lands just past the jump, inside the new zone
	// period; that period's start is the jump.
	_, offset := wall.Add(-24 * time.Hour).In(w.loc).Zone()
	start, _ := wall.Add(-time.Duration(offset) * time.Second).In(w.loc).ZoneBounds()
	return start
}

// String describes the window for messages, e.g. "0 3 * * * Europe/Berlin".
func (w *Window) String() string {
	if w == nil {
		return "always open"
	}
	return w.spec + " " + w.zone
}
