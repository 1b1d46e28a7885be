package rollout

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

func slot(name, version string, since time.Time) v1alpha1.CalendarRollout {
	return v1alpha1.CalendarRollout{Namespace: "shop", Name: name, Version: version, Since: metav1.NewTime(since)}
}

// A claim takes a free slot, or renews the one its config holds (within the limit, which may have
// been lowered); every grant changes the list. When the list is full, the slots of rollouts that
// ended are reclaimed: a config gone at once, one idle past SlotGrace (a claim whose start never
// came), one stuck in flight; never one in flight, one that has only just claimed, or one the
// cache cannot tell of.
func TestClaimTakesAFreeSlotOnly(t *testing.T) {
	self := types.NamespacedName{Namespace: "shop", Name: "web"}
	holders := map[string]Holder{"api": {State: HolderInFlight, Stuck: now.Add(time.Hour)}, "gone": {State: HolderGone}, "idle": {State: HolderIdle},
		"stuck": {State: HolderInFlight, Stuck: now}, "unknown": {State: HolderInFlight}}
	for _, tc := range []struct {
		name    string
		slots   []v1alpha1.CalendarRollout
		limit   int
		granted bool
		want    string // the names holding slots after the claim
	}{
		{name: "a free slot", slots: nil, limit: 1, granted: true, want: "web"},
		{name: "the one slot taken by a rollout in flight", slots: []v1alpha1.CalendarRollout{slot("api", "2.0.0", now.Add(-time.Hour))}, limit: 1, want: "api"},
		{name: "two slots, one taken", slots: []v1alpha1.CalendarRollout{slot("api", "2.0.0", now.Add(-time.Hour))}, limit: 2, granted: true, want: "api,web"},
		{name: "its own slot, renewed for the version", slots: []v1alpha1.CalendarRollout{slot("api", "2.0.0", now), slot("web", "1.0.0", now.Add(-time.Hour))},
			limit: 2, granted: true, want: "api,web"},
		{name: "its own slot, over a lowered limit: given up", slots: []v1alpha1.CalendarRollout{slot("api", "2.0.0", now), slot("web", "1.1.0", now)},
			limit: 1, want: "api"},
		{name: "a slot of a deleted config", slots: []v1alpha1.CalendarRollout{slot("gone", "2.0.0", now)}, limit: 1, granted: true, want: "web"},
		{name: "a slot of an idle config, claimed a moment ago", slots: []v1alpha1.CalendarRollout{slot("idle", "2.0.0", now.Add(-time.Second))}, limit: 1, want: "idle"},
		{name: "a slot of an idle config past the grace", slots: []v1alpha1.CalendarRollout{slot("idle", "2.0.0", now.Add(-SlotGrace))}, limit: 1, granted: true, want: "web"},
		{name: "a slot of a rollout stuck in flight", slots: []v1alpha1.CalendarRollout{slot("stuck", "2.0.0", now.Add(-time.Hour))}, limit: 1, granted: true, want: "web"},
		{name: "a slot of a config the cache cannot tell of", slots: []v1alpha1.CalendarRollout{slot("unknown", "2.0.0", now.Add(-48*time.Hour))}, limit: 1, want: "unknown"},
	} {
		got, granted := Claim(tc.slots, tc.limit, self, "1.1.0", now, func(s v1alpha1.CalendarRollout) Holder { return holders[s.Name] })
		var names []string
		for _, s := range got {
			names = append(names, s.Name)
			if s.Name == "web" && (s.Version != "1.1.0" || !s.Since.Time.Equal(now)) {
				t.Errorf("%s: its slot %+v, want 1.1.0 since now", tc.name, s)
			}
		}
		slices.Sort(names)
		if granted != tc.granted || strings.Join(names, ",") != tc.want {
			t.Errorf("%s: granted %v, slots %v; want %v, %s", tc.name, granted, names, tc.granted, tc.want)
		}
	}
	// With room left, no holder is looked up.
	if _, granted := Claim([]v1alpha1.CalendarRollout{slot("api", "2.0.0", now)}, 2, self, "1.1.0", now, func(v1alpha1.CalendarRollout) Holder {
		t.Error("a holder was looked up with a slot free")
		return Holder{}
	}); !granted {
		t.Error("a free slot of two was not granted")
	}
	if got := Release([]v1alpha1.CalendarRollout{slot("api", "2.0.0", now), slot("web", "1.1.0", now)}, self); len(got) != 1 || got[0].Name != "api" {
		t.Errorf("released: %+v, want api's slot alone", got)
	}
}

