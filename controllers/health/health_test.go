package health

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func deploy(gen, observed int64, replicas int32, status appsv1.DeploymentStatus) *appsv1.Deployment {
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas)}, Status: status}
	d.Generation = gen
	d.Status.ObservedGeneration = observed
	return d
}

func TestDeployment(t *testing.T) {
	deadline := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
		Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "web-1" has timed out progressing.`}
	cases := []struct {
		name  string
		d     *appsv1.Deployment
		state State
	}{
		{"all updated, ready, available", deploy(2, 2, 3, appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3}), Healthy},
		{"generation not observed", deploy(3, 2, 3, appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3}), Progressing},
		{"not all updated", deploy(2, 2, 3, appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 2, ReadyReplicas: 3, AvailableReplicas: 3}), Progressing},
		// An old pod still counts as ready: updated + ready can reach the desired count too early.
		{"an old pod is left", deploy(2, 2, 3, appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3}), Progressing},
		{"updated but not ready", deploy(2, 2, 3, appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 2}), Progressing},
		{"ready but not yet available (minReadySeconds)", deploy(2, 2, 3, appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 1}), Progressing},
		{"progress deadline exceeded", deploy(2, 2, 3, appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 1, ReadyReplicas: 3, AvailableReplicas: 3,
			Conditions: []appsv1.DeploymentCondition{deadline}}), Failed},
		{"deadline of an older generation does not count", deploy(3, 2, 3, appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{deadline}}), Progressing},
		{"scaled to zero", deploy(1, 1, 0, appsv1.DeploymentStatus{}), Healthy},
		{"replicas unset means one", &appsv1.Deployment{Status: appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}}, Healthy},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := Deployment(tc.d)
			if v.State != tc.state || v.Reason == "" || v.Message == "" {
				t.Errorf("verdict = %+v, want state %s with a reason and a message", v, tc.state)
			}
		})
	}
}

func sts(replicas int32, partition *int32, status appsv1.StatefulSetStatus) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To(replicas),
		UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: partition}},
	}, Status: status}
	s.Generation, s.Status.ObservedGeneration = 2, 2
	return s
}

func TestStatefulSet(t *testing.T) {
	cases := []struct {
		name  string
		s     *appsv1.StatefulSet
		state State
	}{
		{"done", sts(3, nil, appsv1.StatefulSetStatus{UpdatedReplicas: 3, ReadyReplicas: 3, CurrentRevision: "r2", UpdateRevision: "r2"}), Healthy},
		{"revision not yet current", sts(3, nil, appsv1.StatefulSetStatus{UpdatedReplicas: 3, ReadyReplicas: 3, CurrentRevision: "r1", UpdateRevision: "r2"}), Progressing},
		{"one not updated", sts(3, nil, appsv1.StatefulSetStatus{UpdatedReplicas: 2, ReadyReplicas: 3, CurrentRevision: "r1", UpdateRevision: "r2"}), Progressing},
		{"one not ready", sts(3, nil, appsv1.StatefulSetStatus{UpdatedReplicas: 3, ReadyReplicas: 2, CurrentRevision: "r2", UpdateRevision: "r2"}), Progressing},
		// Partition 2 of 3: only ordinal 2 is updated; the revisions legitimately differ.
		{"partition respected", sts(3, ptr.To[int32](2), appsv1.StatefulSetStatus{UpdatedReplicas: 1, ReadyReplicas: 3, CurrentRevision: "r1", UpdateRevision: "r2"}), Healthy},
		{"partition: the updated one not ready", sts(3, ptr.To[int32](2), appsv1.StatefulSetStatus{UpdatedReplicas: 1, ReadyReplicas: 2, CurrentRevision: "r1", UpdateRevision: "r2"}), Progressing},
		{"partition: none updated yet", sts(3, ptr.To[int32](2), appsv1.StatefulSetStatus{UpdatedReplicas: 0, ReadyReplicas: 3, CurrentRevision: "r1", UpdateRevision: "r2"}), Progressing},
		{"partition above replicas", sts(3, ptr.To[int32](5), appsv1.StatefulSetStatus{UpdatedReplicas: 0, ReadyReplicas: 3, CurrentRevision: "r1", UpdateRevision: "r2"}), Healthy},
		{"generation not observed", func() *appsv1.StatefulSet {
			s := sts(3, nil, appsv1.StatefulSetStatus{UpdatedReplicas: 3, ReadyReplicas: 3, CurrentRevision: "r2", UpdateRevision: "r2"})
			s.Generation = 3
			return s
		}(), Progressing},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := StatefulSet(tc.s)
			if v.State != tc.state || v.Reason == "" || v.Message == "" {
				t.Errorf("verdict = %+v, want state %s with a reason and a message", v, tc.state)
			}
		})
	}
}
