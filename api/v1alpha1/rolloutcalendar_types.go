package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RolloutCalendarSpec says which configs a calendar applies to, its windows, its freezes and how
// many of them roll out at once.
// +kubebuilder:validation:XValidation:rule="has(self.windows) || has(self.freezeWhile) || has(self.maxConcurrent) || has(self.jitter)",message="a calendar needs windows, freezeWhile, maxConcurrent or jitter"
type RolloutCalendarSpec struct {
	// NamespaceSelector picks the namespaces whose configs the calendar applies to, by the
	// namespaces' labels. Absent: every namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// Selector picks the configs it applies to, by their labels. Absent: every config (of the
	// namespaces picked). A config's labels are its owner's to change: bind tenants by
	// namespaceSelector; a config-label selector is advisory.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Windows bind each config picked, whatever its own windows say: a deny window freezes them
	// all (a deny wins over every allow), and the allow windows restrict them all to their times,
	// also a config with allow windows of its own (a version starts while the config's own
	// calendar and each RolloutCalendar's are open). Only starts are gated; a rollback is never
	// held.
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

	// MaxConcurrent caps the rollouts in flight at once among the configs picked. A start takes
	// one of the calendar's slots (status.rollouts) and, while all are taken, waits Pending with
	// reason AwaitingRolloutSlot; the slot is given back with the verdict (Completed or rolled
	// back). A rollback never waits for a slot; a target-image set by hand takes none, nor does a
	// rollout in flight when the cap is set. A rollout still in flight its health timeout and soak
	// past its check's own deadline (the analysis's last measurement, a GitFirst apply timeout,
	// each pod's drain grace and readiness timeout in place) gives its slot up. Absent: no cap.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	MaxConcurrent *int32 `json:"maxConcurrent,omitempty"`

	// Jitter spreads the starts of the configs picked: each config waits its own fixed part of
	// the jitter (from a hash of its namespace and name) past the moment its version could have
	// started, such as the calendar's opening, so that a window opening over many configs does
	// not start them all in one second. Absent or 0: no wait.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$') && duration(self) <= duration('24h')",message="jitter must be a duration of at most 24h, e.g. 10m"
	// +optional
	Jitter *metav1.Duration `json:"jitter,omitempty"`
}

// RolloutCalendarStatus is what the calendar says now: whether its own windows let starts go
// (the configs' own windows aside), until when, and the rollouts holding its slots.
type RolloutCalendarStatus struct {
	// ObservedGeneration is the generation of the spec the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Open: the calendar's windows let rollouts start now (freezeWhile aside, which each config
	// asks before its start).
	// +optional
	Open bool `json:"open"`

	// Window is the window that decides: the deny that closes the calendar, the allow that holds
	// it open, or, closed, the allow it waits for. Empty when none decides (no allow windows and
	// no deny open).
	// +optional
	Window string `json:"window,omitempty"`

	// NextOpen is, while closed, when the calendar opens; absent while open, or when it does not
	// open within what rollgate looks ahead.
	// +optional
	NextOpen *metav1.Time `json:"nextOpen,omitempty"`

	// NextClose is, while open, when the calendar closes; absent while closed, or when it does
	// not close within what rollgate looks ahead.
	// +optional
	NextClose *metav1.Time `json:"nextClose,omitempty"`

	// Rollouts hold the slots of spec.maxConcurrent: one entry per config in flight, written by
	// the config's reconcile before it starts (a write that fails when another took the last slot
	// first) and removed with its verdict.
	// +listType=map
	// +listMapKey=namespace
	// +listMapKey=name
	// +optional
	Rollouts []CalendarRollout `json:"rollouts,omitempty"`

	// Conditions: Ready is False with reason InvalidSpec while a window cannot be read (no config
	// the calendar picks starts then).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// CalendarRollout is a slot of a calendar held by one config's rollout.
type CalendarRollout struct {
	// Namespace and Name of the config.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Version it rolls out.
	Version string `json:"version"`
	// Since is when it took the slot.
	Since metav1.Time `json:"since"`
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
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Open",type=boolean,JSONPath=`.status.open`
// +kubebuilder:printcolumn:name="Window",type=string,JSONPath=`.status.window`,priority=1
// +kubebuilder:printcolumn:name="Next Open",type=string,JSONPath=`.status.nextOpen`
// +kubebuilder:printcolumn:name="Next Close",type=string,JSONPath=`.status.nextClose`
// +kubebuilder:printcolumn:name="Max",type=integer,JSONPath=`.spec.maxConcurrent`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RolloutCalendar struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec RolloutCalendarSpec `json:"spec"`
	// +optional
	Status RolloutCalendarStatus `json:"status,omitempty"`
}

// RolloutCalendarList is a list of RolloutCalendars.
//
// +kubebuilder:object:root=true
type RolloutCalendarList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RolloutCalendar `json:"items"`
}
