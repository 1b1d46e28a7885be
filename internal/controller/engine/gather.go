package engine

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/rollout"
)

// gather reads the workload and, when idle, the sources.
func (r *RollingUpgradeConfigReconciler) gather(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig) (rollout.Input, *kube.Workload, error) {
	in := rollout.Input{Now: r.Clock.Now(), Config: ruc, Prometheus: r.Metrics != nil}
	a := rollout.AnnotationsOf(ruc)
	owner, err := kube.Claimant(ctx, r.Client, ruc)
	if err != nil {
		return in, nil, err
	}
	if owner != ruc.Name {
		in.ClaimedBy = owner
		return in, nil, nil
	}
	w, err := kube.GetWorkload(ctx, r.Client, r.APIReader, ruc)
	if err != nil {
		return in, nil, err
	}
	if w != nil {
		if in.ClaimedBy, err = kube.WorkloadClaim(ctx, r.APIReader, ruc, w); err != nil || in.ClaimedBy != "" {
			return in, nil, err
		}
	}
	var pod *corev1.PodSpec
	if w != nil {
		if in.Workload, err = facts(ctx, r.APIReader, ruc, w, in.Now); err != nil {
			return in, nil, err
		}
		if rollout.NeedsPods(ruc, in.Workload, in.Now) {
			if in.Workload.NewPods, err = newPods(ctx, r.APIReader, w, ruc.Spec.ContainerNames(), a.TargetImage); err != nil {
				return in, nil, err
			}
		}
		pod = w.PodSpec()
		in.Measurements = measure(ctx, r.Metrics, r.Waits, ruc, in.Workload, in.Now)
	}
	if r.Calendars && rollout.NeedsCalendars(ruc) {
		if in.Calendars, err = calendarsFor(ctx, r.Client, r.APIReader, ruc); err != nil {
			return in, nil, err
		}
	}
	if a.Step == rollout.StepIdle && ruc.DeletionTimestamp == nil {
		if err := gatherCandidates(ctx, r.Client, r.registry(), r.imagePolicies, ruc, pod, &in); err != nil {
			return in, nil, err
		}
	}
	return in, w, nil
}
