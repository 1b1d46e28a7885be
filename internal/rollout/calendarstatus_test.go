package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// A calendar's status says whether its windows let starts go, which window decides, and the next
// opening or closing, which is when it changes next; the slots are kept as they are.
func TestTheCalendarStatusSaysWhenItOpensAndCloses(t *testing.T) {
	nights := v1alpha1.CalendarWindow{Name: "nights", Schedule: "0 1 * * *", Duration: &metav1.Duration{Duration: 4 * time.Hour}, TimeZone: "UTC"}
	evenings := v1alpha1.CalendarWindow{Name: "evenings", Schedule: "0 18 * * *", Duration: &metav1.Duration{Duration: time.Hour}, TimeZone: "America/New_York"}
	bad := v1alpha1.CalendarWindow{Name: "feb30", Schedule: "0 3 30 2 *", Duration: &metav1.Duration{Duration: time.Hour}}
	slots := []v1alpha1.CalendarRollout{slot("api", "2.0.0", now)}
	for _, tc := range []struct {
		name           string
		windows        []v1alpha1.CalendarWindow
		open           bool
		window         string
		nextOpen, next time.Time // next: the next change; zero when none is found
		ready          string    // in Ready's message
	}{
		{name: "inside an allow window", windows: []v1alpha1.CalendarWindow{nights}, open: true, window: "window nights, which allows",
			next: time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC), ready: "open until 2026-12-01T05:00:00Z (window nights"},
		{name: "a freeze inside it", windows: []v1alpha1.CalendarWindow{nights, freeze("incident", now.Add(-time.Hour), now.Add(time.Hour))},
			window: "window incident, which denies", nextOpen: now.Add(time.Hour), next: now.Add(time.Hour), ready: "closed until 2026-12-01T03:00:00Z (window incident"},
		{name: "waiting for an allow window in another zone", windows: []v1alpha1.CalendarWindow{evenings}, window: "window evenings, which allows",
			nextOpen: time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC), next: time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC), ready: "closed until 2026-12-01T23:00:00Z"},
		{name: "only freezes, none now", windows: []v1alpha1.CalendarWindow{freeze("xmas", now.Add(24*time.Hour), now.Add(48*time.Hour))}, open: true,
			next: now.Add(24 * time.Hour), ready: "open until 2026-12-02T02:00:00Z"},
		{name: "no windows (a cap alone): open for ever", open: true, ready: "open as far as rollgate looks ahead"},
	} {
		cal := &v1alpha1.RolloutCalendar{ObjectMeta: metav1.ObjectMeta{Name: "c", Generation: 3}, Spec: v1alpha1.RolloutCalendarSpec{Windows: tc.windows},
			Status: v1alpha1.RolloutCalendarStatus{Rollouts: slots}}
		st, next := CalendarStatus(cal, now)
		r := apimeta.FindStatusCondition(st.Conditions, meta.ReadyCondition)
		var nextOpen, nextClose time.Time
		if st.NextOpen != nil {
			nextOpen = st.NextOpen.Time
		}
		if st.NextClose != nil {
			nextClose = st.NextClose.Time
		}
		wantClose := time.Time{}
		if tc.open {
			wantClose = tc.next
		}
		if st.Open != tc.open || !strings.HasPrefix(st.Window, tc.window) || (tc.window == "" && st.Window != "") || !nextOpen.Equal(tc.nextOpen) ||
			!nextClose.Equal(wantClose) || !next.Equal(tc.next) || st.ObservedGeneration != 3 || len(st.Rollouts) != 1 ||
			r == nil || r.Status != metav1.ConditionTrue || !strings.Contains(r.Message, tc.ready) {
			t.Errorf("%s: open %v, window %q, next open %v, next close %v, next change %v, Ready %+v, slots %d", tc.name, st.Open, st.Window, st.NextOpen, st.NextClose, next, r, len(st.Rollouts))
		}
	}
	cal := &v1alpha1.RolloutCalendar{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: v1alpha1.RolloutCalendarSpec{Windows: []v1alpha1.CalendarWindow{bad}}}
	st, next := CalendarStatus(cal, now)
	if r := apimeta.FindStatusCondition(st.Conditions, meta.ReadyCondition); r == nil || r.Status != metav1.ConditionFalse || r.Reason != v1alpha1.EventInvalidSpec ||
		!strings.Contains(r.Message, "window feb30") || st.Open || !next.IsZero() {
		t.Errorf("a window that cannot be read: Ready %+v, open %v, next %v", r, st.Open, next)
	}
}
