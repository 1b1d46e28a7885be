package analysis

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

var t0 = time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)

func errorRate(mods ...func(*v1alpha1.MetricCheck)) v1alpha1.MetricCheck {
	m := v1alpha1.MetricCheck{
		Name:                  "error-rate",
		Query:                 `sum(rate(errors{namespace="{{.Namespace}}",version="{{.Version}}"}[1m]))`,
		Interval:              &metav1.Duration{Duration: time.Minute},
		SuccessCondition:      v1alpha1.MetricRange{Max: ptr.To("0.05")},
		ConsecutiveErrorLimit: 3,
	}
	for _, f := range mods {
		f(&m)
	}
	return m
}

func TestRender(t *testing.T) {
	v := Vars{Namespace: "shop", Name: "web", Workload: "web", Container: "app", Version: "1.4.0", Image: "r/web:1.4.0",
		OldVersion: "1.3.0", OldImage: "r/web:1.3.0"}
	for _, tc := range []struct{ query, want, wantErr string }{
		{query: `up{namespace="{{.Namespace}}",version=~"{{.Version}}|{{.OldVersion}}"}`, want: `up{namespace="shop",version=~"1.4.0|1.3.0"}`},
		{query: `x{container="{{.Container}}",workload="{{.Workload}}",config="{{.Name}}"}`, want: `x{container="app",workload="web",config="web"}`},
		{query: `no template at all`, want: `no template at all`},
		{query: `x{v="{{.Tag}}"}`, wantErr: "can't evaluate field Tag"},
		{query: `x{v="{{.Version}"}`, wantErr: "bad character"},
		// Nothing but references: no function could make the manager allocate or loop at a
		// tenant's will.
		{query: `{{printf "%1000000000s" ""}}`, wantErr: "a query may hold only references to its variables"},
		{query: `{{call .Version}}`, wantErr: "a query may hold only references"},
		{query: `{{if .Version}}x{{end}}`, wantErr: "a query may hold only references"},
		{query: `{{range .Version}}x{{end}}`, wantErr: "a query may hold only references"},
		{query: `{{$v := .Version}}{{$v}}`, wantErr: "a query may hold only references"},
		{query: `{{.Version | len}}`, wantErr: "a query may hold only references"},
		{query: `{{/* a comment */}}x`, want: "x"},
	} {
		got, err := Render(tc.query, v)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("Render(%q): error %v, want one with %q", tc.query, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("Render(%q) = %q, %v; want %q", tc.query, got, err, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		m       v1alpha1.MetricCheck
		wantErr string
	}{
		{name: "a threshold", m: errorRate()},
		{name: "a range", m: errorRate(func(m *v1alpha1.MetricCheck) { m.SuccessCondition.Min = ptr.To("-1e-3") })},
		{name: "an unknown field", m: errorRate(func(m *v1alpha1.MetricCheck) { m.Query = "{{.Tag}}" }), wantErr: "metrics[error-rate].query"},
		{name: "min above max", m: errorRate(func(m *v1alpha1.MetricCheck) { m.SuccessCondition.Min = ptr.To("1") }), wantErr: "min 1 is above max 0.05"},
		{name: "a bound that is no number", m: errorRate(func(m *v1alpha1.MetricCheck) { m.SuccessCondition.Max = ptr.To("five") }), wantErr: "successCondition: max"},
	} {
		err := Validate(&v1alpha1.Analysis{Metrics: []v1alpha1.MetricCheck{tc.m}})
		if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.wantErr)
		}
	}
	if err := Validate(nil); err != nil {
		t.Errorf("no analysis: %v", err)
	}
}

