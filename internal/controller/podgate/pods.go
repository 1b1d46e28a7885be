// Package podgate carries out in-place upgrades on pods: it reads a StatefulSet's pods and
// PodDisruptionBudgets for the planner (internal/inplace), writes the moves it plans through
// rollgate's readiness gate and the pods' images, and answers the gate of pods no config moves.
package podgate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/health"
	"github.com/rollgate/rollgate/internal/image"
	"github.com/rollgate/rollgate/internal/inplace"
	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/rollout"
)

// Judgement is the verdict on a StatefulSet upgraded in place, and what becomes of its pods.
type Judgement struct {
	Verdict health.Verdict
	// Plan is the moves of its pods; nil when none could be planned.
	Plan *inplace.Plan
	// Release: every pod goes back in service (Release), for no move goes on.
	Release bool
}

// Judge judges a StatefulSet upgraded in place (spec.strategy InPlace) and plans the moves of its
// pods: the StatefulSet must leave its pods alone (OnDelete) and give them rollgate's readiness
// gate, and the pods tell the rest. The image they move to is the step's: the target of a health
// check, else the recorded image (a rollback, or a repair at rest); they move only once the
// template has it.
func Judge(ctx context.Context, reader client.Reader, ruc *v1alpha1.RollingUpgradeConfig, w *kube.Workload, now time.Time) (Judgement, error) {
	spec, sts := ruc.Spec, w.StatefulSet
	blocked := func(reason, format string, args ...any) (Judgement, error) {
		// Whatever moves stopped, no pod stays out of its Service.
		return Judgement{Verdict: health.Verdict{State: health.Blocked, Reason: reason, Message: fmt.Sprintf(format, args...)}, Release: true}, nil
	}
	if sts.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType {
		return blocked(health.ReasonNotOnDelete,
			"spec.strategy InPlace needs the StatefulSet's updateStrategy OnDelete (it is %s): its controller would replace the pods rollgate changes in place",
			sts.Spec.UpdateStrategy.Type)
	}
	if !kube.HasGate(sts.Spec.Template.Spec.ReadinessGates) {
		return blocked(inplace.ReasonNoReadinessGate,
			"spec.strategy InPlace needs the readiness gate %s in the StatefulSet's pod template (spec.template.spec.readinessGates: [{conditionType: %s}]), "+
				"through which rollgate takes a pod out of its Service before changing it; then delete its pods one at a time so that they are recreated with it",
			v1alpha1.InPlaceReadinessGate, v1alpha1.InPlaceReadinessGate)
	}
	cs, err := w.Containers(spec.ContainerNames()) // one: spec.containers is not for InPlace
	switch {
	case err != nil:
		return blocked("ContainerNotFound", "%v", err) // the decision stalls on it first
	case cs[0].Init:
		return blocked("InitContainer", "%s", InitContainerProblem(cs[0].Name)) // so does it on this
	}
	c := cs[0]
	pods, err := w.Pods(ctx, reader)
	if err != nil {
		return Judgement{}, err
	}
	var pdbs policyv1.PodDisruptionBudgetList
	if err := reader.List(ctx, &pdbs, client.InNamespace(sts.Namespace)); err != nil {
		return Judgement{}, fmt.Errorf("PodDisruptionBudgets of %s: %w", w.Describe(), err)
	}
	in := InputOf(ruc, sts, c, pods, now)
	in.Budgets = budgets(pdbs.Items, pods)
	plan := inplace.Make(in)
	// A blocked upgrade (or one that failed at rest, where nothing rolls back) moves no pod on:
	// every pod goes back in service.
	release := plan.Verdict.State == health.Blocked || (plan.Verdict.State == health.Failed && rollout.AnnotationsOf(ruc).Step == rollout.StepIdle)
	return Judgement{Verdict: plan.Verdict, Plan: &plan, Release: release}, nil
}

// InitContainerProblem says why an in-place upgrade cannot manage an init container: the kubelet
// restarts the whole pod when its image changes.
func InitContainerProblem(name string) string {
	return fmt.Sprintf("%s is an init container, whose image the kubelet cannot change in place (the whole pod starts again): "+
		"strategy InPlace changes one container of running pods", name)
}

