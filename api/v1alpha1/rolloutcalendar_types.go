package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RolloutCalendarSpec says which configs a calendar applies to, its windows and its freezes.
// +kubebuilder:validation:XValidation:rule="has(self.windows) || has(self.freezeWhile)",message="a calendar needs windows, freezeWhile or both"
type RolloutCalendarSpec struct {
	// NamespaceSelector picks the namespaces whose configs the calendar applies to, by the
	// namespaces' labels. Absent: every namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// Selector picks the configs it applies to, by their labels. Absent: every config (of the
	// namespaces picked).
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Windows are added to the calendar of each config picked, as if in its spec.windows: a deny
	// window freezes them all (a deny wins over every allow), an allow window restricts them all
	// to its times. Only starts are gated; a rollback is never held.
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	// +optional
	Windows []CalendarWindow `json:"windows,omitempty"`

	// FreezeWhile freezes the configs picked while one of these PromQL queries returns a series,
	// in the manager's Prometheus (--prometheus-url): a firing alert stops the line, e.g.
	// ALERTS{alertstate="firing",severity="critical"}. A query that cannot be answered freezes
	// too: a freeze nobody can check is kept.
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	// +optional
	FreezeWhile []FreezeQuery `json:"freezeWhile,omitempty"`
}

// FreezeQuery is a PromQL query whose series, while there are any, freeze rollouts.
type FreezeQuery struct {
	// Name of the freeze, in messages.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// Query is an instant PromQL query: rollouts are frozen while it returns one series or more
	// (a scalar freezes unless it is 0).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +required
	Query string `json:"query"`
}

// RolloutCalendar applies allow and deny windows (holidays, release days, incidents) to every
// RollingUpgradeConfig its selectors pick. It is cluster-scoped: the cluster admin's, not a
// tenant's.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=rcal,categories=rollgate
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RolloutCalendar struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec RolloutCalendarSpec `json:"spec"`
}

// RolloutCalendarList is a list of RolloutCalendars.
//
// +kubebuilder:object:root=true
type RolloutCalendarList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RolloutCalendar `json:"items"`
}
