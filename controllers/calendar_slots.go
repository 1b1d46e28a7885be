package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/controllers/rollout"
)

// slotWrites is how often a claim or release is tried when other writers of the calendar's
// status keep winning; each try after the first reads the calendar afresh.
const slotWrites = 3

// claimSlots claims for tag a slot of each calendar with spec.maxConcurrent among in.Calendars,
// in their order, and stops at the first refusal: slots are taken by writes to the calendar's
// status that fail when another writer came first, so two configs never take the last slot both,
// whichever manager runs them.
func (r *RollingUpgradeConfigReconciler) claimSlots(ctx context.Context, in rollout.Input, tag string) map[string]rollout.SlotAnswer {
	out := map[string]rollout.SlotAnswer{}
	self := client.ObjectKeyFromObject(in.Config)
	for _, cal := range rollout.Limited(in.Calendars) {
		var a rollout.SlotAnswer
		err := r.writeSlots(ctx, cal, func(slots []v1alpha1.CalendarRollout) []v1alpha1.CalendarRollout {
			next, granted := rollout.Claim(slots, int(*cal.Spec.MaxConcurrent), self, tag, in.Now, r.holderOf(ctx))
			a = rollout.SlotAnswer{Granted: granted}
			if !granted {
				a.Holders = rollout.HolderNames(next)
			}
			return next
		})
		if err != nil {
			a = rollout.SlotAnswer{Problem: err.Error()}
		}
		out[cal.Name] = a
		if !a.Granted {
			break
		}
	}
	return out
}

// releaseSlots gives back the slots the config holds while no rollout of it is in flight: after
// its verdict, or after a claim that another calendar refused.
func (r *RollingUpgradeConfigReconciler) releaseSlots(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig) error {
	var list v1alpha1.RolloutCalendarList
	if err := r.Client.List(ctx, &list); err != nil {
		return fmt.Errorf("listing RolloutCalendars: %w", err)
	}
	self := client.ObjectKeyFromObject(ruc)
	for i := range list.Items {
		cal := &list.Items[i]
		if len(rollout.Release(cal.Status.Rollouts, self)) == len(cal.Status.Rollouts) {
			continue
		}
		if err := r.writeSlots(ctx, cal, func(slots []v1alpha1.CalendarRollout) []v1alpha1.CalendarRollout {
			return rollout.Release(slots, self)
		}); err != nil {
			return err
		}
	}
	return nil
}

// writeSlots writes change(slots) into the calendar's status.rollouts, if that changes them,
// with the calendar's resourceVersion: a conflict reads it afresh and tries again.
func (r *RollingUpgradeConfigReconciler) writeSlots(ctx context.Context, cal *v1alpha1.RolloutCalendar,
	change func([]v1alpha1.CalendarRollout) []v1alpha1.CalendarRollout) error {
	cal = cal.DeepCopy()
	for try := 1; ; try++ {
		next := change(cal.Status.Rollouts)
		if equality.Semantic.DeepEqual(next, cal.Status.Rollouts) || (len(next) == 0 && len(cal.Status.Rollouts) == 0) {
			return nil
		}
		cal.Status.Rollouts = next
		err := r.Client.Status().Update(ctx, cal, client.FieldOwner(v1alpha1.FieldManager))
		if !apierrors.IsConflict(err) || try == slotWrites {
			if err != nil {
				return fmt.Errorf("writing the slots of RolloutCalendar %s: %w", cal.Name, err)
			}
			return nil
		}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cal), cal); err != nil {
			return fmt.Errorf("reading RolloutCalendar %s: %w", cal.Name, err)
		}
	}
}

// holderOf says whether the config behind a slot is gone, idle or in flight: from the cache, or,
// for a config it does not hold (another shard's), from the API server. A config neither can tell
// of counts as in flight: a slot is never taken from a rollout that may still run.
func (r *RollingUpgradeConfigReconciler) holderOf(ctx context.Context) func(v1alpha1.CalendarRollout) rollout.Holder {
	return func(s v1alpha1.CalendarRollout) rollout.Holder {
		var ruc v1alpha1.RollingUpgradeConfig
		key := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
		err := r.Client.Get(ctx, key, &ruc)
		if apierrors.IsNotFound(err) {
			err = r.APIReader.Get(ctx, key, &ruc)
		}
		switch {
		case apierrors.IsNotFound(err):
			return rollout.HolderGone
		case err != nil || rollout.AnnotationsOf(&ruc).Step != rollout.StepIdle:
			return rollout.HolderInFlight
		}
		return rollout.HolderIdle
	}
}
