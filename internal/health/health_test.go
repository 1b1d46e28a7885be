package health

import (
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// now is the time every verdict is judged at.
var now = time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)

// Messages that several cases expect.
const (
	scaledToZeroMessage = "0 replicas: no pod of the new version would be checked; scale it up, or set spec.allowZeroReplicas to let it pass"
	zeroAllowedMessage  = "0 replicas passed by spec.allowZeroReplicas: no pod of the new version ran"
	pausedMessage       = "Deployment is paused (spec.paused); rollgate holds its rollouts until it is resumed (kubectl rollout resume)"
	onDeleteMessage     = "StatefulSet uses the OnDelete update strategy: its pods take a new image only when deleted, so rollgate cannot check a rollout; use RollingUpdate"
)

// deployment is a Deployment at generation 2, observed by its controller.
func deployment(replicas int32, status appsv1.DeploymentStatus, changes ...func(*appsv1.Deployment)) *appsv1.Deployment {
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas)}, Status: status}
	d.Name, d.Generation, d.Status.ObservedGeneration = "web", 2, 2
	for _, change := range changes {
		change(d)
	}
	return d
}

// deploymentStatus counts the pods of a Deployment: all, of the new ReplicaSet, ready, available.
func deploymentStatus(replicas, updated, ready, available int32) appsv1.DeploymentStatus {
	return appsv1.DeploymentStatus{Replicas: replicas, UpdatedReplicas: updated, ReadyReplicas: ready, AvailableReplicas: available}
}

func paused(d *appsv1.Deployment) { d.Spec.Paused = true }

func deploymentGenerationAhead(d *appsv1.Deployment) { d.Generation = 3 }

