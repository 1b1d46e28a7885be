package controllers

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/controllers/health"
	"github.com/rollgate/rollgate/controllers/inplace"
	"github.com/rollgate/rollgate/controllers/rollout"
)

// dbStatefulSet is StatefulSet shop/db: replicas pods labelled app=db on img, updated by update,
// its pod template with rollgate's readiness gate when gated.
func dbStatefulSet(replicas int32, update appsv1.StatefulSetUpdateStrategyType, img string, gated bool) *appsv1.StatefulSet {
	labels := map[string]string{"app": "db"}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db", Generation: 1}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
		UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: update},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: img}}}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: replicas}}
	if gated {
		sts.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: v1alpha1.InPlaceReadinessGate}}
	}
	return sts
}

// gatedPod is pod shop/<name> of dbStatefulSet on img, with rollgate's readiness gate, its
// condition gate ("": none yet).
func gatedPod(name, img string, gate corev1.ConditionStatus) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: map[string]string{"app": "db"}},
		Spec: corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: v1alpha1.InPlaceReadinessGate}},
			Containers: []corev1.Container{{Name: "db", Image: img}}}}
	if gate != "" {
		p.Status.Conditions = []corev1.PodCondition{{Type: v1alpha1.InPlaceReadinessGate, Status: gate}}
	}
	return p
}

// A StatefulSet that stops being upgraded in place (here it left OnDelete) gets every pod that
// carries rollgate's readiness gate back in its Service, whatever the pod runs: none is left out
// of its endpoints for ever.
func TestPodsAreReleasedWhenTheUpgradeStops(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	sts := dbStatefulSet(2, appsv1.RollingUpdateStatefulSetStrategyType, "db:1.0.0", true)
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithStatusSubresource(&corev1.Pod{}).
		WithObjects(sts, gatedPod("db-0", "db:1.0.0", ""), gatedPod("db-1", "db:1.1.0", corev1.ConditionFalse)).Build()
	ruc := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}, Spec: v1alpha1.RollingUpgradeConfigSpec{
		TargetRef: v1alpha1.WorkloadReference{Kind: v1alpha1.KindStatefulSet, Name: "db"},
		Strategy:  &v1alpha1.UpgradeStrategy{Type: v1alpha1.StrategyInPlace}}}
	w := &workload{statefulSet: sts}
	f, err := w.facts(ctx, c, ruc, now)
	if err != nil {
		t.Fatal(err)
	}
	if f.Verdict.State != health.Blocked || f.Verdict.Reason != health.ReasonNotOnDelete || !w.releaseGates {
		t.Fatalf("a StatefulSet off OnDelete: verdict %+v, release %v", f.Verdict, w.releaseGates)
	}
	if err := releasePods(ctx, c, c, w, now); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"db-0", "db-1"} {
		var p corev1.Pod
		if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: name}, &p); err != nil {
			t.Fatal(err)
		}
		if !gateTrue(&p) {
			t.Errorf("%s: conditions %+v, want the gate's True", name, p.Status.Conditions)
		}
	}
	// The same StatefulSet with the strategy gone from the config: its pods are released too.
	ruc.Spec.Strategy = nil
	w = &workload{statefulSet: sts}
	if _, err := w.facts(ctx, c, ruc, now); err != nil || !w.releaseGates {
		t.Errorf("strategy RollingUpdate over a template with the gate: release %v (%v)", w.releaseGates, err)
	}
}

