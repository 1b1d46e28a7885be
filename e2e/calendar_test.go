//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// TestScenarioAFreezeWithKubectl: during an incident a person freezes a config's rollouts with a
// deny window (kubectl patch): an announced version is held, the message names the freeze and
// when it ends, and nothing starts; lifting the freeze starts it at once.
func TestScenarioAFreezeWithKubectl(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "freeze")
	s.create(deployment(s.ns, "app", img("1.0.0"), 2), appVersion("1.0.0"), config())
	s.start()
	s.waitConfig(time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })

	start, end := time.Now().UTC().Add(-time.Minute).Truncate(time.Second), time.Now().UTC().Add(time.Hour).Truncate(time.Second)
	mustKubectl(t, "-n", s.ns, "patch", "ruc", "app", "--type=merge", "-p", fmt.Sprintf(
		`{"spec":{"windows":[{"name":"incident-4711","type":"Deny","start":%q,"end":%q}]}}`, start.Format(time.RFC3339), end.Format(time.RFC3339)))
	s.announce("1.1.0")
	held := fmt.Sprintf("1.1.0 held until %s (window incident-4711, which denies %s to %s)", end.Format(time.RFC3339), start.Format(time.RFC3339), end.Format(time.RFC3339))
	c := s.waitConfig(time.Minute, "1.1.0 held by the freeze", readyReason(v1alpha1.ReasonFrozen, held))
	if c.Status.Phase != v1alpha1.PhasePending || !c.Status.NextWindow.Time.Equal(end) {
		t.Errorf("under the freeze: %s, next window %v", describeConfig(c), c.Status.NextWindow)
	}
	s.waitEvent(10*time.Second, v1alpha1.EventVersionHeld, held)
	time.Sleep(3 * time.Second)
	if n := s.countEvents(v1alpha1.EventUpdateStarting); n != 0 || s.deploymentImage("app") != img("1.0.0") {
		t.Fatalf("a rollout started under the freeze: %d UpdateStarting events", n)
	}

	mustKubectl(t, "-n", s.ns, "patch", "ruc", "app", "--type=json", "-p", `[{"op":"remove","path":"/spec/windows"}]`)
	s.completed("1.1.0", 1, time.Minute)
}

// TestScenarioARolloutCalendarFreezesWhatItPicks: the cluster admin's RolloutCalendar freezes the
// configs its selectors pick (the namespace by a label, the configs by theirs), and no other: of
// two configs in one namespace, the picked one is held, naming the calendar, the other rolls out;
// deleting the calendar lets the held one go.
func TestScenarioARolloutCalendarFreezesWhatItPicks(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "rcal")
	mustKubectl(t, "label", "namespace", s.ns, "rollgate-e2e/calendar="+s.ns)
	other := appVersion("1.0.0")
	other.Name = "other"
	s.create(deployment(s.ns, "app", img("1.0.0"), 1), deployment(s.ns, "other", img("1.0.0"), 1), appVersion("1.0.0"), other,
		config(func(c *v1alpha1.RollingUpgradeConfig) { c.Labels = map[string]string{"team": "payments"} }),
		config(func(c *v1alpha1.RollingUpgradeConfig) {
			c.Name, c.Spec.TargetRef.Name, c.Spec.Sources[0].ApplicationVersion.Name = "other", "other", "other"
		}))
	end := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
	calendar := "freeze-" + s.ns
	applyCalendar(t, calendar, fmt.Sprintf(`
  namespaceSelector: {matchLabels: {rollgate-e2e/calendar: %s}}
  selector: {matchLabels: {team: payments}}
  windows:
  - {name: payments-freeze, type: Deny, start: %q, end: %q}
`, s.ns, time.Now().UTC().Add(-time.Minute).Format(time.RFC3339), end.Format(time.RFC3339)))
	if get := mustKubectl(t, "get", "rcal", calendar); !strings.Contains(get, calendar) {
		t.Errorf("kubectl get rcal does not list %s:\n%s", calendar, get)
	}
	s.start()
	for _, name := range []string{"app", "other"} {
		waitNamed(t, s.ns, name, time.Minute, "1.0.0 recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })
		announceNamed(t, s.ns, name, "1.1.0")
	}
	waitNamed(t, s.ns, "other", time.Minute, "other completed", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return inPhase(c, v1alpha1.PhaseCompleted) && c.Status.CurrentVersion == "1.1.0"
	})
	c := s.waitConfig(time.Minute, "app frozen by the calendar", readyReason(v1alpha1.ReasonFrozen,
		"1.1.0 held until "+end.Format(time.RFC3339)+" (window payments-freeze of RolloutCalendar "+calendar+", which denies"))
	if c.Status.Phase != v1alpha1.PhasePending || s.countEvents(v1alpha1.EventUpdateStarting) != 0 {
		t.Fatalf("under the calendar's freeze: %s", describeConfig(c))
	}
	mustKubectl(t, "delete", "rolloutcalendar", calendar)
	s.completed("1.1.0", 1, time.Minute)
}

