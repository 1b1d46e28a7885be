//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// The observability scenario: one namespace, five configs, one manager, a real Prometheus.
//   - app: 1.0.0 -> 1.1.0 succeeds, then 1.2.0 never gets Ready and is rolled back (circuit closed);
//   - fragile: maxRollbacks 1, 1.2.0 is rolled back and the circuit opens;
//   - held: 1.1.0 is held for a window hours away;
//   - approval: 1.1.0 waits for a person's approval (spec.approval Required);
//   - soaking: 1.1.0 is healthy and soaks for an hour (spec.soakTime), across the restart.
//
// The manager is killed and restarted on the same address mid-way (a scrape during a restart).
// Then every query of the Grafana dashboard is evaluated through Prometheus' HTTP API and checked
// against what happened, the alerts are read from Prometheus, and kubectl shows the same story.
// observedConfigs are the configs of the observability scenario.
var observedConfigs = []string{"app", "fragile", "held", "approval", "soaking"}

func TestObservabilityOnARealPrometheus(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "observe")
	readyDelay(t, s.ns, 2000) // pods of a new version take about 2s to become Ready
	neverReady(t, s.ns, img("1.2.0"))
	began := time.Now()

	heldHour := (time.Now().UTC().Hour() + 12) % 24
	for _, name := range observedConfigs {
		d := deployment(s.ns, name, img("1.0.0"), 2)
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](10) // a never-ready version fails fast
		av := appVersion("1.0.0")
		av.Name = name
		c := config(func(c *v1alpha1.RollingUpgradeConfig) {
			c.Name, c.Spec.TargetRef.Name, c.Spec.Sources[0].ApplicationVersion.Name = name, name, name
			switch name {
			case "fragile":
				c.Spec.MaxRollbacks = 1
			case "held":
				c.Spec.MaintenanceWindow = &v1alpha1.MaintenanceWindow{Schedule: fmt.Sprintf("0 %d * * *", heldHour),
					Duration: &metav1.Duration{Duration: time.Hour}, TimeZone: "UTC"}
			case "approval":
				c.Spec.Approval = v1alpha1.ApprovalRequired
			case "soaking":
				c.Spec.SoakTime = &metav1.Duration{Duration: time.Hour}
			}
		})
		s.create(d, av, c)
	}
	metricsAddr := freeAddr(t)
	hook := newHookReceiver(t, "key", 0) // notifications, for the dashboard's panel of them
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	managerArgs := []string{"--leader-elect=false", "--namespace", s.ns, "--notify-webhook-url=" + hook.URL, "--notify-webhook-key-file=" + keyFile}
	m := startManagerOn(t, metricsAddr, managerArgs...)
	prom := startPrometheus(t, metricsAddr)

	for _, name := range observedConfigs {
		waitNamed(t, s.ns, name, time.Minute, "1.0.0 recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })
	}
	announceNamed(t, s.ns, "app", "1.1.0")
	announceNamed(t, s.ns, "fragile", "1.2.0")
	announceNamed(t, s.ns, "held", "1.1.0")
	announceNamed(t, s.ns, "approval", "1.1.0")
	announceNamed(t, s.ns, "soaking", "1.1.0")
	waitNamed(t, s.ns, "app", 2*time.Minute, "1.1.0 healthy", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return inPhase(c, v1alpha1.PhaseCompleted) && c.Status.CurrentVersion == "1.1.0"
	})
	announceNamed(t, s.ns, "app", "1.2.0")
	waitNamed(t, s.ns, "app", 2*time.Minute, "1.2.0 rolled back", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return inPhase(c, v1alpha1.PhaseIdle) && c.Status.RollbackCount == 1
	})
	waitNamed(t, s.ns, "fragile", 2*time.Minute, "circuit open", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return inPhase(c, v1alpha1.PhaseFailed) && c.Status.CircuitOpen
	})
	for _, name := range []string{"held", "approval"} {
		waitNamed(t, s.ns, name, time.Minute, "1.1.0 held", func(c *v1alpha1.RollingUpgradeConfig) bool {
			return c.Status.Phase == v1alpha1.PhasePending && c.Status.TargetVersion == "1.1.0"
		})
	}
	soaking := waitNamed(t, s.ns, "soaking", time.Minute, "1.1.0 soaks", readyReason(v1alpha1.ReasonSoaking, "1.1.0 is healthy since"))
	// Prometheus has scraped the outcome.
	prom.waitQuery(t, `rolling_upgrade_rollbacks_total{namespace="`+s.ns+`", name="app"}`, func(v float64) bool { return v == 1 })

	// A restart: Prometheus sees the target down, then the new process, whose gauges are rebuilt
	// from the configs' status and whose counters start again at zero.
	m.kill(t)
	prom.waitQuery(t, `up{job="rollgate"}`, func(v float64) bool { return v == 0 })
	startManagerOn(t, metricsAddr, managerArgs...)
	prom.waitQuery(t, `up{job="rollgate"}`, func(v float64) bool { return v == 1 })
	prom.waitQuery(t, `rolling_upgrade_circuit_open{namespace="`+s.ns+`", name="fragile"}`, func(v float64) bool { return v == 1 })
	prom.waitQuery(t, `rolling_upgrade_pending{namespace="`+s.ns+`", name="held"}`, func(v float64) bool { return v == 1 })
	prom.waitQuery(t, `rolling_upgrade_waiting{namespace="`+s.ns+`", name="approval", reason="AwaitingApproval"}`, func(v float64) bool { return v == 1 })
	prom.waitQuery(t, `rolling_upgrade_rollbacks_total{namespace="`+s.ns+`", name="app"}`, func(v float64) bool { return v == 0 })
	prom.waitQuery(t, `rolling_upgrade_waiting{namespace="`+s.ns+`", name="soaking", reason="Soaking"}`, func(v float64) bool { return v == 1 })
	time.Sleep(3 * time.Second) // a few scrapes of the restarted manager
	// The restarted manager goes on with the soak from when the version was first healthy.
	if c := waitNamed(t, s.ns, "soaking", 10*time.Second, "still soaking", readyReason(v1alpha1.ReasonSoaking, "")); !c.Status.HealthCheck.HealthySince.Equal(soaking.Status.HealthCheck.HealthySince) {
		t.Errorf("the soak restarted with the manager: healthy since %s, was %s", c.Status.HealthCheck.HealthySince, soaking.Status.HealthCheck.HealthySince)
	}

	checkDashboard(t, prom, s.ns, began)
	checkAlerts(t, prom, s.ns)
	checkKubectl(t, s.ns)
}

