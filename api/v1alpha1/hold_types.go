package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Hold is the gate that holds a version, and why (status.hold).
type Hold struct {
	// Gate is the mechanism that holds the version: Calendar (the maintenance window, spec.windows,
	// a RolloutCalendar's windows, freezes or jitter), Approval, ReleaseAge, Image (the registry
	// lacks it), RolloutSlot (a RolloutCalendar's slots are all taken), Soak or Analysis.
	Gate HoldGate `json:"gate"`

	// Reason is the reason of the Ready condition it sets, e.g. VersionHeld, Frozen or Staggered
	// for the Calendar gate.
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason"`

	// Version is the version held: the target version.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Version string `json:"version,omitempty"`
	// Since is when a gate first held this version: it stays while the version is held, from gate to
	// gate, so that a version held for days shows it however often the gate changed.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
	// Until is when the gate lets the version on by itself, when it can tell: the opening of a
	// window, the end of the release age, of the jitter or of the soak.
	// +optional
	Until *metav1.Time `json:"until,omitempty"`

	// Calendars are the RolloutCalendars that hold the version: their slots all taken, or their
	// window, jitter or freezeWhile query; the first MaxHoldCalendars of them.
	// +kubebuilder:validation:MaxItems=20
	// +listType=set
	// +optional
	Calendars []string `json:"calendars,omitempty"`

	// Message says why, as the Ready condition does.
	// +kubebuilder:validation:MaxLength=32768
	// +optional
	Message string `json:"message,omitempty"`
}

// MaxHoldCalendars is how many RolloutCalendars status.hold names.
const MaxHoldCalendars = 20

// HoldGate is a mechanism that may hold a version.
// +kubebuilder:validation:Enum=Calendar;Approval;ReleaseAge;Image;RolloutSlot;Soak;Analysis
type HoldGate string

// The gates that hold a version (status.hold.gate).
const (
	GateCalendar    HoldGate = "Calendar"
	GateApproval    HoldGate = "Approval"
	GateReleaseAge  HoldGate = "ReleaseAge"
	GateImage       HoldGate = "Image"
	GateRolloutSlot HoldGate = "RolloutSlot"
	GateSoak        HoldGate = "Soak"
	GateAnalysis    HoldGate = "Analysis"
)
