package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/controllers/health"
	"github.com/rollgate/rollgate/controllers/inplace"
	"github.com/rollgate/rollgate/controllers/rollout"
)

// inPlaceVerdict judges a StatefulSet upgraded in place (spec.strategy InPlace) and plans the
// moves of its pods to the template's image (w.inPlace): the StatefulSet must leave its pods
// alone (OnDelete) and give them rollgate's readiness gate, and the pods tell the rest.
func (w *workload) inPlaceVerdict(ctx context.Context, reader client.Reader, ruc *v1alpha1.RollingUpgradeConfig, now time.Time) (health.Verdict, error) {
	spec, sts := ruc.Spec, w.statefulSet
	if sts.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType {
		return health.Verdict{State: health.Blocked, Reason: health.ReasonNotOnDelete, Message: fmt.Sprintf(
			"spec.strategy InPlace needs the StatefulSet's updateStrategy OnDelete (it is %s): its controller would replace the pods rollgate changes in place",
			sts.Spec.UpdateStrategy.Type)}, nil
	}
	if !hasGate(sts.Spec.Template.Spec.ReadinessGates) {
		return health.Verdict{State: health.Blocked, Reason: inplace.ReasonNoReadinessGate, Message: fmt.Sprintf(
			"spec.strategy InPlace needs the readiness gate %s in the StatefulSet's pod template (spec.template.spec.readinessGates: [{conditionType: %s}]), through which rollgate takes a pod out of its Service before changing it; then delete its pods one at a time so that they are recreated with it",
			v1alpha1.InPlaceReadinessGate, v1alpha1.InPlaceReadinessGate)}, nil
	}
	c, err := w.container(spec.Container)
	if err != nil {
		return health.Verdict{State: health.Blocked, Reason: "ContainerNotFound", Message: err.Error()}, nil // the decision stalls on it first
	}
	pods, err := w.podsOnce(ctx, reader)
	if err != nil {
		return health.Verdict{}, err
	}
	s := spec.InPlace()
	var first int32
	if sts.Spec.Ordinals != nil {
		first = sts.Spec.Ordinals.Start
	}
	in := inplace.Input{Image: c.Image, First: first, End: first + ptr.Deref(sts.Spec.Replicas, 1), Partition: s.Partition,
		MaxUnavailable: s.MaxUnavailableOrDefault(), Grace: s.DrainGracePeriodOrDefault(), Timeout: s.PodReadyTimeoutOrDefault(),
		Backward: rollout.AnnotationsOf(ruc).Step == rollout.StepRollingBack, // the moves undone in reverse
		Done:     map[string]bool{}, Now: now}
	if st := ruc.Status.InPlace; st != nil && st.Image == c.Image {
		for _, p := range st.Pods {
			in.Done[p.Name] = p.State == string(inplace.StateDone)
		}
	}
	for i := range pods {
		if p, ok := inPlacePod(sts.Name, &pods[i], c.Name); ok {
			in.Pods = append(in.Pods, p)
		}
	}
	plan := inplace.Make(in)
	w.inPlace = &plan
	return plan.Verdict, nil
}

func hasGate(gates []corev1.PodReadinessGate) bool {
	for _, g := range gates {
		if g.ConditionType == v1alpha1.InPlaceReadinessGate {
			return true
		}
	}
	return false
}

// inPlacePod is what the plan needs of one pod of the StatefulSet; false for a pod that is not
// one of its ordinals, or lacks the container.
func inPlacePod(sts string, pod *corev1.Pod, container string) (inplace.Pod, bool) {
	ord, ok := health.Ordinal(sts, pod.Name)
	c := managedContainer(pod.Spec.Containers, container)
	if !ok || c == nil {
		return inplace.Pod{}, false
	}
	p := inplace.Pod{Name: pod.Name, Ordinal: ord, Gated: hasGate(pod.Spec.ReadinessGates), Image: c.Image, Deleting: pod.DeletionTimestamp != nil}
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == c.Name {
			p.Running = s.Image
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
	if at, err := time.Parse(time.RFC3339, pod.Annotations[v1alpha1.InPlaceChangedAnnotation]); err == nil {
		p.ChangedAt = at
	}
	return p, true
}

// moveInPlace carries out the plan's writes to the pods: their readiness gate's condition
// (pods/status) and their container's image, with the time of the change.
func (r *RollingUpgradeConfigReconciler) moveInPlace(ctx context.Context, w *workload, container string) error {
	plan := w.inPlace
	c, err := w.container(container)
	if err != nil {
		return err
	}
	now := r.Clock.Now().UTC()
	for _, a := range plan.Actions {
		pod := &corev1.Pod{}
		pod.Namespace, pod.Name = w.object().GetNamespace(), a.Pod
		var patch map[string]any
		switch a.Kind {
		case inplace.Drain, inplace.Undrain:
			status, reason, msg := corev1.ConditionFalse, "Draining", "rollgate takes the pod out of its Service to change its image in place to "+c.Image
			if a.Kind == inplace.Undrain {
				status, reason, msg = corev1.ConditionTrue, "InService", "the pod runs "+c.Image
			}
			patch = map[string]any{"status": map[string]any{"conditions": []map[string]any{{"type": v1alpha1.InPlaceReadinessGate, "status": status,
				"reason": reason, "message": msg, "lastTransitionTime": now.Format(time.RFC3339)}}}}
		case inplace.Change:
			patch = map[string]any{"metadata": map[string]any{"annotations": map[string]string{v1alpha1.InPlaceChangedAnnotation: now.Format(time.RFC3339)}},
				"spec": map[string]any{"containers": []map[string]string{{"name": c.Name, "image": c.Image}}}}
		}
		data, err := json.Marshal(patch)
		if err != nil {
			return err
		}
		p := client.RawPatch(types.StrategicMergePatchType, data)
		if a.Kind == inplace.Change {
			err = r.Client.Patch(ctx, pod, p, client.FieldOwner(v1alpha1.FieldManager))
		} else {
			err = r.Client.Status().Patch(ctx, pod, p, client.FieldOwner(v1alpha1.FieldManager))
		}
		if err != nil && !apierrors.IsNotFound(err) { // a pod gone is the StatefulSet's to recreate
			return fmt.Errorf("%s pod %s in place: %w", a.Kind, a.Pod, err)
		}
	}
	return nil
}
