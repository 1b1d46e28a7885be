package controllers

import (
	"bytes"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// lastAppliedAnnotation is kubectl's copy of the whole object as last applied: often the largest
// part of a workload, and nothing rollgate reads.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// TrimForCache is the manager's cache transform: it drops from every cached object what rollgate
// never reads, which in a large cluster is much of the memory of the cache (every Deployment and
// StatefulSet of the cluster is cached):
//   - managedFields, except on workloads the entries that own a container image, which the
//     renderer reads to tell who changed the image (releaseWorkload, which rewrites the list,
//     reads the workload afresh);
//   - on workloads, kubectl's last-applied-configuration annotation. Workloads are only ever
//     written by patch or apply, which leave out what the cached copy lacks. Configs and
//     ApplicationVersions keep their annotations: they are written by update, which would drop them.
func TrimForCache(obj any) (any, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return obj, nil // a tombstone of a deleted object
	}
	switch o.(type) {
	case *appsv1.Deployment, *appsv1.StatefulSet:
		o.SetManagedFields(imageEntries(o.GetManagedFields()))
		if a := o.GetAnnotations(); a[lastAppliedAnnotation] != "" {
			delete(a, lastAppliedAnnotation)
			o.SetAnnotations(a)
		}
	default:
		o.SetManagedFields(nil)
	}
	return o, nil
}

// imageEntries keeps the managedFields entries that own some container's image.
func imageEntries(fields []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	kept := fields[:0]
	for _, e := range fields {
		if e.FieldsV1 != nil && bytes.Contains(e.FieldsV1.GetRawBytes(), []byte(`"f:image"`)) {
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return kept
}
