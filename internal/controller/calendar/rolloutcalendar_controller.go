// Package calendar writes the status of RolloutCalendars: whether each is open now, and when it
// opens or closes next.
package calendar

import (
	"context"
	"encoding/json"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/rollout"
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
	patch, err := statusPatch(&cal, st)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.Client.Status().Patch(ctx, &cal, patch, client.FieldOwner(v1alpha1.FieldManager)); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

// statusPatch is a merge patch of the fields of the calendar's status that st changes: the slots,
// which configs write meanwhile, are not among them. status.open is always in it: a merge patch
// made from the cached object leaves out a false that the object reads as false already, though
// the stored status may lack the field (a calendar closed when created).
func statusPatch(cal *v1alpha1.RolloutCalendar, st v1alpha1.RolloutCalendarStatus) (client.Patch, error) {
	before := cal.DeepCopy()
	cal.Status = st
	data, err := client.MergeFrom(before).Data(cal)
	if err != nil {
		return nil, err
	}
	var patch map[string]map[string]any
	if err := json.Unmarshal(data, &patch); err != nil {
		return nil, err
	}
	if patch["status"] == nil {
		patch["status"] = map[string]any{}
	}
	patch["status"]["open"] = st.Open
	if data, err = json.Marshal(patch); err != nil {
		return nil, err
	}
	return client.RawPatch(types.MergePatchType, data), nil
}

// SetupWithManager reconciles on spec changes; the requeues follow the calendar's times.
func (r *RolloutCalendarReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("rolloutcalendar").
		For(&v1alpha1.RolloutCalendar{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}
