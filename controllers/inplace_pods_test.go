package controllers

import (
	"context"
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
