// Package analysis keeps the metric checks of a health check (spec.analysis): which measurements
// are due, what a measurement does to the record in status.healthCheck.metrics, and what the
// measurements so far say of the version. The functions are pure: the controller runs the queries
// they ask for and hands the results back, and the time comes in as an argument.
package analysis

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/text"
)

// Vars are what a query template may use.
type Vars struct {
	Namespace, Name      string // the config
	Workload, Container  string
	Version, Image       string // the version under check
	OldVersion, OldImage string // the version it replaces (status.current*)
}

// Render fills in a query template. The template may hold text and references to the fields of
// Vars, {{.Version}}, and nothing else: a tenant writes it and the manager runs it, and functions
// such as printf with a width of a billion would make the manager allocate as much.
func Render(query string, v Vars) (string, error) {
	t, err := template.New("query").Option("missingkey=error").Parse(query)
	if err != nil {
		return "", err
	}
	for _, n := range t.Root.Nodes {
		if !plain(n) {
			return "", fmt.Errorf("%s: a query may hold only references to its variables such as {{.Version}}", n)
		}
	}
	var b bytes.Buffer
	if err := t.Execute(&b, v); err != nil {
		return "", err
	}
	return b.String(), nil
}

// plain: n is text, or {{.Field}} alone.
func plain(n parse.Node) bool {
	switch n := n.(type) {
	case *parse.TextNode:
		return true
	case *parse.ActionNode:
		p := n.Pipe
		if len(p.Decl) > 0 || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
			return false
		}
		f, ok := p.Cmds[0].Args[0].(*parse.FieldNode)
		return ok && len(f.Ident) == 1
	}
	return false
}

// Validate checks what admission cannot: each query is a template over Vars, each bound a
// number, and min not above max. A config whose analysis could not judge a version starts none.
func Validate(a *v1alpha1.Analysis) error {
	if a == nil {
		return nil
	}
	for _, m := range a.Metrics {
		if _, err := Render(m.Query, Vars{}); err != nil {
			return fmt.Errorf("metrics[%s].query: %w", m.Name, err)
		}
		lo, hi, err := bounds(m.SuccessCondition)
		if err != nil {
			return fmt.Errorf("metrics[%s].successCondition: %w", m.Name, err)
		}
		if lo > hi {
			return fmt.Errorf("metrics[%s].successCondition: min %s is above max %s", m.Name, *m.SuccessCondition.Min, *m.SuccessCondition.Max)
		}
	}
	return nil
}

// bounds parses a range; a missing bound is infinite.
func bounds(r v1alpha1.MetricRange) (lo, hi float64, err error) {
	lo, hi = math.Inf(-1), math.Inf(1)
	if r.Min != nil {
		if lo, err = strconv.ParseFloat(*r.Min, 64); err != nil {
			return 0, 0, fmt.Errorf("min: %w", err)
		}
	}
	if r.Max != nil {
		if hi, err = strconv.ParseFloat(*r.Max, 64); err != nil {
			return 0, 0, fmt.Errorf("max: %w", err)
		}
	}
	return lo, hi, nil
}

// Describe writes a range for people: "≤ 0.05", "≥ 10", "in [1, 2]".
func Describe(r v1alpha1.MetricRange) string {
	switch {
	case r.Min != nil && r.Max != nil:
		return "in [" + *r.Min + ", " + *r.Max + "]"
	case r.Min != nil:
		return "≥ " + *r.Min
	case r.Max != nil:
		return "≤ " + *r.Max
	}
	return "any value"
}

// Measurement is the answer to one query: a number, or an error (no data counts as one).
type Measurement struct {
	Value float64
	Err   string
}

// Record returns the record of the check of ver: the one in st when it is of ver (every check
// begins without one: status.healthCheck goes when a check starts), else a fresh one that began
// at started. It keeps only the entries of the checks in a (one renamed mid-check is measured
// afresh) and never modifies st.
func Record(st *v1alpha1.HealthCheckStatus, a *v1alpha1.Analysis, ver string, started time.Time) *v1alpha1.HealthCheckStatus {
	if st == nil || st.Version != ver {
		return &v1alpha1.HealthCheckStatus{Version: ver, Started: metav1.NewTime(started)}
	}
	hc := st.DeepCopy()
	hc.Metrics = slices.DeleteFunc(hc.Metrics, func(s v1alpha1.MetricStatus) bool {
		return a == nil || !slices.ContainsFunc(a.Metrics, func(m v1alpha1.MetricCheck) bool { return m.Name == s.Name })
	})
	return hc
}

// metric is the record of one check, added when missing.
func metric(hc *v1alpha1.HealthCheckStatus, name string) *v1alpha1.MetricStatus {
	if s := Find(hc, name); s != nil {
		return s
	}
	hc.Metrics = append(hc.Metrics, v1alpha1.MetricStatus{Name: name})
	return &hc.Metrics[len(hc.Metrics)-1]
}

// done: the check has all the measurements its count asks for.
func done(m v1alpha1.MetricCheck, s *v1alpha1.MetricStatus) bool {
	return m.Count > 0 && s != nil && s.Measurements >= m.Count
}