// InputOf is what the plan is made of: the config's step, the StatefulSet, its template's
// container c and its pods, at now.
func InputOf(ruc *v1alpha1.RollingUpgradeConfig, sts *appsv1.StatefulSet, c rollout.Container, pods []corev1.Pod, now time.Time) inplace.Input {
	spec := ruc.Spec
	a := rollout.AnnotationsOf(ruc)
	want := ruc.Status.CurrentImage
	if a.Step == rollout.StepHealthCheck && a.TargetImage != "" {
		want = a.TargetImage
	}
	if want == "" {
		want = c.Image // nothing recorded yet: the pods are judged against their template
	}
	// At rest no change is judged (nothing would roll back): only those of a check or rollback.
	since := now
	if a.Step != rollout.StepIdle {
		since = a.UpdateStarted
	}
	s := spec.InPlace()
	first := health.StartOrdinal(sts)
	in := inplace.Input{Image: want, Move: image.Renders(c.Image, want), Since: since, AllowZeroReplicas: spec.AllowZeroReplicas,
		First: first, End: first + ptr.Deref(sts.Spec.Replicas, 1), Partition: s.Partition,
		MaxUnavailable: s.MaxUnavailableOf(ptr.Deref(sts.Spec.Replicas, 1)), Grace: s.DrainGracePeriodOrDefault(), Timeout: s.PodReadyTimeoutOrDefault(),
		Backward: a.Step == rollout.StepRollingBack, // the moves undone in reverse
		Done:     map[string]bool{}, Now: now}
	if st := ruc.Status.InPlace; st != nil && st.Image == want && st.Started != nil && st.Started.Time.Equal(since) {
		for _, p := range st.Pods {
			in.Done[p.Name] = p.Upgraded
		}
	}
	for i := range pods {
		if p, ok := inPlacePod(sts.Name, &pods[i], c.Name); ok {
			in.Pods = append(in.Pods, p)
		}
	}
	return in
}

// budgets are the PodDisruptionBudgets that select some of the pods, with the pods they select.
func budgets(pdbs []policyv1.PodDisruptionBudget, pods []corev1.Pod) []inplace.Budget {
	var out []inplace.Budget
	for i := range pdbs {
		pdb := &pdbs[i]
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if pdb.Spec.Selector == nil || err != nil { // selects no pod (as the disruption controller reads it)
			continue
		}
		b := inplace.Budget{Name: pdb.Name, DisruptionsAllowed: pdb.Status.DisruptionsAllowed, CurrentHealthy: pdb.Status.CurrentHealthy,
			ExpectedPods: pdb.Status.ExpectedPods, Selects: map[string]bool{}}
		for j := range pods {
			if sel.Matches(labels.Set(pods[j].Labels)) {
				b.Selects[pods[j].Name] = true
			}
		}
		if len(b.Selects) > 0 {
			out = append(out, b)
		}
	}
	return out
}

// inPlacePod is what the plan needs of one pod of the StatefulSet; false for a pod that is not
// one of its ordinals, or lacks the container.
func inPlacePod(sts string, pod *corev1.Pod, container string) (inplace.Pod, bool) {
	ord, ok := health.Ordinal(sts, pod.Name)
	cs, missing := kube.ManagedContainers(&pod.Spec, []string{container})
	if !ok || len(missing) > 0 {
		return inplace.Pod{}, false
	}
	c := cs[0]
	p := inplace.Pod{Name: pod.Name, Ordinal: ord, Gated: kube.HasGate(pod.Spec.ReadinessGates), Image: c.Image, Deleting: pod.DeletionTimestamp != nil}
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == c.Name {
			p.Running = s.Image
			if s.State.Running != nil {
				p.StartedAt = s.State.Running.StartedAt.Time
			}
		}
	}
	for _, cond := range pod.Status.Conditions {
		switch cond.Type {
		case corev1.ContainersReady:
			p.Ready, p.ReadySince = cond.Status == corev1.ConditionTrue, cond.LastTransitionTime.Time
		case corev1.PodReady:
			p.InService = cond.Status == corev1.ConditionTrue
		case v1alpha1.InPlaceReadinessGate:
			p.Gate, p.GateSince = ptr.To(cond.Status == corev1.ConditionTrue), cond.LastTransitionTime.Time
		}
	}
	if when, img, ok := strings.Cut(pod.Annotations[v1alpha1.InPlaceChangedAnnotation], " "); ok {
		if at, err := time.Parse(time.RFC3339, when); err == nil {
			p.ChangedAt, p.ChangedTo = at, img
		}
	}
	return p, true
}

