// Package v1alpha1 holds the rollgate.dev/v1alpha1 API: RollingUpgradeConfig, which says how and when
// a workload may move to a newer image, and ApplicationVersion, the version signal Renovate bumps in Git.
//
// +kubebuilder:object:generate=true
// +groupName=rollgate.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every rollgate object.
	GroupVersion = schema.GroupVersion{Group: "rollgate.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the rollgate types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the rollgate types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
