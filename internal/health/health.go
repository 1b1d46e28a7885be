// Package health turns a Deployment or StatefulSet into a verdict on the rollout of its current
// spec: still progressing, healthy, failed for good, or blocked until a person changes the
// workload.
//
// Healthy means a pod of the new version was seen Ready and available: a check that saw no such
// pod proves nothing about the version, so a workload that cannot run one (scaled to 0, paused, a
// partition covering every pod, the OnDelete strategy) is Blocked instead of passing at once or
// running into the health timeout. Scaling to 0 may pass when the user opts in.
//
// The functions are pure: no API calls, and the time comes in Options, so the rollout decision
// that uses them stays a pure function too.
package health

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// State of a rollout.
type State string

const (
	// Progressing: not there yet; look again later (until the health timeout).
	Progressing State = "Progressing"
	// Healthy: every desired replica of the new version (for a partitioned StatefulSet, every one
	// at or above the partition) runs the current spec and is ready and available; at least one
	// such pod exists unless Options.AllowZeroReplicas let 0 replicas pass.
	Healthy State = "Healthy"
	// Failed: the workload itself says the rollout cannot finish; roll back now.
	Failed State = "Failed"
	// Blocked: the rollout cannot make progress until a person changes the workload. It is no
	// fault of the version, so the health timer must not run against it, and no rollout should
	// start on it.
	Blocked State = "Blocked"
)

// Reasons of verdicts: CamelCase words for conditions and events.
const (
	// ReasonRolloutComplete: Healthy.
	ReasonRolloutComplete = "RolloutComplete"
	// ReasonZeroReplicasAllowed: Healthy at 0 replicas, by Options.AllowZeroReplicas.
	ReasonZeroReplicasAllowed = "ZeroReplicasAllowed"
	// ReasonRolloutInProgress: Progressing, some replica not yet updated, ready or available.
	ReasonRolloutInProgress = "RolloutInProgress"
	// ReasonGenerationNotObserved: Progressing, the status does not yet describe the current spec.
	ReasonGenerationNotObserved = "GenerationNotObserved"
	// ReasonProgressDeadlineExceeded: Failed, the Deployment's progress deadline passed.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonPaused: Blocked, the Deployment is paused (spec.paused).
	ReasonPaused = "Paused"
	// ReasonOnDelete: Blocked, the StatefulSet uses the OnDelete update strategy.
	ReasonOnDelete = "OnDelete"
	// ReasonNotOnDelete: Blocked, a StatefulSet upgraded in place does not use OnDelete.
	ReasonNotOnDelete = "NotOnDelete"
	// ReasonPartitionCoversAll: Blocked, the StatefulSet's partition is at or above its replicas.
	ReasonPartitionCoversAll = "PartitionCoversAll"
	// ReasonScaledToZero: Blocked, 0 replicas without Options.AllowZeroReplicas.
	ReasonScaledToZero = "ScaledToZero"
)

// Options of a verdict.
type Options struct {
	// AllowZeroReplicas is the config's spec.allowZeroReplicas: a workload at 0 replicas passes
	// (once its controller has caught up) instead of being Blocked.
	AllowZeroReplicas bool
	// Now is the time a pod's availability is judged at: Ready for minReadySeconds by then. Only
	// a partitioned StatefulSet's pods need it; the controllers count availability themselves.
	Now time.Time
}

// Verdict on a workload.
type Verdict struct {
	State State
	// Reason is one of the Reason constants.
	Reason string
	// Message says what is missing, or for Blocked what to change, for people.
	Message string
}

