//go:build e2e

package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// The rollout scenarios: each runs the real manager binary against the kwok cluster.

// a. An ApplicationVersion announces 1.1.0: it is rolled out and recorded once.
func TestScenarioRolloutCompletes(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "rollout")
	s.create(deployment(s.ns, "app", img("1.0.0"), 3), appVersion("1.0.0"), config())
	s.start()
	s.waitConfig(time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.CurrentVersion == "1.0.0" && c.Status.CurrentImage == img("1.0.0")
	})

	s.announce("1.1.0")
	c := s.completed("1.1.0", 1, 2*time.Minute)
	if c.Annotations[v1alpha1.TargetImageAnnotation] != img("1.1.0") {
		t.Errorf("after the rollout: %s", describeConfig(c))
	}
	d := waitRolledOut(t, client.ObjectKey{Namespace: s.ns, Name: "app"}, time.Minute)
	if got := d.Spec.Template.Spec.Containers[0].Image; got != img("1.1.0") {
		t.Errorf("workload runs %s", got)
	}
	if d.Annotations[v1alpha1.LastImageAnnotation] != img("1.1.0") || d.Annotations[v1alpha1.LastUpdatedByAnnotation] != "app" {
		t.Errorf("workload annotations %v", d.Annotations)
	}
	if n := s.countEvents("VersionAvailable"); n != 1 {
		t.Errorf("%d VersionAvailable events, want 1", n)
	}
	// The manager records a verdict's metrics once its status write returns, which the watch here
	// may see first: the scrape is asked again until they are in.
	eventually(t, 30*time.Second, "the rollout's metrics", func(context.Context) (bool, string, error) {
		body := waitStatus(t, "http://"+s.manager.metrics+"/metrics", "", 200)
		for _, series := range []string{
			`rolling_upgrade_success_total{name="app",namespace="` + s.ns + `"} 1`,
			`rolling_upgrade_active{name="app",namespace="` + s.ns + `"} 0`,
			`rolling_upgrade_duration_seconds_count{name="app",namespace="` + s.ns + `",result="success"} 1`,
		} {
			if !strings.Contains(body, series) {
				return false, "/metrics does not show " + series, nil
			}
		}
		return true, "", nil
	})
}

// b. A version announced outside the window is held, then applied when the window opens.
func TestScenarioWindowHoldsThenApplies(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "window")
	// A one-minute window opening at the next minute boundary at least 20 s away.
	opens := time.Now().UTC().Add(20 * time.Second).Truncate(time.Minute).Add(time.Minute)
	schedule := opens.Format("4 15 * * *")
	s.create(deployment(s.ns, "app", img("1.0.0"), 2), appVersion("1.0.0"), config(func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.MaintenanceWindow = &v1alpha1.MaintenanceWindow{Schedule: schedule, Duration: &metav1.Duration{Duration: 5 * time.Minute}, TimeZone: "UTC"}
	}))
	s.start()
	s.waitConfig(time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })

	s.announce("1.1.0")
	c := s.waitPhase(time.Minute, v1alpha1.PhasePending)
	if c.Status.TargetVersion != "1.1.0" || c.Status.NextWindow == nil || !c.Status.NextWindow.Time.Equal(opens) ||
		c.Annotations[v1alpha1.TargetImageAnnotation] != "" {
		t.Fatalf("held: %s next window %v, want %s", describeConfig(c), c.Status.NextWindow, opens)
	}
	if got := s.deploymentImage("app"); got != img("1.0.0") {
		t.Errorf("workload changed while held: %s", got)
	}
	s.waitEvent(10*time.Second, "VersionHeld", "1.1.0 held until")

	c = s.waitPhase(2*time.Minute, v1alpha1.PhaseCompleted)
	if c.Status.CurrentVersion != "1.1.0" || c.Status.VersionHistory[0].AppliedAt.Time.Before(opens) {
		t.Errorf("applied before the window: %+v", c.Status.VersionHistory)
	}
	if n := s.countEvents("VersionHeld"); n != 1 {
		t.Errorf("%d VersionHeld events, want 1", n)
	}
}

