package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// StrategyType says how a new image reaches a workload's pods.
// +kubebuilder:validation:Enum=RollingUpdate;InPlace
type StrategyType string

const (
	// StrategyRollingUpdate: the workload's own controller replaces its pods (the default).
	StrategyRollingUpdate StrategyType = "RollingUpdate"
	// StrategyInPlace: rollgate changes the image of each pod of a StatefulSet in place.
	StrategyInPlace StrategyType = "InPlace"
)

// InPlaceReadinessGate is the readiness gate a StatefulSet upgraded in place must declare in its
// pod template: rollgate sets its condition False to take a pod out of its Service before its
// image changes, and True to put it back.
const InPlaceReadinessGate = "rollgate.dev/in-place-ready"

// InPlaceChangedAnnotation is set on a pod, with the image, when rollgate changes its image in
// place: "<time> <image>", the time (RFC 3339) its readiness timeout counts from and the image.
const InPlaceChangedAnnotation = "rollgate.dev/in-place-changed"

// UpgradeStrategy says how a new image reaches the pods.
type UpgradeStrategy struct {
	// Type is RollingUpdate (the default: the Deployment's or StatefulSet's controller replaces
	// the pods) or InPlace (a StatefulSet with updateStrategy OnDelete: rollgate changes the image
	// of each pod in place, the kubelet restarts that container in the same pod, on the same node,
	// with the same IP and volumes).
	// +kubebuilder:default=RollingUpdate
	// +optional
	Type StrategyType `json:"type,omitempty"`

	// InPlace tunes the InPlace strategy.
	// +optional
	InPlace *InPlaceStrategy `json:"inPlace,omitempty"`
}

// InPlaceStrategy tunes an in-place upgrade.
type InPlaceStrategy struct {
	// Partition: the pods with an ordinal below it (counted from spec.ordinals.start) are never
	// changed; new pods below it still get the template's image. Default 0.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Partition int32 `json:"partition,omitempty"`

	// MaxUnavailable is how many of the StatefulSet's pods may be out of service at once, a
	// number or a percentage of its replicas (rounded down, at least 1): every pod not Ready counts,
	// whoever took it down (the upgrade's draining or changing pods, a crash loop, a pod below the
	// partition), and no pod in service is drained while as many are out. A
	// PodDisruptionBudget that selects the pods is honoured as well. Default 1.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 && self <= 100000 : self.matches('^[1-9][0-9]{0,2}%$')",message="maxUnavailable must be a number from 1 to 100000 or a percentage such as 25%"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// DrainGracePeriod is how long a pod is out of its Service's endpoints before its image
	// changes, for its connections to drain. Default 10s.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$')",message="drainGracePeriod must be a duration, e.g. 30s"
	// +optional
	DrainGracePeriod *metav1.Duration `json:"drainGracePeriod,omitempty"`

	// PodReadyTimeout is how long a pod has, after its image changed, to be ready: one that is
	// not fails the version, which is rolled back. Default 5m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$') && duration(self) >= duration('1s')",message="podReadyTimeout must be a duration of at least 1s, e.g. 5m"
	// +optional
	PodReadyTimeout *metav1.Duration `json:"podReadyTimeout,omitempty"`
}

// Defaults of the InPlace strategy.
const (
	DefaultInPlaceMaxUnavailable = 1
	DefaultDrainGracePeriod      = 10 * time.Second
	DefaultPodReadyTimeout       = 5 * time.Minute
)

// InPlace is the config's in-place strategy, nil unless spec.strategy.type is InPlace.
func (s *RollingUpgradeConfigSpec) InPlace() *InPlaceStrategy {
	if s.Strategy == nil || s.Strategy.Type != StrategyInPlace {
		return nil
	}
	if s.Strategy.InPlace == nil {
		return &InPlaceStrategy{}
	}
	return s.Strategy.InPlace
}

// MaxUnavailableOf is spec.strategy.inPlace.maxUnavailable for a StatefulSet of replicas pods: a
// percentage rounded down, at least 1; 1 when unset.
func (s *InPlaceStrategy) MaxUnavailableOf(replicas int32) int32 {
	if s.MaxUnavailable == nil {
		return DefaultInPlaceMaxUnavailable
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(s.MaxUnavailable, int(replicas), false)
	if err != nil { // admission refuses what does not parse
		return DefaultInPlaceMaxUnavailable
	}
	return int32(max(n, 1)) //nolint:gosec // at most replicas, or what admission let in as an int32
}

// DrainGracePeriodOrDefault is spec.strategy.inPlace.drainGracePeriod, 10s when unset.
func (s *InPlaceStrategy) DrainGracePeriodOrDefault() time.Duration {
	if s.DrainGracePeriod == nil {
		return DefaultDrainGracePeriod
	}
	return s.DrainGracePeriod.Duration
}

// PodReadyTimeoutOrDefault is spec.strategy.inPlace.podReadyTimeout, 5m when unset.
func (s *InPlaceStrategy) PodReadyTimeoutOrDefault() time.Duration {
	if s.PodReadyTimeout == nil {
		return DefaultPodReadyTimeout
	}
	return s.PodReadyTimeout.Duration
}

// InPlaceStatus is the progress of the last in-place upgrade (or its rollback), pod by pod.
type InPlaceStatus struct {
	// Image is the image the pods are moved to.
	Image string `json:"image"`
	// Started is when the step that moves them began (the health check, or the rollback).
	// +optional
	Started *metav1.Time `json:"started,omitempty"`
	// Pods are the pods it moves (from the partition up), in the order they move: the first
	// MaxInPlacePods of them.
	// +kubebuilder:validation:MaxItems=512
	// +optional
	Pods []InPlacePod `json:"pods,omitempty"`
}

// MaxInPlacePods is the number of pods status.inPlace lists.
const MaxInPlacePods = 512

// InPlacePod is one pod's place in an in-place upgrade.
type InPlacePod struct {
	// Name of the pod.
	Name string `json:"name"`
	// State: Waiting (on the old image, in service), Draining (out of its Service for the drain
	// grace), Changing (its image changed; its container restarts), Done (ready on the image, in
	// service) or Failed (not ready within podReadyTimeout of its change).
	State string `json:"state"`
	// Since is when it entered the state.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
	// Upgraded: the pod came through this step (ready on the image, back in service); a pod that
	// is not ready again later is out of service, not a failed change.
	// +optional
	Upgraded bool `json:"upgraded,omitempty"`
}
