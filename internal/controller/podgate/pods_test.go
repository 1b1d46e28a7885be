package podgate

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/health"
	"github.com/rollgate/rollgate/internal/inplace"
	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/kube/kubetest"
	"github.com/rollgate/rollgate/internal/rollout"
)

// A pod's change writes the template's own image, digest and all (a webhook may have pinned the
// template), and names it in the annotation; the plan's image only has to be rendered by it.
func TestAChangeWritesTheTemplatesImage(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	pinned := "db:1.1.0@sha256:" + strings.Repeat("a", 64)
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}, Spec: appsv1.StatefulSetSpec{
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: pinned}}}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db-0"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db:1.0.0"}}}}
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(pod).Build()
	plan := &inplace.Plan{Image: "db:1.1.0", Actions: []inplace.Action{{Kind: inplace.Change, Pod: "db-0"}}}
	if err := Move(ctx, c, &kube.Workload{StatefulSet: sts}, plan, []string{"db"}, clocktesting.NewFakePassiveClock(now)); err != nil {
		t.Fatal(err)
	}
	var got corev1.Pod
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), &got); err != nil {
		t.Fatal(err)
	}
	if img, note := got.Spec.Containers[0].Image, got.Annotations[v1alpha1.InPlaceChangedAnnotation]; img != pinned || note != "2026-12-01T02:00:00Z "+pinned {
		t.Errorf("pod runs %s, annotation %q; want the template's %s", img, note, pinned)
	}
}

// The drain grace and the readiness timeout count from the write that starts them, not from the
// reconcile's start: a slow reconcile (here 40s between its start and the writes) must not change
// a pod before it has really drained for its grace.
func TestPodMovesAreStampedWhenWritten(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	written := start.Add(40 * time.Second)
	sts := kubetest.DBStatefulSet(2, appsv1.OnDeleteStatefulSetStrategyType, "db:1.1.0", true)
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithStatusSubresource(&corev1.Pod{}).
		WithObjects(kubetest.GatedPod("db-0", "db:1.0.0", corev1.ConditionTrue), kubetest.GatedPod("db-1", "db:1.0.0", corev1.ConditionFalse)).Build()
	plan := &inplace.Plan{Image: "db:1.1.0", Actions: []inplace.Action{{Kind: inplace.Drain, Pod: "db-0"}, {Kind: inplace.Change, Pod: "db-1"}}}
	// The clock moves 10s between the writes: each is stamped with its own time.
	clk := &steppingClock{FakePassiveClock: clocktesting.NewFakePassiveClock(written), step: 10 * time.Second}
	if err := Move(ctx, c, &kube.Workload{StatefulSet: sts}, plan, []string{"db"}, clk); err != nil {
		t.Fatal(err)
	}
	var drained, changed corev1.Pod
	if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "db-0"}, &drained); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "db-1"}, &changed); err != nil {
		t.Fatal(err)
	}
	if gate := health.Condition(&drained, v1alpha1.InPlaceReadinessGate); gate == nil || !gate.LastTransitionTime.Time.Equal(written) {
		t.Errorf("db-0 drained: gate %+v, want its transition at %s, the write's time", gate, written)
	}
	if note, at := changed.Annotations[v1alpha1.InPlaceChangedAnnotation], written.Add(10*time.Second).Format(time.RFC3339); note != at+" db:1.1.0" {
		t.Errorf("db-1 changed: annotation %q, want its own write's time %s", note, at)
	}
}

// steppingClock reads its time, then moves it on by step.
type steppingClock struct {
	*clocktesting.FakePassiveClock
	step time.Duration
}

func (c *steppingClock) Now() time.Time {
	now := c.FakePassiveClock.Now()
	c.SetTime(now.Add(c.step))
	return now
}