// c. A version whose pods never become Ready rolls back, and is not tried again.
func TestScenarioNeverReadyVersionRollsBack(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "rollback")
	neverReady(t, s.ns, img("1.2.0"))
	s.create(deployment(s.ns, "app", img("1.0.0"), 3), appVersion("1.0.0"), config())
	s.start()
	s.waitConfig(time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })

	s.announce("1.2.0")
	s.waitPhase(time.Minute, v1alpha1.PhaseInProgress)
	// The rollback itself can be over within a second (the old pods still run): wait for its end.
	c := s.waitConfig(2*time.Minute, "rollback complete", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.RollbackCount == 1 && c.Status.Phase == v1alpha1.PhaseIdle && c.Annotations[v1alpha1.UpdatePhaseAnnotation] == ""
	})
	s.waitEvent(10*time.Second, "RollbackComplete", "healthy again")
	if c.Status.CurrentVersion != "1.0.0" || strings.Join(c.Status.FailedVersions, ",") != "1.2.0" || c.Status.RollbackCount != 1 ||
		len(c.Status.VersionHistory) != 1 || c.Status.VersionHistory[0].Status != v1alpha1.ResultRolledBack {
		t.Errorf("after the rollback: %s history %+v", describeConfig(c), c.Status.VersionHistory)
	}
	d := waitRolledOut(t, client.ObjectKey{Namespace: s.ns, Name: "app"}, time.Minute)
	if got := d.Spec.Template.Spec.Containers[0].Image; got != img("1.0.0") {
		t.Errorf("workload runs %s after the rollback", got)
	}

	// Later reconciles (here: the source is touched, the workload changes) do not retry 1.2.0.
	mustKubectl(t, "-n", s.ns, "annotate", "appver/app", "touched=1")
	mustKubectl(t, "-n", s.ns, "annotate", "deploy/app", "touched=1")
	time.Sleep(5 * time.Second)
	c = s.config()
	if c.Annotations[v1alpha1.TargetImageAnnotation] != "" || s.countEvents("UpdateStarting") != 1 || c.Status.Phase != v1alpha1.PhaseIdle {
		t.Errorf("1.2.0 was retried: %s", describeConfig(c))
	}
	if n := s.countEvents("UpdateRollback"); n != 1 {
		t.Errorf("%d UpdateRollback events, want 1", n)
	}
}

// d. Three bad versions in a row open the circuit; a good fourth waits for a human reset.
func TestScenarioCircuitBreaker(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "circuit")
	neverReady(t, s.ns, img("1.1.0"), img("1.2.0"), img("1.3.0"))
	d := deployment(s.ns, "app", img("1.0.0"), 2)
	// A short progress deadline makes each bad version fail fast (see scenario h).
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](10)
	s.create(d, appVersion("1.0.0"), config())
	s.start()
	s.waitConfig(time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })

	for i, bad := range []string{"1.1.0", "1.2.0", "1.3.0"} {
		s.announce(bad)
		s.waitConfig(2*time.Minute, bad+" rolled back", func(c *v1alpha1.RollingUpgradeConfig) bool {
			return c.Status.RollbackCount == int32(i+1) && c.Annotations[v1alpha1.UpdatePhaseAnnotation] == "" &&
				(c.Status.Phase == v1alpha1.PhaseIdle || c.Status.Phase == v1alpha1.PhaseFailed)
		})
	}
	c := s.waitPhase(time.Minute, v1alpha1.PhaseFailed)
	if !c.Status.CircuitOpen || len(c.Status.FailedVersions) != 3 {
		t.Fatalf("circuit not open: %s", describeConfig(c))
	}
	if stalled := apimeta.FindStatusCondition(c.Status.Conditions, meta.StalledCondition); stalled == nil || stalled.Reason != "CircuitOpen" {
		t.Errorf("Stalled = %+v", stalled)
	}
	s.waitEvent(10*time.Second, "CircuitOpen", "3 consecutive rollbacks")

	s.announce("1.4.0")
	s.waitEvent(time.Minute, "VersionAvailableCircuitOpen", "1.4.0 is available but not applied")
	time.Sleep(3 * time.Second)
	if c = s.config(); c.Annotations[v1alpha1.TargetImageAnnotation] != "" || s.deploymentImage("app") != img("1.0.0") {
		t.Fatalf("1.4.0 applied with the circuit open: %s", describeConfig(c))
	}

	s.annotate(v1alpha1.ResetCircuitAnnotation, "ticket-4711")
	c = s.waitPhase(2*time.Minute, v1alpha1.PhaseCompleted)
	if c.Status.CurrentVersion != "1.4.0" || c.Status.CircuitOpen || c.Status.RollbackCount != 0 || c.Status.LastCircuitReset != "ticket-4711" {
		t.Errorf("after the reset: %s", describeConfig(c))
	}
	if n := s.countEvents("CircuitReset"); n != 1 {
		t.Errorf("%d CircuitReset events, want 1", n)
	}
}

