package rollout

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

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

// For a config that reads its registry anyway, a version no source dates counts from the build
// time of its image, read once (at most MaxCreatedReads a look) and recorded: built long ago it
// starts at once, built a moment ago it waits. A build time no release can have (1970, the future,
// none) or one the registry cannot tell leaves the first sight.
func TestTheImageBuildTimeDatesAVersion(t *testing.T) {
	checked := func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.CheckImage = true }
	in := func(cfg *v1alpha1.RollingUpgradeConfig, created map[string]CreatedAnswer, tags ...string) Input {
		return Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av(tags...), Created: created,
			Image: &ImageLookup{Image: repo + ":1.1.0", Digest: "sha256:" + strings.Repeat("a", 64)}}
	}
	cfg := config(current("1.0.0"), minAge(24*time.Hour), checked)
	if d := Decide(in(cfg, nil, "1.1.0")); !readsBuildTimes(d, "1.1.0") || d.Outcome != OutcomeNone {
		t.Fatalf("a young undated version: reads %v, outcome %q; want its build time read first", d.Needs, d.Outcome)
	}
	if d := Decide(in(config(current("1.0.0"), minAge(24*time.Hour)), nil, "1.1.0")); !needs(d) {
		t.Errorf("a config that does not read its registry: reads %v", d.Needs)
	}
	var many []string
	for i := range 5 {
		many = append(many, "1.1."+strconv.Itoa(i))
	}
	if d := Decide(in(cfg, nil, many...)); !readsBuildTimes(d, "1.1.4", "1.1.3", "1.1.2") {
		t.Errorf("five young versions: reads %v, want the newest %d", d.Needs, MaxCreatedReads)
	}
	old := cfg.DeepCopy()
	old.Status.SeenVersions = []v1alpha1.SeenVersion{{Version: "1.1.0", FirstSeen: metav1.NewTime(now.Add(-48 * time.Hour))}}
	if d := Decide(in(old, nil, many...)); !readsBuildTimes(d, "1.1.4", "1.1.3", "1.1.2") {
		t.Errorf("five versions, 1.1.0 old enough: reads %v, want only newer ones", d.Needs)
	}
	old.Status.SeenVersions = append(old.Status.SeenVersions, v1alpha1.SeenVersion{Version: "1.1.3", FirstSeen: metav1.NewTime(now.Add(-48 * time.Hour))})
	if d := Decide(in(old, nil, many...)); !readsBuildTimes(d, "1.1.4") {
		t.Errorf("1.1.3 old enough: reads %v, want 1.1.4 alone", d.Needs)
	}

	for _, tc := range []struct {
		name    string
		answer  CreatedAnswer
		started bool
		note    string // in Ready's message while it waits
		built   *time.Time
	}{
		{name: "built two days ago: starts", answer: CreatedAnswer{At: now.Add(-48 * time.Hour)}, started: true, built: ptr.To(now.Add(-48 * time.Hour))},
		{name: "built an hour ago: waits from then", answer: CreatedAnswer{At: now.Add(-time.Hour)},
			note: "1.1.0 is eligible from 2026-12-02T01:00:00Z: built 2026-12-01T01:00:00Z", built: ptr.To(now.Add(-time.Hour))},
		{name: "a reproducible build's 1970", answer: CreatedAnswer{At: time.Unix(0, 0)}, note: "first seen by rollgate 2026-12-01T02:00:00Z"},
		{name: "a build time in the future", answer: CreatedAnswer{At: now.Add(time.Hour)}, note: "first seen by rollgate"},
		{name: "no build time", answer: CreatedAnswer{}, note: "first seen by rollgate"},
		{name: "the registry cannot tell", answer: CreatedAnswer{Problem: "unreachable"}, note: "first seen by rollgate"},
	} {
		d := Decide(in(cfg, map[string]CreatedAnswer{"1.1.0": tc.answer}, "1.1.0"))
		r := condition(d, meta.ReadyCondition)
		switch {
		case tc.started && d.Outcome != OutcomeStarted:
			t.Errorf("%s: outcome %q, Ready %+v; want a start", tc.name, d.Outcome, r)
		case !tc.started && (d.Outcome != OutcomeNone || r.Reason != v1alpha1.ReasonAwaitingReleaseAge || !strings.Contains(r.Message, tc.note)):
			t.Errorf("%s: outcome %q, Ready %+v; want it held with %q", tc.name, d.Outcome, r, tc.note)
		}
		seen := d.Status.SeenVersions
		if len(seen) != 1 || !seen[0].ImageRead || (tc.built == nil) != (seen[0].ImageCreated == nil) ||
			(tc.built != nil && !seen[0].ImageCreated.Time.Equal(*tc.built)) {
			t.Errorf("%s: recorded %+v, want the read and the build time %v", tc.name, seen, tc.built)
		}
		// Read once: the next look asks nothing, and judges by what was recorded.
		if again := Decide(in(next(cfg, d), nil, "1.1.0")); !tc.started && (!needs(again) || again.Outcome != OutcomeNone || len(again.Events) != 0) {
			t.Errorf("%s, the next look: reads %v, outcome %q, events %s", tc.name, again.Needs, again.Outcome, reasons(again.Events))
		}
	}
}

// readsBuildTimes: d needs the build times of tags, and nothing else.
func readsBuildTimes(d Decision, tags ...string) bool {
	return needs(d, BuildTimes{Tags: tags})
}

// needs: d needs exactly want (nothing, when want is empty).
func needs(d Decision, want ...Question) bool {
	return cmp.Equal(want, d.Needs)
}