// Measurements are due from the check's start plus the initial delay, then every interval, until
// the count is reached or the version failed.
func TestNextDue(t *testing.T) {
	at := func(d time.Duration) *metav1.Time { m := metav1.NewTime(t0.Add(d)); return &m }
	for _, tc := range []struct {
		name    string
		m       v1alpha1.MetricCheck
		s       *v1alpha1.MetricStatus
		want    time.Duration
		wantNot bool
	}{
		{name: "the first, at the start", m: errorRate(), want: 0},
		{name: "the first, after the initial delay", m: errorRate(func(m *v1alpha1.MetricCheck) { m.InitialDelay = &metav1.Duration{Duration: 2 * time.Minute} }), want: 2 * time.Minute},
		{name: "an interval after the last", m: errorRate(), s: &v1alpha1.MetricStatus{Measurements: 1, LastMeasured: at(90 * time.Second)}, want: 150 * time.Second},
		{name: "an interval after the last error", m: errorRate(), s: &v1alpha1.MetricStatus{ConsecutiveErrors: 1, LastMeasured: at(time.Minute)}, want: 2 * time.Minute},
		{name: "none once the count is reached", m: errorRate(func(m *v1alpha1.MetricCheck) { m.Count = 2 }),
			s: &v1alpha1.MetricStatus{Measurements: 2, LastMeasured: at(time.Minute)}, wantNot: true},
		{name: "none once the version failed", m: errorRate(), s: &v1alpha1.MetricStatus{Measurements: 1, Failures: 1, LastMeasured: at(0)}, wantNot: true},
		{name: "with count 0, on and on", m: errorRate(), s: &v1alpha1.MetricStatus{Measurements: 40, LastMeasured: at(40 * time.Minute)}, want: 41 * time.Minute},
	} {
		hc := &v1alpha1.HealthCheckStatus{Started: metav1.NewTime(t0)}
		if tc.s != nil {
			tc.s.Name = tc.m.Name
			hc.Metrics = []v1alpha1.MetricStatus{*tc.s}
		}
		got, ok := NextDue(tc.m, hc)
		if ok == tc.wantNot || (ok && !got.Equal(t0.Add(tc.want))) {
			t.Errorf("%s: next due %v (%v), want %v (%v)", tc.name, got.Sub(t0), ok, tc.want, !tc.wantNot)
		}
		if due := Due(&v1alpha1.Analysis{Metrics: []v1alpha1.MetricCheck{tc.m}}, hc, t0.Add(tc.want)); len(due) == 0 == !tc.wantNot {
			t.Errorf("%s: Due at the time lists %d checks", tc.name, len(due))
		}
	}
}