func progressDeadlineExceeded(d *appsv1.Deployment) {
	d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing,
		Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "web-1" has timed out progressing.`})
}

func TestDeployment(t *testing.T) {
	cases := []struct {
		name string
		// inputs
		deployment        *appsv1.Deployment
		allowZeroReplicas bool
		// expected outputs
		state   State
		reason  string
		message string
	}{
		{
			name:       "a Deployment whose replicas are all updated, ready and available is healthy",
			deployment: deployment(3, deploymentStatus(3, 3, 3, 3)),
			state:      Healthy, reason: ReasonRolloutComplete, message: "3/3 updated, 3 ready, 3 available, 0 old",
		},
		{
			name:       "a Deployment with a replica not yet updated is progressing",
			deployment: deployment(3, deploymentStatus(3, 2, 3, 3)),
			state:      Progressing, reason: ReasonRolloutInProgress, message: "2/3 updated, 3 ready, 3 available, 1 old",
		},
		{
			// An old pod still counts as ready: updated + ready can reach the desired count too early.
			name:       "a Deployment with an old pod left is progressing though updated and ready reach the desired count",
			deployment: deployment(3, deploymentStatus(4, 3, 3, 3)),
			state:      Progressing, reason: ReasonRolloutInProgress, message: "3/3 updated, 3 ready, 3 available, 1 old",
		},
		{
			name:       "a Deployment with an updated replica not ready is progressing",
			deployment: deployment(3, deploymentStatus(3, 3, 2, 2)),
			state:      Progressing, reason: ReasonRolloutInProgress, message: "3/3 updated, 2 ready, 2 available, 0 old",
		},
		{
			name:       "a Deployment whose ready replicas are not yet available (minReadySeconds) is progressing",
			deployment: deployment(3, deploymentStatus(3, 3, 3, 1)),
			state:      Progressing, reason: ReasonRolloutInProgress, message: "3/3 updated, 3 ready, 1 available, 0 old",
		},
		{
			name:       "a Deployment whose generation its controller has not observed is progressing",
			deployment: deployment(3, deploymentStatus(3, 3, 3, 3), deploymentGenerationAhead),
			state:      Progressing, reason: ReasonGenerationNotObserved, message: "generation 3 not yet observed by its controller (observed 2)",
		},
		{
			name:       "a Deployment past its progress deadline has failed",
			deployment: deployment(3, deploymentStatus(4, 1, 3, 3), progressDeadlineExceeded),
			state:      Failed, reason: ReasonProgressDeadlineExceeded, message: `ReplicaSet "web-1" has timed out progressing.`,
		},
		{
			name:       "a progress deadline of an older generation does not fail the current one",
			deployment: deployment(3, deploymentStatus(4, 1, 3, 3), progressDeadlineExceeded, deploymentGenerationAhead),
			state:      Progressing, reason: ReasonGenerationNotObserved, message: "generation 3 not yet observed by its controller (observed 2)",
		},
		{
			name:       "a Deployment with replicas unset wants one",
			deployment: deployment(0, deploymentStatus(1, 1, 1, 1), func(d *appsv1.Deployment) { d.Spec.Replicas = nil }),
			state:      Healthy, reason: ReasonRolloutComplete, message: "1/1 updated, 1 ready, 1 available, 0 old",
		},
		{
			name:       "a Deployment scaled to 0 is blocked, as no pod of the new version would run",
			deployment: deployment(0, deploymentStatus(0, 0, 0, 0)),
			state:      Blocked, reason: ReasonScaledToZero, message: scaledToZeroMessage,
		},
		{
			name:       "a Deployment scaled to 0 passes with spec.allowZeroReplicas",
			deployment: deployment(0, deploymentStatus(0, 0, 0, 0)), allowZeroReplicas: true,
			state: Healthy, reason: ReasonZeroReplicasAllowed, message: zeroAllowedMessage,
		},
		{
			name:       "a Deployment scaled to 0 with spec.allowZeroReplicas waits for its old pods to go",
			deployment: deployment(0, deploymentStatus(2, 0, 2, 2)), allowZeroReplicas: true,
			state: Progressing, reason: ReasonRolloutInProgress, message: "0 replicas: waiting for 2 old pods to go",
		},
		{
			name:       "a Deployment scaled to 0 with spec.allowZeroReplicas waits for its controller to observe the generation",
			deployment: deployment(0, deploymentStatus(0, 0, 0, 0), deploymentGenerationAhead), allowZeroReplicas: true,
			state: Progressing, reason: ReasonGenerationNotObserved, message: "generation 3 not yet observed by its controller (observed 2)",
		},
		{
			name:       "a paused Deployment is blocked, not progressing",
			deployment: deployment(3, deploymentStatus(3, 0, 3, 3), paused),
			state:      Blocked, reason: ReasonPaused, message: pausedMessage,
		},
		{
			name:       "a paused Deployment is blocked even when its last rollout completed, as the next one would not start",
			deployment: deployment(3, deploymentStatus(3, 3, 3, 3), paused),
			state:      Blocked, reason: ReasonPaused, message: pausedMessage,
		},
		{
			name:       "a paused Deployment is blocked before its controller observes the generation",
			deployment: deployment(3, deploymentStatus(3, 3, 3, 3), paused, deploymentGenerationAhead),
			state:      Blocked, reason: ReasonPaused, message: pausedMessage,
		},
		{
			name:       "a paused Deployment is blocked, not failed, by a progress deadline it passed before the pause",
			deployment: deployment(3, deploymentStatus(4, 1, 3, 3), paused, progressDeadlineExceeded),
			state:      Blocked, reason: ReasonPaused, message: pausedMessage,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Deployment(tc.deployment, Options{AllowZeroReplicas: tc.allowZeroReplicas, Now: now})
			if got.State != tc.state {
				t.Errorf("State = %q, want %q", got.State, tc.state)
			}
			if got.Reason != tc.reason {
				t.Errorf("Reason = %q, want %q", got.Reason, tc.reason)
			}
			if got.Message != tc.message {
				t.Errorf("Message = %q, want %q", got.Message, tc.message)
			}
		})
	}
}

// Revisions of the StatefulSet web: its pods run oldRevision, and newRevision is being rolled out.
const (
	oldRevision = "web-r1"
	newRevision = "web-r2"
)

// statefulSet is the RollingUpdate StatefulSet web at generation 2, observed by its controller.
func statefulSet(replicas int32, status appsv1.StatefulSetStatus, changes ...func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{
		Replicas:       ptr.To(replicas),
		UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
	}, Status: status}
	s.Name, s.Generation, s.Status.ObservedGeneration = "web", 2, 2
	for _, change := range changes {
		change(s)
	}
	return s
}

// statefulSetStatus counts the pods of a StatefulSet: on the update revision, ready, available;
// current is the current revision, the update revision is newRevision.
func statefulSetStatus(updated, ready, available int32, current string) appsv1.StatefulSetStatus {
	return appsv1.StatefulSetStatus{UpdatedReplicas: updated, ReadyReplicas: ready, AvailableReplicas: available,
		CurrentRevision: current, UpdateRevision: newRevision}
}

func partition(p int32) func(*appsv1.StatefulSet) {
	return func(s *appsv1.StatefulSet) {
		s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(p)}
	}
}

func minReadySeconds(n int32) func(*appsv1.StatefulSet) {
	return func(s *appsv1.StatefulSet) { s.Spec.MinReadySeconds = n }
}

func startOrdinal(n int32) func(*appsv1.StatefulSet) {
	return func(s *appsv1.StatefulSet) { s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: n} }
}

func onDelete(s *appsv1.StatefulSet) {
	s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
}

func statefulSetGenerationAhead(s *appsv1.StatefulSet) { s.Generation = 3 }

// readyPod is the pod web-<ordinal> on revision, Ready since readyFor before now.
func readyPod(ordinal int, revision string, readyFor time.Duration) corev1.Pod {
	p := unreadyPod(ordinal, revision)
	p.Status.Conditions[0].Status = corev1.ConditionTrue
	p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-readyFor))
	return p
}

// unreadyPod is the pod web-<ordinal> on revision, not Ready.
func unreadyPod(ordinal int, revision string) corev1.Pod {
	p := corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}}}
	p.Name = "web-" + strconv.Itoa(ordinal)
	p.Labels = map[string]string{appsv1.StatefulSetRevisionLabel: revision}
	return p
}

func terminating(p corev1.Pod) corev1.Pod {
	p.DeletionTimestamp = ptr.To(metav1.NewTime(now))
	return p
}

func renamed(name string, p corev1.Pod) corev1.Pod {
	p.Name = name
	return p
}

func pods(ps ...corev1.Pod) []corev1.Pod { return ps }

func TestStatefulSet(t *testing.T) {
	cases := []struct {
		name string
		// inputs
		statefulSet       *appsv1.StatefulSet
		pods              []corev1.Pod
		allowZeroReplicas bool
		// expected outputs
		needsPods bool
		state     State
		reason    string
		message   string
	}{
		{
			name:        "a StatefulSet whose replicas are all updated, ready and available on the current revision is healthy",
			statefulSet: statefulSet(3, statefulSetStatus(3, 3, 3, newRevision)),
			state:       Healthy, reason: ReasonRolloutComplete, message: "3/3 updated, 3 ready, 3 available",
		},
		{
			name:        "a StatefulSet whose update revision is not yet current is progressing",
			statefulSet: statefulSet(3, statefulSetStatus(3, 3, 3, oldRevision)),
			state:       Progressing, reason: ReasonRolloutInProgress, message: "3/3 updated, 3 ready, 3 available, revision web-r2 not yet current",
		},
		{
			name:        "a StatefulSet with a replica not yet updated is progressing",
			statefulSet: statefulSet(3, statefulSetStatus(2, 3, 3, oldRevision)),
			state:       Progressing, reason: ReasonRolloutInProgress, message: "2/3 updated, 3 ready, 3 available",
		},
		{
			name:        "a StatefulSet with a replica not ready is progressing",
			statefulSet: statefulSet(3, statefulSetStatus(3, 2, 2, newRevision)),
			state:       Progressing, reason: ReasonRolloutInProgress, message: "3/3 updated, 2 ready, 2 available",
		},
		{
			name:        "a StatefulSet whose ready replicas are not yet available (minReadySeconds) is progressing",
			statefulSet: statefulSet(3, statefulSetStatus(3, 3, 1, newRevision), minReadySeconds(30)),
			state:       Progressing, reason: ReasonRolloutInProgress, message: "3/3 updated, 3 ready, 1 available",
		},
		{
			name:        "a StatefulSet whose generation its controller has not observed is progressing",
			statefulSet: statefulSet(3, statefulSetStatus(3, 3, 3, newRevision), statefulSetGenerationAhead),
			state:       Progressing, reason: ReasonGenerationNotObserved, message: "generation 3 not yet observed by its controller (observed 2)",
		},
		{
			name:        "a StatefulSet scaled to 0 is blocked, as no pod of the new version would run",
			statefulSet: statefulSet(0, statefulSetStatus(0, 0, 0, newRevision)),
			state:       Blocked, reason: ReasonScaledToZero, message: scaledToZeroMessage,
		},
		{
			name:        "a StatefulSet scaled to 0 passes with spec.allowZeroReplicas",
			statefulSet: statefulSet(0, statefulSetStatus(0, 0, 0, newRevision)), allowZeroReplicas: true,
			state: Healthy, reason: ReasonZeroReplicasAllowed, message: zeroAllowedMessage,
		},
		{
			name:        "a StatefulSet scaled to 0 with spec.allowZeroReplicas waits for its controller to observe the generation",
			statefulSet: statefulSet(0, statefulSetStatus(0, 0, 0, newRevision), statefulSetGenerationAhead), allowZeroReplicas: true,
			state: Progressing, reason: ReasonGenerationNotObserved, message: "generation 3 not yet observed by its controller (observed 2)",
		},
		{
			name:        "a StatefulSet scaled to 0 with spec.allowZeroReplicas passes whatever its partition",
			statefulSet: statefulSet(0, statefulSetStatus(0, 0, 0, oldRevision), partition(1)), allowZeroReplicas: true,
			state: Healthy, reason: ReasonZeroReplicasAllowed, message: zeroAllowedMessage,
		},
		{
			name:        "a partition equal to the replicas is blocked, as no pod would take the new version",
			statefulSet: statefulSet(3, statefulSetStatus(0, 3, 3, oldRevision), partition(3)),
			state:       Blocked, reason: ReasonPartitionCoversAll,
			message: "partition 3 >= 3 replicas: no pod would run the new version; lower spec.updateStrategy.rollingUpdate.partition",
		},
		{
			name:        "a partition above the replicas is blocked",
			statefulSet: statefulSet(3, statefulSetStatus(0, 3, 3, oldRevision), partition(5)),
			state:       Blocked, reason: ReasonPartitionCoversAll,
			message: "partition 5 >= 3 replicas: no pod would run the new version; lower spec.updateStrategy.rollingUpdate.partition",
		},
		{
			name:        "an OnDelete StatefulSet is blocked, as its pods are replaced only when someone deletes them",
			statefulSet: statefulSet(3, statefulSetStatus(0, 3, 3, oldRevision), onDelete),
			state:       Blocked, reason: ReasonOnDelete, message: onDeleteMessage,
		},
		{
			name:        "an OnDelete StatefulSet is blocked even with all its pods deleted and updated",
			statefulSet: statefulSet(3, statefulSetStatus(3, 3, 3, newRevision), onDelete),
			state:       Blocked, reason: ReasonOnDelete, message: onDeleteMessage,
		},
		{
			name:        "a partition with its one new pod ready and available is healthy",
			statefulSet: statefulSet(3, statefulSetStatus(1, 3, 3, oldRevision), partition(2)),
			pods:        pods(readyPod(0, oldRevision, time.Hour), readyPod(1, oldRevision, time.Hour), readyPod(2, newRevision, time.Minute)),
			needsPods:   true,
			state:       Healthy, reason: ReasonRolloutComplete, message: "partition 2: 1/1 pods from ordinal 2 updated, 1 ready, 1 available",
		},
		{
			name:        "a partition with its new pods ready is healthy though an old pod below it is not ready",
			statefulSet: statefulSet(3, statefulSetStatus(2, 2, 2, oldRevision), partition(1)),
			pods:        pods(unreadyPod(0, oldRevision), readyPod(1, newRevision, time.Minute), readyPod(2, newRevision, time.Minute)),
			needsPods:   true,
			state:       Healthy, reason: ReasonRolloutComplete, message: "partition 1: 2/2 pods from ordinal 1 updated, 2 ready, 2 available",
		},
		{
			name:        "a partition with a new pod not ready is progressing though an old pod below it makes the ready count",
			statefulSet: statefulSet(3, statefulSetStatus(1, 3, 3, oldRevision), partition(2)),
			pods:        pods(readyPod(0, oldRevision, time.Hour), readyPod(1, oldRevision, time.Hour), unreadyPod(2, newRevision)),
			needsPods:   true,
			state:       Progressing, reason: ReasonRolloutInProgress,
			message: "partition 2: 1/1 pods from ordinal 2 updated, 0 ready, 0 available; web-2 is not Ready",
		},
		{
			name:        "a partition with a pod at or above it still on the old revision is progressing",
			statefulSet: statefulSet(3, statefulSetStatus(1, 3, 3, oldRevision), partition(1)),
			pods:        pods(readyPod(0, oldRevision, time.Hour), readyPod(1, oldRevision, time.Hour), readyPod(2, newRevision, time.Minute)),
			needsPods:   true,
			state:       Progressing, reason: ReasonRolloutInProgress,
			message: `partition 1: 1/2 pods from ordinal 1 updated, 1 ready, 1 available; web-1 is on revision "web-r1", not "web-r2"`,
		},
		{
			name:        "a partition with a pod above it missing is progressing",
			statefulSet: statefulSet(3, statefulSetStatus(1, 2, 2, oldRevision), partition(1)),
			pods:        pods(readyPod(0, oldRevision, time.Hour), readyPod(1, newRevision, time.Minute)),
			needsPods:   true,
			state:       Progressing, reason: ReasonRolloutInProgress,
			message: "partition 1: 1/2 pods from ordinal 1 updated, 1 ready, 1 available; web-2 does not exist",
		},
		{
			name:        "a partition with a terminating pod above it is progressing",
			statefulSet: statefulSet(3, statefulSetStatus(2, 3, 3, oldRevision), partition(1)),
			pods:        pods(readyPod(0, oldRevision, time.Hour), readyPod(1, newRevision, time.Minute), terminating(readyPod(2, newRevision, time.Minute))),
			needsPods:   true,
			state:       Progressing, reason: ReasonRolloutInProgress,
			message: "partition 1: 1/2 pods from ordinal 1 updated, 1 ready, 1 available; web-2 is terminating",
		},
		{
			name:        "a partition with a new pod Ready for less than minReadySeconds is progressing",
			statefulSet: statefulSet(3, statefulSetStatus(2, 3, 2, oldRevision), partition(1), minReadySeconds(30)),
			pods:        pods(readyPod(0, oldRevision, time.Hour), readyPod(1, newRevision, time.Minute), readyPod(2, newRevision, 29*time.Second)),
			needsPods:   true,
			state:       Progressing, reason: ReasonRolloutInProgress,
			message: "partition 1: 2/2 pods from ordinal 1 updated, 2 ready, 1 available; web-2 is not yet Ready for minReadySeconds 30",
		},
		{
			name:        "a partition with its new pods Ready for exactly minReadySeconds is healthy",
			statefulSet: statefulSet(3, statefulSetStatus(2, 3, 3, oldRevision), partition(1), minReadySeconds(30)),
			pods:        pods(readyPod(0, oldRevision, time.Hour), readyPod(1, newRevision, time.Minute), readyPod(2, newRevision, 30*time.Second)),
			needsPods:   true,
			state:       Healthy, reason: ReasonRolloutComplete, message: "partition 1: 2/2 pods from ordinal 1 updated, 2 ready, 2 available",
		},
		{
			name:        "a partition counts from spec.ordinals.start",
			statefulSet: statefulSet(3, statefulSetStatus(2, 2, 2, oldRevision), partition(1), startOrdinal(5)),
			pods:        pods(unreadyPod(5, oldRevision), readyPod(6, newRevision, time.Minute), readyPod(7, newRevision, time.Minute)),
			needsPods:   true,
			state:       Healthy, reason: ReasonRolloutComplete, message: "partition 1: 2/2 pods from ordinal 6 updated, 2 ready, 2 available",
		},
		{
			name:        "a partition ignores the pods of another StatefulSet its selector matches",
			statefulSet: statefulSet(3, statefulSetStatus(1, 2, 2, oldRevision), partition(1)),
			pods: pods(readyPod(0, oldRevision, time.Hour), readyPod(1, newRevision, time.Minute),
				renamed("web-canary-2", readyPod(2, newRevision, time.Minute))),
			needsPods: true,
			state:     Progressing, reason: ReasonRolloutInProgress,
			message: "partition 1: 1/2 pods from ordinal 1 updated, 1 ready, 1 available; web-2 does not exist",
		},
		{
			name:        "a partition whose generation its controller has not observed is progressing",
			statefulSet: statefulSet(3, statefulSetStatus(2, 3, 3, oldRevision), partition(1), statefulSetGenerationAhead),
			pods:        pods(readyPod(0, oldRevision, time.Hour), readyPod(1, newRevision, time.Minute), readyPod(2, newRevision, time.Minute)),
			needsPods:   true,
			state:       Progressing, reason: ReasonGenerationNotObserved, message: "generation 3 not yet observed by its controller (observed 2)",
		},
		{
			name:        "a partition of 0 is judged by the status counts, without pods",
			statefulSet: statefulSet(3, statefulSetStatus(3, 3, 3, newRevision), partition(0)),
			state:       Healthy, reason: ReasonRolloutComplete, message: "3/3 updated, 3 ready, 3 available",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := NeedsPods(tc.statefulSet); got != tc.needsPods {
				t.Errorf("NeedsPods = %t, want %t", got, tc.needsPods)
			}
			got := StatefulSet(tc.statefulSet, tc.pods, Options{AllowZeroReplicas: tc.allowZeroReplicas, Now: now})
			if got.State != tc.state {
				t.Errorf("State = %q, want %q", got.State, tc.state)
			}
			if got.Reason != tc.reason {
				t.Errorf("Reason = %q, want %q", got.Reason, tc.reason)
			}
			if got.Message != tc.message {
				t.Errorf("Message = %q, want %q", got.Message, tc.message)
			}
		})
	}
}

// A person reads a message in a condition or an event: it stays short.
func TestBlockedMessagesAreShort(t *testing.T) {
	for _, m := range []string{scaledToZeroMessage, pausedMessage, onDeleteMessage} {
		if len(m) > 200 {
			t.Errorf("%d characters, want at most 200: %q", len(m), m)
		}
	}
}
