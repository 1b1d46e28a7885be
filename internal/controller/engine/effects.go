package engine

import (
	"context"
	"errors"
	"time"

	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/controller/podgate"
	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/rollout"
)

// carryOut does what must follow the written decision: its metrics first (a verdict is recorded
// once, and a reconcile retried is another decision), then its effects in order, each tried
// whatever became of the one before, their errors joined.
func (r *RollingUpgradeConfigReconciler) carryOut(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig, w *kube.Workload, in rollout.Input, d rollout.Decision) error {
	configMetrics.record(ruc, d, in.Now, append(r.podUpgrades(ctx, ruc, w, in, d), d.PodUpgrades...))
	var errs []error
	if d.Effects.ReleaseSlots && r.Calendars {
		errs = append(errs, r.releaseSlots(ctx, ruc))
	}
	if d.Effects.MovePods && w != nil {
		errs = append(errs, podgate.Move(ctx, r.Client, w, in.Workload.InPlace, ruc.Spec.ContainerNames(), r.Clock))
	}
	if d.Effects.DeleteStuckPods && w != nil && w.StatefulSet != nil {
		errs = append(errs, deleteStuckPods(ctx, r.APIReader, r.Client, w.StatefulSet))
	}
	return errors.Join(errs...)
}

// podUpgrades times the pods of the new version when the decision ends a health check. It only
// feeds a metric, so a failure to list the pods is logged and the rollout goes on.
func (r *RollingUpgradeConfigReconciler) podUpgrades(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig, w *kube.Workload, in rollout.Input, d rollout.Decision) []time.Duration {
	// A withdrawn version never reached the workload: it has no pods. Pods changed in place are
	// timed one by one as they come through (Decision.PodUpgrades).
	if w == nil || !d.Outcome.Ends() || d.Outcome == rollout.OutcomeWithdrawn || d.Rollout.Image == "" || in.Workload.InPlace != nil {
		return nil
	}
	times, err := podUpgradeTimes(ctx, r.APIReader, w, ruc.Spec.ContainerNames(), d.Rollout.Image, d.Rollout.Started)
	if err != nil {
		logf.FromContext(ctx).Error(err, "timing the pods of the new version for pod_upgrade_duration_seconds")
	}
	return times
}

// letGo puts back in service, before the decision is written, the pods that no in-place upgrade
// moves on: the workload's (Effects.LetGo) and a former target's (releaseFormerTarget). When they
// cannot be, the record of them stays for the retry: it returns the decision to write
// (Decision.KeepingPods), whether to write it, and the error.
func (r *RollingUpgradeConfigReconciler) letGo(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig, w *kube.Workload, now time.Time, d rollout.Decision) (rollout.Decision, bool, error) {
	var err error
	if d.Effects.LetGo && w != nil {
		err = podgate.Release(ctx, r.APIReader, r.Client, w, now)
	}
	if err = errors.Join(err, r.releaseFormerTarget(ctx, ruc, now)); err == nil {
		return d, true, nil
	}
	d, write := d.KeepingPods(&ruc.Status)
	return d, write, err
}

// releaseFormerTarget lets go of the pods of a StatefulSet the config upgraded in place before
// its targetRef came to name another workload: status.inPlace records that upgrade until the
// decision that drops the old record, which is written after. A StatefulSet another config now
// names is that config's to move.
func (r *RollingUpgradeConfigReconciler) releaseFormerTarget(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig, now time.Time) error {
	was := ruc.Status.RecordedTarget
	if ruc.Status.InPlace == nil || was == nil || was.Kind != v1alpha1.KindStatefulSet ||
		(was.Kind == ruc.Spec.TargetRef.Kind && was.Name == ruc.Spec.TargetRef.Name) {
		return nil
	}
	former := ruc.DeepCopy()
	former.Spec.TargetRef = v1alpha1.WorkloadReference{Kind: was.Kind, Name: was.Name}
	if other, err := kube.OtherClaim(ctx, r.Client, former); err != nil || other {
		return err
	}
	w, err := kube.GetWorkload(ctx, r.Client, r.APIReader, former)
	if err != nil || w == nil {
		return err
	}
	return podgate.Release(ctx, r.APIReader, r.Client, w, now)
}
