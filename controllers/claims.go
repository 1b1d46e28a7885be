package controllers

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// claimant returns the config that manages the workload ruc targets: of all configs in the
// namespace that target it, the oldest (then the first by name). Two configs steering one workload
// would overwrite each other's image and annotations (both render as field manager "rollgate"),
// so every other one is refused.
func claimant(ctx context.Context, c client.Reader, ruc *v1alpha1.RollingUpgradeConfig) (string, error) {
	var list v1alpha1.RollingUpgradeConfigList
	if err := c.List(ctx, &list, client.InNamespace(ruc.Namespace),
		client.MatchingFields{indexTarget: targetKey(ruc.Spec.TargetRef.Kind, ruc.Spec.TargetRef.Name)}); err != nil {
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
