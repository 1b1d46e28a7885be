package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/controller/podgate"
	"github.com/rollgate/rollgate/internal/health"
	"github.com/rollgate/rollgate/internal/inplace"
	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/kube/kubetest"
	"github.com/rollgate/rollgate/internal/rollout"
)

// A StatefulSet that stops being upgraded in place (here it left OnDelete) gets every pod that
// carries rollgate's readiness gate back in its Service, whatever the pod runs: none is left out
// of its endpoints for ever.
func TestPodsAreReleasedWhenTheUpgradeStops(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	sts := kubetest.DBStatefulSet(2, appsv1.RollingUpdateStatefulSetStrategyType, "db:1.0.0", true)
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithStatusSubresource(&corev1.Pod{}).
		WithObjects(sts, kubetest.GatedPod("db-0", "db:1.0.0", ""), kubetest.GatedPod("db-1", "db:1.1.0", corev1.ConditionFalse)).Build()
	ruc := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}, Spec: v1alpha1.RollingUpgradeConfigSpec{
		TargetRef: v1alpha1.WorkloadReference{Kind: v1alpha1.KindStatefulSet, Name: "db"},
		Strategy:  &v1alpha1.UpgradeStrategy{Type: v1alpha1.StrategyInPlace}}}
	w := &kube.Workload{StatefulSet: sts}
	f, err := facts(ctx, c, ruc, w, now)
	if err != nil {
		t.Fatal(err)
	}
	if f.Verdict.State != health.Blocked || f.Verdict.Reason != health.ReasonNotOnDelete || !f.ReleaseGates {
		t.Fatalf("a StatefulSet off OnDelete: verdict %+v, release %v", f.Verdict, f.ReleaseGates)
	}
	if err := podgate.Release(ctx, c, c, w, now); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"db-0", "db-1"} {
		var p corev1.Pod
		if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: name}, &p); err != nil {
			t.Fatal(err)
		}
		if !kube.GateTrue(&p) {
			t.Errorf("%s: conditions %+v, want the gate's True", name, p.Status.Conditions)
		}
	}
	// The same StatefulSet with the strategy gone from the config: its pods are released too.
	ruc.Spec.Strategy = nil
	w = &kube.Workload{StatefulSet: sts}
	if f, err = facts(ctx, c, ruc, w, now); err != nil {
		t.Fatal(err)
	}
	if !f.ReleaseGates {
		t.Error("strategy RollingUpdate over a template with the gate: its pods are not released")
	}
}

// A plan with nothing to move (the partition raised over every pod) is blocked, and its pods go
// back in service: no pod stays drained while nothing moves.
func TestABlockedPlanReleasesThePods(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	sts := kubetest.DBStatefulSet(2, appsv1.OnDeleteStatefulSetStrategyType, "db:1.0.0", true)
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(sts).Build()
	ruc := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}, Spec: v1alpha1.RollingUpgradeConfigSpec{
		TargetRef: v1alpha1.WorkloadReference{Kind: v1alpha1.KindStatefulSet, Name: "db"},
		Strategy:  &v1alpha1.UpgradeStrategy{Type: v1alpha1.StrategyInPlace, InPlace: &v1alpha1.InPlaceStrategy{Partition: 2}}}}
	w := &kube.Workload{StatefulSet: sts}
	f, err := facts(context.Background(), c, ruc, w, now)
	if err != nil {
		t.Fatal(err)
	}
	if f.Verdict.State != health.Blocked || f.Verdict.Reason != health.ReasonPartitionCoversAll || !f.ReleaseGates {
		t.Errorf("partition over every pod: verdict %+v, release %v", f.Verdict, f.ReleaseGates)
	}

	// One that failed at rest (a pod changed in its drain that a webhook keeps on another image),
	// where no rollback would move the pods on, lets them go too.
	hooked := kubetest.GatedPod("db-1", "mirror.example/db:1.0.0", corev1.ConditionFalse)
	hooked.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-10 * time.Minute))
	hooked.Annotations = map[string]string{v1alpha1.InPlaceChangedAnnotation: now.Add(-9*time.Minute).Format(time.RFC3339) + " db:1.0.0"}
	c = fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(sts, kubetest.GatedPod("db-0", "db:1.0.0", corev1.ConditionTrue), hooked).Build()
	ruc.Spec.Strategy.InPlace.Partition = 0
	ruc.Status.CurrentImage = "db:1.0.0"
	w = &kube.Workload{StatefulSet: sts}
	if f, err = facts(context.Background(), c, ruc, w, now); err != nil {
		t.Fatal(err)
	}
	if f.Verdict.State != health.Failed || !f.ReleaseGates {
		t.Errorf("failed at rest: verdict %+v, release %v", f.Verdict, f.ReleaseGates)
	}
}

