package podgate

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/health"
	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/kube/kubetest"
)

// A StatefulSet whose pod template keeps rollgate's readiness gate while no config upgrades it in
// place (the config deleted, say) gets the gate answered for each pod created since, which would
// otherwise never be Ready, and each pod left drained, with one Warning that names them; a pod in
// service, one without the gate, one drained a moment ago (a drain in flight) and another
// workload's pod that the selector matches are left alone. Under an in-place upgrade, of a config of this shard or another, the
// config answers, and the pods are left to it.
func TestAGateNobodyAnswersIsAnswered(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	inPlace := func(name string) *v1alpha1.RollingUpgradeConfig {
		return &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}, Spec: v1alpha1.RollingUpgradeConfigSpec{
			TargetRef: v1alpha1.WorkloadReference{Kind: v1alpha1.KindStatefulSet, Name: "db"},
			Strategy:  &v1alpha1.UpgradeStrategy{Type: v1alpha1.StrategyInPlace}}}
	}
	for _, tc := range []struct {
		name     string
		gated    bool
		configs  []client.Object
		foreign  string // a config of another shard
		answered bool
	}{
		{name: "no config: the new pod is answered", gated: true, answered: true},
		{name: "a config that does not upgrade it in place: answered", gated: true, answered: true,
			configs: []client.Object{func() client.Object { c := inPlace("db"); c.Spec.Strategy = nil; return c }()}},
		{name: "under an in-place upgrade: left to the config", gated: true, configs: []client.Object{inPlace("db")}},
		{name: "under an in-place upgrade by another shard's config: left to it", gated: true, configs: []client.Object{inPlace("other")}, foreign: "other"},
		{name: "a template without the gate: nothing to answer", gated: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			sts := kubetest.DBStatefulSet(3, appsv1.OnDeleteStatefulSetStrategyType, "db:1.0.0", tc.gated)
			sts.UID = "db-uid"
			owned := func(p *corev1.Pod) *corev1.Pod {
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: sts.UID, Controller: ptr.To(true)}}
				return p
			}
			ungated := owned(kubetest.GatedPod("db-2", "db:1.0.0", ""))
			ungated.Spec.ReadinessGates = nil
			fresh := owned(kubetest.GatedPod("db-4", "db:1.0.0", corev1.ConditionFalse)) // a drain in flight
			fresh.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-10 * time.Second))
			objs := append([]client.Object{sts, owned(kubetest.GatedPod("db-0", "db:1.0.0", "")), owned(kubetest.GatedPod("db-1", "db:1.0.0", corev1.ConditionTrue)), ungated,
				owned(kubetest.GatedPod("db-3", "db:1.0.0", corev1.ConditionFalse)), fresh,
				kubetest.GatedPod("other-0", "db:1.0.0", "")}, tc.configs...) // another workload's pod the selector matches
			c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithStatusSubresource(&corev1.Pod{}).WithObjects(objs...).Build()
			rec := events.NewFakeRecorder(10)
			r := &GateReconciler{Client: kubetest.ShardCache{Client: c, Foreign: tc.foreign}, APIReader: c, Recorder: rec, Clock: clocktesting.NewFakePassiveClock(now)}
			if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(sts)}); err != nil {
				t.Fatal(err)
			}
			for name, want := range map[string]bool{"db-0": tc.answered, "db-3": tc.answered, "db-4": false, "other-0": false} {
				var got corev1.Pod
				if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: name}, &got); err != nil {
					t.Fatal(err)
				}
				gate := health.Condition(&got, v1alpha1.InPlaceReadinessGate)
				if answered := gate != nil && gate.Status == corev1.ConditionTrue; answered != want {
					t.Errorf("%s answered %v (%+v), want %v", name, answered, gate, want)
				}
			}
			var want []string
			if tc.answered {
				want = []string{"Warning UnansweredReadinessGate the pod template keeps the readiness gate rollgate.dev/in-place-ready while no RollingUpgradeConfig upgrades this StatefulSet in place: rollgate answered it for pods db-0, db-3; " +
					"remove the gate from the template (pods created while no rollgate manager runs are never Ready)"}
			}
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				got = append(got, e)
			}
			if len(got) != len(want) || (len(want) > 0 && got[0] != want[0]) {
				t.Errorf("events %q, want %q", got, want)
			}
		})
	}
}

// The cache keeps a StatefulSet no config names as a shell, without its template: the shell says
// whether the template has rollgate's gate, so that the gate's answerer reads only those live.
func TestAShellSaysWhetherItsTemplateIsGated(t *testing.T) {
	if s := kube.Shell(kubetest.DBStatefulSet(1, appsv1.OnDeleteStatefulSetStrategyType, "db:1.0.0", true), v1alpha1.KindStatefulSet); s.GetAnnotations()[kube.GatedAnnotation] == "" {
		t.Error("a gated StatefulSet's shell does not say so")
	}
	if s := kube.Shell(kubetest.DBStatefulSet(1, appsv1.OnDeleteStatefulSetStrategyType, "db:1.0.0", false), v1alpha1.KindStatefulSet); len(s.GetAnnotations()) != 0 {
		t.Errorf("an ungated StatefulSet's shell: %v", s.GetAnnotations())
	}
}
