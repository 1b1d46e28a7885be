package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/inplace"
	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/kube/kubetest"
	"github.com/rollgate/rollgate/internal/rollout"
)

// An effect that fails does not keep the next from being carried out: with the calendars
// unreadable (the slots cannot be given back), the planned move of a pod is still written, the
// metrics are still recorded, and the reconcile fails with the slots' error for a retry.
func TestAFailedEffectDoesNotCutTheChain(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	sts := kubetest.DBStatefulSet(1, appsv1.OnDeleteStatefulSetStrategyType, "db:1.1.0", true)
	pod := kubetest.GatedPod("db-0", "db:1.1.0", corev1.ConditionTrue)
	down := errors.New("the API server is down")
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithStatusSubresource(&corev1.Pod{}).WithObjects(sts, pod).
		WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*v1alpha1.RolloutCalendarList); ok {
				return down
			}
			return cl.List(ctx, list, opts...)
		}}).Build()
	r := &RollingUpgradeConfigReconciler{Client: c, APIReader: c, Calendars: true, Clock: clocktesting.NewFakePassiveClock(now)}
	ruc := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "effects"},
		Spec: v1alpha1.RollingUpgradeConfigSpec{Container: "db"}}
	plan := &inplace.Plan{Image: "db:1.1.0", Actions: []inplace.Action{{Kind: inplace.Drain, Pod: "db-0"}}}
	in := rollout.Input{Now: now, Config: ruc, Workload: &rollout.Workload{InPlace: plan}}
	d := rollout.Decision{Outcome: rollout.OutcomeHealthy, Rollout: rollout.Rollout{Image: "db:1.1.0", Started: now.Add(-time.Minute)},
		Effects: rollout.Effects{ReleaseSlots: true, MovePods: true}}
	defer configMetrics.forget(ruc.Namespace, ruc.Name)

	err := r.carryOut(ctx, ruc, &kube.Workload{StatefulSet: sts}, in, d)
	if !errors.Is(err, down) {
		t.Errorf("carried out with %v, want the calendars' error", err)
	}
	var got corev1.Pod
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), &got); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.Status.Conditions[0].Message, "takes the pod out of its Service") || kube.GateTrue(&got) {
		t.Errorf("db-0's gate %+v, want it drained by the planned move", got.Status.Conditions)
	}
	if n := valueOf(t, seriesIn(t, configMetrics, "shop"), "rolling_upgrade_success_total{effects}"); n != 1 {
		t.Errorf("rollouts recorded: %v, want the verdict's 1", n)
	}
}
