package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

func jittered(jitter time.Duration, windows ...v1alpha1.CalendarWindow) *v1alpha1.RolloutCalendar {
	return &v1alpha1.RolloutCalendar{ObjectMeta: metav1.ObjectMeta{Name: "waves"},
		Spec: v1alpha1.RolloutCalendarSpec{Jitter: &metav1.Duration{Duration: jitter}, Windows: windows}}
}

// Each config's part of the jitter is fixed by its name, within the jitter, in whole seconds, and
// the parts of many configs spread over it.
func TestTheStaggerIsAFixedPartOfTheJitter(t *testing.T) {
	cal := jittered(10 * time.Minute)
	seen := map[time.Duration]bool{}
	var low, high int
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p"} {
		in := Input{Config: config(func(c *v1alpha1.RollingUpgradeConfig) { c.Name = name }), Calendars: []*v1alpha1.RolloutCalendar{cal}}
		offset, by := staggerOf(in)
		if again, _ := staggerOf(in); again != offset || by != cal {
			t.Errorf("%s: part %s, then %s (by %v)", name, offset, again, by)
		}
		if offset < 0 || offset >= 10*time.Minute || offset%time.Second != 0 {
			t.Errorf("%s: part %s, want whole seconds within the jitter", name, offset)
		}
		if offset < 5*time.Minute {
			low++
		} else {
			high++
		}
		seen[offset] = true
	}
	if len(seen) < 12 || low < 3 || high < 3 {
		t.Errorf("16 configs got %d different parts, %d in the first half and %d in the second: not spread", len(seen), low, high)
	}
	if offset, _ := staggerOf(Input{Config: config(), Calendars: []*v1alpha1.RolloutCalendar{{}}}); offset != 0 {
		t.Errorf("no jitter: part %s", offset)
	}
}