// A config in flight holds its slot until its check's own deadline, and its health timeout and soak
// after that: twice its health timeout and soak after the start for a plain check.
func TestHolderOf(t *testing.T) {
	taken := slot("web", "1.1.0", now)
	if h := HolderOf(config(soak(5*time.Minute), inFlight(StepHealthCheck, repo+":1.1.0", now)), taken); h.State != HolderInFlight || !h.Stuck.Equal(now.Add(30*time.Minute)) {
		t.Errorf("in its check: %+v, want in flight, stuck 30m after the slot was taken", h)
	}
	if h := HolderOf(config(inFlight(StepRollingBack, repo+":1.1.0", now)), taken); h.State != HolderInFlight {
		t.Errorf("rolling back: %+v, want in flight", h)
	}
	// A check whose own deadline is further off holds its slot past that deadline, by its health
	// timeout and soak: an analysis of 120 measurements 30s apart (an hour), a GitFirst version
	// waiting for its commit to be applied, an in-place upgrade of twelve pods.
	analysis := config(errorRateCheck(120), inFlight(StepHealthCheck, repo+":1.1.0", now))
	if h := HolderOf(analysis, taken); !h.Stuck.Equal(now.Add(time.Duration(119)*30*time.Second + 10*time.Minute)) {
		t.Errorf("an analysis of an hour: stuck at %s, want 10m past its last measurement", h.Stuck)
	}
	applying := config(gitFirstConfig, inFlight(StepHealthCheck, repo+":1.1.0", now), func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.GitWriteBack.ApplyTimeout = &metav1.Duration{Duration: time.Hour}
		c.Annotations[v1alpha1.CheckPausedAnnotation] = c.Annotations[v1alpha1.UpdateStartedAnnotation]
	})
	if h := HolderOf(applying, taken); !h.Stuck.Equal(now.Add(130 * time.Minute)) {
		t.Errorf("a GitFirst version waiting for its apply: stuck at %s, want 10m past twice its apply timeout of 1h (its commit, then the image)", h.Stuck)
	}
	inPlace := config(inFlight(StepHealthCheck, repo+":1.1.0", now), func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.Strategy = &v1alpha1.UpgradeStrategy{Type: v1alpha1.StrategyInPlace}
		c.Status.InPlace = &v1alpha1.InPlaceStatus{Image: repo + ":1.1.0"}
		for i := range 12 {
			c.Status.InPlace.Pods = append(c.Status.InPlace.Pods, v1alpha1.InPlacePod{Name: fmt.Sprintf("db-%d", i), State: "Waiting"})
		}
	})
	perPod := v1alpha1.DefaultDrainGracePeriod + v1alpha1.DefaultPodReadyTimeout
	if h := HolderOf(inPlace, taken); !h.Stuck.Equal(now.Add(20*time.Minute + 12*perPod)) {
		t.Errorf("an in-place upgrade of 12 pods: stuck at %s, want twice its health timeout past each pod's grace and readiness timeout", h.Stuck)
	}
	idle := config()
	idle.Annotations[v1alpha1.UpdatePhaseAnnotation] = "Sideways"
	if h := HolderOf(idle, taken); h.State != HolderIdle {
		t.Errorf("a step rollgate does not know: %+v, want idle (its slot is reclaimed after the grace)", h)
	}
}

// A version about to start under a calendar with maxConcurrent asks for its slots first; it
// starts once granted, and a refusal holds it Pending, naming the holders, with one event.
func TestAStartTakesACalendarSlot(t *testing.T) {
	one := int32(1)
	waves := &v1alpha1.RolloutCalendar{ObjectMeta: metav1.ObjectMeta{Name: "waves"}, Spec: v1alpha1.RolloutCalendarSpec{MaxConcurrent: &one}}
	in := func(cfg *v1alpha1.RollingUpgradeConfig, slots map[string]SlotAnswer) Input {
		return Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0"),
			Calendars: []*v1alpha1.RolloutCalendar{waves}, Slots: slots}
	}
	cfg := config(current("1.0.0"))
	if d := Decide(in(cfg, nil)); !needs(d, Slots{Tag: "1.1.0"}) || d.Outcome != OutcomeNone {
		t.Fatalf("about to start: needs %v, outcome %q; want the slot claimed first", d.Needs, d.Outcome)
	}
	if d := Decide(in(cfg, map[string]SlotAnswer{"waves": {Granted: true}})); d.Outcome != OutcomeStarted {
		t.Errorf("granted: outcome %q, want a start", d.Outcome)
	}
	for _, tc := range []struct {
		answer SlotAnswer
		want   string
	}{
		{answer: SlotAnswer{Holders: []string{"shop/api (2.0.0)"}}, want: "1.1.0 waits for a rollout slot: RolloutCalendar waves allows 1 rollouts at once, and shop/api (2.0.0) hold its slots"},
		{answer: SlotAnswer{Problem: "the server is on fire"}, want: "a slot of RolloutCalendar waves could not be taken: the server is on fire"},
	} {
		d := Decide(in(cfg, map[string]SlotAnswer{"waves": tc.answer}))
		r := condition(d, meta.ReadyCondition)
		if d.Outcome != OutcomeNone || d.Status.Phase != v1alpha1.PhasePending || r.Reason != v1alpha1.ReasonAwaitingRolloutSlot ||
			!strings.Contains(r.Message, tc.want) || d.RequeueAfter != SlotRecheck || reasons(d.Events) != "VersionAvailable,RolloutSlotsTaken" {
			t.Errorf("refused: outcome %q, phase %s, Ready %+v, next look %s, events %s; want held with %q",
				d.Outcome, d.Status.Phase, r, d.RequeueAfter, reasons(d.Events), tc.want)
		}
		if again := Decide(in(next(cfg, d), map[string]SlotAnswer{"waves": tc.answer})); len(again.Events) != 0 {
			t.Errorf("still refused: events %s, want none", reasons(again.Events))
		}
	}
	// A rollback is never held for a slot: it is not a start.
	fail := config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", now.Add(-time.Hour)))
	if d := Decide(Input{Now: now, Config: fail, Workload: deploymentAt("1.1.0", pending), Calendars: []*v1alpha1.RolloutCalendar{waves}}); !needs(d) || d.Outcome != OutcomeFailed {
		t.Errorf("a failed check under a full calendar: needs %v, outcome %q; want rolled back", d.Needs, d.Outcome)
	}
}