// e. A StatefulSet with OrderedReady pods and a bad version: the rollback completes.
func TestScenarioStatefulSetRollback(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "sts")
	neverReady(t, s.ns, img("1.1.0"))
	labels := map[string]string{"app": "db"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To[int32](3),
			ServiceName:         "db",
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: img("1.0.0")}}},
			},
		},
	}
	s.create(sts, appVersion("1.0.0"), config(func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.TargetRef = v1alpha1.WorkloadReference{Kind: v1alpha1.KindStatefulSet, Name: "db"}
	}))
	s.start()
	s.waitConfig(2*time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })

	s.announce("1.1.0")
	s.waitPhase(2*time.Minute, v1alpha1.PhaseRollingBack)
	c := s.waitConfig(3*time.Minute, "rollback complete", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.Phase == v1alpha1.PhaseIdle && c.Annotations[v1alpha1.UpdatePhaseAnnotation] == ""
	})
	if strings.Join(c.Status.FailedVersions, ",") != "1.1.0" {
		t.Errorf("failed versions %v", c.Status.FailedVersions)
	}
	var got appsv1.StatefulSet
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: "db"}, &got); err != nil {
		t.Fatal(err)
	}
	st := got.Status
	if got.Spec.Template.Spec.Containers[0].Image != img("1.0.0") || st.ReadyReplicas != 3 || st.UpdatedReplicas != 3 || st.CurrentRevision != st.UpdateRevision {
		t.Errorf("StatefulSet after the rollback: image %s, status %+v", got.Spec.Template.Spec.Containers[0].Image, st)
	}
}

// f. The manager is killed during the health check and started again: the rollout finishes, and
// is recorded exactly once.
func TestScenarioManagerKilledDuringHealthCheck(t *testing.T) {
	inNamespaceOnly(t)
	s := longCheckScenario(t, "restart")
	s.start()
	s.waitConfig(2*time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })

	s.announce("1.1.0")
	s.waitConfig(time.Minute, "health check running", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Annotations[v1alpha1.UpdatePhaseAnnotation] == "HealthCheck" && c.Status.Phase == v1alpha1.PhaseInProgress
	})
	s.kill()
	if c := s.config(); c.Status.Phase != v1alpha1.PhaseInProgress {
		t.Fatalf("the health check ended before the kill: %s", describeConfig(c))
	}
	s.start()
	s.completed("1.1.0", 1, 3*time.Minute)
}

