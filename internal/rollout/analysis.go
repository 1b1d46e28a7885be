package rollout

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/analysis"
	"github.com/rollgate/rollgate/internal/health"
	"github.com/rollgate/rollgate/internal/image"
)

// What a health check waits for beyond readiness: the soak (spec.soakTime) and the metric checks
// (spec.analysis). Their state is status.healthCheck, keyed by the check's start, so a crash or a
// failed write repeats a look instead of losing it; a config with neither never writes it.

// MeasurementsDue lists the metric checks the controller must measure for the decision at now,
// with w the workload as read: those of a health check that runs (not paused, nor waiting for Git
// to bring the image) on a workload whose template has the version and can be judged, whose next
// measurement is due. Before the image is in the workload a query would measure the old version.
// The controller answers them in Input.Measurements.
func MeasurementsDue(cfg *v1alpha1.RollingUpgradeConfig, w *Workload, now time.Time) []v1alpha1.MetricCheck {
	a := AnnotationsOf(cfg)
	started := a.UpdateStarted
	if cfg.Spec.Analysis == nil || a.Step != StepHealthCheck || a.Paused() || started.IsZero() || !measurable(w, a.TargetImage) {
		return nil
	}
	return analysis.Due(cfg.Spec.Analysis, analysis.Record(cfg.Status.HealthCheck, cfg.Spec.Analysis, ImageVersion(cfg.Spec, a.TargetImage), started), now)
}

// measurable: the workload runs target in its template and can be judged.
func measurable(w *Workload, target string) bool {
	return w != nil && target != "" && w.ContainerProblem == "" && w.Verdict.State != health.Blocked && image.Renders(w.Image, target)
}

// QueryVars are what the query templates of cfg may use while the version of target is checked;
// container is the managed container's name.
func QueryVars(cfg *v1alpha1.RollingUpgradeConfig, target, container string) analysis.Vars {
	return analysis.Vars{
		Namespace: cfg.Namespace, Name: cfg.Name, Workload: cfg.Spec.TargetRef.Name, Container: container,
		Version: ImageVersion(cfg.Spec, target), Image: target,
		OldVersion: cfg.Status.CurrentVersion, OldImage: cfg.Status.CurrentImage,
	}
}

// gatesEnd is the latest a health check of ver that started at started should end: its health
// timeout, or the end of its soak (from the first healthy look, or at the latest from the
// timeout), or its analysis's last measurement with a count, whichever comes last. Past it a
// rollout is stuck.
func gatesEnd(spec v1alpha1.RollingUpgradeConfigSpec, ver string, started time.Time, hc *v1alpha1.HealthCheckStatus) time.Time {
	end := started.Add(spec.HealthTimeoutOrDefault())
	if soak := spec.SoakTimeOrZero(); soak > 0 {
		if hc != nil && hc.Version == ver && hc.HealthySince != nil {
			end = later(end, hc.HealthySince.Add(soak))
		} else {
			end = end.Add(soak)
		}
	}
	if spec.Analysis != nil {
		for _, m := range spec.Analysis.Metrics {
			if m.Count > 0 {
				end = later(end, started.Add(m.InitialDelayOrZero()+time.Duration(m.Count-1)*m.IntervalOrDefault()))
			}
		}
	}
	return end
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// gates is what the soak and the analysis say at one look.
type gates struct {
	hc    *v1alpha1.HealthCheckStatus // nil: the config has neither
	j     analysis.Judgement
	soak  time.Duration
	spec  *v1alpha1.Analysis
	after time.Duration // until the next measurement or the end of the soak; 0: none
}

// observeGates records this look's measurements and, when the workload is healthy on the version
// for the first time, the start of its soak. The Warning event of an inconclusive analysis goes
// out when it becomes so. A look that repeats a recorded verdict measures nothing.
func observeGates(d *Decision, in Input, w *Workload, ver string, started time.Time, healthy, recorded bool) gates {
	spec := in.Config.Spec
	g := gates{j: analysis.Judgement{Complete: true}, soak: spec.SoakTimeOrZero(), spec: spec.Analysis}
	if spec.Analysis == nil && g.soak == 0 {
		return g
	}
	hc := analysis.Record(d.Status.HealthCheck, spec.Analysis, ver, started)
	if !recorded && measurable(w, d.Annotations.TargetImage) {
		for _, m := range analysis.Due(spec.Analysis, hc, in.Now) {
			if got, ok := in.Measurements[m.Name]; ok {
				analysis.Apply(hc, m, got, in.Now)
			}
		}
	}
	if healthy && hc.HealthySince == nil {
		since := metav1.NewTime(in.Now)
		hc.HealthySince = &since
	}
	d.Status.HealthCheck = hc
	g.hc, g.j = hc, analysis.Judge(spec.Analysis, hc)
	if g.j.Inconclusive && !analysis.Judge(spec.Analysis, analysis.Record(d.old.HealthCheck, spec.Analysis, ver, started)).Inconclusive {
		d.event(WriteStatus, corev1.EventTypeWarning, v1alpha1.EventAnalysisInconclusive,
			"the analysis of %s is inconclusive (%s): its verdict waits, and measuring goes on; it is not rolled back for that", ver, g.j.Why)
	}
	g.after = g.nextLook(in.Now)
	return g
}

// soakEnd is when the soak of a workload that stays healthy ends; zero before it was healthy.
func (g gates) soakEnd() time.Time {
	if g.hc == nil || g.hc.HealthySince == nil {
		return time.Time{}
	}
	return g.hc.HealthySince.Add(g.soak)
}

// passed: the soak is over and the analysis complete and conclusive.
func (g gates) passed(now time.Time) bool {
	if g.hc == nil {
		return true
	}
	end := g.soakEnd()
	return !end.IsZero() && !now.Before(end) && g.j.Complete && !g.j.Inconclusive
}

// nextLook is how long until the next measurement is due or the soak ends; 0 when neither comes.
func (g gates) nextLook(now time.Time) time.Duration {
	var next time.Time
	soonest := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	if end := g.soakEnd(); end.After(now) {
		soonest(end)
	}
	if g.spec != nil {
		for _, m := range g.spec.Metrics {
			if at, ok := analysis.NextDue(m, g.hc); ok {
				soonest(at)
			}
		}
	}
	if next.IsZero() {
		return 0
	}
	return max(next.Sub(now), time.Second)
}

// lookAgain makes the decision look again no later than the gates need.
func (g gates) lookAgain(d *Decision) {
	d.lookWithin(g.after)
}

// hold says why a healthy version has not passed yet.
func (g gates) hold(d *Decision, ver string, now time.Time) {
	gate, until := v1alpha1.GateAnalysis, time.Time{}
	var reason, msg string
	switch end := g.soakEnd(); {
	case g.j.Inconclusive:
		reason, msg = v1alpha1.EventAnalysisInconclusive, fmt.Sprintf("%s is healthy, but its analysis is inconclusive (%s): the verdict waits until "+
			"it can measure again (the manager's Prometheus); it is not rolled back for that", ver, g.j.Why)
	case now.Before(end):
		gate, until = v1alpha1.GateSoak, end
		reason, msg = v1alpha1.ReasonSoaking, fmt.Sprintf("%s is healthy since %s and soaks until %s; it passes then if it is still healthy%s",
			ver, g.hc.HealthySince.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), g.progress(" and its analysis has passed"))
	default:
		reason, msg = v1alpha1.ReasonAnalyzing, fmt.Sprintf("%s is healthy; its analysis needs more measurements%s", ver, g.progress(""))
	}
	msg = Bounded(msg)
	d.progressing(reason, "%s", msg)
	d.holdBy(gate, reason, msg, until, nil)
	// Between looks the workload's events wake the check; the measurements and the soak's end are
	// what nothing announces.
	d.RequeueAfter = g.after
	if d.RequeueAfter == 0 {
		d.RequeueAfter = HealthPoll
	}
}

