// Package v1alpha1 holds the rollgate.dev/v1alpha1 API: RollingUpgradeConfig, which says how and when
// a workload may move to a newer image, ApplicationVersion, the version signal Renovate bumps in Git,
// GitWriteBack, the Git branch configs write their outcomes to, and RolloutCalendar, the cluster
// admin's windows and freezes over many configs.
//
// +kubebuilder:object:generate=true
// +groupName=rollgate.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every rollgate object.
	GroupVersion = schema.GroupVersion{Group: "rollgate.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the rollgate types with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &RollingUpgradeConfig{}, &RollingUpgradeConfigList{},
			&ApplicationVersion{}, &ApplicationVersionList{}, &GitWriteBack{}, &GitWriteBackList{},
			&RolloutCalendar{}, &RolloutCalendarList{})
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})

	// AddToScheme adds the rollgate types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
