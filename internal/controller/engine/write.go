package engine

import (
	"context"
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/rollout"
)

// write writes the annotations and the status, each only if it changed, in the order the decision
// asks for, and emits each event once its write succeeded (rollout.Write says which). Each write
// returns the stored object, so the second write carries the newest resourceVersion and a
// concurrent change still fails with a conflict instead of being lost.
func (r *RollingUpgradeConfigReconciler) write(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig, d rollout.Decision) error {
	writeAnnotations := func() error {
		// The finalizer goes with the first metadata write: a deleted config is held until its
		// deletion policy is carried out (finalize).
		if maps.Equal(rollout.AnnotationsOf(ruc).Values(), d.Annotations.Values()) && controllerutil.ContainsFinalizer(ruc, v1alpha1.Finalizer) {
			return nil
		}
		before := ruc.DeepCopy()
		controllerutil.AddFinalizer(ruc, v1alpha1.Finalizer)
		a := ruc.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		for key, value := range d.Annotations.Values() {
			if value == "" {
				delete(a, key)
			} else {
				a[key] = value
			}
		}
		ruc.SetAnnotations(a)
		return patchMetadata(ctx, r.Client, before, ruc)
	}
	writeStatus := func() error {
		if equality.Semantic.DeepEqual(ruc.Status, d.Status) {
			return nil
		}
		ruc.Status = d.Status
		return r.Client.Status().Update(ctx, ruc, client.FieldOwner(v1alpha1.FieldManager))
	}
	type write struct {
		do   func() error
		kind rollout.Write
	}
	writes := []write{{writeAnnotations, rollout.WriteAnnotations}, {writeStatus, rollout.WriteStatus}}
	if d.StatusFirst {
		writes[0], writes[1] = writes[1], writes[0]
	}
	// The object as read is the event's subject; a successful write changes ruc in place.
	subject := ruc.DeepCopy()
	for _, w := range writes {
		if err := w.do(); err != nil {
			return err
		}
		for _, e := range d.Events {
			if e.After == w.kind {
				r.record(subject, e, "Reconcile")
			}
		}
	}
	return nil
}

// patchMetadata writes what changed of the config's metadata (its annotations and finalizers) from
// before to ruc, failing with a conflict if another wrote the config in between. The spec is not
// sent: written back from Go, it would not be the bytes a person or a GitOps tool applied ("10m"
// comes out as "10m0s"), and each write would change its generation and be a drift to revert.
func patchMetadata(ctx context.Context, c client.Client, before, ruc *v1alpha1.RollingUpgradeConfig) error {
	return c.Patch(ctx, ruc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(v1alpha1.FieldManager))
}

// record emits a decided event, annotated with the version it is about when the recorder takes
// annotations (and the event is about one).
func (r *RollingUpgradeConfigReconciler) record(subject *v1alpha1.RollingUpgradeConfig, e rollout.Event, action string) {
	if a, ok := r.Recorder.(kube.AnnotatedRecorder); ok && e.Version != "" {
		a.AnnotatedEventf(subject, nil, map[string]string{v1alpha1.RevisionAnnotation: e.Version}, e.Type, e.Reason, action, "%s", e.Message)
		return
	}
	r.Recorder.Eventf(subject, nil, e.Type, e.Reason, action, "%s", e.Message)
}
