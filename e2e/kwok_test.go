//go:build e2e

package e2e

import (
	"context"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The kwok Stages of hack/cluster/stages.yaml are objects in the cluster; these helpers change them
// the way `hack/cluster/cluster.sh never-ready` and `ready-delay` do, and restore them after the test.

var stageGVK = schema.GroupVersionKind{Group: "kwok.x-k8s.io", Version: "v1alpha1", Kind: "Stage"}

// Positions of the image lists in the selectors of the two pod stages.
const (
	readyImageExpr      = 3 // pod-ready: .spec.containers.[].image NotIn [...]
	neverReadyImageExpr = 2 // pod-never-ready: .spec.containers.[].image In [...]
)

func updateStage(t *testing.T, name string, change func(u *unstructured.Unstructured) error) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(stageGVK)
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: name}, u); err != nil {
			return err
		}
		if err := change(u); err != nil {
			return err
		}
		return k8s.Update(context.Background(), u)
	})
	if err != nil {
		t.Fatalf("updating kwok stage %s: %v", name, err)
	}
}

func setImageList(t *testing.T, stage string, index int, images []string) {
	values := append([]any{"none"}, toAny(images)...)
	updateStage(t, stage, func(u *unstructured.Unstructured) error {
		exprs, _, err := unstructured.NestedSlice(u.Object, "spec", "selector", "matchExpressions")
		if err != nil {
			return err
		}
		exprs[index].(map[string]any)["values"] = values
		return unstructured.SetNestedSlice(u.Object, exprs, "spec", "selector", "matchExpressions")
	})
}

// neverReady makes pods that run any of images stay Running but never Ready, until the test ends.
func neverReady(t *testing.T, images ...string) {
	t.Helper()
	setImageList(t, "pod-ready", readyImageExpr, images)
	setImageList(t, "pod-never-ready", neverReadyImageExpr, images)
	t.Cleanup(func() {
		setImageList(t, "pod-ready", readyImageExpr, nil)
		setImageList(t, "pod-never-ready", neverReadyImageExpr, nil)
	})
}

// readyDelay sets how long a new pod takes to become Ready, until the test ends.
func readyDelay(t *testing.T, ms int64) {
	t.Helper()
	var before int64
	updateStage(t, "pod-ready", func(u *unstructured.Unstructured) error {
		before, _, _ = unstructured.NestedInt64(u.Object, "spec", "delay", "durationMilliseconds")
		return unstructured.SetNestedField(u.Object, ms, "spec", "delay", "durationMilliseconds")
	})
	t.Cleanup(func() {
		updateStage(t, "pod-ready", func(u *unstructured.Unstructured) error {
			return unstructured.SetNestedField(u.Object, before, "spec", "delay", "durationMilliseconds")
		})
	})
}

func toAny(s []string) []any {
	out := make([]any, 0, len(s))
	for _, v := range slices.Clone(s) {
		out = append(out, v)
	}
	return out
}