// Deployment judges a Deployment the way `kubectl rollout status` does, and also wants every
// desired replica ready: the controller has seen the current generation, all desired replicas are
// updated, no old replica is left, and all desired replicas are ready and available. A Progressing
// condition with reason ProgressDeadlineExceeded fails the rollout at once.
//
// A paused Deployment is Blocked before anything else: its controller keeps observing generations
// but rolls nothing out, and even one whose last rollout completed would never roll out the next.
func Deployment(d *appsv1.Deployment, opts Options) Verdict {
	want := ptr.Deref(d.Spec.Replicas, 1)
	switch {
	case d.Spec.Paused:
		return Verdict{Blocked, ReasonPaused,
			"Deployment is paused (spec.paused); rollgate holds its rollouts until it is resumed (kubectl rollout resume)"}
	case want == 0 && !opts.AllowZeroReplicas:
		return scaledToZero()
	}
	if v, waiting := generationObserved(d.Generation, d.Status.ObservedGeneration); waiting {
		return v
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == ReasonProgressDeadlineExceeded {
			return Verdict{Failed, ReasonProgressDeadlineExceeded, c.Message}
		}
	}
	s := d.Status
	old := max(s.Replicas-s.UpdatedReplicas, 0)
	if want == 0 {
		if old > 0 {
			return Verdict{Progressing, ReasonRolloutInProgress, fmt.Sprintf("0 replicas: waiting for %d old pods to go", old)}
		}
		return zeroAllowed()
	}
	counts := fmt.Sprintf("%d/%d updated, %d ready, %d available, %d old", s.UpdatedReplicas, want,
		s.ReadyReplicas, s.AvailableReplicas, old)
	// With no old replica left, the ready and available ones are all of the new version.
	if s.UpdatedReplicas >= want && old == 0 && s.ReadyReplicas >= want && s.AvailableReplicas >= want {
		return Verdict{Healthy, ReasonRolloutComplete, counts}
	}
	return Verdict{Progressing, ReasonRolloutInProgress, counts}
}

// StatefulSet judges a StatefulSet: the controller has seen the current generation, and the pods
// that take the new revision are updated, ready and available (Ready for minReadySeconds).
//
// Without a partition that is all replicas, judged by the status counts, and the update revision
// must also have become the current revision. The status has no per-revision ready count, so with a
// partition p (NeedsPods) the pods with ordinal index in [p, replicas) are judged one by one from
// pods, the StatefulSet's pods; the old pods below the partition do not count, as their health
// says nothing about the new version. pods is read only then, and must then be complete: a pod
// missing from it counts as not there.
//
// The OnDelete strategy, 0 replicas without the opt-in, and a partition at or above the replicas
// are Blocked before anything else: they follow from the spec alone, whatever the status says.
func StatefulSet(s *appsv1.StatefulSet, pods []corev1.Pod, opts Options) Verdict {
	want := ptr.Deref(s.Spec.Replicas, 1)
	partition := partitionOf(s)
	switch {
	case s.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType:
		return Verdict{Blocked, ReasonOnDelete,
			"StatefulSet uses the OnDelete update strategy: its pods take a new image only when deleted, so rollgate cannot check a rollout; use RollingUpdate"}
	case want == 0 && !opts.AllowZeroReplicas:
		return scaledToZero()
	case want > 0 && partition >= want:
		return Verdict{Blocked, ReasonPartitionCoversAll,
			fmt.Sprintf("partition %d >= %d replicas: no pod would run the new version; lower spec.updateStrategy.rollingUpdate.partition", partition, want)}
	}
	if v, waiting := generationObserved(s.Generation, s.Status.ObservedGeneration); waiting {
		return v
	}
	if want == 0 {
		return zeroAllowed()
	}
	if partition > 0 {
		return partitioned(s, pods, partition, want, opts.Now)
	}
	st := s.Status
	counts := fmt.Sprintf("%d/%d updated, %d ready, %d available", st.UpdatedReplicas, want, st.ReadyReplicas, st.AvailableReplicas)
	switch {
	// availableReplicas is computed by the StatefulSet controller honouring minReadySeconds.
	case st.UpdatedReplicas < want || st.ReadyReplicas < want || st.AvailableReplicas < want:
		return Verdict{Progressing, ReasonRolloutInProgress, counts}
	// Ready counts old pods too (a scale-down in progress); the controller makes the update
	// revision current only once every pod runs it and is ready.
	case st.UpdateRevision != st.CurrentRevision:
		return Verdict{Progressing, ReasonRolloutInProgress, counts + fmt.Sprintf(", revision %s not yet current", st.UpdateRevision)}
	}
	return Verdict{Healthy, ReasonRolloutComplete, counts}
}

// NeedsPods says whether StatefulSet must be given the StatefulSet's pods: with a partition some
// pods stay on the old revision by design, and only the pods tell which of the new ones are ready.
// It is false when the verdict is Blocked by the partition or the strategy, and without a
// partition, where the status counts suffice.
func NeedsPods(s *appsv1.StatefulSet) bool {
	p := partitionOf(s)
	return s.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType && p > 0 && p < ptr.Deref(s.Spec.Replicas, 1)
}

// partitionOf is the RollingUpdate partition; 0 for OnDelete or none. An empty strategy type is
// RollingUpdate, the API server's default.
func partitionOf(s *appsv1.StatefulSet) int32 {
	if ru := s.Spec.UpdateStrategy.RollingUpdate; s.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType && ru != nil {
		return ptr.Deref(ru.Partition, 0)
	}
	return 0
}

