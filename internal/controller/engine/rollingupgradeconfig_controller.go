// Package engine is the rollout engine: it reads a RollingUpgradeConfig's workload, sources,
// calendars, registry and Prometheus, lets internal/rollout decide, writes the decision to the
// config's annotations and status, and carries out what must follow (metrics, calendar slots, the
// moves of an in-place upgrade, stuck pods).
package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	imagev1 "github.com/fluxcd/image-reflector-controller/api/v1"
	"github.com/google/go-containerregistry/pkg/authn"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/promquery"
	"github.com/rollgate/rollgate/internal/registry"
)

// RollingUpgradeConfigReconciler is the rollout engine: it decides when and to which version a
// workload moves, watches the health check, and rolls back. It writes the config (annotations and
// status), the calendars' slots, and pods (those it moves in place or lets go, and the stuck ones
// of a StatefulSet rollback); the renderer writes the image.
type RollingUpgradeConfigReconciler struct {
	Client    client.Client
	APIReader client.Reader // uncached: pods, secrets and service accounts, which the manager does not watch
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock
	Tags      *registry.Cache // shared registry listings
	// CloudIdentity, if set, reads the registries of the clouds with the manager's own identity,
	// after the workloads' pull secrets.
	CloudIdentity authn.Keychain
	Metrics       promquery.Querier // the admin's Prometheus for spec.analysis; nil: none
	Waits         WaitSlots         // the reconciles that may wait for Metrics or a registry at once
	Calendars     bool              // RolloutCalendars apply (the manager may read them)
	// ImagePolicies: the manager may watch Flux's ImagePolicies; it does when the cluster serves
	// them at its start (imagePolicies, set by SetupWithManager).
	ImagePolicies bool
	imagePolicies bool

	// pushes are the configs a registry push wakes (Pushed).
	pushes chan event.TypedGenericEvent[*v1alpha1.RollingUpgradeConfig]
}

// Reconcile reads the config, gathers what its decision needs, lets rollout.Decide choose, writes
// the decision, and carries out what must follow it.
func (r *RollingUpgradeConfigReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	var ruc v1alpha1.RollingUpgradeConfig
	defer r.reportPanic(ctx, &ruc, &err)
	if err := r.Client.Get(ctx, req.NamespacedName, &ruc); err != nil {
		if apierrors.IsNotFound(err) {
			configMetrics.forget(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ruc.DeletionTimestamp != nil {
		return againOnConflict(r.finalize(ctx, &ruc))
	}
	in, w, err := r.gather(ctx, &ruc)
	if err != nil {
		return ctrl.Result{}, err
	}
	d := r.decide(ctx, in, w)
	d, write, letGo := r.letGo(ctx, &ruc, w, in.Now, d)
	if !write {
		return ctrl.Result{}, letGo
	}
	if err := r.write(ctx, &ruc, d); err != nil {
		return againOnConflict(ctrl.Result{}, err)
	}
	if err := errors.Join(letGo, r.carryOut(ctx, &ruc, w, in, d)); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: d.RequeueAfter}, nil
}

// againOnConflict turns a conflict into a quiet look a second later: the config, its workload or
// a pod changed since it was read (a person, the renderer or the workload's controller wrote it),
// an ordinary race finished by a decision on fresh copies.
func againOnConflict(res ctrl.Result, err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	return res, err
}

// reportPanic turns a panic in one config's reconcile into an error for that config alone (retried
// with backoff) and a Warning event on it, so a person sees which config trips the manager.
func (r *RollingUpgradeConfigReconciler) reportPanic(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig, err *error) {
	p := recover()
	if p == nil {
		return
	}
	*err = fmt.Errorf("reconcile panicked: %v", p)
	logf.FromContext(ctx).Error(*err, "recovered", "stack", string(debug.Stack()))
	if ruc.ResourceVersion != "" { // read before the panic
		r.Recorder.Eventf(ruc, nil, corev1.EventTypeWarning, v1alpha1.EventReconcilePanic, "Reconcile",
			"rollgate failed on this config (%v) and retries it with backoff; other configs go on. Please report it with the manager's log.", p)
	}
}

// SetupWithManager watches configs (spec and annotation changes; the status is the controller's
// own, but for the write-back's first read of the config's record in Git, and what Git took of a
// GitFirst config), their workloads, their sources and the RolloutCalendars.
func (r *RollingUpgradeConfigReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	c := mgr.GetClient()
	b := ctrl.NewControllerManagedBy(mgr).
		Named("rollingupgradeconfig").
		For(&v1alpha1.RollingUpgradeConfig{}, builder.WithPredicates(
			predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, kube.GitRecordRead, kube.GitWritten))).
		Watches(&appsv1.Deployment{}, kube.ByTarget(c, v1alpha1.KindDeployment)).
		Watches(&appsv1.StatefulSet{}, kube.ByTarget(c, v1alpha1.KindStatefulSet)).
		Watches(&v1alpha1.ApplicationVersion{}, kube.ByName(c, kube.IndexApplicationVersion)).
		Watches(&corev1.ConfigMap{}, kube.ByName(c, kube.IndexConfigMap))
	if r.Calendars {
		b = b.Watches(&v1alpha1.RolloutCalendar{}, byCalendar(c))
	}
	if r.ImagePolicies {
		var err error
		if r.imagePolicies, err = imagePoliciesServed(mgr.GetRESTMapper()); err != nil {
			return err
		}
	}
	if r.imagePolicies {
		b = b.Watches(&imagev1.ImagePolicy{}, kube.ByName(c, kube.IndexImagePolicy))
	}
	r.pushes = make(chan event.TypedGenericEvent[*v1alpha1.RollingUpgradeConfig], 1024)
	b = b.WatchesRawSource(source.Channel(r.pushes, &handler.TypedEnqueueRequestForObject[*v1alpha1.RollingUpgradeConfig]{}))
	return b.Complete(r)
}
