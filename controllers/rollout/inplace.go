package rollout

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/controllers/inplace"
)

// recordInPlace writes the progress of an in-place upgrade (spec.strategy InPlace) into
// status.inPlace, with an event for each pod that comes through it (PodUpgraded) or fails
// (PodUpgradeFailed), and the pods' times (Decision.PodUpgrades); and looks again when a pod's
// drain grace or readiness timeout ends. The plan is the pods' own state, made by the controller.
func recordInPlace(d *Decision, in Input) {
	if in.Config.Spec.InPlace() == nil {
		d.Status.InPlace = nil
		return
	}
	w := in.Workload
	if w == nil || w.InPlace == nil {
		return
	}
	plan := w.InPlace
	was := map[string]string{}
	if old := d.old.InPlace; old != nil && old.Image == w.Image {
		for _, p := range old.Pods {
			was[p.Name] = p.State
		}
	}
	st := &v1alpha1.InPlaceStatus{Image: w.Image}
	for _, pr := range plan.Pods {
		p := v1alpha1.InPlacePod{Name: pr.Name, State: string(pr.State)}
		if !pr.Since.IsZero() {
			p.Since = &metav1.Time{Time: pr.Since.UTC().Truncate(time.Second)}
		}
		st.Pods = append(st.Pods, p)
		before := was[pr.Name]
		switch {
		case pr.State == inplace.StateDone && pr.Changed && (before == string(inplace.StateDraining) || before == string(inplace.StateChanging)):
			took := ""
			if pr.Took > 0 {
				took = ": ready " + pr.Took.Round(100*time.Millisecond).String() + " after its image changed"
				d.PodUpgrades = append(d.PodUpgrades, pr.Took)
			}
			d.event(WriteStatus, corev1.EventTypeNormal, v1alpha1.EventPodUpgraded, "%s runs %s in place%s", pr.Name, w.Image, took)
		case pr.State == inplace.StateFailed && before != string(inplace.StateFailed):
			d.event(WriteStatus, corev1.EventTypeWarning, v1alpha1.EventPodUpgradeFailed, "%s is not ready %s after its image changed in place to %s",
				pr.Name, in.Config.Spec.InPlace().PodReadyTimeoutOrDefault(), w.Image)
		}
	}
	d.Status.InPlace = st
	if plan.Next > 0 && (d.RequeueAfter == 0 || plan.Next < d.RequeueAfter) {
		d.RequeueAfter = plan.Next
	}
}
