package engine

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/kube"
)

// Pushed wakes the configs of a pushed repository (a normalised name: index.docker.io/acme/web):
// the registry's answers about it are expired, so that their next look lists it again, and each
// config is reconciled now. It reports how many it woke. A wake that finds the engine's queue
// full is dropped: the poll stays the source of truth.
func (r *RollingUpgradeConfigReconciler) Pushed(ctx context.Context, repository string) int {
	var list v1alpha1.RollingUpgradeConfigList
	if err := r.Client.List(ctx, &list, client.MatchingFields{kube.IndexRepository: repository}); err != nil {
		logf.FromContext(ctx).Error(err, "listing the configs of a pushed repository", "repository", repository)
		return 0
	}
	if r.Tags != nil {
		r.Tags.Expire(repository)
	}
	woken := 0
	for i := range list.Items {
		select {
		case r.pushes <- event.TypedGenericEvent[*v1alpha1.RollingUpgradeConfig]{Object: &list.Items[i]}:
			woken++
		default:
		}
	}
	return woken
}
