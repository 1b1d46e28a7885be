package controllers

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/controllers/registry"
	"github.com/rollgate/rollgate/controllers/rollout"
)

// RollingUpgradeConfigReconciler is the rollout engine: it decides when and to which version a
// workload moves, watches the health check, and rolls back. It writes only the config (annotations
// and status), plus deletes stuck StatefulSet pods during a rollback; the renderer writes the image.
type RollingUpgradeConfigReconciler struct {
	Client    client.Client
	APIReader client.Reader // uncached: pods, secrets and service accounts, which the manager does not watch
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock
	Tags      *registry.Cache // shared registry listings
}

// Reconcile gathers the facts, lets rollout.Decide choose, and carries out the decision.
func (r *RollingUpgradeConfigReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var ruc v1alpha1.RollingUpgradeConfig
	if err := r.Client.Get(ctx, req.NamespacedName, &ruc); err != nil {
		if apierrors.IsNotFound(err) {
			forgetMetrics(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// The in-flight state before the decision, for the metrics of a rollout the decision ends.
	before := rollout.AnnotationsOf(&ruc)
	in, w, err := r.gather(ctx, &ruc)
	if err != nil {
		return ctrl.Result{}, err
	}
	d := rollout.Decide(in)
	if err := r.apply(ctx, &ruc, d); err != nil {
		if apierrors.IsConflict(err) {
			// Someone changed the config since it was read; decide again on the new version.
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return ctrl.Result{}, err
	}
	if d.DeleteStuckPods && w != nil && w.statefulSet != nil {
		if err := deleteStuckPods(ctx, r.APIReader, r.Client, w.statefulSet); err != nil {
			return ctrl.Result{}, err
		}
	}
	for _, e := range d.Events {
		r.Recorder.Eventf(&ruc, nil, e.Type, e.Reason, "Reconcile", "%s", e.Message)
	}
	recordMetrics(&ruc, before, d, in.Now, r.podUpgrades(ctx, &ruc, w, before, d))
	return ctrl.Result{RequeueAfter: d.RequeueAfter}, nil
}

// podUpgrades times the pods of the new version when the decision ends a health check. It only
// feeds a metric, so a failure to list the pods is logged and the rollout goes on.
func (r *RollingUpgradeConfigReconciler) podUpgrades(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig, w *workload,
	before rollout.Annotations, d rollout.Decision) []time.Duration {
	started, err := time.Parse(time.RFC3339, before.UpdateStarted)
	if w == nil || err != nil || before.TargetImage == "" || !endsHealthCheck(before, d) {
		return nil
	}
	times, err := podUpgradeTimes(ctx, r.APIReader, w, ruc.Spec.Container, before.TargetImage, started)
	if err != nil {
		logf.FromContext(ctx).Error(err, "timing the pods of the new version for pod_upgrade_duration_seconds")
	}
	return times
}

// gather reads the workload and, when idle, the sources.
func (r *RollingUpgradeConfigReconciler) gather(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig) (rollout.Input, *workload, error) {
	in := rollout.Input{Now: r.Clock.Now(), Config: ruc}
	owner, err := claimant(ctx, r.Client, ruc)
	if err != nil {
		return in, nil, err
	}
	if owner != ruc.Name {
		in.ClaimedBy = owner
		return in, nil, nil
	}
	w, err := getWorkload(ctx, r.Client, ruc)
	if err != nil {
		return in, nil, err
	}
	var pod *corev1.PodSpec
	if w != nil {
		in.Workload = w.facts(ruc.Spec.Container)
		pod = w.podSpec()
	}
	if rollout.AnnotationsOf(ruc).UpdatePhase == rollout.PhaseIdle {
		reg := registrySource{cache: r.Tags, reader: r.APIReader}
		if err := gatherCandidates(ctx, r.Client, reg, ruc, pod, &in); err != nil {
			return in, nil, err
		}
	}
	return in, w, nil
}

// apply writes the annotations and the status, each only if it changed, in the order the decision
// asks for. Each write returns the stored object, so the second write carries the newest
// resourceVersion and a concurrent change still fails with a conflict instead of being lost.
func (r *RollingUpgradeConfigReconciler) apply(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig, d rollout.Decision) error {
	writeAnnotations := func() error {
		if rollout.AnnotationsOf(ruc) == d.Annotations {
			return nil
		}
		a := ruc.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		for key, value := range map[string]string{
			v1alpha1.TargetImageAnnotation:   d.Annotations.TargetImage,
			v1alpha1.UpdatePhaseAnnotation:   d.Annotations.UpdatePhase,
			v1alpha1.UpdateStartedAnnotation: d.Annotations.UpdateStarted,
		} {
			if value == "" {
				delete(a, key)
			} else {
				a[key] = value
			}
		}
		ruc.SetAnnotations(a)
		return r.Client.Update(ctx, ruc, client.FieldOwner(v1alpha1.FieldManager))
	}
	writeStatus := func() error {
		if equality.Semantic.DeepEqual(ruc.Status, d.Status) {
			return nil
		}
		ruc.Status = d.Status
		return r.Client.Status().Update(ctx, ruc, client.FieldOwner(v1alpha1.FieldManager))
	}
	first, second := writeAnnotations, writeStatus
	if d.StatusFirst {
		first, second = writeStatus, writeAnnotations
	}
	if err := first(); err != nil {
		return err
	}
	return second()
}

// SetupWithManager watches configs (spec and annotation changes; the status is the controller's
// own), their workloads and their sources.
func (r *RollingUpgradeConfigReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	c := mgr.GetClient()
	return ctrl.NewControllerManagedBy(mgr).
		Named("rollingupgradeconfig").
		For(&v1alpha1.RollingUpgradeConfig{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&appsv1.Deployment{}, byTarget(c, v1alpha1.KindDeployment)).
		Watches(&appsv1.StatefulSet{}, byTarget(c, v1alpha1.KindStatefulSet)).
		Watches(&v1alpha1.ApplicationVersion{}, byName(c, indexApplicationVersion)).
		Watches(&corev1.ConfigMap{}, byName(c, indexConfigMap)).
		Complete(r)
}
