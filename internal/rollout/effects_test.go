package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/inplace"
)

// Each decision says what follows its writes: pods let go when no upgrade moves them on, slots
// given back at rest, the in-place plan carried out only while a step goes on, stuck pods deleted
// in a rollback.
func TestEffectsFollowTheDecision(t *testing.T) {
	plan := &inplace.Plan{Image: repo + ":1.1.0", Verdict: pending}
	inPlace := func(w *Workload, release bool) *Workload {
		w.InPlace, w.ReleaseGates = plan, release
		return w
	}
	stuck := deploymentAt("1.0.0", pending)
	stuck.OrderedReadyStatefulSet, stuck.GenerationObserved = true, true
	for _, tc := range []struct {
		name     string
		config   *v1alpha1.RollingUpgradeConfig
		workload *Workload
		want     Effects
	}{
		{name: "at rest, nothing to move: the slots go back",
			config: config(current("1.0.0")), workload: deploymentAt("1.0.0", healthy),
			want: Effects{ReleaseSlots: true}},
		{name: "no workload: the slots go back, nothing else",
			config: config(current("1.0.0")),
			want:   Effects{ReleaseSlots: true}},
		{name: "a check in flight with an in-place plan: its pods move",
			config:   config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", now.Add(-time.Minute))),
			workload: inPlace(deploymentAt("1.1.0", pending), false),
			want:     Effects{MovePods: true}},
		{name: "pods no upgrade moves on: let go, not moved",
			config:   config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", now.Add(-time.Minute))),
			workload: inPlace(deploymentAt("1.1.0", pending), true),
			want:     Effects{LetGo: true}},
		{name: "a check that ends: no move until the next look plans for the rest, the slots go back",
			config:   config(current("1.0.0"), inFlight(StepHealthCheck, repo+":1.1.0", now.Add(-time.Minute))),
			workload: inPlace(deploymentAt("1.1.0", healthy), false),
			want:     Effects{ReleaseSlots: true}},
		{name: "a rollback of an OrderedReady StatefulSet: its stuck pods go",
			config:   config(current("1.0.0"), inFlight(StepRollingBack, "", now.Add(-time.Minute))),
			workload: stuck,
			want:     Effects{DeleteStuckPods: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(Input{Now: now, Config: tc.config, Workload: tc.workload})
			if diff := cmp.Diff(tc.want, d.Effects); diff != "" {
				t.Errorf("effects (-want +got):\n%s\noutcome %q, phase %s", diff, d.Outcome, d.Status.Phase)
			}
		})
	}
}

// Pods that could not be let go keep their record for the retry: the status keeps status.inPlace
// unless the decision has its own, and a decision that drops the record of its target is not
// written at all.
func TestKeepingPods(t *testing.T) {
	db := &v1alpha1.RecordedTarget{Kind: v1alpha1.KindStatefulSet, Name: "db"}
	web := &v1alpha1.RecordedTarget{Kind: v1alpha1.KindDeployment, Name: "web"}
	record := &v1alpha1.InPlaceStatus{Image: repo + ":1.1.0", Started: &metav1.Time{Time: now}}
	newer := &v1alpha1.InPlaceStatus{Image: repo + ":1.2.0", Started: &metav1.Time{Time: now}}
	old := v1alpha1.RollingUpgradeConfigStatus{RecordedTarget: db, InPlace: record}
	for _, tc := range []struct {
		name      string
		decided   v1alpha1.RollingUpgradeConfigStatus
		want      v1alpha1.RollingUpgradeConfigStatus
		wantWrite bool
	}{
		{name: "the record dropped: kept", decided: v1alpha1.RollingUpgradeConfigStatus{RecordedTarget: db},
			want: old, wantWrite: true},
		{name: "a record of its own: written", decided: v1alpha1.RollingUpgradeConfigStatus{RecordedTarget: db, InPlace: newer},
			want: v1alpha1.RollingUpgradeConfigStatus{RecordedTarget: db, InPlace: newer}, wantWrite: true},
		{name: "a retarget: not written", decided: v1alpha1.RollingUpgradeConfigStatus{RecordedTarget: web},
			want: v1alpha1.RollingUpgradeConfigStatus{RecordedTarget: web}},
		{name: "the target's record dropped: not written", decided: v1alpha1.RollingUpgradeConfigStatus{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, write := Decision{Status: tc.decided}.KeepingPods(&old)
			if write != tc.wantWrite {
				t.Errorf("write %v, want %v", write, tc.wantWrite)
			}
			if diff := cmp.Diff(tc.want, got.Status); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}