// longCheckScenario: a Deployment on 1.0.0 and its config, in a namespace where pods are Ready
// 15 s after they are scheduled: a health check long enough to stop the manager in the middle of it.
func longCheckScenario(t *testing.T, prefix string) *scenario {
	t.Helper()
	s := newScenario(t, prefix)
	readyDelay(t, s.ns, 15000)
	s.create(deployment(s.ns, "app", img("1.0.0"), 2), appVersion("1.0.0"), config(func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.HealthTimeout = &metav1.Duration{Duration: 3 * time.Minute}
	}))
	return s
}

// A health check started by the manager of the previous version is finished by this one, as an
// upgrade hands it over: the old manager stopped as the kubelet stops it (SIGTERM), the new one
// started after. The check keeps its start, so the upgrade adds nothing to its deadline, and the
// version is started, checked and recorded once (docs/upgrading.md).
func TestScenarioUpgradeMidCheck(t *testing.T) {
	inNamespaceOnly(t)
	s := longCheckScenario(t, "upgrade")
	old := startBinaryOn(t, previousBin, freeAddr(t), "--leader-elect=false", "--namespace", s.ns)
	if out, err := exec.Command(previousBin, "version").CombinedOutput(); err != nil || strings.HasPrefix(string(out), "rollgate dev") {
		t.Fatalf("the previous manager says %q (%v)", out, err)
	}
	s.waitConfig(2*time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })
	s.announce("1.1.0")
	started := s.waitConfig(time.Minute, "health check running", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Annotations[v1alpha1.UpdatePhaseAnnotation] == "HealthCheck" && c.Status.Phase == v1alpha1.PhaseInProgress
	}).Annotations[v1alpha1.UpdateStartedAnnotation]
	old.stop(t, 10*time.Second)
	if c := s.config(); c.Status.Phase != v1alpha1.PhaseInProgress || c.Annotations[v1alpha1.UpdateStartedAnnotation] != started {
		t.Fatalf("the health check did not outlast the old manager as it was: %s", describeConfig(c))
	}
	s.start()
	c := s.completed("1.1.0", 1, 3*time.Minute)
	// The rollout is recorded as started when the old manager started it.
	if h := c.Status.VersionHistory; len(h) == 1 && h[0].AppliedAt.UTC().Format(time.RFC3339) != started {
		applied := h[0].AppliedAt.UTC().Format(time.RFC3339)
		t.Errorf("the history says 1.1.0 was applied at %s, the check started at %s", applied, started)
	}
}

// g. A non-semver version is ignored with a visible reason; the sidecar's image never changes.
func TestScenarioNonSemverIgnoredSidecarUntouched(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "sidecar")
	d := deployment(s.ns, "app", img("1.0.0"), 2)
	sidecar := corev1.Container{Name: "log-shipper", Image: "e2e.local/demo/log-shipper:2.1.0",
		Env: []corev1.EnvVar{{Name: "LEVEL", Value: "info"}}}
	d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, sidecar)
	s.create(d, appVersion("latest"), config(func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.Container = "app" }))
	s.start()

	c := s.waitConfig(time.Minute, "latest ignored with a reason", func(c *v1alpha1.RollingUpgradeConfig) bool {
		r := apimeta.FindStatusCondition(c.Status.Conditions, meta.ReadyCondition)
		return r != nil && strings.Contains(r.Message, "ignored, not semver: latest from ApplicationVersion/app")
	})
	if c.Annotations[v1alpha1.TargetImageAnnotation] != "" {
		t.Errorf("latest was applied: %s", describeConfig(c))
	}
	var av v1alpha1.ApplicationVersion
	eventually(t, 30*time.Second, "ApplicationVersion Ready=False NotSemver", func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: "app"}, &av); err != nil {
			return false, "", err
		}
		r := apimeta.FindStatusCondition(av.Status.Conditions, meta.ReadyCondition)
		return r != nil && r.Status == metav1.ConditionFalse && r.Reason == "NotSemver", "", nil
	})

	s.announce("1.1.0")
	s.waitPhase(2*time.Minute, v1alpha1.PhaseCompleted)
	var got appsv1.Deployment
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: "app"}, &got); err != nil {
		t.Fatal(err)
	}
	cs := got.Spec.Template.Spec.Containers
	if len(cs) != 2 || cs[0].Image != img("1.1.0") || cs[1].Image != sidecar.Image || len(cs[1].Env) != 1 || cs[1].Env[0].Value != "info" {
		t.Errorf("containers after the rollout: %+v", cs)
	}
}