// A pod's change writes the template's own image, digest and all (a webhook may have pinned the
// template), and names it in the annotation; the plan's image only has to be rendered by it.
func TestAChangeWritesTheTemplatesImage(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	pinned := "db:1.1.0@sha256:" + strings.Repeat("a", 64)
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}, Spec: appsv1.StatefulSetSpec{
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: pinned}}}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db-0"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db:1.0.0"}}}}
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(pod).Build()
	w := &workload{statefulSet: sts, inPlace: &inplace.Plan{Image: "db:1.1.0", Actions: []inplace.Action{{Kind: inplace.Change, Pod: "db-0"}}}}
	if err := moveInPlace(ctx, c, w, "db", clocktesting.NewFakePassiveClock(now)); err != nil {
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
	sts := dbStatefulSet(2, appsv1.OnDeleteStatefulSetStrategyType, "db:1.1.0", true)
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithStatusSubresource(&corev1.Pod{}).
		WithObjects(gatedPod("db-0", "db:1.0.0", corev1.ConditionTrue), gatedPod("db-1", "db:1.0.0", corev1.ConditionFalse)).Build()
	w := &workload{statefulSet: sts, inPlace: &inplace.Plan{Image: "db:1.1.0",
		Actions: []inplace.Action{{Kind: inplace.Drain, Pod: "db-0"}, {Kind: inplace.Change, Pod: "db-1"}}}}
	// The clock moves 10s between the writes: each is stamped with its own time.
	clk := &steppingClock{FakePassiveClock: clocktesting.NewFakePassiveClock(written), step: 10 * time.Second}
	if err := moveInPlace(ctx, c, w, "db", clk); err != nil {
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

// A plan with nothing to move (the partition raised over every pod) is blocked, and its pods go
// back in service: no pod stays drained while nothing moves.
func TestABlockedPlanReleasesThePods(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	sts := dbStatefulSet(2, appsv1.OnDeleteStatefulSetStrategyType, "db:1.0.0", true)
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(sts).Build()
	ruc := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}, Spec: v1alpha1.RollingUpgradeConfigSpec{
		TargetRef: v1alpha1.WorkloadReference{Kind: v1alpha1.KindStatefulSet, Name: "db"},
		Strategy:  &v1alpha1.UpgradeStrategy{Type: v1alpha1.StrategyInPlace, InPlace: &v1alpha1.InPlaceStrategy{Partition: 2}}}}
	w := &workload{statefulSet: sts}
	f, err := w.facts(context.Background(), c, ruc, now)
	if err != nil {
		t.Fatal(err)
	}
	if f.Verdict.State != health.Blocked || f.Verdict.Reason != health.ReasonPartitionCoversAll || !w.releaseGates {
		t.Errorf("partition over every pod: verdict %+v, release %v", f.Verdict, w.releaseGates)
	}

	// One that failed at rest (a pod changed in its drain that a webhook keeps on another image),
	// where no rollback would move the pods on, lets them go too.
	hooked := gatedPod("db-1", "mirror.example/db:1.0.0", corev1.ConditionFalse)
	hooked.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-10 * time.Minute))
	hooked.Annotations = map[string]string{v1alpha1.InPlaceChangedAnnotation: now.Add(-9*time.Minute).Format(time.RFC3339) + " db:1.0.0"}
	c = fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(sts, gatedPod("db-0", "db:1.0.0", corev1.ConditionTrue), hooked).Build()
	ruc.Spec.Strategy.InPlace.Partition = 0
	ruc.Status.CurrentImage = "db:1.0.0"
	w = &workload{statefulSet: sts}
	if f, err = w.facts(context.Background(), c, ruc, now); err != nil || f.Verdict.State != health.Failed || !w.releaseGates {
		t.Errorf("failed at rest: verdict %+v, release %v (%v)", f.Verdict, w.releaseGates, err)
	}
}

// leftInPlace is StatefulSet shop/db (OnDelete, its template without rollgate's gate) whose pod
// db-0 an in-place upgrade drained, and a config shop/db, no longer InPlace, whose status records
// that upgrade; the first status write to a pod fails. get reads the config and the pod back.
func leftInPlace(t *testing.T, mutate func(*v1alpha1.RollingUpgradeConfig), others ...client.Object) (r *RollingUpgradeConfigReconciler, req ctrl.Request,
	get func() (*v1alpha1.RollingUpgradeConfig, *corev1.Pod)) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	sts := dbStatefulSet(1, appsv1.OnDeleteStatefulSetStrategyType, "db:1.1.0", false)
	drained := gatedPod("db-0", "db:1.1.0", corev1.ConditionFalse)
	ruc := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db", Generation: 2, Finalizers: []string{v1alpha1.Finalizer}},
		Spec: v1alpha1.RollingUpgradeConfigSpec{TargetRef: v1alpha1.WorkloadReference{Kind: v1alpha1.KindStatefulSet, Name: "db"}, Image: "db"},
		Status: v1alpha1.RollingUpgradeConfigStatus{CurrentVersion: "1.1.0", CurrentImage: "db:1.1.0",
			RecordedTarget: &v1alpha1.RecordedTarget{Kind: v1alpha1.KindStatefulSet, Name: "db"},
			InPlace:        &v1alpha1.InPlaceStatus{Image: "db:1.1.0", Pods: []v1alpha1.InPlacePod{{Name: "db-0", State: string(inplace.StateDraining)}}}}}
	mutate(ruc)
	failures := 1
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(append(others, sts, drained, ruc)...).
		WithStatusSubresource(&v1alpha1.RollingUpgradeConfig{}, &corev1.Pod{}).
		WithIndex(&v1alpha1.RollingUpgradeConfig{}, indexTarget, configIndexes[indexTarget]).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if _, pod := obj.(*corev1.Pod); pod && failures > 0 {
				failures--
				return apierrors.NewServiceUnavailable("etcd is slow")
			}
			return cl.SubResource(sub).Patch(ctx, obj, patch, opts...)
		}}).Build()
	r = &RollingUpgradeConfigReconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(10), Clock: clocktesting.NewFakePassiveClock(now)}
	req = ctrl.Request{NamespacedName: client.ObjectKeyFromObject(ruc)}
	get = func() (*v1alpha1.RollingUpgradeConfig, *corev1.Pod) {
		var got v1alpha1.RollingUpgradeConfig
		var pod corev1.Pod
		if err := c.Get(context.Background(), req.NamespacedName, &got); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(drained), &pod); err != nil {
			t.Fatal(err)
		}
		return &got, &pod
	}
	return r, req, get
}

