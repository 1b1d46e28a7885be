package kube

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// Claimant returns the config that manages the workload ruc targets: of all configs in the
// namespace that target it, the oldest (then the first by name). Two configs steering one workload
// would overwrite each other's image and annotations (both render as field manager "rollgate"),
// so every other one is refused.
func Claimant(ctx context.Context, c client.Reader, ruc *v1alpha1.RollingUpgradeConfig) (string, error) {
	list, err := targeting(ctx, c, ruc)
	if err != nil {
		return "", err
	}
	winner := ruc
	for i := range list.Items {
		o := &list.Items[i]
		if o.DeletionTimestamp != nil {
			continue
		}
		if o.CreationTimestamp.Before(&winner.CreationTimestamp) ||
			(o.CreationTimestamp.Equal(&winner.CreationTimestamp) && o.Name < winner.Name) {
			winner = o
		}
	}
	return winner.Name, nil
}

// WorkloadClaim is the config the workload itself names as its renderer (rollgate.dev/last-updated-by)
// when that is another config, older than ruc, that targets it and is not being deleted; "" when
// ruc may manage it. The list claimant reads is a shard's own cache: a config of another shard
// is seen only here, read live by name, so two shards never both drive one workload (the younger
// config stops once the older one rendered).
func WorkloadClaim(ctx context.Context, live client.Reader, ruc *v1alpha1.RollingUpgradeConfig, w *Workload) (string, error) {
	other := w.Object().GetAnnotations()[v1alpha1.LastUpdatedByAnnotation]
	if other == "" || other == ruc.Name {
		return "", nil
	}
	var o v1alpha1.RollingUpgradeConfig
	if err := live.Get(ctx, client.ObjectKey{Namespace: ruc.Namespace, Name: other}, &o); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	older := o.CreationTimestamp.Before(&ruc.CreationTimestamp) ||
		(o.CreationTimestamp.Equal(&ruc.CreationTimestamp) && o.Name < ruc.Name)
	if o.DeletionTimestamp != nil || o.Spec.TargetRef != ruc.Spec.TargetRef || !older {
		return "", nil
	}
	return o.Name, nil
}

// OtherClaim reports whether a config other than ruc, not being deleted, targets the workload
// ruc's spec names.
func OtherClaim(ctx context.Context, c client.Reader, ruc *v1alpha1.RollingUpgradeConfig) (bool, error) {
	list, err := targeting(ctx, c, ruc)
	if err != nil {
		return false, err
	}
	for i := range list.Items {
		if o := &list.Items[i]; o.Name != ruc.Name && o.DeletionTimestamp == nil {
			return true, nil
		}
	}
	return false, nil
}

// targeting lists the configs in ruc's namespace whose spec names the workload ruc's does.
func targeting(ctx context.Context, c client.Reader, ruc *v1alpha1.RollingUpgradeConfig) (*v1alpha1.RollingUpgradeConfigList, error) {
	var list v1alpha1.RollingUpgradeConfigList
	err := c.List(ctx, &list, client.InNamespace(ruc.Namespace),
		client.MatchingFields{IndexTarget: TargetKey(ruc.Spec.TargetRef.Kind, ruc.Spec.TargetRef.Name)})
	return &list, err
}
