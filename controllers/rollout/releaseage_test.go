package rollout

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

func minAge(d time.Duration) func(*v1alpha1.RollingUpgradeConfig) {
	return func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.MinReleaseAge = &metav1.Duration{Duration: d} }
}

func released(tag string, at time.Time) Candidate {
	return Candidate{Tag: tag, Source: "ApplicationVersion/web", ReleasedAt: at}
}

// A version too young waits Pending until the instant it is old enough, with one event; its age
// counts from its release when a source dates it, else from when rollgate first saw it.
func TestAYoungVersionWaitsForItsAge(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cands    []Candidate
		wantFrom time.Time
		wantNote string
	}{
		{name: "dated by its source", cands: []Candidate{released("1.1.0", now.Add(-time.Hour))}, wantFrom: now.Add(2 * time.Hour),
			wantNote: "1.1.0 is eligible from 2026-12-01T04:00:00Z: released 2026-12-01T01:00:00Z, and spec.minReleaseAge is 3h0m0s"},
		{name: "undated: from its first sight", cands: av("1.1.0"), wantFrom: now.Add(3 * time.Hour),
			wantNote: "1.1.0 is eligible from 2026-12-01T05:00:00Z: first seen by rollgate 2026-12-01T02:00:00Z"},
		{name: "two sources: the earliest date", cands: []Candidate{released("1.1.0", now.Add(-time.Hour)), released("1.1.0", now.Add(-2*time.Hour)), {Tag: "1.1.0", Source: "registry"}},
			wantFrom: now.Add(time.Hour), wantNote: "released 2026-12-01T00:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(current("1.0.0"), minAge(3*time.Hour))
			d := Decide(Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: tc.cands})
			ready := condition(d, meta.ReadyCondition)
			if d.Outcome != OutcomeNone || d.Status.Phase != v1alpha1.PhasePending || d.Status.TargetVersion != "1.1.0" ||
				ready.Reason != v1alpha1.ReasonAwaitingReleaseAge || !strings.Contains(ready.Message, tc.wantNote) {
				t.Fatalf("outcome %q, phase %s, target %s, Ready %+v; want 1.1.0 Pending with %q", d.Outcome, d.Status.Phase, d.Status.TargetVersion, ready, tc.wantNote)
			}
			if reasons(d.Events) != v1alpha1.EventReleaseAgeRequired || d.RequeueAfter != tc.wantFrom.Sub(now) || !d.Status.NextWindow.Time.Equal(tc.wantFrom) {
				t.Errorf("events %s, next look %s, next window %v; want one ReleaseAgeRequired and a look at %s", reasons(d.Events), d.RequeueAfter, d.Status.NextWindow, tc.wantFrom)
			}
			cfg = next(cfg, d)
			// A second before: still waiting, nothing new (no second event, no write).
			before := Decide(Input{Now: tc.wantFrom.Add(-time.Second), Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: tc.cands})
			if len(before.Events) != 0 || before.Outcome != OutcomeNone || !apiequality(before.Status, cfg.Status) {
				t.Errorf("a second before: events %s, outcome %q, status changed %v", reasons(before.Events), before.Outcome, !apiequality(before.Status, cfg.Status))
			}
			// At the instant: it starts.
			at := Decide(Input{Now: tc.wantFrom, Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: tc.cands})
			if at.Outcome != OutcomeStarted {
				t.Errorf("at %s: outcome %q, want the rollout to start", tc.wantFrom, at.Outcome)
			}
		})
	}
}

// While the newest version is too young, the newest one old enough is rolled out, and the start
// says why not the newest.
func TestTheNewestVersionOldEnoughRollsOut(t *testing.T) {
	cfg := config(current("1.0.0"), minAge(24*time.Hour))
	d := Decide(Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", healthy),
		Candidates: []Candidate{released("1.2.0", now.Add(-time.Hour)), released("1.1.0", now.Add(-48*time.Hour))}})
	if d.Outcome != OutcomeStarted || d.Status.TargetVersion != "1.1.0" {
		t.Fatalf("outcome %q, target %s; want 1.1.0 started", d.Outcome, d.Status.TargetVersion)
	}
	if msg := d.Events[len(d.Events)-1].Message; !strings.Contains(msg, "the newer 1.2.0 is eligible from 2026-12-02T01:00:00Z") {
		t.Errorf("UpdateStarting says %q; want it to name the newer version and when it is eligible", msg)
	}
}

// First sights are kept only with spec.minReleaseAge, of versions newer than the current one, the
// newest 20; a version a source stops announcing keeps its first sight.
func TestFirstSightsAreKept(t *testing.T) {
	if d := Decide(Input{Now: now, Config: config(current("1.0.0")), Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")}); d.Status.SeenVersions != nil {
		t.Errorf("without minReleaseAge: %v recorded", d.Status.SeenVersions)
	}
	cfg := config(current("1.0.0"), minAge(time.Hour))
	var many []string
	for i := range 25 {
		many = append(many, "1.1."+strconv.Itoa(i))
	}
	d := Decide(Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av(append(many[:10], "0.9.0", "latest")...)})
	if seen := d.Status.SeenVersions; len(seen) != 10 || seen[0].Version != "1.1.9" {
		t.Fatalf("seen %v, want the 10 versions above the current one, newest first", seen)
	}
	// Half an hour later 15 more arrive: the first sights of the first 10 stay, 10 of the new
	// ones take the places left, and 1.1.9 (gone from the sources meanwhile) keeps its sight.
	cfg = next(cfg, d)
	d = Decide(Input{Now: now.Add(30 * time.Minute), Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av(append(many[:9], many[10:]...)...)})
	seen := d.Status.SeenVersions
	if len(seen) != v1alpha1.MaxSeenVersions || seen[0].Version != "1.1.9" || !seen[0].FirstSeen.Time.Equal(now) || seen[10].Version != "1.1.24" {
		t.Fatalf("seen %v, want the oldest sights kept first", seen)
	}
	// An hour after the first sights those versions are old enough, and the newest of them starts
	// although newer ones keep coming.
	cfg = next(cfg, d)
	later := Decide(Input{Now: now.Add(time.Hour), Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av(many[:9]...)})
	if later.Outcome != OutcomeStarted || later.Status.TargetVersion != "1.1.8" {
		t.Errorf("an hour later: outcome %q, target %s", later.Outcome, later.Status.TargetVersion)
	}
	// Without minReleaseAge the first sights go.
	cfg.Spec.MinReleaseAge = nil
	if d := Decide(Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")}); d.Status.SeenVersions != nil {
		t.Errorf("minReleaseAge removed: %v kept", d.Status.SeenVersions)
	}
}
