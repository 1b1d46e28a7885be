package controllers

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

func TestApplicationVersionSaysWhetherItsVersionCanBeUsed(t *testing.T) {
	cases := []struct {
		name    string
		version string
		// expected
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{name: "a semver tag can be rolled out", version: "1.4.0", wantStatus: metav1.ConditionTrue, wantReason: v1alpha1.ReasonValid},
		{name: "a tag that is not semver is ignored", version: "latest", wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonNotSemver},
		{name: "semver with build metadata is no image tag", version: "1.4.0+build.5", wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonNotATag},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			av := &v1alpha1.ApplicationVersion{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Generation: 1},
				Spec: v1alpha1.ApplicationVersionSpec{Image: "ghcr.io/acme/web", Version: tc.version}}
			c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(av).WithStatusSubresource(av).Build()
			r := &ApplicationVersionReconciler{Client: c, Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))}
			key := client.ObjectKeyFromObject(av)
			if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
			var got v1alpha1.ApplicationVersion
			if err := c.Get(context.Background(), key, &got); err != nil {
				t.Fatal(err)
			}
			ready := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition)
			if ready == nil {
				t.Fatal("no Ready condition")
			}
			if ready.Status != tc.wantStatus {
				t.Errorf("Ready = %s, want %s", ready.Status, tc.wantStatus)
			}
			if ready.Reason != tc.wantReason {
				t.Errorf("reason = %s, want %s (%s)", ready.Reason, tc.wantReason, ready.Message)
			}
		})
	}
}
