package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// builds: tags of main by commit and Unix time, ordered by the time.
func builds(c *v1alpha1.RollingUpgradeConfig) {
	c.Spec.VersionConstraint = defaultConstraint // as the API server defaults it
	c.Spec.TagPolicy = &v1alpha1.TagPolicy{Numerical: &v1alpha1.TagOrder{}}
	c.Spec.FilterTags = &v1alpha1.TagFilter{Pattern: `^main-[0-9a-f]{7}-(?P<ts>[0-9]+)$`, Extract: "$ts"}
}

// Under a tag policy the engine chooses, records, pins, compares and refuses by the policy's
// reading of tags, as it does semver versions.
func TestTagPoliciesInTheEngine(t *testing.T) {
	const b100, b200, b300 = "main-aaaaaaa-100", "main-bbbbbbb-200", "main-ccccccc-300"
	cases := []decisionCase{
		{name: "a newer build starts", config: config(builds, current(b100)), workload: deploymentAt(b100, healthy),
			candidates: av(b200, "feature-x-999", "latest"), wantReason: v1alpha1.ReasonProgressing, wantTarget: repo + ":" + b200, wantCurrent: b100},
		{name: "a build the workload runs when first seen is its current version", config: config(builds), workload: deploymentAt(b100, healthy),
			wantReason: v1alpha1.ReasonUpToDate, wantCurrent: b100},
		{name: "a build recorded before the config had its policy is adopted", workload: deploymentAt(b100, healthy), candidates: av(b200),
			config: config(builds, func(c *v1alpha1.RollingUpgradeConfig) {
				c.Status.CurrentImage, c.Status.RecordedTarget = repo+":"+b100, &v1alpha1.RecordedTarget{Kind: v1alpha1.KindDeployment, Name: "web"}
			}),
			wantReason: v1alpha1.ReasonProgressing, wantTarget: repo + ":" + b200, wantCurrent: b100},
		{name: "a failed build is passed over for the newest before it", config: config(builds, current(b100), failedList(b300)),
			workload: deploymentAt(b100, healthy), candidates: av(b200, b300), wantReason: v1alpha1.ReasonProgressing,
			wantTarget: repo + ":" + b200, wantCurrent: b100, wantFailed: []string{b300}},
		{name: "numbers, the lowest the newest", workload: deploymentAt("5", healthy), candidates: av("7", "3", "latest"),
			config: config(current("5"), func(c *v1alpha1.RollingUpgradeConfig) {
				c.Spec.VersionConstraint = defaultConstraint
				c.Spec.TagPolicy = &v1alpha1.TagPolicy{Numerical: &v1alpha1.TagOrder{Order: v1alpha1.TagOrderDescending}}
			}),
			wantReason: v1alpha1.ReasonProgressing, wantTarget: repo + ":3", wantCurrent: "5"},
		{name: "an older build is no update", config: config(builds, current(b200)), workload: deploymentAt(b200, healthy),
			candidates: av(b100), wantReason: v1alpha1.ReasonUpToDate, wantCurrent: b200},
		{name: "a target set by hand that the policy does not read pins the workload", workload: deploymentAt("latest", healthy), candidates: av(b200),
			config: config(builds, current(b100), annotated(v1alpha1.TargetImageAnnotation, repo+":latest"), func(c *v1alpha1.RollingUpgradeConfig) {
				c.Status.CurrentImage = repo + ":latest" // it passed its check; the version stays the last one read
			}),
			wantReason: v1alpha1.ReasonPinned, wantTarget: repo + ":latest", wantCurrent: b100},
		{name: "tags the policy cannot read are named as ignored", workload: deploymentAt(b100, healthy),
			config: config(current(b100), func(c *v1alpha1.RollingUpgradeConfig) {
				c.Spec.VersionConstraint, c.Spec.TagPolicy = defaultConstraint, &v1alpha1.TagPolicy{Numerical: &v1alpha1.TagOrder{}}
				c.Status.CurrentVersion, c.Status.CurrentImage = "100", repo+":100"
			}),
			candidates: av("latest"), wantReason: v1alpha1.ReasonUpToDate, wantCurrent: "100", wantMessage: "ignored, not read by spec.tagPolicy: latest"},
		{name: "a pattern that does not compile stalls the config", workload: deploymentAt(b100, healthy), candidates: av(b200),
			config:     config(builds, current(b100), func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.FilterTags.Pattern = "main-([" }),
			wantReason: v1alpha1.EventInvalidSpec, wantCurrent: b100, wantMessage: "spec.filterTags.pattern: error parsing regexp"},
		{name: "an extract naming no group of the pattern stalls the config", workload: deploymentAt(b100, healthy), candidates: av(b200),
			config:     config(builds, current(b100), func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.FilterTags.Extract = "$time" }),
			wantReason: v1alpha1.EventInvalidSpec, wantCurrent: b100, wantMessage: "spec.filterTags.extract: $time: the pattern has no group of that name (it has ts)"},
		{name: "a semver constraint beside a tag policy stalls the config", workload: deploymentAt(b100, healthy), candidates: av(b200),
			config:     config(builds, current(b100), func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.VersionConstraint = ">=1.0.0" }),
			wantReason: v1alpha1.EventInvalidSpec, wantCurrent: b100, wantMessage: "spec.versionConstraint: a version constraint applies to semver tags"},
	}
	runDecisionCases(t, cases)
}

