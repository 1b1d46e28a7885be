package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Analysis checks a new version's metrics in Prometheus during its health check (and its soak):
// a version the metrics fail is rolled back as one that never became Ready is. The Prometheus is
// the cluster admin's (the manager's --prometheus-url), never one a config names: a config that
// could name an address could point the manager anywhere.
type Analysis struct {
	// Metrics are the checks; every one must pass.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	// +required
	Metrics []MetricCheck `json:"metrics"`
}

// MetricCheck is one PromQL query, measured at intervals from the start of the health check, and
// the range its value must stay in.
// +kubebuilder:validation:XValidation:rule="has(self.successCondition.min) || has(self.successCondition.max)",message="successCondition needs min, max or both"
type MetricCheck struct {
	// Name of the check, in messages, events, the history and status.analysis.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// Query is a PromQL instant query that returns one number (a scalar, or a vector of exactly
	// one series: aggregate with sum() or max()). It may refer to {{.Namespace}} and {{.Name}}
	// (the config), {{.Workload}} (spec.targetRef.name), {{.Container}} (the managed container's
	// name, the first of spec.containers), {{.Version}} and {{.Image}} (the version under check), {{.OldVersion}} and
	// {{.OldImage}} (status.current*), and holds nothing else of Go templates, e.g. sum(rate(http_requests_total{namespace="{{.Namespace}}",version="{{.Version}}",code=~"5.."}[5m]))
	// / sum(rate(http_requests_total{namespace="{{.Namespace}}",version="{{.Version}}"}[5m])).
	// A query that returns no series or NaN (no traffic yet) is an error, not a pass.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +required
	Query string `json:"query"`

	// Interval between two measurements.
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$') && duration(self) >= duration('1s')",message="interval must be a duration of at least 1s, e.g. 1m"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// InitialDelay after the start of the health check before the first measurement, so that
	// the query's range covers the new version.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$')",message="initialDelay must be a duration, e.g. 2m"
	// +optional
	InitialDelay *metav1.Duration `json:"initialDelay,omitempty"`

	// Count is the number of measurements (passed or failed; errors do not count) the version
	// needs before it can pass. 0 (the default): measure until the workload is healthy and
	// through the soak, at least once.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Count int32 `json:"count,omitempty"`

	// SuccessCondition is the range a measurement must be in to pass.
	// +required
	SuccessCondition MetricRange `json:"successCondition"`

	// FailureLimit is the number of failed measurements the version is allowed; one more rolls
	// it back. Default 0: the first failed measurement rolls it back.
	// +kubebuilder:validation:Minimum=0
	// +optional
	FailureLimit int32 `json:"failureLimit,omitempty"`

	// ConsecutiveErrorLimit is the number of errors in a row (Prometheus unreachable, the query
	// refused, no data) after which the analysis is inconclusive: the check then waits, says so
	// (Ready reason AnalysisInconclusive, one Warning event) and goes on measuring; it never
	// rolls a version back for an error. A measurement that succeeds ends the wait.
	// +kubebuilder:default=4
	// +kubebuilder:validation:Minimum=1
	// +optional
	ConsecutiveErrorLimit int32 `json:"consecutiveErrorLimit,omitempty"`
}

// MetricRange is a threshold (min or max alone) or a range (both), inclusive. The bounds are
// decimal numbers written as strings, e.g. "0.05" or "1e-3".
type MetricRange struct {
	// Min is the lowest value that passes.
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?$`
	// +optional
	Min *string `json:"min,omitempty"`

	// Max is the highest value that passes.
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?$`
	// +optional
	Max *string `json:"max,omitempty"`
}

// Defaults of a metric check; the API server fills them in, these serve objects built in Go.
const (
	DefaultMetricInterval        = time.Minute
	DefaultConsecutiveErrorLimit = 4
)

// IntervalOrDefault is the check's interval, or its default when unset.
func (m *MetricCheck) IntervalOrDefault() time.Duration {
	if m.Interval == nil || m.Interval.Duration <= 0 {
		return DefaultMetricInterval
	}
	return m.Interval.Duration
}

// InitialDelayOrZero is the check's initial delay, 0 when unset.
func (m *MetricCheck) InitialDelayOrZero() time.Duration {
	return DurationOrZero(m.InitialDelay)
}

// HealthCheckStatus is the state of a health check that the annotations do not hold: when its
// workload was first healthy (the start of its soak) and its measurements so far. It goes when a
// check starts, so it belongs to the check of its version; after the verdict it stays until the
// next check starts, showing what the verdict saw.
type HealthCheckStatus struct {
	// Version under check.
	Version string `json:"version"`

	// Started is when the check's health timer started, as the record began (a pause moves the
	// timer, not this).
	Started metav1.Time `json:"started"`

	// HealthySince is when the workload was first seen healthy on the version; its soak
	// (spec.soakTime) runs from then. A check that could not judge its workload for a while
	// (paused) soaks afresh.
	// +optional
	HealthySince *metav1.Time `json:"healthySince,omitempty"`

	// Metrics are the measurements of spec.analysis so far, one entry per check.
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	// +optional
	Metrics []MetricStatus `json:"metrics,omitempty"`
}

// MetricStatus sums up the measurements of one metric check.
type MetricStatus struct {
	// Name of the check in spec.analysis.metrics.
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// Measurements taken that gave a number (passed or failed).
	// +optional
	Measurements int32 `json:"measurements,omitempty"`

	// Failures among them: values outside the success condition.
	// +optional
	Failures int32 `json:"failures,omitempty"`

	// ConsecutiveErrors is the number of measurements in a row that gave no number.
	// +optional
	ConsecutiveErrors int32 `json:"consecutiveErrors,omitempty"`

	// LastValue is the last number measured.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	LastValue string `json:"lastValue,omitempty"`

	// LastMeasured is when the last measurement (or error) was taken; the next one is due an
	// interval later.
	// +optional
	LastMeasured *metav1.Time `json:"lastMeasured,omitempty"`

	// LastError is the last error, while errors follow each other.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	LastError string `json:"lastError,omitempty"`
}