// Move carries out the plan's writes to the pods: their readiness gate's condition
// (pods/status) and their container's image, with the time and image of the change. Each is
// stamped with the clock's time as it is written, not the decision's: the drain grace and the
// readiness timeout count from there, however long the reconcile took to get to it.
func Move(ctx context.Context, c client.Client, w *kube.Workload, plan *inplace.Plan, containers []string, clk clock.PassiveClock) error {
	cs, err := w.Containers(containers)
	if err != nil {
		return err
	}
	cont := cs[0]
	for _, a := range plan.Actions {
		now := clk.Now().UTC()
		pod := &corev1.Pod{}
		pod.Namespace, pod.Name = w.Object().GetNamespace(), a.Pod
		var patch map[string]any
		switch a.Kind {
		case inplace.Drain, inplace.Undrain:
			patch = gatePatch(a.Kind == inplace.Undrain, "rollgate takes the pod out of its Service to change its image in place to "+plan.Image, now)
		case inplace.Change:
			// The template's own image (it renders the plan's, pinned by a digest a webhook added).
			patch = map[string]any{"metadata": map[string]any{"annotations": map[string]string{
				v1alpha1.InPlaceChangedAnnotation: now.Format(time.RFC3339) + " " + cont.Image}},
				"spec": map[string]any{"containers": []map[string]string{{"name": cont.Name, "image": cont.Image}}}}
		}
		data, err := json.Marshal(patch)
		if err != nil {
			return err
		}
		p := client.RawPatch(types.StrategicMergePatchType, data)
		if a.Kind == inplace.Change {
			err = c.Patch(ctx, pod, p, client.FieldOwner(v1alpha1.FieldManager))
		} else {
			err = c.Status().Patch(ctx, pod, p, client.FieldOwner(v1alpha1.FieldManager))
		}
		if err != nil && !apierrors.IsNotFound(err) { // a pod gone is the StatefulSet's to recreate
			return fmt.Errorf("%s pod %s in place: %w", a.Kind, a.Pod, err)
		}
	}
	return nil
}

// gatePatch sets the condition of rollgate's readiness gate: True puts the pod in its Service (once
// its containers are ready), False takes it out, saying why.
func gatePatch(ready bool, why string, now time.Time) map[string]any {
	status, reason, msg := corev1.ConditionFalse, "Draining", why
	if ready {
		status, reason, msg = corev1.ConditionTrue, "InService", "rollgate leaves the pod in its Service"
	}
	return map[string]any{"status": map[string]any{"conditions": []map[string]any{{"type": v1alpha1.InPlaceReadinessGate, "status": status,
		"reason": reason, "message": msg, "lastTransitionTime": now.UTC().Format(time.RFC3339)}}}}
}

// Release puts every pod of the StatefulSet that carries rollgate's readiness gate back in its
// Service (the gate's condition True), whatever it runs: the pods of a StatefulSet no longer
// upgraded in place (the config deleted, its strategy changed, the StatefulSet off OnDelete or
// without the gate in its template) are the StatefulSet's again, and a pod left out would never be
// Ready.
func Release(ctx context.Context, reader client.Reader, c client.Client, w *kube.Workload, now time.Time) error {
	pods, err := w.Pods(ctx, reader)
	if err != nil {
		return err
	}
	for i := range pods {
		pod := &pods[i]
		if !kube.HasGate(pod.Spec.ReadinessGates) || pod.DeletionTimestamp != nil || kube.GateTrue(pod) {
			continue
		}
		data, err := json.Marshal(gatePatch(true, "", now))
		if err != nil {
			return err
		}
		if err := c.Status().Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, data), client.FieldOwner(v1alpha1.FieldManager)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("putting pod %s back in its Service: %w", pod.Name, err)
		}
	}
	return nil
}