// A version forced down by hand, once healthy, puts the newer one it replaced on the failed list,
// by the config's order: the next look must not roll it straight back.
func TestAVersionForcedDownFailsTheNewerOne(t *testing.T) {
	countdown := func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.VersionConstraint = defaultConstraint
		c.Spec.TagPolicy = &v1alpha1.TagPolicy{Numerical: &v1alpha1.TagOrder{Order: v1alpha1.TagOrderDescending}}
	}
	cases := []struct {
		name          string
		rules         func(*v1alpha1.RollingUpgradeConfig)
		newer, forced string
	}{
		{name: "semver", rules: func(*v1alpha1.RollingUpgradeConfig) {}, newer: "1.2.0", forced: "1.1.0"},
		{name: "builds by time", rules: builds, newer: "main-bbbbbbb-200", forced: "main-aaaaaaa-100"},
		{name: "numbers, the lowest the newest", rules: countdown, newer: "3", forced: "5"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(tc.rules, current(tc.newer), inFlight(StepHealthCheck, repo+":"+tc.forced, now.Add(-time.Minute)), func(c *v1alpha1.RollingUpgradeConfig) {
				c.Status.Phase, c.Status.TargetVersion = v1alpha1.PhaseInProgress, tc.forced
			})
			d := Decide(Input{Now: now, Config: cfg, Workload: deploymentAt(tc.forced, healthy)})
			if d.Status.CurrentVersion != tc.forced || strings.Join(d.Status.FailedVersions, ",") != tc.newer {
				t.Fatalf("current %q, failed %v; want %s current and %s failed", d.Status.CurrentVersion, d.Status.FailedVersions, tc.forced, tc.newer)
			}
			again := Decide(Input{Now: now.Add(time.Minute), Config: next(cfg, d), Workload: deploymentAt(tc.forced, healthy), Candidates: av(tc.newer)})
			if again.Annotations.Step != StepIdle || again.Status.TargetVersion != "" {
				t.Errorf("the next look rolls %s out again: step %q, target %q", tc.newer, again.Annotations.Step, again.Status.TargetVersion)
			}
		})
	}
}

// decisionCase is one decision from a config, its workload and candidates, and what it must say.
type decisionCase struct {
	name       string
	config     *v1alpha1.RollingUpgradeConfig
	workload   *Workload
	candidates []Candidate
	// expected
	wantReason  string // of Ready
	wantTarget  string // the target-image annotation
	wantCurrent string
	wantFailed  []string
	wantMessage string // in Ready's message
}

// runDecisionCases decides each case and checks its Ready condition, target, current version and
// failed list.
func runDecisionCases(t *testing.T, cases []decisionCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(Input{Now: now, Config: tc.config, Workload: tc.workload, Candidates: tc.candidates})
			r := condition(d, meta.ReadyCondition)
			if r == nil || r.Reason != tc.wantReason || !strings.Contains(r.Message, tc.wantMessage) {
				t.Errorf("Ready %+v, want reason %s with %q", r, tc.wantReason, tc.wantMessage)
			}
			if d.Annotations.TargetImage != tc.wantTarget {
				t.Errorf("target %q, want %q", d.Annotations.TargetImage, tc.wantTarget)
			}
			if d.Status.CurrentVersion != tc.wantCurrent || strings.Join(d.Status.FailedVersions, ",") != strings.Join(tc.wantFailed, ",") {
				t.Errorf("current %q, failed %v; want %q, %v", d.Status.CurrentVersion, d.Status.FailedVersions, tc.wantCurrent, tc.wantFailed)
			}
		})
	}
}
