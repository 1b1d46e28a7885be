package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/controllers/health"
	"github.com/rollgate/rollgate/controllers/inplace"
)

// A StatefulSet that stops being upgraded in place (here it left OnDelete) gets every pod that
// carries rollgate's readiness gate back in its Service, whatever the pod runs: none is left out
// of its endpoints for ever.
func TestPodsAreReleasedWhenTheUpgradeStops(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	gates := []corev1.PodReadinessGate{{ConditionType: v1alpha1.InPlaceReadinessGate}}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
		Template:       corev1.PodTemplateSpec{Spec: corev1.PodSpec{ReadinessGates: gates, Containers: []corev1.Container{{Name: "db", Image: "db:1.0.0"}}}}}}
	pod := func(name, img string, gate corev1.ConditionStatus) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: map[string]string{"app": "db"}},
			Spec: corev1.PodSpec{ReadinessGates: gates, Containers: []corev1.Container{{Name: "db", Image: img}}}}
		if gate != "" {
			p.Status.Conditions = []corev1.PodCondition{{Type: v1alpha1.InPlaceReadinessGate, Status: gate}}
		}
		return p
	}
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithStatusSubresource(&corev1.Pod{}).
		WithObjects(sts, pod("db-0", "db:1.0.0", ""), pod("db-1", "db:1.1.0", corev1.ConditionFalse)).Build()
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
	if err := moveInPlace(ctx, c, w, "db", now); err != nil {
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

// A plan with nothing to move (the partition raised over every pod) is blocked, and its pods go
// back in service: no pod stays drained while nothing moves.
func TestABlockedPlanReleasesThePods(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	gates := []corev1.PodReadinessGate{{ConditionType: v1alpha1.InPlaceReadinessGate}}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
		Template:       corev1.PodTemplateSpec{Spec: corev1.PodSpec{ReadinessGates: gates, Containers: []corev1.Container{{Name: "db", Image: "db:1.0.0"}}}}}}
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
}