// h. A Deployment whose progress deadline is exceeded rolls back long before the health timeout.
func TestScenarioProgressDeadlineRollsBackEarly(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "deadline")
	neverReady(t, s.ns, img("1.1.0"))
	d := deployment(s.ns, "app", img("1.0.0"), 2)
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](10)
	s.create(d, appVersion("1.0.0"), config(func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.HealthTimeout = &metav1.Duration{Duration: 30 * time.Minute}
	}))
	s.start()
	s.waitConfig(time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })

	s.announce("1.1.0")
	// Well inside the 30 minute health timeout.
	c := s.waitConfig(3*time.Minute, "rolled back", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.RollbackCount == 1 && c.Status.Phase == v1alpha1.PhaseIdle
	})
	if strings.Join(c.Status.FailedVersions, ",") != "1.1.0" {
		t.Errorf("failed versions %v", c.Status.FailedVersions)
	}
	s.waitEvent(10*time.Second, "UpdateRollback", "ProgressDeadlineExceeded")
}

// The renderer alone (no rollout engine) renders a target-image a human sets by hand.
func TestRendererAloneRendersHandSetImage(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "renderer")
	s.create(deployment(s.ns, "app", img("1.0.0"), 2), config())
	s.start("--controllers=renderer")
	s.annotate(v1alpha1.TargetImageAnnotation, img("1.5.0"))
	eventually(t, time.Minute, "the hand-set image is rendered", func(ctx context.Context) (bool, string, error) {
		got := s.deploymentImage("app")
		return got == img("1.5.0"), got, nil
	})
	waitRolledOut(t, client.ObjectKey{Namespace: s.ns, Name: "app"}, time.Minute)
	if c := s.config(); c.Status.Phase != "" || len(c.Status.Conditions) != 0 {
		t.Errorf("something but the renderer ran: %s", describeConfig(c))
	}
}

