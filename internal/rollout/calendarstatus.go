package rollout

import (
	"fmt"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/window"
)

// CalendarStatus is the status of a RolloutCalendar at now as its windows make it (the slots of
// old are kept: the configs' reconciles write those), and the next instant it changes by itself;
// zero when it does not within the search, and the calendar is then looked at again after
// CalendarRecheck.
func CalendarStatus(cal *v1alpha1.RolloutCalendar, now time.Time) (v1alpha1.RolloutCalendarStatus, time.Time) {
	st := *cal.Status.DeepCopy()
	st.ObservedGeneration = cal.Generation
	st.Open, st.Window, st.NextOpen, st.NextClose = false, "", nil, nil
	ready := func(status metav1.ConditionStatus, reason, format string, args ...any) {
		apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: meta.ReadyCondition, Status: status, Reason: reason,
			Message: Bounded(fmt.Sprintf(format, args...)), ObservedGeneration: cal.Generation, LastTransitionTime: metav1.NewTime(now)})
	}
	rules := make([]window.Rule, 0, len(cal.Spec.Windows))
	for _, cw := range cal.Spec.Windows {
		r, err := calendarRule(cw, cw.Name, now)
		if err != nil {
			ready(metav1.ConditionFalse, v1alpha1.EventInvalidSpec, "window %s: %v; no config this calendar picks starts a version until it is fixed", cw.Name, err)
			return st, time.Time{}
		}
		rules = append(rules, r)
	}
	c := window.NewCalendar(rules...)
	at := c.At(now)
	if at.By != nil {
		st.Window = at.By.String()
	}
	var next time.Time
	state := "closed"
	if at.Open {
		st.Open, state = true, "open"
		next = c.ClosesAt(now)
		if !next.IsZero() {
			st.NextClose = &metav1.Time{Time: next}
		}
	} else if next = at.Next; !next.IsZero() {
		st.NextOpen = &metav1.Time{Time: next}
	}
	until := "as far as rollgate looks ahead"
	if !next.IsZero() {
		until = "until " + next.UTC().Format(time.RFC3339)
	}
	by := ""
	if st.Window != "" {
		by = " (" + st.Window + ")"
	}
	ready(metav1.ConditionTrue, v1alpha1.ReasonValid, "%s %s%s", state, until, by)
	return st, next
}
