package controllers

import (
	"context"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/controllers/image"
)

// RendererReconciler turns a config's rollgate.dev/target-image annotation into the image of the
// managed container of its workload. Without the annotation it restores status.currentImage, the
// last healthy image (that is how a rollback happens); with neither it leaves the workload alone.
//
// It writes by server-side apply with field manager "rollgate" and owns exactly one field of the
// workload, the managed container's image, plus two annotations saying what it rendered and for
// which config: sidecars, env and resources are never touched. It depends on nothing else in
// rollgate, so it also serves hand-set annotations when the rollout engine is not running.
type RendererReconciler struct {
	Client client.Client
	Clock  clock.PassiveClock
}

// Reconcile renders one config.
func (r *RendererReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var ruc v1alpha1.RollingUpgradeConfig
	if err := r.Client.Get(ctx, req.NamespacedName, &ruc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	want := ruc.GetAnnotations()[v1alpha1.TargetImageAnnotation]
	if want == "" {
		want = ruc.Status.CurrentImage
	}
	// An image of another repository is refused; the engine reports it on the config.
	if want == "" || !image.SameRepository(want, ruc.Spec.Image) {
		return ctrl.Result{}, nil
	}
	if owner, err := claimant(ctx, r.Client, &ruc); err != nil || owner != ruc.Name {
		return ctrl.Result{}, err // another config manages the workload; the engine says so
	}
	w, err := getWorkload(ctx, r.Client, &ruc)
	if err != nil || w == nil {
		return ctrl.Result{}, err
	}
	c, err := w.container(ruc.Spec.Container)
	if err != nil {
		return ctrl.Result{}, nil // reported by the engine as InvalidSpec
	}
	a := w.object().GetAnnotations()
	log := logf.FromContext(ctx).WithValues("workload", w.describe(), "container", c.Name)
	fight := revertState{count: reverts(a), by: a[v1alpha1.RevertedByAnnotation], at: a[v1alpha1.RevertedAtAnnotation]}
	switch {
	case c.Image == want:
		if a[v1alpha1.LastImageAnnotation] == want && a[v1alpha1.LastUpdatedByAnnotation] == ruc.Name {
			return ctrl.Result{}, nil
		}
	case a[v1alpha1.LastImageAnnotation] == want:
		// Rendered before, and changed since: by another field manager?
		owners, err := imageOwners(w.object().GetManagedFields(), c.Name)
		if err != nil {
			return ctrl.Result{}, err
		}
		if other := firstOther(owners); other != "" {
			if fight.count >= v1alpha1.MaxImageReverts {
				log.Info("not rendering again: another field manager keeps changing the image back", "manager", other, "reverts", fight.count)
				return ctrl.Result{}, nil
			}
			now := r.Clock.Now()
			// Reverts far apart are chance (a hand edit now and then), not a fight: count anew.
			if last, err := time.Parse(time.RFC3339, fight.at); err != nil || now.Sub(last) > revertWindow {
				fight.count = 0
			}
			fight = revertState{count: fight.count + 1, by: other, at: now.UTC().Format(time.RFC3339)}
		}
	default:
		fight = revertState{} // a new image: an old fight is over
	}
	log.Info("rendering image", "from", c.Image, "to", want, "reverts", fight.count)
	return ctrl.Result{}, r.Client.Apply(ctx, renderConfiguration(w, c.Name, want, ruc.Name, fight),
		client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership)
}

// revertState is the fight with another field manager, kept in the workload's annotations.
type revertState struct {
	count int
	by    string
	at    string // RFC 3339 time of the last revert
}

// revertWindow: reverts closer together than this count as one fight. It covers several sync
// intervals of a GitOps tool (Flux's default is 10 minutes).
const revertWindow = time.Hour

func firstOther(owners []string) string {
	for _, o := range owners {
		if o != v1alpha1.FieldManager {
			return o
		}
	}
	return ""
}

// renderConfiguration is the apply configuration: the managed container's image and rollgate's
// annotations, nothing else. Annotations left out are removed (rollgate owns them).
func renderConfiguration(w *workload, container, img, config string, fight revertState) runtime.ApplyConfiguration {
	annotations := map[string]string{v1alpha1.LastImageAnnotation: img, v1alpha1.LastUpdatedByAnnotation: config}
	if fight.count > 0 {
		annotations[v1alpha1.RevertsAnnotation] = strconv.Itoa(fight.count)
		annotations[v1alpha1.RevertedByAnnotation] = fight.by
		annotations[v1alpha1.RevertedAtAnnotation] = fight.at
	}
	template := corev1ac.PodTemplateSpec().WithSpec(corev1ac.PodSpec().WithContainers(
		corev1ac.Container().WithName(container).WithImage(img)))
	o := w.object()
	if w.deployment != nil {
		return appsv1ac.Deployment(o.GetName(), o.GetNamespace()).WithAnnotations(annotations).
			WithSpec(appsv1ac.DeploymentSpec().WithTemplate(template))
	}
	return appsv1ac.StatefulSet(o.GetName(), o.GetNamespace()).WithAnnotations(annotations).
		WithSpec(appsv1ac.StatefulSetSpec().WithTemplate(template))
}

// SetupWithManager renders on every change of a config (annotations and status both matter) and of
// its workload (so a drifted image is put back).
func (r *RendererReconciler) SetupWithManager(mgr ctrl.Manager) error {
	c := mgr.GetClient()
	return ctrl.NewControllerManagedBy(mgr).
		Named("renderer").
		For(&v1alpha1.RollingUpgradeConfig{}).
		Watches(&appsv1.Deployment{}, byTarget(c, v1alpha1.KindDeployment)).
		Watches(&appsv1.StatefulSet{}, byTarget(c, v1alpha1.KindStatefulSet)).
		Complete(r)
}
