package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/kube/kubetest"
)

// Unit tests of the reconciler's wiring with the fake client; behaviour against a real API server
// is in the integration and e2e tests.

// TestConflictRequeuesAndLosesNothing: a 409 on the status write (someone changed the config
// meanwhile) emits nothing and asks for a quick retry; the retry carries the whole decision out.
func TestConflictRequeuesAndLosesNothing(t *testing.T) {
	conflicts := 1
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(kubetest.Objects()...).
		WithStatusSubresource(&v1alpha1.RollingUpgradeConfig{}).
		WithIndex(&v1alpha1.RollingUpgradeConfig{}, kube.IndexTarget, kube.ConfigIndexes[kube.IndexTarget]).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if conflicts > 0 {
				conflicts--
				return apierrors.NewConflict(schema.GroupResource{Group: "rollgate.dev", Resource: "rollingupgradeconfigs"}, obj.GetName(), nil)
			}
			return cl.SubResource(sub).Update(ctx, obj, opts...)
		}}).Build()
	rec := events.NewFakeRecorder(10)
	r := &RollingUpgradeConfigReconciler{Client: c, APIReader: c, Recorder: rec,
		Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))}
	req := ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "shop", Name: "web"}}

	res, err := r.Reconcile(context.Background(), req)
	if err != nil || res.RequeueAfter <= 0 || len(rec.Events) != 0 {
		t.Fatalf("after the conflict: result %+v, err %v, %d events", res, err, len(rec.Events))
	}
	// The annotations were written before the conflicting status write: the retry finds the
	// rollout started and completes the status from it.
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var got v1alpha1.RollingUpgradeConfig
	if err := c.Get(context.Background(), req.NamespacedName, &got); err != nil {
		t.Fatal(err)
	}
	if got.Annotations[v1alpha1.TargetImageAnnotation] != "ghcr.io/acme/web:1.1.0" || got.Status.Phase != v1alpha1.PhaseInProgress ||
		got.Status.TargetVersion != "1.1.0" {
		t.Errorf("after the retry: annotations %v, status %+v", got.Annotations, got.Status)
	}
}

// A conflict while a deleted config lets go of its workload (the renderer or the workload's
// controller wrote it meanwhile) is no error to log: the config is looked at again shortly, quietly,
// and the retry finishes the deletion.
func TestAConflictWhileDeletingIsRetriedQuietly(t *testing.T) {
	objs := kubetest.Objects()
	ruc := objs[2].(*v1alpha1.RollingUpgradeConfig)
	ruc.Finalizers, ruc.DeletionTimestamp = []string{v1alpha1.Finalizer}, &metav1.Time{Time: time.Date(2026, 12, 1, 2, 59, 0, 0, time.UTC)}
	objs[0].SetAnnotations(map[string]string{v1alpha1.LastImageAnnotation: "ghcr.io/acme/web:1.0.0"})
	conflicts := 1
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.RollingUpgradeConfig{}).
		WithIndex(&v1alpha1.RollingUpgradeConfig{}, kube.IndexTarget, kube.ConfigIndexes[kube.IndexTarget]).
		WithInterceptorFuncs(interceptor.Funcs{Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*appsv1.Deployment); ok && conflicts > 0 {
				conflicts--
				return apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "deployments"}, obj.GetName(), errors.New("the object has been modified"))
			}
			return cl.Patch(ctx, obj, patch, opts...)
		}}).Build()
	r := &RollingUpgradeConfigReconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(10),
		Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))}
	req := ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "shop", Name: "web"}}
	if res, err := r.Reconcile(context.Background(), req); err != nil || res.RequeueAfter <= 0 {
		t.Fatalf("the workload's release conflicting: result %+v, err %v; want a quiet look again", res, err)
	}
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: "web"}, &d); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), req.NamespacedName, &v1alpha1.RollingUpgradeConfig{}); !apierrors.IsNotFound(err) || len(d.Annotations) != 0 {
		t.Errorf("after the retry: config %v, workload annotations %v; want it gone and the workload released", err, d.Annotations)
	}
}

func TestParseVersionList(t *testing.T) {
	cases := []struct {
		value   string
		want    string
		wantErr string
	}{
		{"1.2.0", "1.2.0", ""},
		{" 1.2.0, 1.3.0 ,", "1.2.0|1.3.0", ""},
		{"latest", "latest", ""}, // a tag; the policy ignores it with a reason
		{"", "", "the value is empty"},
		{" , ", "", "the value is empty"},
		{"{{ .Values.tag }}", "", `"{{ .Values.tag }}" is not an image tag`},
		{"1.2.0\n1.3.0", "", "is not an image tag"},
		{"1.2.0;rm -rf /", "", "is not an image tag"},
	}
	for _, tc := range cases {
		got, err := parseVersionList(tc.value)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseVersionList(%q) error = %v, want %q", tc.value, err, tc.wantErr)
			}
			continue
		}
		if err != nil || strings.Join(got, "|") != tc.want {
			t.Errorf("parseVersionList(%q) = %v, %v; want %s", tc.value, got, err, tc.want)
		}
	}
}

