package appversion

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/kube/kubetest"
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
			c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(av).WithStatusSubresource(av).Build()
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

// Each ApplicationVersion's status has one writer: the manager whose shard selector matches it.
func TestApplicationVersionsAreServedByTheirShardOnly(t *testing.T) {
	key := "sharding.rollgate.dev/key"
	inShard1 := &v1alpha1.ApplicationVersion{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{key: "shard1"}}}
	unsharded := &v1alpha1.ApplicationVersion{}
	for _, tc := range []struct {
		selector        string
		shard1, noShard bool
	}{
		{selector: "", shard1: true, noShard: true},
		{selector: key + "=shard1", shard1: true},
		{selector: key + "=shard2"},
		{selector: "!" + key, noShard: true},
	} {
		sel, err := labels.Parse(tc.selector)
		if err != nil {
			t.Fatal(err)
		}
		p := inShard(sel)
		if p.Generic(event.GenericEvent{Object: inShard1}) != tc.shard1 || p.Generic(event.GenericEvent{Object: unsharded}) != tc.noShard {
			t.Errorf("selector %q: serves shard1 %v, unsharded %v; want %v, %v", tc.selector,
				p.Generic(event.GenericEvent{Object: inShard1}), p.Generic(event.GenericEvent{Object: unsharded}), tc.shard1, tc.noShard)
		}
	}
	if !inShard(nil).Generic(event.GenericEvent{Object: inShard1}) {
		t.Error("no selector must serve every ApplicationVersion")
	}
}
