package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

func TestIdleWaitsAndExplains(t *testing.T) {
	cases := []struct {
		name string
		// inputs
		cfg        *v1alpha1.RollingUpgradeConfig
		workload   *Workload
		candidates []Candidate
		// expected
		reason  string
		message string
	}{
		{
			name:       "a broken workload starts no rollout",
			cfg:        config(current("1.0.0")),
			workload:   deploymentAt("1.0.0", pending),
			candidates: av("1.1.0"),
			reason:     v1alpha1.ReasonWorkloadNotHealthy,
			message:    "Deployment web is not healthy (1/3 updated); 1.1.0 waits until it is",
		},
		{
			name:       "a workload still starting is recorded only once healthy",
			cfg:        config(),
			workload:   deploymentAt("1.0.0", pending),
			candidates: av("1.1.0"),
			reason:     v1alpha1.ReasonWorkloadNotHealthy,
			message:    "waiting for Deployment web to be healthy to record the version it runs (1/3 updated)",
		},
		{
			name:       "a tag that is not semver is ignored, naming its source",
			cfg:        config(current("1.0.0")),
			workload:   deploymentAt("1.0.0", healthy),
			candidates: av("latest"),
			reason:     v1alpha1.ReasonUpToDate,
			message:    "running 1.0.0; no newer eligible version; ignored, not semver: latest from ApplicationVersion/web",
		},
		{
			name:       "a suspended config says what is available",
			cfg:        config(current("1.0.0"), func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.Suspend = true }),
			workload:   deploymentAt("1.0.0", healthy),
			candidates: av("1.1.0"),
			reason:     v1alpha1.ReasonSuspended,
			message:    "spec.suspend is set: no automatic rollout; 1.1.0 is available but not applied",
		},
		{
			name:       "a config that writes back to Git first reads its record there",
			cfg:        config(current("1.0.0"), writesBack(false)),
			workload:   deploymentAt("1.0.0", healthy),
			candidates: av("1.1.0"),
			reason:     v1alpha1.ReasonAwaitingGitRecord,
			message:    "waiting to read this config's record in Git (GitWriteBack fleet, condition GitWriteBack): the versions that failed before count",
		},
		{
			name: "a GitFirst config whose last rollout was withdrawn waits, and says until when and why",
			cfg: config(current("1.0.0"), gitFirstConfig, func(c *v1alpha1.RollingUpgradeConfig) {
				c.Status.VersionHistory = []v1alpha1.VersionHistoryEntry{{Version: "1.1.0", Status: v1alpha1.ResultWithdrawn,
					AppliedAt: metav1.NewTime(now.Add(-15 * time.Minute)), Reason: "did not reach Deployment web from Git within 10m0s"}}
			}),
			workload:   deploymentAt("1.0.0", healthy),
			candidates: av("1.1.0"),
			reason:     v1alpha1.EventNotAppliedFromGit,
			message: "1.1.0 waits until 2026-12-01T02:05:00Z: 1.1.0, to be committed to shop/kustomization.yaml of GitWriteBack fleet, " +
				"did not reach Deployment web from Git within 10m0s; check that Git can be written and that the GitOps tool applies it",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(Input{Now: now, Config: tc.cfg, Workload: tc.workload, Candidates: tc.candidates})
			c := condition(d, meta.ReadyCondition)
			if c == nil || c.Reason != tc.reason || c.Message != tc.message {
				t.Errorf("Ready = %+v\nwant reason %s, message %q", c, tc.reason, tc.message)
			}
			if d.Annotations.TargetImage != "" {
				t.Errorf("a rollout started: %+v", d.Annotations)
			}
		})
	}
}

