package rollout

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// kstatusOf computes what kstatus (Flux health checks, kpt, cli-utils' status poller) makes of a
// config carrying the decision.
func kstatusOf(t *testing.T, cfg *v1alpha1.RollingUpgradeConfig) *status.Result {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(&unstructured.Unstructured{Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Every phase maps to the kstatus a GitOps tool should act on: resting phases (Completed, Pending,
// Idle, Suspended) are Current, a rollout or rollback in flight is InProgress, and what needs a
// human (open circuit, bad spec, missing target) is Failed.
func TestConditionsFollowKstatusInEveryPhase(t *testing.T) {
	started := now.Add(-time.Minute)
	for _, tc := range []struct {
		name      string
		in        Input
		wantPhase v1alpha1.Phase
		want      status.Status
	}{
		{"first sight of a healthy workload, nothing newer: Idle",
			Input{Config: config(), Workload: deploymentAt("1.0.0", healthy)}, v1alpha1.PhaseIdle, status.CurrentStatus},
		{"waiting for the workload to be healthy before recording it",
			Input{Config: config(), Workload: deploymentAt("1.0.0", pending)}, v1alpha1.PhaseIdle, status.InProgressStatus},
		{"a version held for the window: Pending is a resting state",
			Input{Config: config(current("1.0.0"), windowAt("0 12 * * *", time.Hour)), Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")},
			v1alpha1.PhasePending, status.CurrentStatus},
		{"a held version whose window opened on an unhealthy workload is no longer Pending",
			Input{Config: config(current("1.0.0"), func(c *v1alpha1.RollingUpgradeConfig) {
				c.Status.Phase, c.Status.TargetVersion = v1alpha1.PhasePending, "1.1.0"
			}),
				Workload: deploymentAt("1.0.0", pending), Candidates: av("1.1.0")},
			v1alpha1.PhaseIdle, status.InProgressStatus},
		{"a rollout starts",
			Input{Config: config(current("1.0.0")), Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")},
			v1alpha1.PhaseInProgress, status.InProgressStatus},
		{"a health check under way",
			Input{Config: config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", started)), Workload: deploymentAt("1.1.0", pending)},
			v1alpha1.PhaseInProgress, status.InProgressStatus},
		{"a rollout succeeds: Completed",
			Input{Config: config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", started)), Workload: deploymentAt("1.1.0", healthy)},
			v1alpha1.PhaseCompleted, status.CurrentStatus},
		{"a rollout fails: RollingBack",
			Input{Config: config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", started)), Workload: deploymentAt("1.1.0", failed)},
			v1alpha1.PhaseRollingBack, status.InProgressStatus},
		{"a rollback under way",
			Input{Config: config(current("1.0.0"), inFlight(StepRollingBack, "", started)), Workload: deploymentAt("1.1.0", pending)},
			v1alpha1.PhaseRollingBack, status.InProgressStatus},
		{"a rollback done, circuit closed",
			Input{Config: config(current("1.0.0"), inFlight(StepRollingBack, "", started)), Workload: deploymentAt("1.0.0", healthy)},
			v1alpha1.PhaseIdle, status.CurrentStatus},
		{"a rollback done that opened the circuit: Failed",
			Input{Config: config(current("1.0.0"), inFlight(StepRollingBack, "", started), func(c *v1alpha1.RollingUpgradeConfig) {
				c.Status.CircuitOpen, c.Status.RollbackCount = true, 3
			}), Workload: deploymentAt("1.0.0", healthy)},
			v1alpha1.PhaseFailed, status.FailedStatus},
		{"a new version while the circuit is open: Failed",
			Input{Config: config(current("1.0.0"), func(c *v1alpha1.RollingUpgradeConfig) { c.Status.CircuitOpen, c.Status.RollbackCount = true, 3 }),
				Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.2.0")},
			v1alpha1.PhaseFailed, status.FailedStatus},
		{"suspended",
			Input{Config: config(current("1.0.0"), func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.Suspend = true }),
				Workload: deploymentAt("1.0.0", healthy), Candidates: av("1.1.0")},
			v1alpha1.PhaseSuspended, status.CurrentStatus},
		{"an invalid constraint: Failed",
			Input{Config: config(current("1.0.0"), func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.VersionConstraint = "newest please" }),
				Workload: deploymentAt("1.0.0", healthy)},
			v1alpha1.PhaseIdle, status.FailedStatus},
		{"a missing workload: Failed",
			Input{Config: config(current("1.0.0"))}, v1alpha1.PhaseIdle, status.FailedStatus},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now = now
			d := Decide(tc.in)
			cfg := next(tc.in.Config, d)
			if cfg.Status.Phase != tc.wantPhase {
				t.Errorf("phase %s, want %s", cfg.Status.Phase, tc.wantPhase)
			}
			res := kstatusOf(t, cfg)
			if res.Status != tc.want {
				t.Errorf("kstatus %s (%s), want %s; conditions %+v", res.Status, res.Message, tc.want, cfg.Status.Conditions)
			}
			// Each condition records the generation it was computed for.
			for _, c := range cfg.Status.Conditions {
				if c.ObservedGeneration != cfg.Generation {
					t.Errorf("condition %s has observedGeneration %d, want %d", c.Type, c.ObservedGeneration, cfg.Generation)
				}
			}
		})
	}
}

// A spec change the controller has not seen yet is InProgress, whatever the old conditions say.
func TestUnobservedGenerationIsInProgress(t *testing.T) {
	d := Decide(Input{Now: now, Config: config(current("1.0.0")), Workload: deploymentAt("1.0.0", healthy)})
	cfg := next(config(current("1.0.0")), d)
	if res := kstatusOf(t, cfg); res.Status != status.CurrentStatus {
		t.Fatalf("settled config is %s", res.Status)
	}
	cfg.Generation++
	if res := kstatusOf(t, cfg); res.Status != status.InProgressStatus {
		t.Errorf("config with an unobserved generation is %s, want InProgress", res.Status)
	}
}