// check judges the result of one dashboard query.
type check func(v model.Value) error

// checkDashboard evaluates every query of the dashboard, as Grafana would with the namespace
// variable set to the scenario's namespace, and checks each against what happened. A query the
// test has no expectation for, or one that selects a metric the manager does not export, fails.
func checkDashboard(t *testing.T, prom *promServer, ns string, began time.Time) {
	ctx := context.Background()
	dash := loadDashboard(t)

	// The metrics Prometheus scraped from the manager (and "up", which it adds to every target).
	names, _, _, err := prom.api.LabelValues(ctx, "__name__", []string{`{job="rollgate"}`}, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, n := range names {
		known[string(n)] = true
	}
	if u, err := unknownMetrics(`sum(rolling_upgrade_no_such_metric{namespace="x"})`, known); err != nil || len(u) != 1 {
		t.Fatalf("the metric check does not catch an unknown metric: %v %v", u, err)
	}

	// The variables: Grafana fills the query ones from label_values() over rollgate's own metrics.
	vars := map[string]string{}
	if job := dash.textbox("job"); job != "rollgate" {
		t.Errorf("the job variable defaults to %q, not rollgate (the job the ServiceMonitor and the alerts use)", job)
	}
	wantVars := map[string][]string{"namespace": {ns}, "config": observedConfigs}
	for name, q := range dash.variables(t) {
		selector := expand(q.selector, map[string]string{"namespace": ns})
		if u, err := unknownMetrics(selector, known); err != nil || len(u) > 0 {
			t.Errorf("variable %s: %s selects metrics the manager does not export: %v %v", name, q.selector, u, err)
		}
		values, _, _, err := prom.api.LabelValues(ctx, q.label, []string{selector}, time.Time{}, time.Time{})
		if err != nil {
			t.Fatalf("variable %s: %v", name, err)
		}
		got := fmt.Sprint(values)
		for _, w := range wantVars[name] {
			if !strings.Contains(got, w) {
				t.Errorf("variable %s offers %s, not %s", name, got, w)
			}
		}
		delete(wantVars, name)
	}
	if len(wantVars) > 0 {
		t.Errorf("the dashboard lacks the variables %v", wantVars)
	}
	// The scenario's namespace, every config, the scrape job; windows that span the scenario.
	vars["namespace"], vars["config"], vars["job"] = ns, ".*", "rollgate"
	vars["__range"] = fmt.Sprintf("%ds", int(time.Since(began).Seconds())+60)

	expect := map[string]check{
		"Active rollouts/A":     scalar(equals(1)), // soaking's 1.1.0
		"Open circuits/A":       scalar(equals(1)),
		"Held versions/A":       scalar(equals(2)),
		"Successful rollouts/A": scalar(about(1)), // app's 1.1.0; increase() counts across the restart
		"Rollbacks/A":           scalar(about(2)), // app's 1.2.0 and fragile's
		"Managers up/A":         scalar(equals(1)),

		"Rollout outcomes in the past hour/A": peak(nil, positive),
		"Rollout outcomes in the past hour/B": peak(nil, positive),
		"Rollout outcomes in the past hour/C": peak(nil, positive),
		"Rollout duration/A": all(peak(model.LabelSet{"result": "success"}, within(0, 120)),
			peak(model.LabelSet{"result": "rollback"}, within(0, 120))),
		"Rollout duration/B": all(peak(model.LabelSet{"result": "success"}, within(0, 120)),
			peak(model.LabelSet{"result": "rollback"}, within(0, 120))),
		"Pod upgrade duration/A": peak(nil, within(0.5, 30)), // the 2s ready delay, and scheduling
		"Pod upgrade duration/B": peak(nil, within(0.5, 30)),
		"Rollouts in flight, held versions and open circuits/A": all(peak(model.LabelSet{"name": "app"}, equals(1)),
			peak(model.LabelSet{"name": "fragile"}, equals(1)), peak(model.LabelSet{"name": "soaking"}, equals(1)), absentFor("held"), absentFor("approval")),
		"Rollouts in flight, held versions and open circuits/B": all(
			peak(model.LabelSet{"name": "held", "reason": v1alpha1.EventVersionHeld}, equals(1)),
			peak(model.LabelSet{"name": "approval", "reason": v1alpha1.ReasonAwaitingApproval}, equals(1)),
			peak(model.LabelSet{"name": "soaking", "reason": v1alpha1.ReasonSoaking}, equals(1)),
			absentFor("app"), absentFor("fragile")),
		"Rollouts in flight, held versions and open circuits/C": all(peak(model.LabelSet{"name": "fragile"}, equals(1)),
			absentFor("app"), absentFor("held"), absentFor("approval"), absentFor("soaking")),
		"Held versions by reason/A": all(peak(model.LabelSet{"reason": v1alpha1.EventVersionHeld}, equals(1)),
			peak(model.LabelSet{"reason": v1alpha1.ReasonAwaitingApproval}, equals(1)), peak(model.LabelSet{"reason": v1alpha1.ReasonSoaking}, equals(1))),

		"Configs/A": perConfig(map[string]func(float64) error{"app": equals(0), "fragile": equals(0), "held": equals(0), "approval": equals(0), "soaking": equals(1)}),
		"Configs/B": perConfig(map[string]func(float64) error{"app": equals(0), "fragile": equals(0), "held": equals(1), "approval": equals(1), "soaking": equals(0)}),
		"Configs/C": perConfig(map[string]func(float64) error{"app": equals(0), "fragile": equals(1), "held": equals(0), "approval": equals(0), "soaking": equals(0)}),
		"Configs/D": perConfig(map[string]func(float64) error{"app": about(1), "fragile": equals(0), "held": equals(0), "approval": equals(0), "soaking": equals(0)}),
		"Configs that cannot go on/A": all(perConfig(map[string]func(float64) error{"fragile": equals(1)}),
			labelled("fragile", model.LabelSet{"type": "Stalled", "current_version": "1.0.0", "last_failed_version": "1.2.0"})),
		"Held versions, longest first/A": all(
			perConfig(map[string]func(float64) error{"held": within(0, 900), "approval": within(0, 900), "soaking": within(0, 900)}),
			labelled("held", model.LabelSet{"gate": "Calendar"}), labelled("approval", model.LabelSet{"gate": "Approval"}),
			labelled("soaking", model.LabelSet{"gate": "Soak"})),
		"Notifications in the past hour/A": peak(model.LabelSet{"sink": "webhook"}, positive),
		"Notifications in the past hour/B": all(peak(model.LabelSet{"sink": "webhook", "reason": "QueueFull"}, equals(0)),
			peak(model.LabelSet{"sink": "webhook", "reason": "Refused"}, equals(0)), peak(model.LabelSet{"sink": "webhook", "reason": "Stopped"}, equals(0))),
		"Notifications in the past hour/C": peak(model.LabelSet{"sink": "webhook"}, within(0, 1000)),
		"Configs/E":                        perConfig(map[string]func(float64) error{"app": about(1), "fragile": about(1), "held": equals(0), "approval": equals(0), "soaking": equals(0)}),
	}

	now := time.Now()
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			key := p.Title + "/" + target.RefID
			judge, ok := expect[key]
			delete(expect, key)
			// Every rollgate query follows the namespace and config pickers.
			if strings.Contains(target.Expr, "rolling_upgrade") || strings.Contains(target.Expr, "pod_upgrade") {
				for _, v := range []string{`namespace=~"$namespace"`, `name=~"$config"`} {
					if strings.Count(target.Expr, v) != strings.Count(target.Expr, "_upgrade_") {
						t.Errorf("%s: not every selector filters by %s: %s", key, v, target.Expr)
					}
				}
			}
			expr := expand(target.Expr, vars)
			if u, err := unknownMetrics(expr, known); err != nil || len(u) > 0 {
				t.Errorf("%s: %s selects metrics the manager does not export: %v %v", key, target.Expr, u, err)
				continue
			}
			if !ok {
				t.Errorf("%s: no expectation for this query; add one to the test", key)
				continue
			}
			var v model.Value
			if target.Instant || target.Format == "table" {
				v, _, _, err = prom.api.Query(ctx, expr, now)
			} else {
				v, _, _, err = prom.api.QueryRange(ctx, expr, promv1.Range{Start: began, End: now, Step: time.Second})
			}
			if err != nil {
				t.Errorf("%s: %s: %v", key, expr, err)
				continue
			}
			if err := judge(v); err != nil {
				t.Errorf("%s: %s: %v\nresult: %v", key, expr, err, v)
			} else if vec, ok := v.(model.Vector); ok {
				t.Logf("%s = %v", key, vec)
			}
		}
	}
	for key := range expect {
		t.Errorf("the dashboard has no query %s", key)
	}
}

