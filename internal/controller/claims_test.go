package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	appsv1 "k8s.io/api/apps/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/controller/engine"
	"github.com/rollgate/rollgate/internal/controller/renderer"
	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/kube/kubetest"
	"github.com/rollgate/rollgate/internal/rollout"
)

// Two configs of different shards that name one workload: each shard's cache holds its own config
// alone, so the list of configs says nothing of the other. The workload names the config that last
// rendered it; the younger config, seeing the older one named there (read live), stands back, in
// its engine and its renderer, and the workload stops flapping between them.
func TestOneConfigPerWorkloadAcrossShards(t *testing.T) {
	ctx := context.Background()
	objs := kubetest.Objects()
	young := objs[2].(*v1alpha1.RollingUpgradeConfig)
	young.Name, young.CreationTimestamp = "young", metav1.NewTime(time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC))
	old := young.DeepCopy()
	old.Name, old.CreationTimestamp = "old", metav1.NewTime(time.Date(2026, 11, 1, 1, 0, 0, 0, time.UTC))
	objs[0].SetAnnotations(map[string]string{v1alpha1.LastUpdatedByAnnotation: "old", v1alpha1.LastImageAnnotation: "ghcr.io/acme/web:1.0.0"})
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(append(objs, old)...).
		WithStatusSubresource(&v1alpha1.RollingUpgradeConfig{}).
		WithIndex(&v1alpha1.RollingUpgradeConfig{}, kube.IndexTarget, kube.ConfigIndexes[kube.IndexTarget]).Build()
	shard := kubetest.ShardCache{Client: c, Foreign: "old"}
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	req := ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "shop", Name: "young"}}
	r := &engine.RollingUpgradeConfigReconciler{Client: shard, APIReader: c, Recorder: events.NewFakeRecorder(10), Clock: clock}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	var got v1alpha1.RollingUpgradeConfig
	if err := c.Get(ctx, req.NamespacedName, &got); err != nil {
		t.Fatal(err)
	}
	if s := apimeta.FindStatusCondition(got.Status.Conditions, meta.StalledCondition); s == nil || !strings.Contains(s.Message, "managed by RollingUpgradeConfig old") ||
		got.Annotations[v1alpha1.TargetImageAnnotation] != "" {
		t.Errorf("the younger config: stalled %+v, annotations %v; want it standing back for old", s, got.Annotations)
	}
	// Its renderer writes nothing, even with a target set.
	got.Annotations = map[string]string{v1alpha1.TargetImageAnnotation: "ghcr.io/acme/web:1.1.0", v1alpha1.UpdatePhaseAnnotation: rollout.StepHealthCheck}
	got.Status.TargetVersion = "1.1.0"
	if err := c.Update(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if _, err := (&renderer.RendererReconciler{Client: shard, APIReader: c, Clock: clock}).Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, &d); err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "ghcr.io/acme/web:1.0.0" || d.Annotations[v1alpha1.LastUpdatedByAnnotation] != "old" {
		t.Errorf("the younger config's renderer wrote the workload: %s, %v", img, d.Annotations)
	}
}
