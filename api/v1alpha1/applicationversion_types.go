package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ApplicationVersionSpec announces a version of an image.
type ApplicationVersionSpec struct {
	// Image is the repository, without tag or digest, e.g. ghcr.io/acme/web.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-zA-Z0-9.-]+(:[0-9]+)?/)?[a-z0-9]+([._-]+[a-z0-9]+)*(/[a-z0-9]+([._-]+[a-z0-9]+)*)*$')",message="image must be a repository without tag or digest, e.g. ghcr.io/acme/web"
	Image string `json:"image"`

	// Version is the announced tag; the line Renovate's preset updates. A tag that is not semver is
	// reported on the status and ignored.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Version string `json:"version"`

	// ReleasedAt is when the version was released, if known.
	// +optional
	ReleasedAt *metav1.Time `json:"releasedAt,omitempty"`
}

// ApplicationVersionStatus reports whether the announced version can be used.
type ApplicationVersionStatus struct {
	// ObservedGeneration is the generation of the spec this status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready=False with a reason when the version is not semver.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ApplicationVersion is a version signal: the object Renovate bumps in Git and Flux or Argo CD sync
// into the cluster. RollingUpgradeConfigs read it through spec.sources[].applicationVersion.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=appver,categories=rollgate
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ApplicationVersion struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ApplicationVersionSpec   `json:"spec"`
	Status ApplicationVersionStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions (fluxcd meta.ObjectWithConditions).
func (in *ApplicationVersion) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions (fluxcd meta.ObjectWithConditionsSetter).
func (in *ApplicationVersion) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// ApplicationVersionList is a list of ApplicationVersions.
//
// +kubebuilder:object:root=true
type ApplicationVersionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ApplicationVersion `json:"items"`
}
