package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/google/go-cmp/cmp"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// A config that checks images asks the registry before a start; what it answers decides: the
// version starts (by digest when pinned), waits for its image, or waits for the registry.
func TestTheImageIsLookedUpBeforeAStart(t *testing.T) {
	checks := func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.CheckImage = true }
	pins := func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.PinDigest = true }
	img := repo + ":1.1.0"
	for _, tc := range []struct {
		name        string
		mod         func(*v1alpha1.RollingUpgradeConfig)
		lookup      *ImageLookup
		wantLookUp  string
		wantTarget  string // the image started, "" for none
		wantReason  string
		wantWarning bool
	}{
		{name: "no check: no look-up", mod: func(*v1alpha1.RollingUpgradeConfig) {}, wantTarget: img, wantReason: v1alpha1.ReasonProgressing},
		{name: "checked: asks first", mod: checks, wantLookUp: img},
		{name: "an answer about another image: asks again", mod: checks, lookup: &ImageLookup{Image: repo + ":1.0.9", Digest: digest}, wantLookUp: img},
		{name: "there: starts by tag", mod: checks, lookup: &ImageLookup{Image: img, Digest: digest}, wantTarget: img, wantReason: v1alpha1.ReasonProgressing},
		{name: "pinned: starts by digest", mod: pins, lookup: &ImageLookup{Image: img, Digest: digest}, wantTarget: img + "@" + digest, wantReason: v1alpha1.ReasonProgressing},
		{name: "missing: waits", mod: pins, lookup: &ImageLookup{Image: img, NotFound: true}, wantReason: v1alpha1.ReasonImageNotFound, wantWarning: true},
		{name: "the registry fails: waits, the version not blamed", mod: checks, lookup: &ImageLookup{Image: img, Problem: "registry failed (503)"},
			wantReason: v1alpha1.EventRegistryUnavailable, wantWarning: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(current("1.0.0"), tc.mod)
			in := Input{Now: now, Config: cfg, Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0"), Image: tc.lookup}
			d := Decide(in)
			var want []Question
			if tc.wantLookUp != "" {
				want = []Question{ImageLookUp{Image: tc.wantLookUp}}
			}
			if diff := cmp.Diff(want, d.Needs); diff != "" {
				t.Fatalf("needs (-want +got):\n%s", diff)
			}
			if tc.wantLookUp != "" {
				return
			}
			if d.Annotations.TargetImage != tc.wantTarget {
				t.Errorf("started %q, want %q", d.Annotations.TargetImage, tc.wantTarget)
			}
			if r := condition(d, meta.ReadyCondition); r.Reason != tc.wantReason {
				t.Errorf("Ready %+v, want reason %s", r, tc.wantReason)
			}
			if tc.wantTarget == "" {
				if d.Status.Phase != v1alpha1.PhasePending || d.Status.TargetVersion != "1.1.0" || d.RequeueAfter != ImageRecheck {
					t.Errorf("phase %s, target %s, next look %s; want 1.1.0 Pending, looked up again in %s", d.Status.Phase, d.Status.TargetVersion, d.RequeueAfter, ImageRecheck)
				}
				// Looked up again, the same answer: no second event, nothing to write.
				again := Decide(Input{Now: now.Add(ImageRecheck), Config: next(cfg, d), Workload: in.Workload, Candidates: in.Candidates, Image: tc.lookup})
				if len(again.Events) != 0 || !apiequality(again.Status, next(cfg, d).Status) {
					t.Errorf("the same answer again: events %s", reasons(again.Events))
				}
			}
			if warned := strings.Contains(reasons(d.Events), tc.wantReason); warned != tc.wantWarning {
				t.Errorf("events %s, want a %s event: %v", reasons(d.Events), tc.wantReason, tc.wantWarning)
			}
		})
	}
}

// A pinned version is the version of its tag: it is current once healthy, and automatic updates
// go on from it.
func TestAPinnedVersionIsItsTag(t *testing.T) {
	pinned := repo + ":1.1.0@" + digest
	cfg := config(current("1.0.0"), inFlight(StepHealthCheck, pinned, now.Add(-time.Minute)), func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.PinDigest = true })
	d := Decide(Input{Now: now, Config: cfg, Workload: &Workload{Description: "Deployment web", Image: pinned, Verdict: healthy}})
	if d.Outcome != OutcomeHealthy || d.Status.CurrentVersion != "1.1.0" || d.Status.CurrentImage != pinned {
		t.Fatalf("outcome %q, current %s / %s; want 1.1.0 pinned", d.Outcome, d.Status.CurrentVersion, d.Status.CurrentImage)
	}
	later := Decide(Input{Now: now, Config: next(cfg, d), Workload: &Workload{Description: "Deployment web", Image: pinned, Verdict: healthy},
		Candidates: av("1.2.0")})
	if !needs(later, ImageLookUp{Image: repo + ":1.2.0"}) {
		t.Errorf("the next version: needs %v, want 1.2.0 looked up (automatic updates go on)", later.Needs)
	}
}