// TestBadInputStalls: every bad input gives Stalled with a specific reason and one Warning event,
// changes no annotation, and a second reconcile of the same state emits nothing.
func TestBadInputStalls(t *testing.T) {
	withCM := []Candidate{}
	cases := []struct {
		name string
		// inputs
		cfg      *v1alpha1.RollingUpgradeConfig
		workload *Workload
		problem  *Problem
		// expected
		reason string
		event  string
		says   string
	}{
		{
			name:     "an invalid version constraint stalls the config",
			cfg:      config(func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.VersionConstraint = ">=banana" }),
			workload: deploymentAt("1.0.0", healthy),
			reason:   "InvalidSpec",
			event:    "InvalidSpec",
			says:     "spec.versionConstraint",
		},
		{
			name:     "an invalid cron schedule stalls the config",
			cfg:      config(windowAt("61 * * * *", time.Hour)),
			workload: deploymentAt("1.0.0", healthy),
			reason:   "InvalidSpec",
			event:    "InvalidSpec",
			says:     "invalid cron schedule",
		},
		{
			name:     "a window that never opens stalls the config instead of the manager",
			cfg:      config(windowAt("0 3 30 2 *", time.Hour)),
			workload: deploymentAt("1.0.0", healthy),
			reason:   "InvalidSpec",
			event:    "InvalidSpec",
			says:     `the schedule has no fire time in the next five years: "0 3 30 2 *"`,
		},
		{
			name: "an unknown time zone stalls the config",
			cfg: config(windowAt("0 3 * * *", time.Hour), func(c *v1alpha1.RollingUpgradeConfig) {
				c.Spec.MaintenanceWindow.TimeZone = "Europe/Atlantis"
			}),
			workload: deploymentAt("1.0.0", healthy),
			reason:   "InvalidSpec",
			event:    "InvalidSpec",
			says:     `unknown time zone "Europe/Atlantis"`,
		},
		{
			name:   "a missing workload stalls the config",
			cfg:    config(),
			reason: "TargetNotFound",
			event:  "TargetNotFound",
			says:   "Deployment web not found in namespace shop",
		},
		{
			name:     "a missing container stalls the config",
			cfg:      config(),
			workload: &Workload{Description: "Deployment web", ContainerProblem: `container "api" not found in Deployment web (containers: web)`},
			reason:   "InvalidSpec",
			event:    "InvalidSpec",
			says:     `container "api" not found`,
		},
		{
			name: "containers that run different images stall the config, naming the field",
			cfg:  config(func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.Containers = []string{"web", "migrate"} }),
			workload: &Workload{Description: "Deployment web",
				ContainerProblem: "the containers it names run different images (web runs " + repo + ":1.1.0, migrate runs " + repo + ":1.0.0)"},
			reason: "InvalidSpec",
			event:  "InvalidSpec",
			says:   "spec.containers: the containers it names run different images",
		},
		{
			name:     "a workload running another repository stalls the config",
			cfg:      config(),
			workload: &Workload{Description: "Deployment web", Image: "ghcr.io/other/thing:1.0.0", Verdict: healthy},
			reason:   "InvalidSpec",
			event:    "InvalidSpec",
			says:     "not an image of spec.image ghcr.io/acme/web",
		},
		{
			name: "an unparsable update-started annotation stalls the health check",
			cfg: config(current("1.0.0"), func(c *v1alpha1.RollingUpgradeConfig) {
				c.Annotations[v1alpha1.UpdatePhaseAnnotation] = StepHealthCheck
				c.Annotations[v1alpha1.TargetImageAnnotation] = repo + ":1.1.0"
				c.Annotations[v1alpha1.UpdateStartedAnnotation] = "yesterday"
			}),
			workload: deploymentAt("1.1.0", healthy),
			reason:   "InvalidSpec",
			event:    "InvalidSpec",
			says:     `"yesterday" is not an RFC 3339 time`,
		},
		{
			name:     "a ConfigMap without the key stalls the config",
			cfg:      config(),
			workload: deploymentAt("1.0.0", healthy),
			problem:  &Problem{Reason: "InvalidSpec", Message: `ConfigMap app-versions has no key "web"`, Terminal: true},
			reason:   "InvalidSpec",
			event:    "InvalidSpec",
			says:     `has no key "web"`,
		},
		{
			name:     "a ConfigMap value that is no tag stalls the config",
			cfg:      config(),
			workload: deploymentAt("1.0.0", healthy),
			problem:  &Problem{Reason: "InvalidSpec", Message: `ConfigMap app-versions key "web": "{{ .Values.tag }}" is not an image tag`, Terminal: true},
			reason:   "InvalidSpec",
			event:    "InvalidSpec",
			says:     "is not an image tag",
		},
		{
			name:     "another field manager that keeps reverting the image stalls the config",
			cfg:      config(current("1.0.0")),
			workload: &Workload{Description: "Deployment web", Image: repo + ":1.0.0", Verdict: healthy, ImageReverts: 3, ImageRevertedBy: "kustomize-controller"},
			reason:   "FieldManagerConflict",
			event:    "FieldManagerConflict",
			says:     "field manager kustomize-controller changed the image of Deployment web back 3 times",
		},
		{
			name:     "an unknown update-phase annotation stalls the config",
			cfg:      config(func(c *v1alpha1.RollingUpgradeConfig) { c.Annotations[v1alpha1.UpdatePhaseAnnotation] = "Sometime" }),
			workload: deploymentAt("1.0.0", healthy),
			reason:   "InvalidSpec",
			event:    "InvalidSpec",
			says:     `unknown value "Sometime"`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Now: now, Config: tc.cfg, Workload: tc.workload, Candidates: withCM, SourceProblem: tc.problem}
			d := Decide(in)
			s := condition(d, meta.StalledCondition)
			if s == nil || s.Status != metav1.ConditionTrue || s.Reason != tc.reason || !strings.Contains(s.Message, tc.says) {
				t.Fatalf("Stalled = %+v, want reason %s saying %q", s, tc.reason, tc.says)
			}
			if r := condition(d, meta.ReadyCondition); r == nil || r.Status != metav1.ConditionFalse {
				t.Errorf("Ready = %+v", r)
			}
			if len(d.Events) != 1 || d.Events[0].Type != corev1.EventTypeWarning || d.Events[0].Reason != tc.event {
				t.Errorf("events = %+v, want one Warning %s", d.Events, tc.event)
			}
			if d.Annotations != AnnotationsOf(tc.cfg) {
				t.Errorf("annotations changed: %+v", d.Annotations)
			}
			in.Config = next(tc.cfg, d)
			if d2 := Decide(in); len(d2.Events) != 0 {
				t.Errorf("second reconcile emitted %s", reasons(d2.Events))
			}
		})
	}
}

// A workload takes one config: the younger one stalls with one Warning and changes nothing.
func TestAWorkloadManagedByAnotherConfigStalls(t *testing.T) {
	in := Input{Now: now, Config: config(), Workload: deploymentAt("1.0.0", healthy), ClaimedBy: "web-old"}
	d := Decide(in)
	if s := condition(d, meta.StalledCondition); s == nil || s.Reason != v1alpha1.EventInvalidSpec ||
		!strings.Contains(s.Message, "Deployment web is managed by RollingUpgradeConfig web-old") {
		t.Errorf("Stalled = %+v", s)
	}
	if got := reasons(d.Events); got != v1alpha1.EventInvalidSpec {
		t.Errorf("events = %s", got)
	}
	in.Config = next(in.Config, d)
	if d2 := Decide(in); len(d2.Events) != 0 {
		t.Errorf("second reconcile emitted %s", reasons(d2.Events))
	}
}
