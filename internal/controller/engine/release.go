package engine

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/kube"
)

// rollgateWorkloadAnnotations are the annotations the renderer writes on a workload.
var rollgateWorkloadAnnotations = []string{v1alpha1.LastImageAnnotation, v1alpha1.LastUpdatedByAnnotation,
	v1alpha1.RevertsAnnotation, v1alpha1.RevertedByAnnotation, v1alpha1.RevertedAtAnnotation}

// releaseWorkload gives up rollgate's hold on a workload when its config is deleted: its
// annotations go, and so does its server-side apply ownership of the image field, which then has
// no owner and is taken by the next manager that applies it (the GitOps tool). Giving up ownership
// by applying without the field would delete the image; removing rollgate's managedFields entry
// leaves it as it is. The patch carries the resourceVersion, so a concurrent change of the
// managedFields is not overwritten: it fails with a conflict and is retried.
//
// w must be read afresh from the API server: the cached copy keeps only the managedFields entries
// that own an image (CacheTrim), and the list written back must be whole.
func releaseWorkload(ctx context.Context, c client.Client, w *kube.Workload) error {
	obj := w.Object()
	orig := obj.DeepCopyObject().(client.Object)
	fields := obj.GetManagedFields()
	kept := slices.DeleteFunc(slices.Clone(fields), func(e metav1.ManagedFieldsEntry) bool { return e.Manager == v1alpha1.FieldManager })
	a := obj.GetAnnotations()
	removed := 0
	for _, k := range rollgateWorkloadAnnotations {
		if _, ok := a[k]; ok {
			delete(a, k)
			removed++
		}
	}
	if len(kept) == len(fields) && removed == 0 {
		return nil
	}
	if len(kept) == 0 {
		// An empty list would leave managedFields as they are; one empty entry clears them.
		kept = []metav1.ManagedFieldsEntry{{}}
	}
	obj.SetManagedFields(kept)
	obj.SetAnnotations(a)
	if err := c.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}),
		client.FieldOwner(v1alpha1.FieldManager)); err != nil {
		return fmt.Errorf("releasing %s: %w", w.Describe(), err)
	}
	return nil
}