// f2. The manager is killed at five steps of a run through a success, two rollbacks and the circuit
// opening, and started again each time: no history entry is lost or doubled, and each event goes
// out exactly once. Each kill comes once the step's event is out: an event is sent after the write
// that records its step, so a kill in the milliseconds between the two loses it (the write
// boundaries themselves are failed one by one in TestVerdictsBindAcrossFailedWrites).
func TestScenarioManagerKilledAtFiveSteps(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "kill")
	readyDelay(t, s.ns, 10000) // health checks long enough to kill the manager in the middle of them
	neverReady(t, s.ns, img("1.2.0"), img("1.2.1"))
	s.create(deployment(s.ns, "app", img("1.0.0"), 2), appVersion("1.0.0"), config(func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.HealthTimeout = &metav1.Duration{Duration: 40 * time.Second}
		c.Spec.MaxRollbacks = 2
	}))
	s.start()
	idle := func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Annotations[v1alpha1.UpdatePhaseAnnotation] == ""
	}
	// killAt waits until the config shows the step and its event has gone out n times, then kills
	// the manager and starts a new one. A rollback the killed manager ended in its last instant
	// may take its RollbackComplete with it: the event goes out after the write of the annotations
	// that end the rollback, beside the write of its status, and a kill between the two loses it.
	// Nothing on the config says whether it went out, so it is counted as lost when the rollbacks
	// the config shows over outnumber the events out once the manager is gone.
	lostRollbackEvents := 0
	killAt := func(step string, reason string, n int, cond func(c *v1alpha1.RollingUpgradeConfig) bool) {
		t.Helper()
		s.waitConfig(2*time.Minute, step, func(c *v1alpha1.RollingUpgradeConfig) bool { return cond(c) && s.countEvents(reason) >= n })
		s.kill()
		c := s.config()
		t.Logf("killed the manager at %s: %s", step, describeConfig(c))
		if over := len(c.Status.FailedVersions); idle(c) && s.countEvents("RollbackComplete")+lostRollbackEvents < over {
			lostRollbackEvents++
			t.Logf("killed between the end of a rollback and its event: its RollbackComplete is lost")
		}
		s.start()
	}
	inCheck := func(version string) func(c *v1alpha1.RollingUpgradeConfig) bool {
		return func(c *v1alpha1.RollingUpgradeConfig) bool {
			return c.Annotations[v1alpha1.UpdatePhaseAnnotation] == "HealthCheck" && c.Status.TargetVersion == version
		}
	}
	s.waitConfig(2*time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })

	s.announce("1.1.0")
	killAt("the health check of 1.1.0", "UpdateStarting", 1, inCheck("1.1.0"))
	killAt("the completion of 1.1.0", "UpdateComplete", 1, func(c *v1alpha1.RollingUpgradeConfig) bool { return idle(c) && c.Status.CurrentVersion == "1.1.0" })

	s.announce("1.2.0")
	killAt("the health check of 1.2.0", "UpdateStarting", 2, inCheck("1.2.0"))
	// The rollback itself may take a moment only (the old pods still run): kill right after the
	// verdict, or, when the rollback is over by then, once its own event is out too (unless a
	// kill lost it).
	rollbacksOut := func(n int, c *v1alpha1.RollingUpgradeConfig) bool {
		return !idle(c) || s.countEvents("RollbackComplete")+lostRollbackEvents >= n
	}
	killAt("the verdict on 1.2.0", "UpdateRollback", 1, func(c *v1alpha1.RollingUpgradeConfig) bool {
		return len(c.Status.FailedVersions) == 1 && rollbacksOut(1, c)
	})
	// Its RollbackComplete too, unless the kill lost it: a later kill must not take the blame for
	// an event that never came.
	s.waitConfig(2*time.Minute, "1.2.0 rolled back", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return idle(c) && len(c.Status.FailedVersions) == 1 && s.countEvents("RollbackComplete")+lostRollbackEvents >= 1
	})

	s.announce("1.2.1")
	killAt("the opening of the circuit", "CircuitOpen", 1, func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.CircuitOpen && rollbacksOut(2, c)
	})
	c := s.waitConfig(2*time.Minute, "1.2.1 rolled back, circuit open", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return idle(c) && c.Status.Phase == v1alpha1.PhaseFailed
	})

	var h []string
	for _, e := range c.Status.VersionHistory {
		h = append(h, e.Version+":"+string(e.Status))
	}
	if got, want := strings.Join(h, ","), "1.1.0:Healthy,1.2.0:RolledBack,1.2.1:RolledBack"; got != want {
		t.Errorf("history = %s, want %s", got, want)
	}
	want := map[string]int{"VersionAvailable": 3, "UpdateStarting": 3, "UpdateComplete": 1, "UpdateRollback": 2,
		"RollbackComplete": 2 - lostRollbackEvents, "CircuitOpen": 1}
	// Events go out after the write that records their transition, asynchronously: the last
	// rollback's RollbackComplete may still be on its way when the config shows the rollback over.
	eventually(t, 30*time.Second, "the events of every step", func(context.Context) (bool, string, error) {
		for reason, n := range want {
			if s.countEvents(reason) < n {
				return false, reason + " not out yet", nil
			}
		}
		return true, "", nil
	})
	for reason, n := range want {
		if got, most := s.countEvents(reason), n+map[string]int{"RollbackComplete": lostRollbackEvents}[reason]; got < n || got > most {
			t.Errorf("%d %s events, want %d to %d", got, reason, n, most)
		}
	}
}