// TestScenarioAFiringAlertStopsTheLine: a RolloutCalendar freezes the configs it picks while its
// freezeWhile query returns a series in a real Prometheus, which scrapes an exporter the test
// controls: with the incident open, an announced version is held; once it closes, the version
// rolls out (looked at again every minute).
func TestScenarioAFiringAlertStopsTheLine(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "incident")
	exporter := startTrafficExporter(t, s.ns, nil)
	prom := startPrometheus(t, exporter.addr)
	exporter.incident.Set(1)
	mustKubectl(t, "label", "namespace", s.ns, "rollgate-e2e/calendar="+s.ns)
	calendar := "incidents-" + s.ns
	query := `demo_incident_open{namespace="` + s.ns + `"} > 0`
	applyCalendar(t, calendar, fmt.Sprintf(`
  namespaceSelector: {matchLabels: {rollgate-e2e/calendar: %s}}
  freezeWhile:
  - {name: open-incident, query: '%s'}
`, s.ns, query))
	s.create(deployment(s.ns, "app", img("1.0.0"), 1), appVersion("1.0.0"), config())
	s.start("--prometheus-url=http://" + prom.addr)
	s.waitConfig(time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })
	prom.waitQuery(t, query, func(v float64) bool { return v == 1 })

	s.announce("1.1.0")
	c := s.waitConfig(time.Minute, "1.1.0 frozen by the incident", readyReason(v1alpha1.ReasonFrozen,
		"1.1.0 held: freeze open-incident of RolloutCalendar "+calendar+" holds while "+query+" returns a series, and it does"))
	if c.Status.Phase != v1alpha1.PhasePending || s.countEvents(v1alpha1.EventUpdateStarting) != 0 {
		t.Fatalf("during the incident: %s", describeConfig(c))
	}
	exporter.incident.Set(0)
	s.completed("1.1.0", 1, 2*time.Minute)
}