// Find is the record of the check named name in hc, or nil.
func Find(hc *v1alpha1.HealthCheckStatus, name string) *v1alpha1.MetricStatus {
	for i := range hc.Metrics {
		if hc.Metrics[i].Name == name {
			return &hc.Metrics[i]
		}
	}
	return nil
}

// NextDue is when the check's next measurement is due, and false when it needs none (its count
// is reached, or the version already failed it).
func NextDue(m v1alpha1.MetricCheck, hc *v1alpha1.HealthCheckStatus) (time.Time, bool) {
	s := Find(hc, m.Name)
	switch {
	case done(m, s), s != nil && s.Failures > m.FailureLimit:
		return time.Time{}, false
	case s == nil || s.LastMeasured == nil:
		return hc.Started.Add(m.InitialDelayOrZero()), true
	}
	return s.LastMeasured.Add(m.IntervalOrDefault()), true
}

// Due lists the checks whose measurement is due at now.
func Due(a *v1alpha1.Analysis, hc *v1alpha1.HealthCheckStatus, now time.Time) []v1alpha1.MetricCheck {
	if a == nil {
		return nil
	}
	var due []v1alpha1.MetricCheck
	for _, m := range a.Metrics {
		if at, ok := NextDue(m, hc); ok && !now.Before(at) {
			due = append(due, m)
		}
	}
	return due
}

// Apply records a measurement of m taken at now.
func Apply(hc *v1alpha1.HealthCheckStatus, m v1alpha1.MetricCheck, got Measurement, now time.Time) {
	s := metric(hc, m.Name)
	at := metav1.NewTime(now)
	s.LastMeasured = &at
	if got.Err != "" {
		s.ConsecutiveErrors++
		s.LastError = text.Cut(got.Err, 1024, "...")
		return
	}
	s.ConsecutiveErrors, s.LastError = 0, ""
	s.Measurements++
	s.LastValue = strconv.FormatFloat(got.Value, 'g', 6, 64)
	if lo, hi, err := bounds(m.SuccessCondition); err != nil || got.Value < lo || got.Value > hi {
		s.Failures++
	}
}

// Judgement is what the measurements so far say of the version.
type Judgement struct {
	// Failed: a check has more failures than its limit; Why says which, with its value and range.
	Failed bool
	// Inconclusive: a check has had as many errors in a row as its limit; Why says which.
	Inconclusive bool
	// Complete: every check has what it needs for a pass (its count, or one measurement when the
	// count is 0), and none failed.
	Complete bool
	Why      string
	// Query is the query of the check that failed (a template), for the message.
	Query string
}

// Judge sums up the measurements of the checks in a.
func Judge(a *v1alpha1.Analysis, hc *v1alpha1.HealthCheckStatus) Judgement {
	j := Judgement{Complete: true}
	if a == nil {
		return j
	}
	var stuck []string
	for _, m := range a.Metrics {
		s := Find(hc, m.Name)
		switch {
		case s != nil && s.Failures > m.FailureLimit:
			j.Failed, j.Complete = true, false
			j.Why = fmt.Sprintf("failed its analysis: metric %s measured %s, which is not %s (%d of %d measurements failed, %d allowed)",
				m.Name, s.LastValue, Describe(m.SuccessCondition), s.Failures, s.Measurements, m.FailureLimit)
			j.Query = m.Query
			return j
		case s != nil && s.ConsecutiveErrors >= max(m.ConsecutiveErrorLimit, 1):
			stuck = append(stuck, fmt.Sprintf("metric %s: %d errors in a row, the last: %s", m.Name, s.ConsecutiveErrors, s.LastError))
		}
		if !done(m, s) && (m.Count > 0 || !measuredHealthy(hc, s)) {
			j.Complete = false
		}
	}
	if len(stuck) > 0 {
		j.Inconclusive = true
		j.Why = strings.Join(stuck, "; ")
	}
	return j
}

// measuredHealthy: the check's last measurement (of a check without a count) gave a number, and
// was taken while the workload was healthy: one taken before, or an error, says nothing of the
// version as it runs.
func measuredHealthy(hc *v1alpha1.HealthCheckStatus, s *v1alpha1.MetricStatus) bool {
	return s != nil && s.Measurements > 0 && s.ConsecutiveErrors == 0 && s.LastMeasured != nil &&
		hc.HealthySince != nil && !s.LastMeasured.Before(hc.HealthySince)
}

// Short is a history entry's reason for a failed analysis: the check, its value and its range,
// without the query, within limit characters.
func Short(a *v1alpha1.Analysis, hc *v1alpha1.HealthCheckStatus, limit int) string {
	for _, m := range a.Metrics {
		if s := Find(hc, m.Name); s != nil && s.Failures > m.FailureLimit {
			return text.Cut(fmt.Sprintf("analysis: %s measured %s, not %s", m.Name, s.LastValue, Describe(m.SuccessCondition)), limit, "...")
		}
	}
	return ""
}
