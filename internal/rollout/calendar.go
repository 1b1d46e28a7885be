package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/window"
)

// CalendarRecheck is how often a calendar that does not open as far as rollgate looks ahead is
// looked at again.
const CalendarRecheck = time.Hour

// heldByCalendar holds a version while the calendar is closed: Pending until it opens, naming the
// window that decides (Ready reason Frozen when it is a deny window, else VersionHeld). A calendar that does not open within its search holds it without a time,
// and says so.
func heldByCalendar(d *Decision, in Input, tag string, cal window.Decision) {
	by := "no allow window is open"
	if cal.By != nil {
		by = cal.By.String()
	}
	until := "a time the calendar does not show (it stays closed as far as rollgate looks ahead; it looks again in an hour)"
	next := cal.Next
	if !next.IsZero() {
		if cal.By != nil && !cal.By.Deny {
			next = cal.By.In(next)
		}
		until = next.Format(time.RFC3339)
	}
	// The event is the window's (VersionHeld) either way; Ready says whether a freeze holds it.
	reason := v1alpha1.EventVersionHeld
	if cal.By != nil && cal.By.Deny {
		reason = v1alpha1.ReasonFrozen
	}
	h := calendarHold(reason, fmt.Sprintf("%s held until %s (%s)", tag, until, by), next, CalendarRecheck)
	if cal.By != nil && cal.By.Group != "" {
		h.calendars = []string{cal.By.Group}
	}
	h.apply(d, tag, in.Now)
	if offset, _ := staggerOf(in); offset > 0 && !next.IsZero() {
		d.RequeueAfter += offset // its part of the jitter past the opening: no look at the opening itself
	}
}

// calendarHold is a hold by the calendar: a freeze that ends into a wait for an allow window (or
// back, or one that the check does not fit, or its part of the jitter) is one hold, announced by
// one VersionHeld event.
func calendarHold(reason, message string, until time.Time, recheck time.Duration) hold {
	return hold{gate: v1alpha1.GateCalendar, reason: reason, event: v1alpha1.EventVersionHeld, message: message,
		same: []string{v1alpha1.EventVersionHeld, v1alpha1.ReasonFrozen, v1alpha1.ReasonStaggered}, until: until, recheck: recheck}
}

// FreezeRecheck is how often a version held by a calendar's freezeWhile is looked at again.
const FreezeRecheck = time.Minute

// frozenWhile holds a version about to start while a freezeWhile query of a calendar that picks
// the config returns a series, or cannot be answered (a freeze nobody can check is kept). It
// reports whether the version is held, or the decision waits for the answers (Freezes).
func frozenWhile(d *Decision, in Input, tag string) bool {
	var held, by []string
	for _, cal := range in.Calendars {
		for _, q := range cal.Spec.FreezeWhile {
			if in.Freezes == nil {
				d.need(Freezes{})
				return true
			}
			a := in.Freezes[cal.Name+"/"+q.Name]
			switch {
			case a.Problem != "":
				held = append(held, fmt.Sprintf("freeze %s of RolloutCalendar %s cannot be checked (%s), so it is kept", q.Name, cal.Name, a.Problem))
			case a.Series > 0:
				held = append(held, fmt.Sprintf("freeze %s of RolloutCalendar %s holds while %s returns a series, and it does", q.Name, cal.Name, q.Query))
			default:
				continue
			}
			if !slices.Contains(by, cal.Name) {
				by = append(by, cal.Name)
			}
		}
	}
	if len(held) == 0 {
		return false
	}
	h := calendarHold(v1alpha1.ReasonFrozen, tag+" held: "+strings.Join(held, "; "), time.Time{}, FreezeRecheck)
	h.readyNote, h.calendars = "; looked at again every "+FreezeRecheck.String(), by
	h.apply(d, tag, in.Now)
	return true
}

// checkFits reports whether a check of tag started now ends before the calendar closes (spec.
// checkFitsWindow), and holds the version until the first opening that leaves it time when not.
func checkFits(d *Decision, in Input, calendar *window.Calendar, tag string) bool {
	need := checkTime(&in.Config.Spec)
	next := calendar.NextFit(in.Now, need)
	if next.Equal(in.Now) {
		return true
	}
	until := "no opening the calendar shows (as far as rollgate looks ahead; it looks again in an hour)"
	if !next.IsZero() {
		until = next.UTC().Format(time.RFC3339)
	}
	calendarHold(v1alpha1.EventVersionHeld, fmt.Sprintf("%s held until %s: the calendar closes before its check (health timeout and soak, %s) would end (spec.checkFitsWindow)",
		tag, until, need), next, CalendarRecheck).apply(d, tag, in.Now)
	return false
}

// checkTime is the longest a check of a version takes once healthy on time: its health timeout
// and its soak.
func checkTime(spec *v1alpha1.RollingUpgradeConfigSpec) time.Duration {
	return spec.HealthTimeoutOrDefault() + spec.SoakTimeOrZero()
}
