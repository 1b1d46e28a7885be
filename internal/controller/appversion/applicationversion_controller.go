// Package appversion answers ApplicationVersions: it writes their status (observed generation and
// Ready), for the manager's shard.
package appversion

import (
	"context"
	"fmt"

	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/image"
	"github.com/rollgate/rollgate/internal/version"
)

// ApplicationVersionReconciler reports on each ApplicationVersion whether its version can be used:
// Ready=False with reason NotSemver for a tag such as "latest", which every config ignores unless
// its tag policy reads it (it does not know its readers), and
// NotATag for a version no image can have, such as 1.4.0+build.5.
type ApplicationVersionReconciler struct {
	Client client.Client
	Clock  clock.PassiveClock
}

// Reconcile sets the Ready condition.
func (r *ApplicationVersionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var av v1alpha1.ApplicationVersion
	if err := r.Client.Get(ctx, req.NamespacedName, &av); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := av.Status.DeepCopy()
	cond := metav1.Condition{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonValid,
		Message:            fmt.Sprintf("%s:%s can be rolled out", av.Spec.Image, av.Spec.Version),
		ObservedGeneration: av.Generation, LastTransitionTime: metav1.NewTime(r.Clock.Now())}
	switch {
	case !image.IsTag(av.Spec.Version):
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonNotATag
		cond.Message = fmt.Sprintf("version %q is not an image tag (letters, digits, '_', '.' and '-' only; no build metadata such as +build.5); "+
			"configs that read it stall until it is fixed", av.Spec.Version)
	case !version.IsSemver(av.Spec.Version):
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonNotSemver
		cond.Message = fmt.Sprintf("version %q is not semver; configs ignore it, but for those whose spec.tagPolicy reads it", av.Spec.Version)
	}
	apimeta.SetStatusCondition(&av.Status.Conditions, cond)
	av.Status.ObservedGeneration = av.Generation
	if equality.Semantic.DeepEqual(*before, av.Status) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.Client.Status().Update(ctx, &av, client.FieldOwner(v1alpha1.FieldManager))
}

// SetupWithManager reconciles on spec changes of the ApplicationVersions in the manager's shard.
// Those of other shards are left to their managers; all stay in the cache, since a config may read
// any of its namespace's.
func (r *ApplicationVersionReconciler) SetupWithManager(mgr ctrl.Manager, shard labels.Selector) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("applicationversion").
		For(&v1alpha1.ApplicationVersion{}, builder.WithPredicates(predicate.GenerationChangedPredicate{}, inShard(shard))).
		Complete(r)
}

// inShard admits the objects whose labels the shard's selector matches; nil admits all.
func inShard(shard labels.Selector) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		return shard == nil || shard.Matches(labels.Set(o.GetLabels()))
	})
}
