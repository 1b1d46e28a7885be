package engine

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/rollout"
)

// slotWrites is how often a claim or release is tried when other writers of the calendar's
// status keep winning; each try after the first reads the calendar afresh.
const slotWrites = 3

// claimSlots claims for tag a slot of each calendar with spec.maxConcurrent among in.Calendars,
// all or none: in the order of their names (the same for every config, so two configs do not
// each hold the slot the other waits for), and a refusal gives back the slots this claim took.
// Slots are taken by writes to the calendar's status that fail when another writer came first,
// so two configs never take the last slot both, whichever manager runs them.
func (r *RollingUpgradeConfigReconciler) claimSlots(ctx context.Context, in rollout.Input, tag string) map[string]rollout.SlotAnswer {
	out := map[string]rollout.SlotAnswer{}
	self := client.ObjectKeyFromObject(in.Config)
	var taken []*v1alpha1.RolloutCalendar
	for _, cal := range rollout.Limited(in.Calendars) {
		var a rollout.SlotAnswer
		written, err := r.writeSlots(ctx, cal, func(slots []v1alpha1.CalendarRollout) ([]v1alpha1.CalendarRollout, bool) {
			// Stamped when written: the grace of a slot runs from its write, not from the start of
			// a reconcile that may have waited for a registry or Prometheus since.
			next, granted := rollout.Claim(slots, int(*cal.Spec.MaxConcurrent), self, tag, r.Clock.Now(), r.holderOf(ctx))
			a = rollout.SlotAnswer{Granted: granted}
			if !granted {
				a.Holders = rollout.HolderNames(next)
			}
			// A grant is written even when the list looks the same (a slot renewed within its
			// second): with the resourceVersion, it fails if another claim came first.
			return next, granted
		})
		if err != nil {
			a = rollout.SlotAnswer{Problem: err.Error()}
		}
		out[cal.Name] = a
		if !a.Granted {
			for _, t := range taken {
				if _, err := r.writeSlots(ctx, t, release(self)); err != nil {
					// Its next reconcile, idle, gives it back (releaseSlots).
					ctrl.LoggerFrom(ctx).Error(err, "giving back a slot after another calendar refused one", "calendar", t.Name)
				}
			}
			break
		}
		taken = append(taken, written)
	}
	return out
}

// release takes self's slot out of a slot list.
func release(self types.NamespacedName) func([]v1alpha1.CalendarRollout) ([]v1alpha1.CalendarRollout, bool) {
	return func(slots []v1alpha1.CalendarRollout) ([]v1alpha1.CalendarRollout, bool) {
		return rollout.Release(slots, self), false
	}
}

// releaseSlots gives back the slots the config holds while no rollout of it is in flight: after
// its verdict, or after a claim that could not be carried out.
func (r *RollingUpgradeConfigReconciler) releaseSlots(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig) error {
	var list v1alpha1.RolloutCalendarList
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing RolloutCalendars: %w", err)
	}
	self := client.ObjectKeyFromObject(ruc)
	for i := range list.Items {
		cal := &list.Items[i]
		if !rollout.Holds(cal.Status.Rollouts, self) {
			continue
		}
		if _, err := r.writeSlots(ctx, cal, release(self)); err != nil {
			return err
		}
	}
	return nil
}

// writeSlots writes change(slots) into a copy of the calendar's status.rollouts, if that changes
// them or change says to, with the calendar's resourceVersion: a conflict reads it afresh and
// tries again, slotWrites times at most. It returns the calendar as stored.
func (r *RollingUpgradeConfigReconciler) writeSlots(ctx context.Context, cal *v1alpha1.RolloutCalendar,
	change func([]v1alpha1.CalendarRollout) ([]v1alpha1.CalendarRollout, bool)) (*v1alpha1.RolloutCalendar, error) {
	cal = cal.DeepCopy()
	tries := 0
	err := retry.RetryOnConflict(wait.Backoff{Steps: slotWrites}, func() error {
		if tries++; tries > 1 {
			if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cal), cal); err != nil {
				return fmt.Errorf("reading RolloutCalendar %s: %w", cal.Name, err)
			}
		}
		next, write := change(cal.Status.Rollouts)
		if !write && equality.Semantic.DeepEqual(next, cal.Status.Rollouts) { // nil and empty alike
			return nil
		}
		cal.Status.Rollouts = next
		return r.Client.Status().Update(ctx, cal, client.FieldOwner(v1alpha1.FieldManager))
	})
	if err != nil {
		return nil, fmt.Errorf("writing the slots of RolloutCalendar %s: %w", cal.Name, err)
	}
	return cal, nil
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
			return rollout.Holder{State: rollout.HolderGone}
		case err != nil:
			return rollout.Holder{State: rollout.HolderInFlight}
		}
		return rollout.HolderOf(&ruc, s)
	}
}
