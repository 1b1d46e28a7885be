package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

func windows(ws ...v1alpha1.CalendarWindow) func(*v1alpha1.RollingUpgradeConfig) {
	return func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.Windows = ws }
}

func freeze(name string, from, to time.Time) v1alpha1.CalendarWindow {
	return v1alpha1.CalendarWindow{Name: name, Type: v1alpha1.WindowDeny, Start: &metav1.Time{Time: from}, End: &metav1.Time{Time: to}}
}

// The calendar gates starts: a deny window holds a version whatever allows it, the message names
// the window that decides, and the config looks again when it opens.
func TestTheCalendarHoldsStarts(t *testing.T) {
	nights := v1alpha1.CalendarWindow{Name: "nights", Schedule: "0 1 * * *", Duration: &metav1.Duration{Duration: 4 * time.Hour}, TimeZone: "UTC"}
	for _, tc := range []struct {
		name     string
		mods     []func(*v1alpha1.RollingUpgradeConfig)
		wantHeld string // in Ready's message; "" when the version starts
		wantNext time.Time
		frozen   bool // Ready reason Frozen, not VersionHeld
	}{
		{name: "no windows: starts", mods: nil},
		{name: "inside an allow window: starts", mods: []func(*v1alpha1.RollingUpgradeConfig){windows(nights)}},
		{name: "a freeze over it: held until it ends, then the window", mods: []func(*v1alpha1.RollingUpgradeConfig){
			windows(nights, freeze("release-day", now.Add(-time.Hour), now.Add(2*time.Hour)))},
			wantHeld: "1.1.0 held until 2026-12-01T04:00:00Z (window release-day, which denies 2026-12-01T01:00:00Z to 2026-12-01T04:00:00Z)",
			wantNext: now.Add(2 * time.Hour), frozen: true},
		{name: "a freeze beside the maintenance window: the maintenance window after it", mods: []func(*v1alpha1.RollingUpgradeConfig){
			windowAt("0 3 * * *", 2*time.Hour), windows(freeze("holidays", now.Add(-time.Hour), now.Add(26*time.Hour)))},
			wantHeld: "(window holidays, which denies", wantNext: time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC), frozen: true},
		{name: "outside the allow window: held for it", mods: []func(*v1alpha1.RollingUpgradeConfig){windows(v1alpha1.CalendarWindow{Name: "evenings",
			Schedule: "0 18 * * *", Duration: &metav1.Duration{Duration: time.Hour}, TimeZone: "America/New_York"})},
			wantHeld: "1.1.0 held until 2026-12-01T18:00:00-05:00 (window evenings, which allows 0 18 * * * America/New_York for 1h0m0s)",
			wantNext: time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)},
		{name: "a freeze that is over: starts", mods: []func(*v1alpha1.RollingUpgradeConfig){windows(freeze("past", now.Add(-48*time.Hour), now.Add(-24*time.Hour)))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(append([]func(*v1alpha1.RollingUpgradeConfig){current("1.0.0")}, tc.mods...)...)
			d := Decide(Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")})
			if tc.wantHeld == "" {
				if d.Outcome != OutcomeStarted {
					t.Errorf("outcome %q, want a start; Ready %+v", d.Outcome, condition(d, meta.ReadyCondition))
				}
				return
			}
			r := condition(d, meta.ReadyCondition)
			reason := v1alpha1.EventVersionHeld
			if tc.frozen {
				reason = v1alpha1.ReasonFrozen
			}
			if d.Outcome != OutcomeNone || d.Status.Phase != v1alpha1.PhasePending || r.Reason != reason || !strings.Contains(r.Message, tc.wantHeld) {
				t.Errorf("outcome %q, phase %s, Ready %+v; want held with %q", d.Outcome, d.Status.Phase, r, tc.wantHeld)
			}
			if !d.Status.NextWindow.Time.Equal(tc.wantNext) || d.RequeueAfter != tc.wantNext.Sub(now) || reasons(d.Events) != "VersionAvailable,VersionHeld" {
				t.Errorf("next window %v, next look %s, events %s; want %s", d.Status.NextWindow, d.RequeueAfter, reasons(d.Events), tc.wantNext)
			}
		})
	}
}

// A freeze holds no rollback and no check in flight: only starts are gated.
func TestAFreezeHoldsNoRollback(t *testing.T) {
	frozen := windows(freeze("incident", now.Add(-time.Hour), now.Add(time.Hour)))
	cfg := config(current("1.0.0"), frozen, inFlight(StepHealthCheck, repo+":1.1.0", now.Add(-10*time.Minute)))
	d := Decide(Input{Now: now, Config: cfg, Workload: deploymentAt("1.1.0", pending)})
	if d.Outcome != OutcomeFailed || d.Annotations.Step != StepRollingBack {
		t.Errorf("a check past its timeout under a freeze: outcome %q, step %q; want it rolled back", d.Outcome, d.Annotations.Step)
	}
}