// TestRolloutMetricsThroughReconcile: a rollout observed through Reconcile times the new pods,
// and a config deleted in the middle of the next rollout leaves no series behind (no gauge stuck
// at 1, no deadline that would alert).
func TestRolloutMetricsThroughReconcile(t *testing.T) {
	const ns = "metrics-reconcile"
	objs := kubetest.Objects()
	for _, o := range objs {
		o.SetNamespace(ns)
	}
	// A calendar of other configs records a slot of this one (its release fails below).
	cal := &v1alpha1.RolloutCalendar{ObjectMeta: metav1.ObjectMeta{Name: "waves"},
		Spec:   v1alpha1.RolloutCalendarSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "other"}}},
		Status: v1alpha1.RolloutCalendarStatus{Rollouts: []v1alpha1.CalendarRollout{{Namespace: ns, Name: "web", Version: "1.1.0"}}}}
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(append(objs, cal)...).
		WithStatusSubresource(&v1alpha1.RollingUpgradeConfig{}, &appsv1.Deployment{}, &v1alpha1.RolloutCalendar{}).
		WithIndex(&v1alpha1.RollingUpgradeConfig{}, kube.IndexTarget, kube.ConfigIndexes[kube.IndexTarget]).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if _, ok := obj.(*v1alpha1.RolloutCalendar); ok {
				return errors.New("the API server is unavailable")
			}
			return cl.SubResource(sub).Update(ctx, obj, opts...)
		}}).Build()
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	r := &RollingUpgradeConfigReconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(100), Clock: clock, Calendars: true}
	req := ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: "web"}}
	ctx := context.Background()
	reconcile := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	// renderAndBecomeHealthy plays the renderer, the Deployment controller and the kubelet: the
	// Deployment runs image, and two new pods became Ready after ready.
	renderAndBecomeHealthy := func(image string, ready time.Duration) {
		t.Helper()
		var d appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &d); err != nil {
			t.Fatal(err)
		}
		d.Spec.Template.Spec.Containers[0].Image = image
		if err := c.Update(ctx, &d); err != nil {
			t.Fatal(err)
		}
		d.Status.ObservedGeneration = d.Generation
		if err := c.Status().Update(ctx, &d); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			created := clock.Now().Add(time.Duration(i+1) * time.Second)
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i), Namespace: ns, Labels: map[string]string{"app": "web"},
				CreationTimestamp: metav1.NewTime(created)},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
				Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
					LastTransitionTime: metav1.NewTime(created.Add(ready))}}}}
			if err := c.Create(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
	}

	reconcile() // 1.1.0 starts
	if series := seriesIn(t, configMetrics, ns); valueOf(t, series, "rolling_upgrade_active{web}") != 1 ||
		series["rolling_upgrade_deadline_timestamp_seconds{web}"] == nil {
		t.Fatal("no active rollout or deadline in the metrics")
	}
	renderAndBecomeHealthy("ghcr.io/acme/web:1.1.0", 4*time.Second)
	clock.SetTime(clock.Now().Add(20 * time.Second))
	// 1.1.0 is healthy; its calendar slot cannot be released (the reconcile fails, to be
	// retried), and the verdict's metrics are recorded all the same.
	if _, err := r.Reconcile(ctx, req); err == nil || !strings.Contains(err.Error(), "unavailable") {
		t.Fatalf("the slot's release failing: %v", err)
	}
	series := seriesIn(t, configMetrics, ns)
	if h := series["pod_upgrade_duration_seconds{web}"].GetHistogram(); h.GetSampleCount() != 2 || h.GetSampleSum() != 8 {
		t.Errorf("pod upgrade durations: %d observations summing to %vs, want 2 pods of 4s", h.GetSampleCount(), h.GetSampleSum())
	}
	if n := series["rolling_upgrade_duration_seconds{web,success}"].GetHistogram().GetSampleCount(); n != 1 {
		t.Errorf("%d rollout durations, want 1", n)
	}

	var av v1alpha1.ApplicationVersion
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &av); err != nil {
		t.Fatal(err)
	}
	av.Spec.Version = "1.2.0"
	if err := c.Update(ctx, &av); err != nil {
		t.Fatal(err)
	}
	reconcile() // 1.2.0 starts
	if valueOf(t, seriesIn(t, configMetrics, ns), "rolling_upgrade_active{web}") != 1 {
		t.Fatal("the second rollout is not active")
	}
	var ruc v1alpha1.RollingUpgradeConfig
	if err := c.Get(ctx, req.NamespacedName, &ruc); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, &ruc); err != nil {
		t.Fatal(err)
	}
	reconcile()
	if n := len(seriesIn(t, configMetrics, ns)); n != 0 {
		t.Errorf("%d series left after the config was deleted mid-rollout", n)
	}
}

// A panic in one config's reconcile fails that reconcile alone, with an error (retried with
// backoff) and a Warning event on the config; the manager goes on.
func TestAPanicIsReportedOnItsConfig(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(kubetest.Objects()...).
		WithStatusSubresource(&v1alpha1.RollingUpgradeConfig{}).
		WithIndex(&v1alpha1.RollingUpgradeConfig{}, kube.IndexTarget, kube.ConfigIndexes[kube.IndexTarget]).
		WithInterceptorFuncs(interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			panic("a bug")
		}}).Build()
	rec := events.NewFakeRecorder(10)
	r := &RollingUpgradeConfigReconciler{Client: c, APIReader: c, Recorder: rec,
		Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))}
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("the panic escaped Reconcile: %v", p)
			}
		}()
		_, err = r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "shop", Name: "web"}})
	}()
	if err == nil || !strings.Contains(err.Error(), "a bug") {
		t.Errorf("error = %v, want the panic", err)
	}
	if len(rec.Events) != 1 || !strings.Contains(<-rec.Events, "Warning ReconcilePanic") {
		t.Errorf("want one ReconcilePanic Warning on the config")
	}
}
