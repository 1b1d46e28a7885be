// Package health turns the status of a Deployment or StatefulSet into a verdict on the rollout of
// its current spec: still progressing, healthy, or failed for good.
package health

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// State of a rollout.
type State string

const (
	// Progressing: not there yet; look again later (until the health timeout).
	Progressing State = "Progressing"
	// Healthy: every desired replica runs the current spec and is ready.
	Healthy State = "Healthy"
	// Failed: the workload itself says the rollout cannot finish; roll back now.
	Failed State = "Failed"
)

// Verdict on a workload.
type Verdict struct {
	State State
	// Reason is a CamelCase word for conditions and events.
	Reason string
	// Message says what is missing, for people.
	Message string
}

// Deployment judges a Deployment the way `kubectl rollout status` does, and also wants every
// desired replica ready: the controller has seen the current generation, all desired replicas are
// updated, no old replica is left, and all desired replicas are ready and available. A Progressing
// condition with reason ProgressDeadlineExceeded fails the rollout at once.
func Deployment(d *appsv1.Deployment) Verdict {
	if v, waiting := generationObserved(d.Generation, d.Status.ObservedGeneration); waiting {
		return v
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			return Verdict{Failed, "ProgressDeadlineExceeded", c.Message}
		}
	}
	want := ptr.Deref(d.Spec.Replicas, 1)
	s := d.Status
	counts := fmt.Sprintf("%d/%d updated, %d ready, %d available, %d old", s.UpdatedReplicas, want,
		s.ReadyReplicas, s.AvailableReplicas, max(s.Replicas-s.UpdatedReplicas, 0))
	if s.UpdatedReplicas >= want && s.Replicas <= s.UpdatedReplicas && s.ReadyReplicas >= want && s.AvailableReplicas >= want {
		return Verdict{Healthy, "RolloutComplete", counts}
	}
	return Verdict{Progressing, "RolloutInProgress", counts}
}

// StatefulSet judges a StatefulSet: the controller has seen the current generation, the replicas
// at or above the partition are updated, all desired replicas are ready, and — without a
// partition — the update revision has become the current revision.
func StatefulSet(s *appsv1.StatefulSet) Verdict {
	if v, waiting := generationObserved(s.Generation, s.Status.ObservedGeneration); waiting {
		return v
	}
	want := ptr.Deref(s.Spec.Replicas, 1)
	var partition int32
	if ru := s.Spec.UpdateStrategy.RollingUpdate; s.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType && ru != nil {
		partition = ptr.Deref(ru.Partition, 0)
	}
	wantUpdated := max(want-partition, 0)
	st := s.Status
	counts := fmt.Sprintf("%d/%d updated, %d/%d ready", st.UpdatedReplicas, wantUpdated, st.ReadyReplicas, want)
	if partition > 0 {
		counts += fmt.Sprintf(", partition %d", partition)
	}
	switch {
	case st.UpdatedReplicas < wantUpdated || st.ReadyReplicas < want:
		return Verdict{Progressing, "RolloutInProgress", counts}
	case partition == 0 && st.UpdateRevision != st.CurrentRevision:
		return Verdict{Progressing, "RolloutInProgress", counts + fmt.Sprintf(", revision %s not yet current", st.UpdateRevision)}
	}
	return Verdict{Healthy, "RolloutComplete", counts}
}

func generationObserved(generation, observed int64) (Verdict, bool) {
	if observed < generation {
		return Verdict{Progressing, "GenerationNotObserved",
			fmt.Sprintf("generation %d not yet observed by its controller (observed %d)", generation, observed)}, true
	}
	return Verdict{}, false
}
