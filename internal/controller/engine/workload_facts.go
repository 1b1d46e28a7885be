package engine

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/controller/podgate"
	"github.com/rollgate/rollgate/internal/health"
	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/rollout"
)

// facts is what the rollout decision needs to know of the workload.
func facts(ctx context.Context, reader client.Reader, ruc *v1alpha1.RollingUpgradeConfig, w *kube.Workload, now time.Time) (*rollout.Workload, error) {
	spec := ruc.Spec
	f := &rollout.Workload{Description: w.Describe()}
	var err error
	if spec.InPlace() != nil && w.StatefulSet != nil {
		var j podgate.Judgement
		j, err = podgate.Judge(ctx, reader, ruc, w, now)
		f.Verdict, f.InPlace, f.ReleaseGates = j.Verdict, j.Plan, j.Release
	} else {
		// Pods keep the gates they were created with: those of a template that has the gate, or
		// those an in-place upgrade the status still records moved (its strategy and the
		// template's gate may have gone in one edit).
		f.ReleaseGates = w.StatefulSet != nil && (kube.HasGate(w.StatefulSet.Spec.Template.Spec.ReadinessGates) || ruc.Status.InPlace != nil)
		f.Verdict, err = w.Verdict(ctx, reader, health.Options{AllowZeroReplicas: spec.AllowZeroReplicas, Now: now})
	}
	if err != nil {
		return nil, err
	}
	a := w.Object().GetAnnotations()
	if cs, err := w.Containers(spec.ContainerNames()); err != nil {
		f.ContainerProblem = err.Error()
	} else if spec.InPlace() != nil && cs[0].Init {
		f.ContainerProblem = podgate.InitContainerProblem(cs[0].Name)
	} else if c, problem := rollout.Running(cs, a[v1alpha1.LastImageAnnotation], rollout.RecordedImage(ruc)); problem != "" {
		f.ContainerProblem = problem
	} else {
		f.Image, f.Container = c.Image, cs[0].Name
	}
	if w.Deployment != nil {
		f.ProgressDeadline = time.Duration(ptr.Deref(w.Deployment.Spec.ProgressDeadlineSeconds, 600)) * time.Second
	}
	// Stuck pods are deleted in a rollback only when their StatefulSet replaces them in order, which
	// an in-place upgrade does not leave it to.
	f.OrderedReadyStatefulSet = w.StatefulSet != nil && w.StatefulSet.Spec.PodManagementPolicy != appsv1.ParallelPodManagement && f.InPlace == nil
	f.GenerationObserved = w.ObservedGeneration() >= w.Object().GetGeneration()
	f.ImageReverts, f.ImageRevertedBy = kube.Reverts(a), a[v1alpha1.RevertedByAnnotation]
	f.ImageRevertedAt, _ = time.Parse(time.RFC3339, a[v1alpha1.RevertedAtAnnotation])
	return f, nil
}
