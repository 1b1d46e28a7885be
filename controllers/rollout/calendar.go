package rollout

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/controllers/window"
)

// CalendarRecheck is how often a calendar that does not open as far as rollgate looks ahead is
// looked at again.
const CalendarRecheck = time.Hour

// heldByCalendar holds a version while the calendar is closed: Pending until it opens, naming the
// window that decides (Ready reason Frozen when it is a deny window, else VersionHeld). A calendar that does not open within its search holds it without a time,
// and says so.
func heldByCalendar(d *Decision, in Input, tag string, cal window.Decision) {
	st := &d.Status
	by := "no allow window is open"
	if cal.By != nil {
		by = cal.By.String()
	}
	until := "a time the calendar does not show (it stays closed as far as rollgate looks ahead; it looks again in an hour)"
	st.NextWindow = nil
	d.RequeueAfter = CalendarRecheck
	if !cal.Next.IsZero() {
		next := cal.Next
		if cal.By != nil && !cal.By.Deny {
			next = cal.By.In(next)
		}
		until = next.Format(time.RFC3339)
		nw := metav1.NewTime(next)
		st.NextWindow = &nw
		d.RequeueAfter = next.Sub(in.Now)
	}
	// The event is the window's (VersionHeld) either way; Ready says whether a freeze holds it.
	reason := v1alpha1.EventVersionHeld
	if cal.By != nil && cal.By.Deny {
		reason = v1alpha1.ReasonFrozen
	}
	// A freeze that ends into a wait for an allow window (or back) is one hold: one event.
	if !heldBefore(d, tag, v1alpha1.EventVersionHeld) && !heldBefore(d, tag, v1alpha1.ReasonFrozen) {
		d.event(WriteStatus, corev1.EventTypeNormal, v1alpha1.EventVersionHeld, "%s held until %s (%s)", tag, until, by)
	}
	st.Phase, st.TargetVersion = v1alpha1.PhasePending, tag
	d.ready(reason, "%s held until %s (%s)", tag, until, by)
}

// FreezeRecheck is how often a version held by a calendar's freezeWhile is looked at again.
const FreezeRecheck = time.Minute

// frozenWhile holds a version about to start while a freezeWhile query of a calendar that picks
// the config returns a series, or cannot be answered (a freeze nobody can check is kept). It
// reports whether the version is held, or the decision waits for the answers (AskFreezes).
func frozenWhile(d *Decision, in Input, tag string) bool {
	var held []string
	for _, cal := range in.Calendars {
		for _, q := range cal.Spec.FreezeWhile {
			if in.Freezes == nil {
				d.AskFreezes = true
				return true
			}
			a := in.Freezes[cal.Name+"/"+q.Name]
			switch {
			case a.Problem != "":
				held = append(held, fmt.Sprintf("freeze %s of RolloutCalendar %s cannot be checked (%s), so it is kept", q.Name, cal.Name, a.Problem))
			case a.Series > 0:
				held = append(held, fmt.Sprintf("freeze %s of RolloutCalendar %s holds while %s returns a series, and it does", q.Name, cal.Name, q.Query))
			}
		}
	}
	if len(held) == 0 {
		return false
	}
	st := &d.Status
	if !heldBefore(d, tag, v1alpha1.EventVersionHeld) && !heldBefore(d, tag, v1alpha1.ReasonFrozen) {
		d.event(WriteStatus, corev1.EventTypeNormal, v1alpha1.EventVersionHeld, "%s held: %s", tag, strings.Join(held, "; "))
	}
	st.Phase, st.TargetVersion, st.NextWindow = v1alpha1.PhasePending, tag, nil
	d.ready(v1alpha1.ReasonFrozen, "%s held: %s; looked at again every %s", tag, strings.Join(held, "; "), FreezeRecheck)
	d.RequeueAfter = FreezeRecheck
	return true
}

// checkFits reports whether a check of tag started now ends before the calendar closes (spec.
// checkFitsWindow), and holds the version until the first opening that leaves it time when not.
func checkFits(d *Decision, in Input, calendar *window.Calendar, tag string) bool {
	spec := in.Config.Spec
	need := spec.HealthTimeoutOrDefault() + spec.SoakTimeOrZero()
	next := calendar.NextFit(in.Now, need)
	if next.Equal(in.Now) {
		return true
	}
	st := &d.Status
	until := "no opening the calendar shows (as far as rollgate looks ahead; it looks again in an hour)"
	st.NextWindow = nil
	d.RequeueAfter = CalendarRecheck
	if !next.IsZero() {
		until = next.UTC().Format(time.RFC3339)
		nw := metav1.NewTime(next)
		st.NextWindow = &nw
		d.RequeueAfter = next.Sub(in.Now)
	}
	msg := fmt.Sprintf("%s held until %s: the calendar closes before its check (health timeout and soak, %s) would end (spec.checkFitsWindow)", tag, until, need)
	if !heldBefore(d, tag, v1alpha1.EventVersionHeld) && !heldBefore(d, tag, v1alpha1.ReasonFrozen) {
		d.event(WriteStatus, corev1.EventTypeNormal, v1alpha1.EventVersionHeld, "%s", msg)
	}
	st.Phase, st.TargetVersion = v1alpha1.PhasePending, tag
	d.ready(v1alpha1.EventVersionHeld, "%s", msg)
	return false
}
