package kube

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/health"
)

// GatedAnnotation marks, in the manager's cache alone (never written), the shell of a StatefulSet
// whose pod template has rollgate's readiness gate (CacheTrim keeps no template in a shell).
const GatedAnnotation = "rollgate.dev/cache-in-place-gated"

// HasGate reports whether gates hold rollgate's readiness gate, through which an in-place upgrade
// takes a pod out of its Service.
func HasGate(gates []corev1.PodReadinessGate) bool {
	return slices.ContainsFunc(gates, func(g corev1.PodReadinessGate) bool { return g.ConditionType == v1alpha1.InPlaceReadinessGate })
}

// GateTrue reports whether the condition of rollgate's readiness gate on pod is True (the pod may
// serve once its containers are ready).
func GateTrue(pod *corev1.Pod) bool {
	c := health.Condition(pod, v1alpha1.InPlaceReadinessGate)
	return c != nil && c.Status == corev1.ConditionTrue
}
