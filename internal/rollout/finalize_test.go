package rollout

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

func deletedAt(t time.Time, policy v1alpha1.DeletionPolicy) func(*v1alpha1.RollingUpgradeConfig) {
	return func(c *v1alpha1.RollingUpgradeConfig) {
		c.DeletionTimestamp = &metav1.Time{Time: t}
		c.Spec.DeletionPolicy = policy
	}
}

func TestFinalize(t *testing.T) {
	inCheck := inFlight(StepHealthCheck, repo+":1.1.0", now.Add(-time.Minute))
	cases := []struct {
		name string
		// inputs
		cfg       *v1alpha1.RollingUpgradeConfig
		workload  *Workload
		claimedBy string
		// expected
		wantRelease  bool
		wantWorkload bool
		wantRender   string
		wantEvents   string
	}{
		{name: "a version in flight goes back to the current image before the config goes",
			cfg: config(current("1.0.0"), inCheck, deletedAt(now, v1alpha1.DeletionRollback)), workload: deploymentAt("1.1.0", pending),
			wantRender: repo + ":1.0.0"},
		{name: "once the workload runs the current image again it is released",
			cfg: config(current("1.0.0"), inCheck, deletedAt(now, v1alpha1.DeletionRollback)), workload: deploymentAt("1.0.0", pending),
			wantRelease: true, wantWorkload: true, wantRender: repo + ":1.0.0"},
		{name: "the default policy is Rollback",
			cfg: config(current("1.0.0"), inCheck, deletedAt(now, "")), workload: deploymentAt("1.1.0", pending),
			wantRender: repo + ":1.0.0"},
		{name: "a rollback that does not land within the health timeout releases the workload as it is, with a Warning",
			cfg: config(current("1.0.0"), inCheck, deletedAt(now.Add(-11*time.Minute), v1alpha1.DeletionRollback)), workload: deploymentAt("1.1.0", pending),
			wantRelease: true, wantWorkload: true, wantRender: repo + ":1.0.0", wantEvents: v1alpha1.EventRollbackStuck},
		{name: "Keep releases a version in flight as it is",
			cfg: config(current("1.0.0"), inCheck, deletedAt(now, v1alpha1.DeletionKeep)), workload: deploymentAt("1.1.0", pending),
			wantRelease: true, wantWorkload: true},
		{name: "nothing in flight: released at once",
			cfg: config(current("1.0.0"), deletedAt(now, v1alpha1.DeletionRollback)), workload: deploymentAt("1.0.0", healthy),
			wantRelease: true, wantWorkload: true},
		{name: "a workload gone: nothing to release",
			cfg: config(current("1.0.0"), inCheck, deletedAt(now, v1alpha1.DeletionRollback)), wantRelease: true, wantRender: repo + ":1.0.0"},
		{name: "a config that never managed the workload leaves it alone",
			cfg: config(current("1.0.0"), inCheck, deletedAt(now, v1alpha1.DeletionRollback)), workload: deploymentAt("1.1.0", pending),
			claimedBy: "web-old", wantRelease: true, wantRender: repo + ":1.0.0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := Finalize(Input{Now: now, Config: tc.cfg, Workload: tc.workload, ClaimedBy: tc.claimedBy})
			if f.Release != tc.wantRelease {
				t.Errorf("release = %v, want %v", f.Release, tc.wantRelease)
			}
			if f.Workload != tc.wantWorkload {
				t.Errorf("release the workload = %v, want %v", f.Workload, tc.wantWorkload)
			}
			if !f.Release && (f.RequeueAfter <= 0 || f.RequeueAfter > HealthPoll) {
				t.Errorf("requeue after %s", f.RequeueAfter)
			}
			if got := reasons(f.Events); got != tc.wantEvents {
				t.Errorf("events = %s, want %s", got, tc.wantEvents)
			}
			if got, _ := RenderImage(tc.cfg, now); got != tc.wantRender {
				t.Errorf("renders %q, want %q", got, tc.wantRender)
			}
		})
	}
}