// A version waits the config's part of the jitter past the moment it could first have started:
// now, for a version that was not held; the calendar's opening, for one that it held. One event
// announces the hold, and a version that waited for a later gate (a slot) does not wait again.
func TestAStartWaitsItsPartOfTheJitter(t *testing.T) {
	offset, _ := staggerOf(Input{Config: config(), Calendars: []*v1alpha1.RolloutCalendar{jittered(10 * time.Minute)}})
	if offset < 2*time.Second {
		t.Fatalf("this config's part is %s: too short to tell a wait from none", offset)
	}
	decide := func(cfg *v1alpha1.RollingUpgradeConfig, at time.Time, cal *v1alpha1.RolloutCalendar) Decision {
		return Decide(Input{Now: at, Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0"), Calendars: []*v1alpha1.RolloutCalendar{cal}})
	}
	held := func(t *testing.T, d Decision, reason string, until time.Time, events string) {
		t.Helper()
		r := condition(d, meta.ReadyCondition)
		if d.Outcome != OutcomeNone || r.Reason != reason || d.Status.NextWindow == nil || !d.Status.NextWindow.Time.Equal(until) || reasons(d.Events) != events {
			t.Errorf("outcome %q, Ready %+v, next window %v, events %s; want held (%s) until %s, events %s", d.Outcome, r, d.Status.NextWindow, reasons(d.Events), reason, until, events)
		}
	}

	t.Run("a version that was not held", func(t *testing.T) {
		cal, cfg := jittered(10*time.Minute), config(current("1.0.0"))
		d := decide(cfg, now, cal)
		held(t, d, v1alpha1.ReasonStaggered, now.Add(offset), "VersionAvailable,VersionHeld")
		if r := condition(d, meta.ReadyCondition); !strings.Contains(r.Message, "RolloutCalendar waves spreads the starts of its configs over 10m0s (jitter), and this config's part is "+offset.String()) {
			t.Errorf("Ready %q", r.Message)
		}
		cfg = next(cfg, d)
		d = decide(cfg, now.Add(offset-time.Second), cal)
		held(t, d, v1alpha1.ReasonStaggered, now.Add(offset), "")
		if d = decide(next(cfg, d), now.Add(offset), cal); d.Outcome != OutcomeStarted {
			t.Errorf("at its part: outcome %q, want a start", d.Outcome)
		}
	})

	t.Run("a version the calendar held", func(t *testing.T) {
		opens := now.Add(time.Hour)
		cal := jittered(10*time.Minute, v1alpha1.CalendarWindow{Name: "later", Start: &metav1.Time{Time: opens}, End: &metav1.Time{Time: opens.Add(2 * time.Hour)}})
		cfg := config(current("1.0.0"))
		d := decide(cfg, now, cal)
		held(t, d, v1alpha1.EventVersionHeld, opens, "VersionAvailable,VersionHeld")
		if d.RequeueAfter != time.Hour+offset {
			t.Errorf("next look after %s, want at the opening plus its part (%s)", d.RequeueAfter, time.Hour+offset)
		}
		cfg = next(cfg, d)
		// Woken by something else a second after the opening: it waits for its part, announced already.
		early := decide(cfg, opens.Add(time.Second), cal)
		held(t, early, v1alpha1.ReasonStaggered, opens.Add(offset), "")
		if d = decide(next(cfg, early), opens.Add(offset), cal); d.Outcome != OutcomeStarted {
			t.Errorf("at the opening plus its part: outcome %q, want a start", d.Outcome)
		}
		if d = decide(cfg, opens.Add(offset), cal); d.Outcome != OutcomeStarted {
			t.Errorf("first look at the opening plus its part: outcome %q, want a start", d.Outcome)
		}
	})

	t.Run("a version that waited for a slot", func(t *testing.T) {
		one := int32(1)
		cal := jittered(10 * time.Minute)
		cal.Spec.MaxConcurrent = &one
		cfg := config(current("1.0.0"))
		cfg.Status.Phase, cfg.Status.TargetVersion = v1alpha1.PhasePending, "1.1.0"
		cfg.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonAwaitingRolloutSlot}}
		if d := decide(cfg, now, cal); !needs(d, Slots{Tag: "1.1.0"}) {
			t.Errorf("after a wait for a slot: needs %v, Ready %+v; want the slot claimed, no second stagger", d.Needs, condition(d, meta.ReadyCondition))
		}
	})

	t.Run("a freeze lifted before its end", func(t *testing.T) {
		cal, cfg := jittered(10*time.Minute), config(current("1.0.0"))
		cfg.Status.Phase, cfg.Status.TargetVersion, cfg.Status.NextWindow = v1alpha1.PhasePending, "1.1.0", &metav1.Time{Time: now.Add(7 * 24 * time.Hour)}
		cfg.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonFrozen}}
		held(t, decide(cfg, now, cal), v1alpha1.ReasonStaggered, now.Add(offset), "VersionAvailable")
		// The part counts from now, not from the freeze's planned end, also under a window that closes.
		open := jittered(10*time.Minute, v1alpha1.CalendarWindow{Name: "day", Start: &metav1.Time{Time: now.Add(-time.Hour)}, End: &metav1.Time{Time: now.Add(2 * time.Hour)}})
		held(t, decide(cfg, now, open), v1alpha1.ReasonStaggered, now.Add(offset), "VersionAvailable")
	})

	t.Run("a stagger that the calendar's closing ends", func(t *testing.T) {
		later := jittered(10*time.Minute, v1alpha1.CalendarWindow{Name: "later", Start: &metav1.Time{Time: now.Add(time.Hour)}, End: &metav1.Time{Time: now.Add(2 * time.Hour)}})
		cfg := config(current("1.0.0"))
		cfg.Status.Phase, cfg.Status.TargetVersion, cfg.Status.NextWindow = v1alpha1.PhasePending, "1.1.0", &metav1.Time{Time: now.Add(time.Minute)}
		cfg.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonStaggered}}
		d := decide(cfg, now, later)
		if r := condition(d, meta.ReadyCondition); r.Reason != v1alpha1.EventVersionHeld || strings.Contains(reasons(d.Events), v1alpha1.EventVersionHeld) {
			t.Errorf("staggered, then held by the calendar: Ready %+v, events %s; want one hold, announced once", r, reasons(d.Events))
		}
	})

	t.Run("a newer version while it waits", func(t *testing.T) {
		cal, cfg := jittered(10*time.Minute), config(current("1.0.0"))
		d := decide(cfg, now, cal)
		cfg = next(cfg, d)
		later := Decide(Input{Now: now.Add(time.Second), Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.2.0"),
			Calendars: []*v1alpha1.RolloutCalendar{cal}})
		held(t, later, v1alpha1.ReasonStaggered, now.Add(offset), "VersionAvailable,VersionHeld")
	})

	t.Run("a jitter longer than the window", func(t *testing.T) {
		opens := now.Add(-time.Minute)
		short := v1alpha1.CalendarWindow{Name: "short", Start: &metav1.Time{Time: opens}, End: &metav1.Time{Time: opens.Add(2 * time.Minute)}}
		cal := jittered(24*time.Hour, short)
		long, _ := staggerOf(Input{Config: config(), Calendars: []*v1alpha1.RolloutCalendar{cal}})
		if long < 2*time.Minute {
			t.Fatalf("this config's part of 24h is %s, within the window: the case is not tested", long)
		}
		// The part is fitted into the minute the window stays open.
		fits := func(t *testing.T, d Decision, room time.Duration) {
			t.Helper()
			switch want := (long % room).Truncate(time.Second); {
			case want == 0 && d.Outcome != OutcomeStarted:
				t.Errorf("outcome %q, want a start at once (its part of %s is 0)", d.Outcome, room)
			case want > 0 && (d.Status.NextWindow == nil || !d.Status.NextWindow.Time.Equal(now.Add(want))):
				t.Errorf("outcome %q, next window %v: want a start at %s, its part fitted into %s", d.Outcome, d.Status.NextWindow, now.Add(want), room)
			}
		}
		fits(t, decide(config(current("1.0.0")), now, cal), time.Minute)
		timeout := func(d time.Duration) func(*v1alpha1.RollingUpgradeConfig) {
			return func(c *v1alpha1.RollingUpgradeConfig) {
				c.Spec.CheckFitsWindow, c.Spec.HealthTimeout = true, &metav1.Duration{Duration: d}
			}
		}
		// With spec.checkFitsWindow the part fits into what the check leaves: 30s of the minute left.
		fits(t, decide(config(current("1.0.0"), timeout(30*time.Second)), now, cal), 30*time.Second)
		if d := decide(config(current("1.0.0"), timeout(time.Minute)), now, cal); d.Outcome != OutcomeStarted {
			t.Errorf("a check that needs the whole minute left: outcome %q, Ready %+v; want a start at once", d.Outcome, condition(d, meta.ReadyCondition))
		}
	})
}
