// Package renderer writes the image a config's annotations name into its workload by server-side
// apply, and counts the times another field manager puts it back.
package renderer

import (
	"context"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/rollout"
)

// RendererReconciler turns a config's rollgate.dev/target-image annotation into the image of the
// managed containers of its workload. Without the annotation it restores status.currentImage, the
// last healthy image (that is how a rollback happens); with neither it leaves the workload alone.
// rollout.RenderImage is the whole policy: a target set by hand that breaks a rule (suspend, an
// open circuit, a failed version) is not rendered, and nothing recorded for another workload is.
//
// It writes by server-side apply with field manager "rollgate" and owns exactly one field of each
// managed container of the workload, its image, plus two annotations saying what it rendered and for
// which config: sidecars, env and resources are never touched. It needs nothing from the
// engine but that pure policy, so it also serves hand-set annotations when the engine is not running.
type RendererReconciler struct {
	Client    client.Client
	APIReader client.Reader // uncached: a workload the cache keeps as a shell (CacheTrim)
	Clock     clock.PassiveClock
}

// Reconcile renders one config.
func (r *RendererReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var ruc v1alpha1.RollingUpgradeConfig
	if err := r.Client.Get(ctx, req.NamespacedName, &ruc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// What to render is the engine's policy (rollout.RenderImage); whatever it refuses, the engine
	// reports on the config.
	now := r.Clock.Now()
	want, _ := rollout.RenderImage(&ruc, now)
	// A GitFirst rollback Git took is rendered too once its apply timeout has passed: no change
	// of the config or workload announces that instant.
	res := ctrl.Result{RequeueAfter: rollout.StandInAfter(&ruc, now)}
	if want == "" {
		return res, nil
	}
	if owner, err := kube.Claimant(ctx, r.Client, &ruc); err != nil || owner != ruc.Name {
		return ctrl.Result{}, err // another config manages the workload; the engine says so
	}
	w, err := kube.GetWorkload(ctx, r.Client, r.APIReader, &ruc)
	if err != nil || w == nil {
		return ctrl.Result{}, err
	}
	if owner, err := kube.WorkloadClaim(ctx, r.APIReader, &ruc, w); err != nil || owner != "" {
		return ctrl.Result{}, err // a config of another shard manages it; the engine says so
	}
	cs, err := w.Containers(ruc.Spec.ContainerNames())
	if err != nil {
		return ctrl.Result{}, nil // reported by the engine as InvalidSpec
	}
	// Several containers run one image: the one that does not run want is the one to judge by.
	c := rollout.RunningIn(cs, want)
	owners, err := kube.ImageOwners(w.Object().GetManagedFields(), c)
	if err != nil {
		return ctrl.Result{}, err
	}
	a := w.Object().GetAnnotations()
	since, standIn := rollout.StandInSince(&ruc, now)
	d := decideRender(renderFacts{
		Config:     ruc.Name,
		Want:       want,
		Running:    c.Image,
		LastImage:  a[v1alpha1.LastImageAnnotation],
		LastConfig: a[v1alpha1.LastUpdatedByAnnotation],
		Fight:      revertStateOf(a),
		Owners:     owners,
		Deleting:   ruc.DeletionTimestamp != nil,
		// A GitFirst config renders only what stands in for Git; its fight is that stand-in's.
		StandIn: standIn, StandInSince: since,
	}, now)
	if d.Reason != "" {
		logf.FromContext(ctx).Info(d.Reason, "workload", w.Describe(), "container", c.Name, "from", c.Image, "to", want,
			"reverts", d.Fight.count, "revertedBy", d.Fight.by)
	}
	if !d.Render {
		return res, nil
	}
	if err := r.letGo(ctx, &ruc, w, cs); err != nil {
		return ctrl.Result{}, err
	}
	return res, r.Client.Apply(ctx, renderConfiguration(w, cs, want, ruc.Name, d.Fight),
		client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership)
}

// letGo gives up the images of the containers rollgate rendered into before but whose config no
// longer names them (kube.WithoutImagesLetGo), before an apply without them would delete them. The
// cached workload keeps rollgate's image fields (CacheTrim), but not the rest of the managedFields
// the patch writes back: those are read live. The patch carries the resourceVersion, so a
// concurrent change of the managedFields fails with a conflict and is retried.
func (r *RendererReconciler) letGo(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig, w *kube.Workload, cs []rollout.Container) error {
	if _, drop, err := kube.WithoutImagesLetGo(w.Object().GetManagedFields(), cs); err != nil || !drop {
		return err
	}
	live, err := kube.ReadWorkload(ctx, r.APIReader, ruc)
	if err != nil || live == nil {
		return err
	}
	obj := live.Object()
	fields, drop, err := kube.WithoutImagesLetGo(obj.GetManagedFields(), cs)
	if err != nil || !drop {
		return err
	}
	orig := obj.DeepCopyObject().(client.Object)
	obj.SetManagedFields(fields)
	logf.FromContext(ctx).Info("giving up the images of containers the config no longer names", "workload", live.Describe())
	return r.Client.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}), client.FieldOwner(v1alpha1.FieldManager))
}

// renderConfiguration is the apply configuration: the managed containers' image and rollgate's
// annotations, nothing else, in one write. Annotations left out are removed (rollgate owns them).
func renderConfiguration(w *kube.Workload, cs []rollout.Container, img, config string, fight revertState) runtime.ApplyConfiguration {
	annotations := map[string]string{v1alpha1.LastImageAnnotation: img, v1alpha1.LastUpdatedByAnnotation: config}
	maps.Copy(annotations, fight.annotations())
	pod := corev1ac.PodSpec()
	for _, c := range cs {
		if c.Init {
			pod.WithInitContainers(corev1ac.Container().WithName(c.Name).WithImage(img))
		} else {
			pod.WithContainers(corev1ac.Container().WithName(c.Name).WithImage(img))
		}
	}
	template := corev1ac.PodTemplateSpec().WithSpec(pod)
	o := w.Object()
	if w.Deployment != nil {
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
		Watches(&appsv1.Deployment{}, kube.ByTarget(c, v1alpha1.KindDeployment)).
		Watches(&appsv1.StatefulSet{}, kube.ByTarget(c, v1alpha1.KindStatefulSet)).
		Complete(r)
}