// A window the spec cannot mean stalls the config, naming it.
func TestABadWindowStalls(t *testing.T) {
	bad := v1alpha1.CalendarWindow{Name: "feb30", Schedule: "0 3 30 2 *", Duration: &metav1.Duration{Duration: time.Hour}}
	d := Decide(Input{Now: now, Config: config(current("1.0.0"), windows(bad)), Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")})
	if r := condition(d, meta.ReadyCondition); d.Outcome != OutcomeNone || r.Reason != v1alpha1.EventInvalidSpec || !strings.Contains(r.Message, "spec.windows[feb30]") {
		t.Errorf("outcome %q, Ready %+v", d.Outcome, r)
	}
}

// A freeze that ends into a wait for the allow window is one hold: one VersionHeld event. A
// calendar that does not open as far as rollgate looks holds the version and looks again hourly.
func TestAHoldThroughAFreezeIsAnnouncedOnce(t *testing.T) {
	cfg := config(current("1.0.0"), windowAt("0 3 * * *", time.Hour), windows(freeze("incident", now.Add(-time.Hour), now.Add(time.Hour))))
	d := Decide(Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")})
	if r := condition(d, meta.ReadyCondition); r.Reason != v1alpha1.ReasonFrozen || reasons(d.Events) != "VersionAvailable,VersionHeld" {
		t.Fatalf("under the freeze: Ready %+v, events %s", r, reasons(d.Events))
	}
	after := Decide(Input{Now: now.Add(90 * time.Minute), Config: next(cfg, d), Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")})
	if r := condition(after, meta.ReadyCondition); r.Reason != v1alpha1.EventVersionHeld || len(after.Events) != 0 {
		t.Errorf("after the freeze, waiting for the window: Ready %+v, events %s; want VersionHeld and no second event", r, reasons(after.Events))
	}

	always := v1alpha1.CalendarWindow{Name: "always", Type: v1alpha1.WindowDeny, Schedule: "* * * * *", Duration: &metav1.Duration{Duration: time.Minute}}
	d = Decide(Input{Now: now, Config: config(current("1.0.0"), windows(always)), Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")})
	if r := condition(d, meta.ReadyCondition); d.Status.NextWindow != nil || d.RequeueAfter != CalendarRecheck || !strings.Contains(r.Message, "looks again in an hour") {
		t.Errorf("a calendar that does not open: next window %v, next look %s, Ready %+v", d.Status.NextWindow, d.RequeueAfter, r)
	}
}

// The windows of the RolloutCalendars that pick a config join its own: the admin's freeze holds
// the tenant's version, named with its calendar.
func TestARolloutCalendarJoinsTheConfigsWindows(t *testing.T) {
	holidays := &v1alpha1.RolloutCalendar{ObjectMeta: metav1.ObjectMeta{Name: "holidays"},
		Spec: v1alpha1.RolloutCalendarSpec{Windows: []v1alpha1.CalendarWindow{freeze("xmas", now.Add(-time.Hour), now.Add(72*time.Hour))}}}
	d := Decide(Input{Now: now, Config: config(current("1.0.0")), Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0"),
		Calendars: []*v1alpha1.RolloutCalendar{holidays}})
	if r := condition(d, meta.ReadyCondition); d.Outcome != OutcomeNone || r.Reason != v1alpha1.ReasonFrozen ||
		!strings.Contains(r.Message, "(window xmas of RolloutCalendar holidays, which denies") {
		t.Errorf("outcome %q, Ready %+v; want held by the calendar's freeze", d.Outcome, r)
	}
	// An admin's allow window binds a config that has one of its own: outside the admin's hours,
	// the config's own window being open does not start the version.
	office := &v1alpha1.RolloutCalendar{ObjectMeta: metav1.ObjectMeta{Name: "office-hours"},
		Spec: v1alpha1.RolloutCalendarSpec{Windows: []v1alpha1.CalendarWindow{{Name: "office", Schedule: "0 9 * * *",
			Duration: &metav1.Duration{Duration: 8 * time.Hour}, TimeZone: "UTC"}}}}
	always := windows(v1alpha1.CalendarWindow{Name: "any-time", Schedule: "0 0 * * *", Duration: &metav1.Duration{Duration: 24 * time.Hour}, TimeZone: "UTC"})
	d = Decide(Input{Now: now, Config: config(current("1.0.0"), always), Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0"),
		Calendars: []*v1alpha1.RolloutCalendar{office}})
	if r := condition(d, meta.ReadyCondition); d.Outcome != OutcomeNone || !strings.Contains(r.Message, "1.1.0 held until 2026-12-01T09:00:00Z (window office of RolloutCalendar office-hours") {
		t.Errorf("the config's own window open, the admin's closed: outcome %q, Ready %+v; want held until the admin's opens", d.Outcome, r)
	}
	bad := holidays.DeepCopy()
	bad.Spec.Windows = []v1alpha1.CalendarWindow{{Name: "feb30", Schedule: "0 3 30 2 *", Duration: &metav1.Duration{Duration: time.Hour}}}
	d = Decide(Input{Now: now, Config: config(current("1.0.0")), Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0"),
		Calendars: []*v1alpha1.RolloutCalendar{bad}})
	if r := condition(d, meta.ReadyCondition); d.Outcome != OutcomeNone || !strings.Contains(r.Message, "RolloutCalendar holidays, window feb30") {
		t.Errorf("a calendar that cannot be read: outcome %q, Ready %+v; want nothing started, the calendar named", d.Outcome, r)
	}
}

// A calendar's freezeWhile holds a start while its query returns a series, or cannot be answered;
// the decision asks for the answers only when it is about to start a version.
func TestAFreezeWhileAQueryReturnsSeries(t *testing.T) {
	ops := &v1alpha1.RolloutCalendar{ObjectMeta: metav1.ObjectMeta{Name: "ops"},
		Spec: v1alpha1.RolloutCalendarSpec{FreezeWhile: []v1alpha1.FreezeQuery{{Name: "sev1", Query: `ALERTS{severity="critical"}`}}}}
	in := func(freezes map[string]FreezeAnswer, cands []Candidate) Input {
		return Input{Now: now, Config: config(current("1.0.0")), Workload: deploymentAt("1.0.0", healthy), Candidates: cands,
			Calendars: []*v1alpha1.RolloutCalendar{ops}, Freezes: freezes}
	}
	if d := Decide(in(nil, av("1.0.0"))); !needs(d) {
		t.Error("nothing to start, yet the freezes were asked")
	}
	if d := Decide(in(nil, av("1.1.0"))); !needs(d, Freezes{}) || d.Outcome != OutcomeNone {
		t.Fatalf("about to start: needs %v, outcome %q; want the freezes asked first", d.Needs, d.Outcome)
	}
	for _, tc := range []struct {
		name   string
		answer FreezeAnswer
		want   string // in Ready's message; "" when it starts
	}{
		{name: "no series: starts", answer: FreezeAnswer{}},
		{name: "a firing alert: held", answer: FreezeAnswer{Series: 2},
			want: `1.1.0 held: freeze sev1 of RolloutCalendar ops holds while ALERTS{severity="critical"} returns a series, and it does`},
		{name: "Prometheus down: held", answer: FreezeAnswer{Problem: "connection refused"}, want: "freeze sev1 of RolloutCalendar ops cannot be checked (connection refused), so it is kept"},
	} {
		d := Decide(in(map[string]FreezeAnswer{"ops/sev1": tc.answer}, av("1.1.0")))
		r := condition(d, meta.ReadyCondition)
		switch {
		case tc.want == "" && d.Outcome != OutcomeStarted:
			t.Errorf("%s: outcome %q, Ready %+v", tc.name, d.Outcome, r)
		case tc.want != "" && (d.Outcome != OutcomeNone || r.Reason != v1alpha1.ReasonFrozen || !strings.Contains(r.Message, tc.want) || d.RequeueAfter != FreezeRecheck):
			t.Errorf("%s: outcome %q, Ready %+v, next look %s; want held with %q", tc.name, d.Outcome, r, d.RequeueAfter, tc.want)
		}
	}
}

// With spec.checkFitsWindow a version starts only when its whole check (health timeout and soak)
// fits before the calendar closes; else it waits for the first opening that leaves it time.
func TestACheckThatDoesNotFitWaits(t *testing.T) {
	nights := v1alpha1.CalendarWindow{Name: "nights", Schedule: "0 1 * * *", Duration: &metav1.Duration{Duration: 2 * time.Hour}, TimeZone: "UTC"}
	fits := func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.CheckFitsWindow = true }
	// now is 02:00 UTC: the window has an hour left; the check needs 10m, or 70m with a soak.
	for _, tc := range []struct {
		name string
		mods []func(*v1alpha1.RollingUpgradeConfig)
		want string // in Ready's message; "" when it starts
	}{
		{name: "10m fit into the hour left", mods: []func(*v1alpha1.RollingUpgradeConfig){windows(nights), fits}},
		{name: "70m do not: the next night", mods: []func(*v1alpha1.RollingUpgradeConfig){windows(nights), fits, soak(time.Hour)},
			want: "1.1.0 held until 2026-12-02T01:00:00Z: the calendar closes before its check (health timeout and soak, 1h10m0s) would end"},
		{name: "without the option: starts", mods: []func(*v1alpha1.RollingUpgradeConfig){windows(nights), soak(time.Hour)}},
	} {
		cfg := config(append([]func(*v1alpha1.RollingUpgradeConfig){current("1.0.0")}, tc.mods...)...)
		d := Decide(Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")})
		r := condition(d, meta.ReadyCondition)
		switch {
		case tc.want == "" && d.Outcome != OutcomeStarted:
			t.Errorf("%s: outcome %q, Ready %+v", tc.name, d.Outcome, r)
		case tc.want != "" && (d.Outcome != OutcomeNone || d.Status.Phase != v1alpha1.PhasePending || !strings.Contains(r.Message, tc.want) ||
			d.RequeueAfter != 23*time.Hour):
			t.Errorf("%s: outcome %q, Ready %+v, next look %s; want held with %q", tc.name, d.Outcome, r, d.RequeueAfter, tc.want)
		}
	}
}
