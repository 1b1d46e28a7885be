//go:build integration

package v1alpha1_test

import (
	"context"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestIntegrationCRDsAcceptEveryReleasedObject is the upgrade check: every object a release wrote
// (testdata/released/<release>/, see released_test.go) must be accepted by the CRDs of this code
// as it is, spec through create and status through the status subresource, and read back
// unchanged: nothing rejected, pruned, or defaulted in (a default filled into a field the snapshot
// left out is a change too).
func TestIntegrationCRDsAcceptEveryReleasedObject(t *testing.T) {
	for _, o := range releasedObjects(t) {
		t.Run(o.name(), func(t *testing.T) {
			ctx := context.Background()
			want := &unstructured.Unstructured{}
			if err := want.UnmarshalJSON(o.json); err != nil {
				t.Fatal(err)
			}

			obj := want.DeepCopy()
			unstructured.RemoveNestedField(obj.Object, "status")
			namespaced, err := k8s.IsObjectNamespaced(obj)
			if err != nil {
				t.Fatal(err)
			}
			if namespaced {
				ns := namespace(t)
				t.Cleanup(func() { deleteReleased(t, nsObject(ns)) })
				obj.SetNamespace(ns)
			} else {
				// Cluster-scoped (RolloutCalendar): a name of its own, so that releases that
				// wrote the same name, and other tests, do not meet.
				obj.SetGenerateName(obj.GetName() + "-")
				obj.SetName("")
			}
			// Strict: a field the schema does not know is refused by name, not pruned in silence
			// (which the comparison below would catch too, less plainly).
			if err := k8s.Create(ctx, obj, client.FieldValidation("Strict")); err != nil {
				t.Fatalf("create refused: %v", err)
			}
			t.Cleanup(func() { deleteReleased(t, obj.DeepCopy()) })

			if status, ok := want.Object["status"]; ok {
				obj.Object["status"] = runtime.DeepCopyJSONValue(status)
				if err := k8s.Status().Update(ctx, obj, client.FieldValidation("Strict")); err != nil {
					t.Fatalf("status update refused: %v", err)
				}
			}

			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(want.GroupVersionKind())
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
				t.Fatal(err)
			}
			for _, field := range []string{"spec", "status"} {
				w, wok := want.Object[field]
				g, gok := got.Object[field]
				if wok != gok || !reflect.DeepEqual(w, g) {
					t.Errorf("%s read back differs from the snapshot (- snapshot, + API server):\n%s", field, diff.Diff(w, g))
				}
			}
		})
	}
}

func nsObject(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
}

// deleteReleased deletes what a subtest created; envtest runs no namespace controller, so a
// namespace stays Terminating, empty.
func deleteReleased(t *testing.T, obj *unstructured.Unstructured) {
	if err := k8s.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}
