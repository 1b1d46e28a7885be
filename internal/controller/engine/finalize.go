package engine

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/controller/podgate"
	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/rollout"
)

// finalize carries out the deletion policy of a deleted config, gives up rollgate's hold on its
// workload, and lets the config go.
func (r *RollingUpgradeConfigReconciler) finalize(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(ruc, v1alpha1.Finalizer) {
		return ctrl.Result{}, nil
	}
	in, w, err := r.gather(ctx, ruc)
	if err != nil {
		return ctrl.Result{}, err
	}
	f := rollout.Finalize(in)
	if !f.Release {
		return ctrl.Result{RequeueAfter: f.RequeueAfter}, nil
	}
	if w != nil && w.StatefulSet != nil && (in.Workload.ReleaseGates || in.Workload.InPlace != nil) {
		// No pod of an in-place upgrade stays out of its Service once the config is gone.
		if err := podgate.Release(ctx, r.APIReader, r.Client, w, in.Now); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.releaseFormerTarget(ctx, ruc, in.Now); err != nil {
		return ctrl.Result{}, err
	}
	if f.Workload && w != nil {
		// Read afresh: the cached copy lacks most managedFields (CacheTrim).
		fresh, err := kube.ReadWorkload(ctx, r.APIReader, ruc)
		if err != nil {
			return ctrl.Result{}, err
		}
		if fresh != nil {
			if err := releaseWorkload(ctx, r.Client, fresh); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	subject := ruc.DeepCopy()
	controllerutil.RemoveFinalizer(ruc, v1alpha1.Finalizer)
	if err := patchMetadata(ctx, r.Client, subject, ruc); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	for _, e := range f.Events {
		r.record(subject, e, "Delete")
	}
	configMetrics.forget(ruc.Namespace, ruc.Name)
	return ctrl.Result{}, nil
}