// TestScenarioTwoConfigsShareOneRolloutSlot: a RolloutCalendar with maxConcurrent 1 picks two
// configs that are offered a version at the same moment. One rolls out (soaking 10s) while the
// other waits AwaitingRolloutSlot, naming it; the second starts only after the first completed,
// and the slot is given back. The calendar's status, from `kubectl get rcal`, says it is open until
// its freeze starts.
func TestScenarioTwoConfigsShareOneRolloutSlot(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "slots")
	mustKubectl(t, "label", "namespace", s.ns, "rollgate-e2e/calendar="+s.ns)
	soak := func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.SoakTime = &metav1.Duration{Duration: 10 * time.Second} }
	other := appVersion("1.0.0")
	other.Name = "other"
	s.create(deployment(s.ns, "app", img("1.0.0"), 1), deployment(s.ns, "other", img("1.0.0"), 1), appVersion("1.0.0"), other,
		config(soak), config(soak, func(c *v1alpha1.RollingUpgradeConfig) {
			c.Name, c.Spec.TargetRef.Name, c.Spec.Sources[0].ApplicationVersion.Name = "other", "other", "other"
		}))
	calendar := "waves-" + s.ns
	freezeStart := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
	applyCalendar(t, calendar, fmt.Sprintf(`
  namespaceSelector: {matchLabels: {rollgate-e2e/calendar: %s}}
  maxConcurrent: 1
  windows:
  - {name: later, type: Deny, start: %q, end: %q}
`, s.ns, freezeStart.Format(time.RFC3339), freezeStart.Add(time.Hour).Format(time.RFC3339)))
	s.start()
	eventually(t, 30*time.Second, "the calendar's status", func(context.Context) (bool, string, error) {
		got, err := kubectl(t, "get", "rcal", calendar, "-o", "jsonpath={.status.open} {.status.nextClose}")
		return got == "true "+freezeStart.Format(time.RFC3339), got, err
	})
	for _, name := range []string{"app", "other"} {
		waitNamed(t, s.ns, name, time.Minute, "1.0.0 recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })
	}
	for _, name := range []string{"app", "other"} {
		announceNamed(t, s.ns, name, "1.1.0")
	}

	var waiting, first string
	eventually(t, time.Minute, "one config waits for the slot the other holds", func(ctx context.Context) (bool, string, error) {
		var seen []string
		for _, pair := range [][2]string{{"app", "other"}, {"other", "app"}} {
			var c v1alpha1.RollingUpgradeConfig
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: pair[0]}, &c); err != nil {
				return false, "", err
			}
			seen = append(seen, describeConfig(&c))
			if readyReason(v1alpha1.ReasonAwaitingRolloutSlot, "RolloutCalendar "+calendar+" allows 1 rollouts at once, and "+s.ns+"/"+pair[1]+" (1.1.0) hold its slots")(&c) {
				waiting, first = pair[0], pair[1]
				return true, "", nil
			}
		}
		return false, strings.Join(seen, "; "), nil
	})
	done := func(c *v1alpha1.RollingUpgradeConfig) bool {
		return inPhase(c, v1alpha1.PhaseCompleted) && c.Status.CurrentVersion == "1.1.0"
	}
	a := waitNamed(t, s.ns, first, time.Minute, "completed first", done)
	b := waitNamed(t, s.ns, waiting, time.Minute, "completed after it", done)
	completedAt := apimeta.FindStatusCondition(a.Status.Conditions, meta.ReadyCondition).LastTransitionTime
	startedAt := b.Status.VersionHistory[len(b.Status.VersionHistory)-1].AppliedAt
	if startedAt.Before(&completedAt) {
		t.Errorf("%s started %s, before %s completed (%s): the two rollouts overlapped", waiting, startedAt, first, completedAt)
	}
	t.Logf("%s completed %s; %s, which waited for its slot, started %s", first, completedAt.UTC().Format(time.RFC3339), waiting, startedAt.UTC().Format(time.RFC3339))
	if n := (&scenario{t: t, ns: s.ns, name: waiting}).countEvents(v1alpha1.EventRolloutSlotsTaken); n != 1 {
		t.Errorf("%s: %d RolloutSlotsTaken events, want 1", waiting, n)
	}
	eventually(t, 30*time.Second, "the slot given back", func(context.Context) (bool, string, error) {
		got, err := kubectl(t, "get", "rcal", calendar, "-o", "jsonpath={.status.rollouts}")
		return got == "", got, err
	})
}

// applyCalendar applies the RolloutCalendar name with spec (YAML, indented under spec:) and
// deletes it when the test ends: it is cluster-scoped, and its selectors must pick the test's
// namespace alone.
func applyCalendar(t *testing.T, name, spec string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "calendar.yaml")
	manifest := "apiVersion: rollgate.dev/v1alpha1\nkind: RolloutCalendar\nmetadata: {name: " + name + "}\nspec:" + spec
	if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, "apply", "-f", file)
	t.Cleanup(func() { _, _ = kubectl(t, "delete", "--ignore-not-found", "rolloutcalendar", name) })
}
