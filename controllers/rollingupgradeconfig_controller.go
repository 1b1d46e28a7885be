package controllers

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
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
	Metrics   MetricQuerier   // the admin's Prometheus for spec.analysis; nil: none
	Waits     waitSlots       // the reconciles that may wait for Metrics or a registry at once
	Calendars bool            // RolloutCalendars apply (the manager may read them)
}

// Reconcile gathers the facts, lets rollout.Decide choose, and carries out the decision.
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
		res, err := r.finalize(ctx, &ruc)
		if apierrors.IsConflict(err) {
			// The workload, a pod or the config changed since it was read (the renderer or the
			// workload's controller wrote it): an ordinary race, finished by a look on fresh copies.
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return res, err
	}
	in, w, err := r.gather(ctx, &ruc)
	if err != nil {
		return ctrl.Result{}, err
	}
	d := r.decide(ctx, in, w)
	// The pods no in-place upgrade moves on go back in service before the status is written, which
	// may drop the record of them (status.inPlace, status.recordedTarget). When they cannot, the
	// record stays for the retry: a retarget (at rest) waits, the rest of a decision is written.
	released := r.letGo(ctx, &ruc, w, in.Now)
	if released != nil {
		if !ptr.Equal(d.Status.RecordedTarget, ruc.Status.RecordedTarget) {
			return ctrl.Result{}, released
		}
		if d.Status.InPlace == nil {
			d.Status.InPlace = ruc.Status.InPlace
		}
	}
	if err := r.apply(ctx, &ruc, d); err != nil {
		if apierrors.IsConflict(err) {
			// Someone changed the config since it was read; decide again on the new version.
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return ctrl.Result{}, err
	}
	// The decision is written: its metrics are recorded now, whatever fails after (a verdict is
	// recorded once, and a reconcile retried is another decision).
	configMetrics.record(&ruc, d, in.Now, append(r.podUpgrades(ctx, &ruc, w, d), d.PodUpgrades...))
	if released != nil {
		return ctrl.Result{}, released
	}
	if r.Calendars && d.Annotations.Step == rollout.StepIdle {
		if err := r.releaseSlots(ctx, &ruc); err != nil {
			return ctrl.Result{}, err
		}
	}
	// The pods of an in-place upgrade move on as planned from what they showed, unless the
	// decision just started or ended a check (the next look plans for the new step), or they
	// were all let go above (the plan's own moves would only put some of them back again).
	if w != nil && w.inPlace != nil && d.Outcome == rollout.OutcomeNone && !w.releaseGates {
		if err := moveInPlace(ctx, r.Client, w, ruc.Spec.Container, r.Clock); err != nil {
			return ctrl.Result{}, err
		}
	}
	if d.DeleteStuckPods && w != nil && w.statefulSet != nil {
		if err := deleteStuckPods(ctx, r.APIReader, r.Client, w.statefulSet); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: d.RequeueAfter}, nil
}

// decide lets rollout.Decide choose, and answers what a decision asks first: the build times of
// young versions' images (spec.minReleaseAge), a RolloutCalendar's freezeWhile queries, the
// registry's word on an image (spec.checkImage, spec.pinDigest), the calendars' slots. Each is
// asked at most once, then the decision is made again with the answer.
func (r *RollingUpgradeConfigReconciler) decide(ctx context.Context, in rollout.Input, w *workload) rollout.Decision {
	d := rollout.Decide(in)
	for range 4 {
		switch {
		case len(d.ReadCreated) > 0 && in.Created == nil && w != nil:
			in.Created = r.readCreated(ctx, in, w, d.ReadCreated)
		case d.AskFreezes && in.Freezes == nil:
			in.Freezes = r.askFreezes(ctx, in)
		case d.LookUp != "" && in.Image == nil && w != nil:
			in.Image = r.lookUp(ctx, in, w, d.LookUp)
		case d.ClaimSlot != "" && in.Slots == nil:
			in.Slots = r.claimSlots(ctx, in, d.ClaimSlot)
		default:
			return d
		}
		d = rollout.Decide(in)
	}
	return d
}

// registry reads tags and digests with the workload's pull credentials.
func (r *RollingUpgradeConfigReconciler) registry() registrySource {
	return registrySource{cache: r.Tags, reader: r.APIReader}
}

// askFreezes answers the freezeWhile queries of the config's calendars.
func (r *RollingUpgradeConfigReconciler) askFreezes(ctx context.Context, in rollout.Input) map[string]rollout.FreezeAnswer {
	out := map[string]rollout.FreezeAnswer{}
	if !r.Waits.take() {
		for _, cal := range in.Calendars {
			for _, q := range cal.Spec.FreezeWhile {
				out[cal.Name+"/"+q.Name] = rollout.FreezeAnswer{Problem: allWaiting}
			}
		}
		return out
	}
	defer r.Waits.give()
	for _, cal := range in.Calendars {
		for _, q := range cal.Spec.FreezeWhile {
			a := rollout.FreezeAnswer{Problem: errNoPrometheus}
			if r.Metrics != nil {
				n, err := r.Metrics.Series(ctx, q.Query, in.Now)
				a = rollout.FreezeAnswer{Series: n}
				if err != nil {
					a.Problem = err.Error()
				}
			}
			out[cal.Name+"/"+q.Name] = a
		}
	}
	return out
}