// A config no longer upgrading db in place lets go of the pods it had changed, when its strategy
// and the StatefulSet's gate were removed in one edit (say one GitOps commit), when its targetRef
// now names another workload, or when it is deleted mid-retarget: status.inPlace remembers them,
// and goes only once they are back in service, so a failed write leaves it for the retry (the rest
// of the decision is written, but for a retarget, which waits). Pods of a StatefulSet another
// config now names are that config's.
func TestPodsChangedInPlaceAreReleasedWhateverTheEdit(t *testing.T) {
	retarget := func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.TargetRef = v1alpha1.WorkloadReference{Kind: v1alpha1.KindDeployment, Name: "web"}
	}
	successor := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db-next"},
		Spec: v1alpha1.RollingUpgradeConfigSpec{TargetRef: v1alpha1.WorkloadReference{Kind: v1alpha1.KindStatefulSet, Name: "db"}, Image: "db"}}
	deleting := successor.DeepCopy()
	deleting.DeletionTimestamp, deleting.Finalizers = &metav1.Time{Time: time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC)}, []string{v1alpha1.Finalizer}
	for _, tc := range []struct {
		name   string
		edit   func(*v1alpha1.RollingUpgradeConfig)
		others []client.Object
		keep   bool // the pod is not this config's to let go
	}{
		{name: "strategy and gate gone", edit: func(*v1alpha1.RollingUpgradeConfig) {}},
		{name: "another target", edit: retarget},
		{name: "deleted after a retarget", edit: func(c *v1alpha1.RollingUpgradeConfig) {
			retarget(c)
			c.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC)}
		}},
		{name: "another target, the StatefulSet another config's", edit: retarget, others: []client.Object{successor}, keep: true},
		{name: "another target, the StatefulSet's other config being deleted", edit: retarget, others: []client.Object{deleting}},
		{name: "deleted while in place", edit: func(c *v1alpha1.RollingUpgradeConfig) {
			c.Spec.Strategy = &v1alpha1.UpgradeStrategy{Type: v1alpha1.StrategyInPlace}
			c.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, req, get := leftInPlace(t, tc.edit, tc.others...)
			if tc.keep {
				if _, err := r.Reconcile(context.Background(), req); err != nil {
					t.Fatal(err)
				}
				if _, pod := get(); gateTrue(pod) {
					t.Error("the pod of a StatefulSet another config names was put in service by the config that left it")
				}
				return
			}
			if _, err := r.Reconcile(context.Background(), req); err == nil {
				t.Fatal("the pod's write failed, the reconcile did not")
			}
			got, _ := get()
			if got.Status.InPlace == nil || got.Status.RecordedTarget == nil {
				t.Fatalf("status.inPlace %+v, recordedTarget %+v: gone before the pods were back in service, a retry would not know of them",
					got.Status.InPlace, got.Status.RecordedTarget)
			}
			if written := got.Status.ObservedGeneration == 2; written != (tc.name == "strategy and gate gone") {
				t.Errorf("observedGeneration %d: the decision was written %v; want it written unless it retargets", got.Status.ObservedGeneration, written)
			}
			if _, err := r.Reconcile(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if got, pod := get(); !gateTrue(pod) || got.Status.InPlace != nil {
				t.Errorf("after the retry: pod conditions %+v, status.inPlace %+v; want the pod back in service, then the record gone",
					pod.Status.Conditions, got.Status.InPlace)
			}
		})
	}
}