// An in-place upgrade cannot change an init container: the config stalls on it, and no pod is
// moved (the plan is blocked, its pods released).
func TestAnInitContainerIsNotChangedInPlace(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	sts := kubetest.DBStatefulSet(2, appsv1.OnDeleteStatefulSetStrategyType, "db:1.0.0", true)
	sts.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "migrate", Image: "db:1.0.0"}}
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(sts).Build()
	ruc := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}, Spec: v1alpha1.RollingUpgradeConfigSpec{
		TargetRef: v1alpha1.WorkloadReference{Kind: v1alpha1.KindStatefulSet, Name: "db"}, Container: "migrate",
		Strategy: &v1alpha1.UpgradeStrategy{Type: v1alpha1.StrategyInPlace}}}
	f, err := facts(context.Background(), c, ruc, &kube.Workload{StatefulSet: sts}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.ContainerProblem, "migrate is an init container") || f.Verdict.State != health.Blocked || !f.ReleaseGates {
		t.Errorf("problem %q, verdict %+v, release %v", f.ContainerProblem, f.Verdict, f.ReleaseGates)
	}
}

// leftInPlace is StatefulSet shop/db (OnDelete, its template without rollgate's gate) whose pod
// db-0 an in-place upgrade drained, and a config shop/db, no longer InPlace, whose status records
// that upgrade; the first status write to a pod fails. get reads the config and the pod back.
func leftInPlace(t *testing.T, mutate func(*v1alpha1.RollingUpgradeConfig), others ...client.Object) (r *RollingUpgradeConfigReconciler, req ctrl.Request,
	get func() (*v1alpha1.RollingUpgradeConfig, *corev1.Pod)) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	sts := kubetest.DBStatefulSet(1, appsv1.OnDeleteStatefulSetStrategyType, "db:1.1.0", false)
	drained := kubetest.GatedPod("db-0", "db:1.1.0", corev1.ConditionFalse)
	ruc := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db", Generation: 2, Finalizers: []string{v1alpha1.Finalizer}},
		Spec: v1alpha1.RollingUpgradeConfigSpec{TargetRef: v1alpha1.WorkloadReference{Kind: v1alpha1.KindStatefulSet, Name: "db"}, Image: "db"},
		Status: v1alpha1.RollingUpgradeConfigStatus{CurrentVersion: "1.1.0", CurrentImage: "db:1.1.0",
			RecordedTarget: &v1alpha1.RecordedTarget{Kind: v1alpha1.KindStatefulSet, Name: "db"},
			InPlace:        &v1alpha1.InPlaceStatus{Image: "db:1.1.0", Pods: []v1alpha1.InPlacePod{{Name: "db-0", State: string(inplace.StateDraining)}}}}}
	mutate(ruc)
	failures := 1
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(append(others, sts, drained, ruc)...).
		WithStatusSubresource(&v1alpha1.RollingUpgradeConfig{}, &corev1.Pod{}).
		WithIndex(&v1alpha1.RollingUpgradeConfig{}, kube.IndexTarget, kube.ConfigIndexes[kube.IndexTarget]).
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
				if _, pod := get(); kube.GateTrue(pod) {
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
			if got, pod := get(); !kube.GateTrue(pod) || got.Status.InPlace != nil {
				t.Errorf("after the retry: pod conditions %+v, status.inPlace %+v; want the pod back in service, then the record gone",
					pod.Status.Conditions, got.Status.InPlace)
			}
		})
	}
}

// A decision that starts a check carries out no move of the step it ends: here a target set by
// hand during an in-place rollback starts a new check, and db-2, drained to be changed back, is
// left for the new check's plan rather than changed back first.
func TestAStartedCheckMovesNoPodOfTheStepBefore(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	sts := kubetest.DBStatefulSet(3, appsv1.OnDeleteStatefulSetStrategyType, "db:1.0.0", true)
	drained := kubetest.GatedPod("db-2", "db:1.1.0", corev1.ConditionFalse)
	drained.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-time.Minute))
	ruc := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db", Generation: 1, Finalizers: []string{v1alpha1.Finalizer},
		Annotations: map[string]string{v1alpha1.UpdatePhaseAnnotation: rollout.StepRollingBack, v1alpha1.UpdateStartedAnnotation: now.Add(-2 * time.Minute).Format(time.RFC3339),
			v1alpha1.TargetImageAnnotation: "db:1.2.0"}},
		Spec: v1alpha1.RollingUpgradeConfigSpec{TargetRef: v1alpha1.WorkloadReference{Kind: v1alpha1.KindStatefulSet, Name: "db"}, Image: "db",
			Strategy: &v1alpha1.UpgradeStrategy{Type: v1alpha1.StrategyInPlace}},
		Status: v1alpha1.RollingUpgradeConfigStatus{CurrentVersion: "1.0.0", CurrentImage: "db:1.0.0", Phase: v1alpha1.PhaseRollingBack,
			RecordedTarget: &v1alpha1.RecordedTarget{Kind: v1alpha1.KindStatefulSet, Name: "db"}}}
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(sts, ruc, drained,
		kubetest.GatedPod("db-0", "db:1.0.0", corev1.ConditionTrue), kubetest.GatedPod("db-1", "db:1.0.0", corev1.ConditionTrue)).
		WithStatusSubresource(&v1alpha1.RollingUpgradeConfig{}, &corev1.Pod{}).
		WithIndex(&v1alpha1.RollingUpgradeConfig{}, kube.IndexTarget, kube.ConfigIndexes[kube.IndexTarget]).Build()
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