// unhealthyAgain says how a version that was healthy once failed.
func (g gates) unhealthyAgain(why string) string {
	if g.hc == nil || g.hc.HealthySince == nil {
		return why
	}
	return "was healthy at " + g.hc.HealthySince.UTC().Format(time.RFC3339) + ", then " + why
}

// inconclusive replaces the message of a check that is not healthy yet when its analysis cannot
// measure: that is what a person needs to know first.
func (g gates) inconclusive(d *Decision, ver string, deadline time.Time) {
	if g.j.Inconclusive {
		msg := Bounded(fmt.Sprintf("the analysis of %s is inconclusive (%s), so it cannot pass; it is still "+
			"rolled back at %s unless healthy by then", ver, g.j.Why, deadline.UTC().Format(time.RFC3339)))
		d.progressing(v1alpha1.EventAnalysisInconclusive, "%s", msg)
		d.holdBy(v1alpha1.GateAnalysis, v1alpha1.EventAnalysisInconclusive, msg, time.Time{}, nil)
	}
}

// progress sums up the measurements: " (error-rate 2/5, latency 1)".
func (g gates) progress(prefix string) string {
	if g.spec == nil {
		return ""
	}
	parts := make([]string, 0, len(g.spec.Metrics))
	for _, m := range g.spec.Metrics {
		n := int32(0)
		if s := analysis.Find(g.hc, m.Name); s != nil {
			n = s.Measurements
		}
		if m.Count > 0 {
			parts = append(parts, fmt.Sprintf("%s %d/%d", m.Name, n, m.Count))
		} else {
			parts = append(parts, fmt.Sprintf("%s %d", m.Name, n))
		}
	}
	return prefix + " (measurements: " + strings.Join(parts, ", ") + ")"
}

// passedNote is what a passed version's event adds: its soak and its analysis.
func (g gates) passedNote() string {
	if g.hc == nil {
		return ""
	}
	var parts []string
	if g.soak > 0 {
		parts = append(parts, "soaked "+g.soak.String())
	}
	if g.spec != nil {
		var values []string
		for _, s := range g.hc.Metrics {
			values = append(values, fmt.Sprintf("%s %s after %d measurements", s.Name, s.LastValue, s.Measurements))
		}
		parts = append(parts, "analysis passed: "+strings.Join(values, ", "))
	}
	return "; " + strings.Join(parts, "; ")
}

// failedQuery is the query of a failed check as it ran, which a person can paste into
// Prometheus; the template if it does not render (it did when it ran).
func failedQuery(query string, vars analysis.Vars) string {
	if q, err := analysis.Render(query, vars); err == nil {
		return q
	}
	return query
}

// analysisReady says why no version can start: the analysis could not judge it.
func analysisReady(d *Decision, in Input) bool {
	a := in.Config.Spec.Analysis
	if a == nil {
		return true
	}
	if err := analysis.Validate(a); err != nil {
		d.stalled(v1alpha1.EventInvalidSpec, "spec.analysis.%v", err)
		return false
	}
	if !in.Prometheus {
		d.stalled(v1alpha1.ReasonNoPrometheus, "spec.analysis needs a Prometheus, and the manager has none (its flag --prometheus-url); "+
			"no version starts until the cluster admin gives it one")
		return false
	}
	return true
}