// A sequence of measurements and what each makes of the check.
func TestApplyAndJudge(t *testing.T) {
	type look struct {
		got                  Measurement
		failed, inconclusive bool
		complete             bool
		wantWhy              string
	}
	ok, bad, down := Measurement{Value: 0.01}, Measurement{Value: 0.31}, Measurement{Err: "connection refused"}
	for _, tc := range []struct {
		name  string
		m     v1alpha1.MetricCheck
		looks []look
	}{
		{name: "one failure with no failure allowed rolls back, naming the value, range and query", m: errorRate(),
			looks: []look{{got: ok, complete: true}, {got: bad, failed: true,
				wantWhy: `metric error-rate measured 0.31, which is not ≤ 0.05 (1 of 2 measurements failed, 0 allowed)`}}},
		{name: "failures within the limit do not", m: errorRate(func(m *v1alpha1.MetricCheck) { m.FailureLimit = 1; m.Count = 3 }),
			looks: []look{{got: bad}, {got: ok}, {got: ok, complete: true}}},
		{name: "the limit's next failure does", m: errorRate(func(m *v1alpha1.MetricCheck) { m.FailureLimit = 1; m.Count = 3 }),
			looks: []look{{got: bad}, {got: bad, failed: true}}},
		{name: "errors up to the limit make it inconclusive, never failed; a number ends that", m: errorRate(),
			looks: []look{{got: down}, {got: down}, {got: down, inconclusive: true, wantWhy: "metric error-rate: 3 errors in a row, the last: connection refused"},
				{got: down, inconclusive: true}, {got: ok, complete: true}}},
		{name: "errors do not count towards the count", m: errorRate(func(m *v1alpha1.MetricCheck) { m.Count = 2 }),
			looks: []look{{got: ok}, {got: down}, {got: ok, complete: true}}},
		{name: "a range fails a value below it", m: errorRate(func(m *v1alpha1.MetricCheck) { m.SuccessCondition.Min = ptr.To("0.02") }),
			looks: []look{{got: ok, failed: true, wantWhy: "which is not in [0.02, 0.05]"}}},
	} {
		a := &v1alpha1.Analysis{Metrics: []v1alpha1.MetricCheck{tc.m}}
		hc := Record(nil, nil, "1.4.0", t0)
		hc.HealthySince = &metav1.Time{Time: t0} // healthy throughout: a check without a count may pass
		if j := Judge(a, hc); j.Complete || j.Failed || j.Inconclusive {
			t.Errorf("%s: before any measurement %+v, want incomplete", tc.name, j)
		}
		for i, l := range tc.looks {
			Apply(hc, tc.m, l.got, t0.Add(time.Duration(i)*time.Minute))
			j := Judge(a, hc)
			if l.failed && j.Query != tc.m.Query {
				t.Errorf("%s, look %d: query %q, want the check's", tc.name, i+1, j.Query)
			}
			if j.Failed != l.failed || j.Inconclusive != l.inconclusive || j.Complete != l.complete || !strings.Contains(j.Why, l.wantWhy) {
				t.Errorf("%s, look %d: %+v, want failed %v, inconclusive %v, complete %v, why with %q",
					tc.name, i+1, j, l.failed, l.inconclusive, l.complete, l.wantWhy)
			}
		}
	}
}

// The record belongs to the check of its version, keeps the checks of the spec alone, and the
// record given is never modified.
func TestRecordBelongsToOneCheck(t *testing.T) {
	a := &v1alpha1.Analysis{Metrics: []v1alpha1.MetricCheck{errorRate()}}
	old := &v1alpha1.HealthCheckStatus{Version: "1.4.0", Started: metav1.NewTime(t0),
		Metrics: []v1alpha1.MetricStatus{{Name: "error-rate", Measurements: 3}, {Name: "renamed", Measurements: 2}}}
	if r := Record(old, a, "1.4.0", t0.Add(time.Minute)); len(r.Metrics) != 1 || r.Metrics[0].Name != "error-rate" || !r.Started.Equal(&old.Started) {
		t.Errorf("same version: %+v, want the record with the spec's checks alone", r)
	}
	for _, r := range []*v1alpha1.HealthCheckStatus{Record(old, a, "1.5.0", t0), Record(nil, a, "1.4.0", t0)} {
		if len(r.Metrics) != 0 || r.HealthySince != nil || !r.Started.Time.Equal(t0) {
			t.Errorf("another check: %+v, want a fresh record", r)
		}
	}
	Apply(Record(old, a, "1.4.0", t0), errorRate(), Measurement{Value: 1}, t0)
	if old.Metrics[0].Measurements != 3 || old.Metrics[0].Failures != 0 || len(old.Metrics) != 2 {
		t.Errorf("the record given was modified: %+v", old.Metrics)
	}
}

func TestShortFitsTheHistory(t *testing.T) {
	m := errorRate(func(m *v1alpha1.MetricCheck) { m.Name = strings.Repeat("n", 63) })
	hc := Record(nil, nil, "1.4.0", t0)
	Apply(hc, m, Measurement{Value: 123456789}, t0)
	got := Short(&v1alpha1.Analysis{Metrics: []v1alpha1.MetricCheck{m}}, hc, 80)
	if len(got) > 80 || !strings.HasPrefix(got, "analysis: nnn") {
		t.Errorf("Short = %q (%d bytes), want the check's name within 80 bytes", got, len(got))
	}
}
