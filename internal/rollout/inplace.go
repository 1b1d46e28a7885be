package rollout

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/inplace"
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
	was := map[string]v1alpha1.InPlacePod{}
	if old := d.old.InPlace; old != nil && old.Image == plan.Image {
		for _, p := range old.Pods {
			was[p.Name] = p
		}
	}
	st := &v1alpha1.InPlaceStatus{Image: plan.Image}
	// The pods' events are about the plan's version: a rollback in this decision has cleared it
	// from the status already.
	ver := d.nameOf(plan.Image)
	if a := d.Annotations; a.Step != StepIdle {
		if !a.UpdateStarted.IsZero() {
			st.Started = &metav1.Time{Time: a.UpdateStarted}
		}
	}
	for i, pr := range plan.Pods {
		before := was[pr.Name]
		switch {
		case pr.Upgraded && !before.Upgraded && pr.Changed:
			took := ""
			if pr.Took > 0 {
				took = ": ready " + pr.Took.Round(100*time.Millisecond).String() + " after its image changed"
				d.PodUpgrades = append(d.PodUpgrades, pr.Took)
			}
			d.eventAbout(ver, WriteStatus, corev1.EventTypeNormal, v1alpha1.EventPodUpgraded, "%s runs %s in place%s", pr.Name, plan.Image, took)
		case pr.State == inplace.StateFailed && before.State != string(inplace.StateFailed):
			d.eventAbout(ver, WriteStatus, corev1.EventTypeWarning, v1alpha1.EventPodUpgradeFailed, "%s is not ready %s after its image changed in place to %s",
				pr.Name, in.Config.Spec.InPlace().PodReadyTimeoutOrDefault(), plan.Image)
		}
		if i >= v1alpha1.MaxInPlacePods {
			continue // the status has room for so many; the events and the verdict count them all
		}
		p := v1alpha1.InPlacePod{Name: pr.Name, State: string(pr.State), Upgraded: pr.Upgraded}
		if !pr.Since.IsZero() {
			p.Since = &metav1.Time{Time: pr.Since.UTC().Truncate(time.Second)}
		}
		st.Pods = append(st.Pods, p)
	}
	d.Status.InPlace = st
	d.lookWithin(plan.Next)
}