// partitioned judges the pods that take the new revision under a partition 0 < partition < want.
// Like the StatefulSet controller, the partition counts from spec.ordinals.start.
func partitioned(s *appsv1.StatefulSet, pods []corev1.Pod, partition, want int32, now time.Time) Verdict {
	start := StartOrdinal(s)
	first, end := start+partition, start+want
	byOrdinal := make(map[int32]*corev1.Pod, len(pods))
	for i := range pods {
		if ord, ok := Ordinal(s.Name, pods[i].Name); ok && ord >= first && ord < end {
			byOrdinal[ord] = &pods[i]
		}
	}
	rev := s.Status.UpdateRevision
	var updated, ready, available int32
	lacking := "" // why the first pod that is not yet available is not
	for ord := first; ord < end; ord++ {
		why := ""
		switch p := byOrdinal[ord]; {
		case p == nil:
			why = "does not exist"
		case p.DeletionTimestamp != nil:
			why = "is terminating"
		// An empty update revision is a status not yet filled in: no pod matches it.
		case rev == "" || p.Labels[appsv1.StatefulSetRevisionLabel] != rev:
			why = fmt.Sprintf("is on revision %q, not %q", p.Labels[appsv1.StatefulSetRevisionLabel], rev)
		default:
			updated++
			c := ReadyCondition(p)
			if c == nil || c.Status != corev1.ConditionTrue {
				why = "is not Ready"
				break
			}
			ready++
			if !availableAt(c, s.Spec.MinReadySeconds, now) {
				why = fmt.Sprintf("is not yet Ready for minReadySeconds %d", s.Spec.MinReadySeconds)
				break
			}
			available++
		}
		if why != "" && lacking == "" {
			lacking = fmt.Sprintf("; %s-%d %s", s.Name, ord, why)
		}
	}
	judged := want - partition
	counts := fmt.Sprintf("partition %d: %d/%d pods from ordinal %d updated, %d ready, %d available",
		partition, updated, judged, first, ready, available)
	if available < judged {
		return Verdict{Progressing, ReasonRolloutInProgress, counts + lacking}
	}
	return Verdict{Healthy, ReasonRolloutComplete, counts}
}

// Ordinal is the ordinal of a pod named <set>-<ordinal>; false for a pod of another StatefulSet
// that the selector happens to match.
func Ordinal(set, pod string) (int32, bool) {
	i := strings.LastIndexByte(pod, '-')
	if i < 0 || pod[:i] != set {
		return 0, false
	}
	n, err := strconv.ParseUint(pod[i+1:], 10, 31)
	return int32(n), err == nil
}

// StartOrdinal is the ordinal of a StatefulSet's first pod (spec.ordinals.start).
func StartOrdinal(s *appsv1.StatefulSet) int32 {
	if s.Spec.Ordinals != nil {
		return s.Spec.Ordinals.Start
	}
	return 0
}

// ReadyCondition is the pod's Ready condition, nil if it has none yet.
func ReadyCondition(p *corev1.Pod) *corev1.PodCondition { return Condition(p, corev1.PodReady) }

// Condition is the pod's condition of type t, nil if it has none yet.
func Condition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// availableAt says whether a Ready pod is available at now, as the StatefulSet controller judges
// it (podutil.IsPodAvailable): Ready since at least minReadySeconds.
func availableAt(ready *corev1.PodCondition, minReadySeconds int32, now time.Time) bool {
	if minReadySeconds == 0 {
		return true
	}
	since := ready.LastTransitionTime
	return !since.IsZero() && !since.Add(time.Duration(minReadySeconds)*time.Second).After(now)
}

func scaledToZero() Verdict {
	return Verdict{Blocked, ReasonScaledToZero,
		"0 replicas: no pod of the new version would be checked; scale it up, or set spec.allowZeroReplicas to let it pass"}
}

func zeroAllowed() Verdict {
	return Verdict{Healthy, ReasonZeroReplicasAllowed, "0 replicas passed by spec.allowZeroReplicas: no pod of the new version ran"}
}

func generationObserved(generation, observed int64) (Verdict, bool) {
	if observed < generation {
		return Verdict{Progressing, ReasonGenerationNotObserved,
			fmt.Sprintf("generation %d not yet observed by its controller (observed %d)", generation, observed)}, true
	}
	return Verdict{}, false
}