// The plan is made of the config's step and the pods: the image they move to is the check's
// target (else the recorded image, else the template's), a change counts from the step's start
// (at rest: none), the pods done are the status's only for the same step and image, and each pod
// tells when and to what rollgate changed it and when its container started.
func TestInPlaceInputReadsTheStepAndThePods(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	started := now.Add(-time.Minute)
	sts := dbStatefulSet(3, appsv1.OnDeleteStatefulSetStrategyType, "db:1.1.0", true)
	changed := gatedPod("db-2", "db:1.1.0", corev1.ConditionFalse)
	changed.Annotations = map[string]string{v1alpha1.InPlaceChangedAnnotation: "2026-12-01T01:59:30Z db:1.1.0"}
	changed.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "db", Image: "db:1.1.0",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-20 * time.Second))}}}}
	pods := []corev1.Pod{*changed, *gatedPod("db-1", "db:1.0.0", corev1.ConditionTrue)}
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
			c := &corev1.Container{Name: "db", Image: "db:1.1.0"}
			if tc.template != "" {
				c.Image = tc.template
			}
			in := inPlaceInput(tc.ruc, sts, c, pods, now)
			if in.Image != tc.image || in.Move != tc.move || !in.Since.Equal(tc.since) || in.Backward != tc.backward || !maps.Equal(in.Done, tc.done) {
				t.Errorf("image %s, move %v, since %s, backward %v, done %v; want %s, %v, %s, %v, %v",
					in.Image, in.Move, in.Since, in.Backward, in.Done, tc.image, tc.move, tc.since, tc.backward, tc.done)
			}
		})
	}
	in := inPlaceInput(config("", "", nil), sts, &corev1.Container{Name: "db", Image: "db:1.1.0"}, pods, now)
	if p := in.Pods[0]; p.ChangedTo != "db:1.1.0" || !p.ChangedAt.Equal(now.Add(-30*time.Second)) || !p.StartedAt.Equal(now.Add(-20*time.Second)) ||
		p.Running != "db:1.1.0" || p.Gate == nil || *p.Gate {
		t.Errorf("db-2 read as %+v; want changed to db:1.1.0 30s ago, started 20s ago, its gate False", p)
	}
	if in := inPlaceInput(&v1alpha1.RollingUpgradeConfig{Spec: config("", "", nil).Spec}, sts, &corev1.Container{Name: "db", Image: "db:1.1.0"}, nil, now); in.Image != "db:1.1.0" {
		t.Errorf("nothing recorded: image %s, want the template's", in.Image)
	}
}

// A decision that starts a check carries out no move of the step it ends: here a target set by
// hand during an in-place rollback starts a new check, and db-2, drained to be changed back, is
// left for the new check's plan rather than changed back first.
func TestAStartedCheckMovesNoPodOfTheStepBefore(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	sts := dbStatefulSet(3, appsv1.OnDeleteStatefulSetStrategyType, "db:1.0.0", true)
	drained := gatedPod("db-2", "db:1.1.0", corev1.ConditionFalse)
	drained.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-time.Minute))
	ruc := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db", Generation: 1, Finalizers: []string{v1alpha1.Finalizer},
		Annotations: map[string]string{v1alpha1.UpdatePhaseAnnotation: rollout.StepRollingBack, v1alpha1.UpdateStartedAnnotation: now.Add(-2 * time.Minute).Format(time.RFC3339),
			v1alpha1.TargetImageAnnotation: "db:1.2.0"}},
		Spec: v1alpha1.RollingUpgradeConfigSpec{TargetRef: v1alpha1.WorkloadReference{Kind: v1alpha1.KindStatefulSet, Name: "db"}, Image: "db",
			Strategy: &v1alpha1.UpgradeStrategy{Type: v1alpha1.StrategyInPlace}},
		Status: v1alpha1.RollingUpgradeConfigStatus{CurrentVersion: "1.0.0", CurrentImage: "db:1.0.0", Phase: v1alpha1.PhaseRollingBack,
			RecordedTarget: &v1alpha1.RecordedTarget{Kind: v1alpha1.KindStatefulSet, Name: "db"}}}
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(sts, ruc, drained,
		gatedPod("db-0", "db:1.0.0", corev1.ConditionTrue), gatedPod("db-1", "db:1.0.0", corev1.ConditionTrue)).
		WithStatusSubresource(&v1alpha1.RollingUpgradeConfig{}, &corev1.Pod{}).
		WithIndex(&v1alpha1.RollingUpgradeConfig{}, indexTarget, configIndexes[indexTarget]).Build()
	r := &RollingUpgradeConfigReconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(10), Clock: clocktesting.NewFakePassiveClock(now)}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(ruc)}); err != nil {
		t.Fatal(err)
	}
	var got v1alpha1.RollingUpgradeConfig
	var pod corev1.Pod
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(ruc), &got); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(drained), &pod); err != nil {
		t.Fatal(err)
	}
	if got.Annotations[v1alpha1.UpdatePhaseAnnotation] != rollout.StepHealthCheck || pod.Spec.Containers[0].Image != "db:1.1.0" {
		t.Errorf("step %q, db-2 on %s; want the hand target's check started and db-2 not changed back to db:1.0.0",
			got.Annotations[v1alpha1.UpdatePhaseAnnotation], pod.Spec.Containers[0].Image)
	}
}