// checkAlerts reads the alerts Prometheus computed from rollgate.rules.yaml.
func checkAlerts(t *testing.T, prom *promServer, ns string) {
	var states, descriptions map[string]string
	eventually(t, 2*time.Minute, "alerts", func(ctx context.Context) (bool, string, error) {
		res, err := prom.api.Alerts(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		states, descriptions = map[string]string{}, map[string]string{}
		for _, a := range res.Alerts {
			if a.Labels["namespace"] != "" && string(a.Labels["namespace"]) != ns {
				continue
			}
			key := string(a.Labels["alertname"]) + "/" + string(a.Labels["name"])
			states[key], descriptions[key] = string(a.State), string(a.Annotations["description"])
		}
		ok := states["RollgateRollbackHappened/app"] == "firing" && states["RollgateRollbackHappened/fragile"] == "firing" &&
			states["RollgateCircuitOpen/fragile"] == "firing"
		return ok, fmt.Sprint(states), nil
	})
	for key, state := range states {
		switch key {
		case "RollgateRollbackHappened/app", "RollgateRollbackHappened/fragile", "RollgateCircuitOpen/fragile":
		default:
			t.Errorf("unexpected alert %s (%s)", key, state)
		}
	}
	// The alert names the versions: the one running and the one rolled back.
	if d := descriptions["RollgateCircuitOpen/fragile"]; !strings.Contains(d, "It runs 1.0.0") || !strings.Contains(d, "the newest on its failed list is 1.2.0.") {
		t.Errorf("RollgateCircuitOpen/fragile does not name its versions: %q", d)
	}
}

// checkKubectl: what a person sees with kubectl tells the same story.
func checkKubectl(t *testing.T, ns string) {
	get := mustKubectl(t, "-n", ns, "get", "ruc")
	// Ready and its message are in the default columns: a config that cannot go on is never shown
	// as merely Idle.
	for _, want := range []string{"TARGET", "CURRENT", "TARGET VERSION", "PHASE", "CIRCUIT", "NEXT WINDOW", "READY", "STATUS", "AGE", "Failed", "Pending",
		"circuit breaker open after 1 consecutive rollbacks"} {
		if !strings.Contains(get, want) {
			t.Errorf("kubectl get ruc does not show %q:\n%s", want, get)
		}
	}
	wide := mustKubectl(t, "-n", ns, "get", "ruc", "-o", "wide")
	for _, want := range []string{"KIND", "AVAILABLE", "ROLLBACKS"} {
		if !strings.Contains(wide, want) {
			t.Errorf("kubectl get ruc -o wide does not show %q:\n%s", want, wide)
		}
	}
	describe := mustKubectl(t, "-n", ns, "describe", "ruc", "app")
	for _, want := range []string{"Version History", "Failed Versions", "1.2.0", "Healthy", "RolledBack",
		"UpdateStarting", "UpdateComplete", "UpdateRollback", "RollbackComplete"} {
		if !strings.Contains(describe, want) {
			t.Errorf("kubectl describe ruc app does not show %q:\n%s", want, describe)
		}
	}
	mustKubectl(t, "-n", ns, "wait", "--for=condition=Ready", "--timeout=10s", "ruc/app", "ruc/held", "ruc/approval")
	mustKubectl(t, "-n", ns, "wait", "--for=condition=Stalled", "--timeout=10s", "ruc/fragile")
}

// Checks of query results.

func equals(want float64) func(float64) error {
	return func(v float64) error {
		if v != want {
			return fmt.Errorf("%v, want %v", v, want)
		}
		return nil
	}
}

// about allows for increase()'s extrapolation to the window's edges.
func about(want float64) func(float64) error {
	return func(v float64) error {
		if math.Abs(v-want) > 0.3 {
			return fmt.Errorf("%v, want about %v", v, want)
		}
		return nil
	}
}

func within(lo, hi float64) func(float64) error {
	return func(v float64) error {
		if math.IsNaN(v) || v < lo || v > hi {
			return fmt.Errorf("%v, want within [%v, %v]", v, lo, hi)
		}
		return nil
	}
}

func positive(v float64) error {
	if !(v > 0) {
		return fmt.Errorf("%v, want > 0", v)
	}
	return nil
}

// scalar: an instant query that yields exactly one sample.
func scalar(c func(float64) error) check {
	return func(v model.Value) error {
		vec, ok := v.(model.Vector)
		if !ok || len(vec) != 1 {
			return fmt.Errorf("want one sample, got %v", v)
		}
		return c(float64(vec[0].Value))
	}
}

// perConfig: an instant query with one sample per config, each checked.
func perConfig(want map[string]func(float64) error) check {
	return func(v model.Value) error {
		vec, ok := v.(model.Vector)
		if !ok || len(vec) != len(want) {
			return fmt.Errorf("want one sample for each of %d configs, got %v", len(want), v)
		}
		for _, s := range vec {
			c, ok := want[string(s.Metric["name"])]
			if !ok {
				return fmt.Errorf("unexpected config %s", s.Metric["name"])
			}
			if err := c(float64(s.Value)); err != nil {
				return fmt.Errorf("%s: %w", s.Metric["name"], err)
			}
		}
		return nil
	}
}

// peak: a range query with a series matching labels whose largest non-NaN value passes c.
func peak(labels model.LabelSet, c func(float64) error) check {
	return func(v model.Value) error {
		m, ok := v.(model.Matrix)
		if !ok {
			return fmt.Errorf("want a range result, got %s", v.Type())
		}
		found := false
		best := math.NaN()
		for _, series := range m {
			if !matches(series.Metric, labels) {
				continue
			}
			found = true
			for _, p := range series.Values {
				if f := float64(p.Value); !math.IsNaN(f) && (math.IsNaN(best) || f > best) {
					best = f
				}
			}
		}
		if !found {
			return fmt.Errorf("no series with %v", labels)
		}
		if math.IsNaN(best) {
			return fmt.Errorf("series with %v hold no value", labels)
		}
		return c(best)
	}
}

// absentFor: no series of a config.
func absentFor(name string) check {
	return func(v model.Value) error {
		if m, ok := v.(model.Matrix); ok {
			for _, s := range m {
				if string(s.Metric["name"]) == name {
					return fmt.Errorf("a series for %s, which should have none", name)
				}
			}
		}
		return nil
	}
}

// labelled: the instant result has a sample of config name with these labels.
func labelled(name string, labels model.LabelSet) check {
	return func(v model.Value) error {
		vec, _ := v.(model.Vector)
		for _, s := range vec {
			if string(s.Metric["name"]) == name && matches(s.Metric, labels) {
				return nil
			}
		}
		return fmt.Errorf("no sample of %s with %v", name, labels)
	}
}

func all(checks ...check) check {
	return func(v model.Value) error {
		for _, c := range checks {
			if err := c(v); err != nil {
				return err
			}
		}
		return nil
	}
}

func matches(m model.Metric, labels model.LabelSet) bool {
	for k, v := range labels {
		if m[k] != v {
			return false
		}
	}
	return true
}
