package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/health"
)

var sha = "sha256:" + strings.Repeat("d", 64)

// Image identity: what was rendered and what counts as the current version.
func TestImageIdentity(t *testing.T) {
	cases := []struct {
		name string
		// inputs
		cfg        *v1alpha1.RollingUpgradeConfig
		workload   *Workload
		candidates []Candidate
		// expected
		wantCurrentVersion string
		wantCurrentImage   string
		wantTarget         string // the target-image annotation decided
		wantReason         string // of Ready
		wantSays           string // in Ready's message
	}{
		{
			name:               "a digest pinned by an admission webhook completes a healthy rollout instead of burning it",
			cfg:                config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", now.Add(-time.Minute))),
			workload:           &Workload{Description: "Deployment web", Image: repo + ":1.1.0@" + sha, Verdict: healthy},
			wantCurrentVersion: "1.1.0", wantCurrentImage: repo + ":1.1.0", wantTarget: repo + ":1.1.0",
			wantReason: v1alpha1.EventUpdateComplete,
		},
		{
			name:               "a digest-only target that completes leaves the current version semver",
			cfg:                config(current("1.0.0"), inFlight(StepHealthCheck, repo+"@"+sha, now.Add(-time.Minute))),
			workload:           &Workload{Description: "Deployment web", Image: repo + "@" + sha, Verdict: healthy},
			wantCurrentVersion: "1.0.0", wantCurrentImage: repo + "@" + sha, wantTarget: repo + "@" + sha,
			wantReason: v1alpha1.EventUpdateComplete,
		},
		{
			name: "removing a digest pin resumes automatic updates from the last semver version",
			cfg: config(func(c *v1alpha1.RollingUpgradeConfig) {
				c.Status.CurrentVersion, c.Status.CurrentImage = "1.0.0", repo+"@"+sha
			}),
			workload:           &Workload{Description: "Deployment web", Image: repo + "@" + sha, Verdict: healthy},
			candidates:         av("1.1.0"),
			wantCurrentVersion: "1.0.0", wantCurrentImage: repo + "@" + sha, wantTarget: repo + ":1.1.0",
			wantReason: v1alpha1.ReasonProgressing,
		},
		{
			name: "a status recorded with a digest as its version (older rollgate) is not stalled for good",
			cfg: config(func(c *v1alpha1.RollingUpgradeConfig) {
				c.Status.CurrentVersion, c.Status.CurrentImage = sha, repo+"@"+sha
			}),
			workload:           &Workload{Description: "Deployment web", Image: repo + "@" + sha, Verdict: healthy},
			candidates:         av("1.1.0"),
			wantCurrentVersion: sha, wantCurrentImage: repo + "@" + sha,
			wantReason: v1alpha1.ReasonUnversioned, wantSays: "no automatic update until a person picks a version",
		},
		{
			name:             "a workload adopted on a non-semver tag gets no automatic update, which could be a downgrade",
			cfg:              config(),
			workload:         deploymentAt("main-abc1234", healthy),
			candidates:       av("1.1.0"),
			wantCurrentImage: repo + ":main-abc1234",
			wantReason:       v1alpha1.ReasonUnversioned,
			wantSays:         "Deployment web runs ghcr.io/acme/web:main-abc1234, which has no semver version to compare with",
		},
		{
			name:               "a workload adopted on a semver tag pinned by digest records the tag's version",
			cfg:                config(),
			workload:           &Workload{Description: "Deployment web", Image: repo + ":1.0.0@" + sha, Verdict: healthy},
			wantCurrentVersion: "1.0.0", wantCurrentImage: repo + ":1.0.0@" + sha,
			wantReason: v1alpha1.ReasonUpToDate,
		},
		{
			name: "a rollback to an image that gained a digest completes",
			cfg:  config(current("1.0.0"), inFlight(StepRollingBack, "", now.Add(-time.Minute))),
			workload: &Workload{Description: "Deployment web", Image: repo + ":1.0.0@" + sha,
				Verdict: health.Verdict{State: health.Healthy, Message: "3/3"}},
			wantCurrentVersion: "1.0.0", wantCurrentImage: repo + ":1.0.0",
			wantReason: v1alpha1.EventRollbackComplete,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(Input{Now: now, Config: tc.cfg, Workload: tc.workload, Candidates: tc.candidates})
			if d.Status.CurrentVersion != tc.wantCurrentVersion {
				t.Errorf("currentVersion = %q, want %q", d.Status.CurrentVersion, tc.wantCurrentVersion)
			}
			if d.Status.CurrentImage != tc.wantCurrentImage {
				t.Errorf("currentImage = %q, want %q", d.Status.CurrentImage, tc.wantCurrentImage)
			}
			if d.Annotations.TargetImage != tc.wantTarget {
				t.Errorf("target-image = %q, want %q", d.Annotations.TargetImage, tc.wantTarget)
			}
			r := condition(d, meta.ReadyCondition)
			if r == nil || r.Reason != tc.wantReason {
				t.Fatalf("Ready = %+v, want reason %s", r, tc.wantReason)
			}
			if !strings.Contains(r.Message, tc.wantSays) {
				t.Errorf("Ready message = %q, want it to say %q", r.Message, tc.wantSays)
			}
		})
	}
}

// A registry move (spec.image changed) keeps the record: a rollback can still return to the image
// of the old registry, instead of RollingBack for ever.
func TestARegistryMoveKeepsRollbacksPossible(t *testing.T) {
	const moved = "registry.acme.example/web"
	cfg := config(current("1.0.0"), inFlight(StepRollingBack, "", now.Add(-time.Minute)), func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.Image = moved
	})
	if img, _ := RenderImage(cfg, now); img != repo+":1.0.0" {
		t.Fatalf("renders %q, want the old registry's %s:1.0.0", img, repo)
	}
	d := Decide(Input{Now: now, Config: cfg, Workload: &Workload{Description: "Deployment web", Image: moved + ":1.1.0", Verdict: pending}})
	if d.Status.Phase != v1alpha1.PhaseRollingBack || condition(d, meta.StalledCondition) != nil {
		t.Errorf("while returning: phase %s, conditions %+v", d.Status.Phase, d.Status.Conditions)
	}
	d = Decide(Input{Now: now, Config: next(cfg, d), Workload: deploymentAt("1.0.0", healthy)})
	if got := reasons(d.Events); got != v1alpha1.EventRollbackComplete {
		t.Errorf("events = %s, want RollbackComplete", got)
	}
}