// The plan is made of the config's step and the pods: the image they move to is the check's
// target (else the recorded image, else the template's), a change counts from the step's start
// (at rest: none), the pods done are the status's only for the same step and image, and each pod
// tells when and to what rollgate changed it and when its container started.
func TestInPlaceInputReadsTheStepAndThePods(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	started := now.Add(-time.Minute)
	sts := kubetest.DBStatefulSet(3, appsv1.OnDeleteStatefulSetStrategyType, "db:1.1.0", true)
	changed := kubetest.GatedPod("db-2", "db:1.1.0", corev1.ConditionFalse)
	changed.Annotations = map[string]string{v1alpha1.InPlaceChangedAnnotation: "2026-12-01T01:59:30Z db:1.1.0"}
	changed.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "db", Image: "db:1.1.0",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-20 * time.Second))}}}}
	pods := []corev1.Pod{*changed, *kubetest.GatedPod("db-1", "db:1.0.0", corev1.ConditionTrue)}
	config := func(step, target string, inPlace *v1alpha1.InPlaceStatus) *v1alpha1.RollingUpgradeConfig {
		c := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
			v1alpha1.UpdatePhaseAnnotation: step, v1alpha1.TargetImageAnnotation: target, v1alpha1.UpdateStartedAnnotation: started.Format(time.RFC3339)}},
			Spec:   v1alpha1.RollingUpgradeConfigSpec{Strategy: &v1alpha1.UpgradeStrategy{Type: v1alpha1.StrategyInPlace}},
			Status: v1alpha1.RollingUpgradeConfigStatus{CurrentImage: "db:1.0.0", InPlace: inPlace}}
		if step == "" {
			c.Annotations = nil
		}
		return c
	}
	record := func(at time.Time) *v1alpha1.InPlaceStatus {
		return &v1alpha1.InPlaceStatus{Image: "db:1.1.0", Started: &metav1.Time{Time: at}, Pods: []v1alpha1.InPlacePod{
			{Name: "db-2", State: string(inplace.StateChanging), Upgraded: true}, {Name: "db-1", State: string(inplace.StateDone)}}}
	}
	for _, tc := range []struct {
		name     string
		ruc      *v1alpha1.RollingUpgradeConfig
		template string
		image    string
		move     bool
		since    time.Time
		backward bool
		done     map[string]bool
	}{
		{name: "a check moves to its target", ruc: config(string(rollout.StepHealthCheck), "db:1.1.0", record(started)),
			image: "db:1.1.0", move: true, since: started, done: map[string]bool{"db-2": true, "db-1": false}},
		{name: "the status of another step is not this one's", ruc: config(string(rollout.StepHealthCheck), "db:1.1.0", record(started.Add(-time.Hour))),
			image: "db:1.1.0", move: true, since: started, done: map[string]bool{}},
		{name: "until the template has the target, nothing moves", ruc: config(string(rollout.StepHealthCheck), "db:1.1.0", nil), template: "db:1.0.0",
			image: "db:1.1.0", since: started, done: map[string]bool{}},
		{name: "a rollback moves back to the recorded image, in reverse", ruc: config(string(rollout.StepRollingBack), "", record(started)), template: "db:1.0.0",
			image: "db:1.0.0", move: true, since: started, backward: true, done: map[string]bool{}},
		{name: "a rollback before the renderer wrote the template: to the recorded image, not moving yet", ruc: config(string(rollout.StepRollingBack), "", nil),
			image: "db:1.0.0", since: started, backward: true, done: map[string]bool{}},
		{name: "at rest, to the recorded image, no change judged", ruc: config("", "", nil), template: "db:1.0.0",
			image: "db:1.0.0", move: true, since: now, done: map[string]bool{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := rollout.Container{Name: "db", Image: "db:1.1.0"}
			if tc.template != "" {
				c.Image = tc.template
			}
			in := InputOf(tc.ruc, sts, c, pods, now)
			if in.Image != tc.image || in.Move != tc.move || !in.Since.Equal(tc.since) || in.Backward != tc.backward || !maps.Equal(in.Done, tc.done) {
				t.Errorf("image %s, move %v, since %s, backward %v, done %v; want %s, %v, %s, %v, %v",
					in.Image, in.Move, in.Since, in.Backward, in.Done, tc.image, tc.move, tc.since, tc.backward, tc.done)
			}
		})
	}
	in := InputOf(config("", "", nil), sts, rollout.Container{Name: "db", Image: "db:1.1.0"}, pods, now)
	if p := in.Pods[0]; p.ChangedTo != "db:1.1.0" || !p.ChangedAt.Equal(now.Add(-30*time.Second)) || !p.StartedAt.Equal(now.Add(-20*time.Second)) ||
		p.Running != "db:1.1.0" || p.Gate == nil || *p.Gate {
		t.Errorf("db-2 read as %+v; want changed to db:1.1.0 30s ago, started 20s ago, its gate False", p)
	}
	if in := InputOf(&v1alpha1.RollingUpgradeConfig{Spec: config("", "", nil).Spec}, sts, rollout.Container{Name: "db", Image: "db:1.1.0"}, nil, now); in.Image != "db:1.1.0" {
		t.Errorf("nothing recorded: image %s, want the template's", in.Image)
	}
}