// lookUp asks the registry about img, within a wait slot.
func (r *RollingUpgradeConfigReconciler) lookUp(ctx context.Context, in rollout.Input, w *workload, img string) *rollout.ImageLookup {
	if !r.Waits.take() {
		return &rollout.ImageLookup{Image: img, Problem: "not looked up: " + allWaiting}
	}
	defer r.Waits.give()
	return r.registry().lookUp(ctx, in.Config, w.podSpec(), img)
}

// readCreated asks the registry for the build times of the images of tags, within a wait slot.
func (r *RollingUpgradeConfigReconciler) readCreated(ctx context.Context, in rollout.Input, w *workload, tags []string) map[string]rollout.CreatedAnswer {
	if !r.Waits.take() {
		out := map[string]rollout.CreatedAnswer{}
		for _, tag := range tags {
			out[tag] = rollout.CreatedAnswer{Problem: "not read: " + allWaiting}
		}
		return out
	}
	defer r.Waits.give()
	return r.registry().created(ctx, in.Config, w.podSpec(), tags)
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

// podUpgrades times the pods of the new version when the decision ends a health check. It only
// feeds a metric, so a failure to list the pods is logged and the rollout goes on.
func (r *RollingUpgradeConfigReconciler) podUpgrades(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig, w *workload, d rollout.Decision) []time.Duration {
	// A withdrawn version never reached the workload: it has no pods. Pods changed in place are
	// timed one by one as they come through (Decision.PodUpgrades).
	if w == nil || !d.Outcome.Ends() || d.Outcome == rollout.OutcomeWithdrawn || d.Rollout.Image == "" || w.inPlace != nil {
		return nil
	}
	times, err := podUpgradeTimes(ctx, r.APIReader, w, ruc.Spec.Container, d.Rollout.Image, d.Rollout.Started)
	if err != nil {
		logf.FromContext(ctx).Error(err, "timing the pods of the new version for pod_upgrade_duration_seconds")
	}
	return times
}

// gather reads the workload and, when idle, the sources.
func (r *RollingUpgradeConfigReconciler) gather(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig) (rollout.Input, *workload, error) {
	in := rollout.Input{Now: r.Clock.Now(), Config: ruc, Prometheus: r.Metrics != nil}
	owner, err := claimant(ctx, r.Client, ruc)
	if err != nil {
		return in, nil, err
	}
	if owner != ruc.Name {
		in.ClaimedBy = owner
		return in, nil, nil
	}
	w, err := getWorkload(ctx, r.Client, r.APIReader, ruc)
	if err != nil {
		return in, nil, err
	}
	if w != nil {
		if in.ClaimedBy, err = workloadClaim(ctx, r.APIReader, ruc, w); err != nil || in.ClaimedBy != "" {
			return in, nil, err
		}
	}
	var pod *corev1.PodSpec
	if w != nil {
		if in.Workload, err = w.facts(ctx, r.APIReader, ruc, in.Now); err != nil {
			return in, nil, err
		}
		if rollout.NeedsPods(ruc, in.Workload, in.Now) {
			if in.Workload.NewPods, err = newPods(ctx, r.APIReader, w, ruc.Spec.Container, rollout.AnnotationsOf(ruc).TargetImage); err != nil {
				return in, nil, err
			}
		}
		pod = w.podSpec()
		in.Measurements = measure(ctx, r.Metrics, r.Waits, ruc, in.Workload, in.Now)
	}
	if r.Calendars && rollout.NeedsCalendars(ruc) {
		if in.Calendars, err = calendarsFor(ctx, r.Client, r.APIReader, ruc); err != nil {
			return in, nil, err
		}
	}
	if rollout.AnnotationsOf(ruc).Step == rollout.StepIdle && ruc.DeletionTimestamp == nil {
		if err := gatherCandidates(ctx, r.Client, r.registry(), ruc, pod, &in); err != nil {
			return in, nil, err
		}
	}
	return in, w, nil
}

// apply writes the annotations and the status, each only if it changed, in the order the decision
// asks for, and emits each event once its write succeeded (rollout.Write says which). Each write
// returns the stored object, so the second write carries the newest resourceVersion and a
// concurrent change still fails with a conflict instead of being lost.
func (r *RollingUpgradeConfigReconciler) apply(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig, d rollout.Decision) error {
	writeAnnotations := func() error {
		// The finalizer goes with the first metadata write: a deleted config is held until its
		// deletion policy is carried out (finalize).
		if rollout.AnnotationsOf(ruc) == d.Annotations && controllerutil.ContainsFinalizer(ruc, v1alpha1.Finalizer) {
			return nil
		}
		before := ruc.DeepCopy()
		controllerutil.AddFinalizer(ruc, v1alpha1.Finalizer)
		a := ruc.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		for key, value := range d.Annotations.Values() {
			if value == "" {
				delete(a, key)
			} else {
				a[key] = value
			}
		}
		ruc.SetAnnotations(a)
		return patchMetadata(ctx, r.Client, before, ruc)
	}
	writeStatus := func() error {
		if equality.Semantic.DeepEqual(ruc.Status, d.Status) {
			return nil
		}
		ruc.Status = d.Status
		return r.Client.Status().Update(ctx, ruc, client.FieldOwner(v1alpha1.FieldManager))
	}
	type write struct {
		do   func() error
		kind rollout.Write
	}
	writes := []write{{writeAnnotations, rollout.WriteAnnotations}, {writeStatus, rollout.WriteStatus}}
	if d.StatusFirst {
		writes[0], writes[1] = writes[1], writes[0]
	}
	// The object as read is the event's subject; a successful write changes ruc in place.
	subject := ruc.DeepCopy()
	for _, w := range writes {
		if err := w.do(); err != nil {
			return err
		}
		for _, e := range d.Events {
			if e.After == w.kind {
				r.Recorder.Eventf(subject, nil, e.Type, e.Reason, "Reconcile", "%s", e.Message)
			}
		}
	}
	return nil
}

// patchMetadata writes what changed of the config's metadata (its annotations and finalizers) from
// before to ruc, failing with a conflict if another wrote the config in between. The spec is not
// sent: written back from Go, it would not be the bytes a person or a GitOps tool applied ("10m"
// comes out as "10m0s"), and each write would change its generation and be a drift to revert.
func patchMetadata(ctx context.Context, c client.Client, before, ruc *v1alpha1.RollingUpgradeConfig) error {
	return c.Patch(ctx, ruc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(v1alpha1.FieldManager))
}

// finalize carries out the deletion policy of a deleted config, gives up rollgate's hold on its
// workload, and lets the config go.
func (r *RollingUpgradeConfigReconciler) finalize(ctx context.Context, ruc *v1alpha1.RollingUpgradeConfig) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(ruc, v1alpha1.Finalizer) {
		return ctrl.Result{}, nil
	}
	in, w, err := r.gather(ctx, ruc)
	if err != nil {
		return ctrl.Result{}, err
	}
	f := rollout.Finalize(in)
	if !f.Release {
		return ctrl.Result{RequeueAfter: f.RequeueAfter}, nil
	}
	if w != nil && w.statefulSet != nil && (w.releaseGates || w.inPlace != nil) {
		// No pod of an in-place upgrade stays out of its Service once the config is gone.
		if err := releasePods(ctx, r.APIReader, r.Client, w, in.Now); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.releaseFormerTarget(ctx, ruc, in.Now); err != nil {
		return ctrl.Result{}, err
	}
	if f.Workload && w != nil {
		// Read afresh: the cached copy lacks most managedFields (CacheTrim).
		fresh, err := readWorkload(ctx, r.APIReader, ruc)
		if err != nil {
			return ctrl.Result{}, err
		}
		if fresh != nil {
			if err := releaseWorkload(ctx, r.Client, fresh); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	subject := ruc.DeepCopy()
	controllerutil.RemoveFinalizer(ruc, v1alpha1.Finalizer)
	if err := patchMetadata(ctx, r.Client, subject, ruc); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	for _, e := range f.Events {
		r.Recorder.Eventf(subject, nil, e.Type, e.Reason, "Delete", "%s", e.Message)
	}
	configMetrics.forget(ruc.Namespace, ruc.Name)
	return ctrl.Result{}, nil
}

// SetupWithManager watches configs (spec and annotation changes; the status is the controller's
// own, but for the write-back's first read of the config's record in Git, and what Git took of a
// GitFirst config), their workloads, their sources and the RolloutCalendars.
func (r *RollingUpgradeConfigReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	c := mgr.GetClient()
	b := ctrl.NewControllerManagedBy(mgr).
		Named("rollingupgradeconfig").
		For(&v1alpha1.RollingUpgradeConfig{}, builder.WithPredicates(
			predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, gitRecordRead, gitWritten))).
		Watches(&appsv1.Deployment{}, byTarget(c, v1alpha1.KindDeployment)).
		Watches(&appsv1.StatefulSet{}, byTarget(c, v1alpha1.KindStatefulSet)).
		Watches(&v1alpha1.ApplicationVersion{}, byName(c, indexApplicationVersion)).
		Watches(&corev1.ConfigMap{}, byName(c, indexConfigMap))
	if r.Calendars {
		b = b.Watches(&v1alpha1.RolloutCalendar{}, byCalendar(c))
	}
	return b.Complete(r)
}
