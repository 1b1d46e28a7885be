package rollout

import (
	"fmt"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// The gate that holds a version is recorded in status.hold, with Ready's reason and message, when
// the gate opens by itself and the calendars that hold it; a version no gate holds has none.
func TestTheHoldIsRecorded(t *testing.T) {
	one := int32(1)
	waves := &v1alpha1.RolloutCalendar{ObjectMeta: metav1.ObjectMeta{Name: "waves"}, Spec: v1alpha1.RolloutCalendarSpec{MaxConcurrent: &one}}
	ops := &v1alpha1.RolloutCalendar{ObjectMeta: metav1.ObjectMeta{Name: "ops"},
		Spec: v1alpha1.RolloutCalendarSpec{FreezeWhile: []v1alpha1.FreezeQuery{{Name: "sev1", Query: "ALERTS"}}}}
	at := func(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }
	spread := jittered(10 * time.Minute)
	spread.Name = "spread"
	part, _ := staggerOf(Input{Config: config(), Calendars: []*v1alpha1.RolloutCalendar{spread}})
	for _, tc := range []struct {
		name string
		in   Input
		want *v1alpha1.Hold // its message aside, which is Ready's
	}{
		{name: "nothing newer: no hold",
			in: Input{Config: config(current("1.0.0")), Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.0.0")}},
		{name: "a freeze until its end",
			in: Input{Config: config(current("1.0.0"), windows(freeze("release", now.Add(-time.Hour), now.Add(3*time.Hour)))),
				Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")},
			want: &v1alpha1.Hold{Version: "1.1.0", Since: at(now), Gate: v1alpha1.GateCalendar, Reason: v1alpha1.ReasonFrozen, Until: at(now.Add(3 * time.Hour))}},
		{name: "a RolloutCalendar's freeze until its end, naming the calendar",
			in: Input{Config: config(current("1.0.0")), Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0"),
				Calendars: []*v1alpha1.RolloutCalendar{{ObjectMeta: metav1.ObjectMeta{Name: "change-freeze"},
					Spec: v1alpha1.RolloutCalendarSpec{Windows: []v1alpha1.CalendarWindow{freeze("xmas", now.Add(-time.Hour), now.Add(5*time.Hour))}}}}},
			want: &v1alpha1.Hold{Version: "1.1.0", Since: at(now), Gate: v1alpha1.GateCalendar, Reason: v1alpha1.ReasonFrozen, Until: at(now.Add(5 * time.Hour)), Calendars: []string{"change-freeze"}}},
		{name: "a calendar's jitter until the config's part of it, naming the calendar",
			in: Input{Config: config(current("1.0.0")), Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0"),
				Calendars: []*v1alpha1.RolloutCalendar{spread}},
			want: &v1alpha1.Hold{Version: "1.1.0", Since: at(now), Gate: v1alpha1.GateCalendar, Reason: v1alpha1.ReasonStaggered, Until: at(now.Add(part)), Calendars: []string{"spread"}}},
		{name: "an approval",
			in:   Input{Config: config(current("1.0.0"), approval(v1alpha1.ApprovalRequired)), Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")},
			want: &v1alpha1.Hold{Version: "1.1.0", Since: at(now), Gate: v1alpha1.GateApproval, Reason: v1alpha1.ReasonAwaitingApproval}},
		{name: "a release age until the version is old enough",
			in: Input{Config: config(current("1.0.0"), minAge(24*time.Hour)), Workload: deploymentAt("1.0.0", healthy),
				Candidates: []Candidate{released("1.1.0", now.Add(-time.Hour))}},
			want: &v1alpha1.Hold{Version: "1.1.0", Since: at(now), Gate: v1alpha1.GateReleaseAge, Reason: v1alpha1.ReasonAwaitingReleaseAge, Until: at(now.Add(23 * time.Hour))}},
		{name: "a calendar's freezeWhile, naming the calendar",
			in: Input{Config: config(current("1.0.0")), Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0"),
				Calendars: []*v1alpha1.RolloutCalendar{ops}, Freezes: map[string]FreezeAnswer{"ops/sev1": {Series: 1}}},
			want: &v1alpha1.Hold{Version: "1.1.0", Since: at(now), Gate: v1alpha1.GateCalendar, Reason: v1alpha1.ReasonFrozen, Calendars: []string{"ops"}}},
		{name: "a calendar's slots all taken, naming the calendar",
			in: Input{Config: config(current("1.0.0")), Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0"),
				Calendars: []*v1alpha1.RolloutCalendar{waves}, Slots: map[string]SlotAnswer{"waves": {Holders: []string{"shop/api (2.0.0)"}}}},
			want: &v1alpha1.Hold{Version: "1.1.0", Since: at(now), Gate: v1alpha1.GateRolloutSlot, Reason: v1alpha1.ReasonAwaitingRolloutSlot, Calendars: []string{"waves"}}},
		{name: "an image the registry lacks",
			in: Input{Config: config(current("1.0.0"), func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.CheckImage = true }),
				Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0"), Image: &ImageLookup{Image: repo + ":1.1.0", NotFound: true}},
			want: &v1alpha1.Hold{Version: "1.1.0", Since: at(now), Gate: v1alpha1.GateImage, Reason: v1alpha1.ReasonImageNotFound}},
		{name: "a healthy version soaks until the soak ends",
			in: Input{Config: config(current("1.0.0"), soak(30*time.Minute), inFlight(StepHealthCheck, repo+":1.1.0", now.Add(-time.Minute))),
				Workload: deploymentAt("1.1.0", healthy)},
			want: &v1alpha1.Hold{Version: "1.1.0", Since: at(now), Gate: v1alpha1.GateSoak, Reason: v1alpha1.ReasonSoaking, Until: at(now.Add(30 * time.Minute))}},
		{name: "a soak that ends between seconds: until the second the API server keeps",
			in: Input{Config: config(current("1.0.0"), soak(30*time.Minute+500*time.Millisecond), inFlight(StepHealthCheck, repo+":1.1.0", now.Add(-time.Minute))),
				Workload: deploymentAt("1.1.0", healthy)},
			want: &v1alpha1.Hold{Version: "1.1.0", Since: at(now), Gate: v1alpha1.GateSoak, Reason: v1alpha1.ReasonSoaking, Until: at(now.Add(30 * time.Minute))}},
		{name: "a check in flight that no gate holds",
			in: Input{Config: config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", now.Add(-time.Minute))), Workload: deploymentAt("1.1.0", pending)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now = now
			d := Decide(tc.in)
			got := d.Status.Hold.DeepCopy()
			if got != nil {
				if ready := condition(d, meta.ReadyCondition); got.Message != ready.Message || got.Reason != ready.Reason {
					t.Errorf("hold %s: %q, Ready %s: %q; want Ready's", got.Reason, got.Message, ready.Reason, ready.Message)
				}
				got.Message = ""
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status.hold (-want +got):\n%s", diff)
			}
			if HoldReason(&d.Status) != ifHeld(tc.want) {
				t.Errorf("HoldReason %q, want %q", HoldReason(&d.Status), ifHeld(tc.want))
			}
		})
	}
}

func ifHeld(h *v1alpha1.Hold) string {
	if h == nil {
		return ""
	}
	return h.Reason
}

// status.hold says since when the version is held: from gate to gate while the version stays, to
// the second the API server keeps; a newer version is held from its own first hold.
func TestAHoldCountsFromTheVersionsFirstHold(t *testing.T) {
	in := func(cfg *v1alpha1.RollingUpgradeConfig, at time.Time, tags ...string) Input {
		return Input{Now: at, Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av(tags...)}
	}
	first := now.Add(1500 * time.Millisecond)
	cfg := next(config(current("1.0.0"), minAge(24*time.Hour), approval(v1alpha1.ApprovalRequired)),
		Decide(in(config(current("1.0.0"), minAge(24*time.Hour), approval(v1alpha1.ApprovalRequired)), first, "1.1.0")))
	cfg.Status.SeenVersions[0].FirstSeen = metav1.NewTime(now.Add(-48 * time.Hour)) // old enough now: approval holds it
	later := Decide(in(cfg, now.Add(time.Hour), "1.1.0"))
	noAge := next(cfg, later)
	noAge.Spec.MinReleaseAge = nil
	newer := Decide(in(noAge, now.Add(2*time.Hour), "1.1.0", "1.2.0"))
	for _, tc := range []struct {
		name string
		got  *v1alpha1.Hold
		want v1alpha1.Hold
	}{
		{name: "the first hold", got: cfg.Status.Hold,
			want: v1alpha1.Hold{Gate: v1alpha1.GateReleaseAge, Version: "1.1.0", Since: &metav1.Time{Time: now.Add(time.Second)}}},
		{name: "another gate, the same version", got: later.Status.Hold,
			want: v1alpha1.Hold{Gate: v1alpha1.GateApproval, Version: "1.1.0", Since: &metav1.Time{Time: now.Add(time.Second)}}},
		{name: "a newer version", got: newer.Status.Hold,
			want: v1alpha1.Hold{Gate: v1alpha1.GateApproval, Version: "1.2.0", Since: &metav1.Time{Time: now.Add(2 * time.Hour)}}},
	} {
		if tc.got == nil {
			t.Errorf("%s: no hold", tc.name)
			continue
		}
		got := v1alpha1.Hold{Gate: tc.got.Gate, Version: tc.got.Version, Since: tc.got.Since}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: status.hold (-want +got):\n%s", tc.name, diff)
		}
	}
}

// A hold ends with its gate: the next decision that starts the version drops it, and a waiting
// config wakes for a calendar only when that calendar's slot holds it.
func TestAHoldEndsWithItsGate(t *testing.T) {
	one := int32(1)
	waves := &v1alpha1.RolloutCalendar{ObjectMeta: metav1.ObjectMeta{Name: "waves"}, Spec: v1alpha1.RolloutCalendarSpec{MaxConcurrent: &one}}
	in := func(cfg *v1alpha1.RollingUpgradeConfig, slots map[string]SlotAnswer) Input {
		return Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0"),
			Calendars: []*v1alpha1.RolloutCalendar{waves}, Slots: slots}
	}
	cfg := config(current("1.0.0"))
	held := next(cfg, Decide(in(cfg, map[string]SlotAnswer{"waves": {Holders: []string{"shop/api (2.0.0)"}}})))
	if !WaitsForSlotOf(&held.Status, "waves") || WaitsForSlotOf(&held.Status, "nights") {
		t.Errorf("hold %+v: waits for waves %v, for nights %v; want waves only", held.Status.Hold,
			WaitsForSlotOf(&held.Status, "waves"), WaitsForSlotOf(&held.Status, "nights"))
	}
	started := Decide(in(held, map[string]SlotAnswer{"waves": {Granted: true}}))
	if started.Outcome != OutcomeStarted || started.Status.Hold != nil {
		t.Errorf("granted: outcome %q, hold %+v; want a start and no hold", started.Outcome, started.Status.Hold)
	}
}

// A status an earlier manager wrote, before status.hold, tells its hold by Ready's reason until
// it is written again: the jitter or the hold it announced goes on.
func TestAHoldWrittenBeforeStatusHoldIsRead(t *testing.T) {
	st := &v1alpha1.RollingUpgradeConfigStatus{Phase: v1alpha1.PhasePending,
		Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Reason: v1alpha1.ReasonStaggered}}}
	if got := HoldReason(st); got != v1alpha1.ReasonStaggered {
		t.Errorf("HoldReason %q, want Staggered", got)
	}
	st.Hold = &v1alpha1.Hold{Gate: v1alpha1.GateApproval, Reason: v1alpha1.ReasonAwaitingApproval}
	if got := HoldReason(st); got != v1alpha1.ReasonAwaitingApproval {
		t.Errorf("with status.hold: HoldReason %q, want status.hold's AwaitingApproval", got)
	}
}

// However many calendars hold a version, status.hold names as many as the API takes, the first
// ones in the order they were checked, and the status stays writable.
func TestAHoldNamesAsManyCalendarsAsTheAPITakes(t *testing.T) {
	var cals []*v1alpha1.RolloutCalendar
	freezes := map[string]FreezeAnswer{}
	for i := range v1alpha1.MaxHoldCalendars + 5 {
		name := fmt.Sprintf("ops-%02d", i)
		cals = append(cals, &v1alpha1.RolloutCalendar{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.RolloutCalendarSpec{FreezeWhile: []v1alpha1.FreezeQuery{{Name: "sev1", Query: "ALERTS"}}}})
		freezes[name+"/sev1"] = FreezeAnswer{Problem: "no Prometheus"}
	}
	d := Decide(Input{Now: now, Config: config(current("1.0.0")), Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0"),
		Calendars: cals, Freezes: freezes})
	if h := d.Status.Hold; h == nil || len(h.Calendars) != v1alpha1.MaxHoldCalendars || h.Calendars[0] != "ops-00" {
		t.Fatalf("hold %+v, want the first %d calendars", h, v1alpha1.MaxHoldCalendars)
	}
}
