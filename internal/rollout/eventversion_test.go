package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// Each event names the version it is about, which a notification carries as its revision: the
// one seen, held, started, judged or asked for, and the one that runs once a rollback is done. A
// decision that tells of two versions names each in its own event.
func TestEachEventNamesTheVersionItIsAbout(t *testing.T) {
	inCheck := inFlight(StepHealthCheck, repo+":1.1.0", now.Add(-time.Minute))
	targeting := func(v string) func(*v1alpha1.RollingUpgradeConfig) {
		return func(c *v1alpha1.RollingUpgradeConfig) {
			c.Status.Phase, c.Status.TargetVersion = v1alpha1.PhaseInProgress, v
		}
	}
	cases := []struct {
		name       string
		config     *v1alpha1.RollingUpgradeConfig
		workload   *Workload
		candidates []Candidate
		want       []string // reason=version, in order
	}{
		{name: "a version seen and started", config: config(current("1.0.0")), workload: deploymentAt("1.0.0", healthy),
			candidates: av("1.1.0"), want: []string{"VersionAvailable=1.1.0", "UpdateStarting=1.1.0"}},
		{name: "a newer version seen while another is held", workload: deploymentAt("1.0.0", healthy), candidates: av("1.2.0"),
			config: config(current("1.0.0"), windowAt("0 22 * * *", time.Hour), func(c *v1alpha1.RollingUpgradeConfig) {
				c.Status.Phase, c.Status.TargetVersion, c.Status.AvailableVersion = v1alpha1.PhasePending, "1.1.0", "1.1.0"
			}),
			want: []string{"VersionAvailable=1.2.0", "VersionHeld=1.2.0"}},
		{name: "a healthy rollout", config: config(current("1.0.0"), inCheck, targeting("1.1.0")),
			workload: deploymentAt("1.1.0", healthy), want: []string{"UpdateComplete=1.1.0"}},
		{name: "a failed rollout that opens the circuit", workload: deploymentAt("1.1.0", failed),
			config: config(current("1.0.0"), inCheck, targeting("1.1.0"), func(c *v1alpha1.RollingUpgradeConfig) { c.Status.RollbackCount = 2 }),
			want:   []string{"UpdateRollback=1.1.0", "CircuitOpen=1.1.0"}},
		{name: "a rollback done names the version that runs again", workload: deploymentAt("1.0.0", healthy),
			config: config(current("1.0.0"), inFlight(StepRollingBack, "", now.Add(-time.Minute)), failedList("1.1.0")),
			want:   []string{"RollbackComplete=1.0.0"}},
		{name: "a version rejected while another is held", workload: deploymentAt("1.0.0", healthy), candidates: av("1.1.0"),
			config: config(current("1.0.0"), windowAt("0 22 * * *", time.Hour), func(c *v1alpha1.RollingUpgradeConfig) {
				c.Status.Phase, c.Status.TargetVersion, c.Status.AvailableVersion = v1alpha1.PhasePending, "1.1.0", "1.1.0"
			}, annotated(v1alpha1.RejectAnnotation, "1.2.0", v1alpha1.RejectedByAnnotation, "alice")),
			want: []string{"VersionRejected=1.2.0"}},
		{name: "a version retried while the current one runs", workload: deploymentAt("1.0.0", healthy),
			config: config(current("1.0.0"), failedList("1.1.0"), annotated(v1alpha1.RetryAnnotation, "1.1.0")),
			want:   []string{"VersionRetried=1.1.0"}},
		{name: "a failed version brought back through Git", workload: deploymentAt("1.1.0", healthy),
			config: config(current("1.0.0"), gitFirstConfig, failedBefore, func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.MaxRollbacks = 2 }),
			want:   []string{"FailedVersionFromGit=1.1.0", "CircuitOpen=1.1.0"}},
		{name: "a target set by hand that failed before, refused", workload: deploymentAt("1.0.0", healthy),
			config: config(current("1.0.0"), failedList("1.1.0"), annotated(v1alpha1.TargetImageAnnotation, repo+":1.1.0")),
			want:   []string{"TargetRefused=1.1.0"}},
		{name: "a failed version brought back through Git with the circuit open", workload: deploymentAt("1.1.0", healthy),
			config: config(current("1.0.0"), gitFirstConfig, failedBefore, func(c *v1alpha1.RollingUpgradeConfig) { c.Status.CircuitOpen = true }),
			want:   []string{"FailedVersionFromGit=1.1.0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(Input{Now: now, Config: tc.config, Workload: tc.workload, Candidates: tc.candidates})
			var got []string
			for _, e := range d.Events {
				got = append(got, e.Reason+"="+e.Version)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
