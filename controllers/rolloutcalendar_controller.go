package controllers

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/controllers/rollout"
)

// RolloutCalendarReconciler writes what each RolloutCalendar's windows say: open or closed, by
// which window, the next opening and closing. The configs' reconciles write its slots.
type RolloutCalendarReconciler struct {
	Client client.Client
	Clock  clock.PassiveClock
}

// Reconcile writes the calendar's status and looks again when it changes by itself.
func (r *RolloutCalendarReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cal v1alpha1.RolloutCalendar
	if err := r.Client.Get(ctx, req.NamespacedName, &cal); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	now := r.Clock.Now()
	st, next := rollout.CalendarStatus(&cal, now)
	after := rollout.CalendarRecheck
	if !next.IsZero() && next.Sub(now) < after {
		after = next.Sub(now) + time.Second // past the instant, so that the look finds the change
	}
	if equality.Semantic.DeepEqual(st, cal.Status) {
		return ctrl.Result{RequeueAfter: after}, nil
	}
	before := cal.DeepCopy()
	cal.Status = st
	// A merge patch of the fields that changed: the slots, which configs write meanwhile, are not
	// among them.
	if err := r.Client.Status().Patch(ctx, &cal, client.MergeFrom(before), client.FieldOwner(v1alpha1.FieldManager)); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

// SetupWithManager reconciles on spec changes; the requeues follow the calendar's times.
func (r *RolloutCalendarReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("rolloutcalendar").
		For(&v1alpha1.RolloutCalendar{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}
