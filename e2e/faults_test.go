//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// Faults of the cluster and of the manager itself, each in the middle of what rollgate is doing.
// What must hold: the rollout ends as it would have without the fault, its outcome is recorded
// once, and the manager recovers by itself.

// restartComponent SIGKILLs one control-plane process and starts it again after downtime.
func restartComponent(t *testing.T, name string, downtime time.Duration) {
	t.Helper()
	clusterScript(t, "restart", name, fmt.Sprint(int(downtime.Seconds())))
}

// rolloutInHealthCheck: a Deployment on 1.0.0 and its config, then 1.1.0 announced and in its
// health check, which lasts about 20 s (new pods take that long to be Ready; the health timeout is
// 3 minutes). start runs the manager or managers.
func (s *scenario) rolloutInHealthCheck(start func()) {
	s.t.Helper()
	readyDelay(s.t, s.ns, 20000)
	s.create(deployment(s.ns, "app", img("1.0.0"), 2), appVersion("1.0.0"), config(func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.HealthTimeout = &metav1.Duration{Duration: 3 * time.Minute}
	}))
	start()
	s.waitConfig(2*time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })
	s.announce("1.1.0")
	s.waitConfig(time.Minute, "health check running", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Annotations[v1alpha1.UpdatePhaseAnnotation] == "HealthCheck" && c.Status.Phase == v1alpha1.PhaseInProgress
	})
	// The start's event is sent after its write, asynchronously: a fault injected before it is sent
	// would lose it (events are best effort) and fail the count of completedOnce for a reason that
	// is not the fault's.
	eventually(s.t, 30*time.Second, "the UpdateStarting event", func(context.Context) (bool, string, error) {
		return s.countEvents("UpdateStarting") >= 1, "", nil
	})
}

// completedOnce waits until 1.1.0 is Completed and checks that it was recorded and announced once.
func (s *scenario) completedOnce(timeout time.Duration) *v1alpha1.RollingUpgradeConfig {
	s.t.Helper()
	return s.completed("1.1.0", 1, timeout)
}

// completed waits until version is Completed as the config's nth rollout, and checks that each of
// the n was recorded and announced once.
func (s *scenario) completed(version string, n int, timeout time.Duration) *v1alpha1.RollingUpgradeConfig {
	s.t.Helper()
	c := s.waitConfig(timeout, version+" completed", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return inPhase(c, v1alpha1.PhaseCompleted) && c.Status.CurrentVersion == version
	})
	// Events are sent after their write, asynchronously.
	eventually(s.t, 30*time.Second, "UpdateComplete events", func(context.Context) (bool, string, error) {
		return s.countEvents("UpdateComplete") >= n, "", nil
	})
	h := c.Status.VersionHistory
	if len(h) != n || h[n-1].Version != version || h[n-1].Status != v1alpha1.ResultHealthy {
		s.t.Errorf("after the rollout: %s, history %+v", describeConfig(c), h)
	}
	for _, reason := range []string{"UpdateStarting", "UpdateComplete"} {
		if got := s.countEvents(reason); got != n {
			s.t.Errorf("%d %s events, want %d", got, reason, n)
		}
	}
	return c
}

// requestsAnswered is how many of the manager's API requests were answered with code, by its own
// count (client-go's rest_client_requests_total).
func requestsAnswered(t *testing.T, m *manager, code int) int {
	t.Helper()
	n := 0
	for _, m := range m.scrape(t)["rest_client_requests_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "code" && l.GetValue() == strconv.Itoa(code) {
				n += int(m.GetCounter().GetValue())
			}
		}
	}
	return n
}

// alive fails the test if the manager has exited.
func alive(t *testing.T, m *manager) {
	t.Helper()
	select {
	case err := <-m.exited:
		t.Fatalf("the manager exited: %v", err)
	default:
	}
}

// The API server is killed during a health check and is back 5 s later: the same manager process
// goes on, and the rollout completes once.
func TestScenarioAPIServerRestartedMidCheck(t *testing.T) {
	s := newScenario(t, "apiserver")
	s.rolloutInHealthCheck(func() { s.start() })
	restartComponent(t, "kube-apiserver", 5*time.Second)
	back := time.Now()
	s.completedOnce(3 * time.Minute)
	alive(t, s.manager)
	t.Logf("completed %s after the API server was started again", time.Since(back).Round(time.Second))
}

// etcd is killed while every config is settled and is back 5 s later: the manager, not restarted,
// rolls out the next announced version.
func TestScenarioEtcdRestartedWhileIdle(t *testing.T) {
	s := newScenario(t, "etcd")
	s.create(deployment(s.ns, "app", img("1.0.0"), 2), appVersion("1.0.0"), config())
	s.start()
	s.waitConfig(time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })
	restartComponent(t, "etcd", 5*time.Second)
	back := time.Now()
	eventually(t, time.Minute, "the API server answers again", func(ctx context.Context) (bool, string, error) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: "app"}, &v1alpha1.ApplicationVersion{})
		return err == nil, fmt.Sprint(err), nil
	})
	s.announce("1.1.0")
	s.completedOnce(2 * time.Minute)
	alive(t, s.manager)
	t.Logf("1.1.0 completed %s after etcd was started again", time.Since(back).Round(time.Second))
}

// Two managers elect a leader; the leader is SIGKILLed during a health check. The other takes the
// lease when it expires and completes the rollout, which is recorded once.
func TestScenarioLeaderKilledMidCheck(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "leader")
	lease := "rollgate-" + rand.String(5)
	var managers []*manager
	s.rolloutInHealthCheck(func() {
		for range 2 {
			managers = append(managers, startManager(t, "--namespace", s.ns, "--leader-elect",
				"--leader-election-namespace", s.ns, "--leader-election-id", lease))
		}
	})
	leader := func(m *manager) bool {
		_, body, err := get(context.Background(), "http://"+m.metrics+"/metrics", "")
		return err == nil && strings.Contains(body, `leader_election_master_status{name="`+lease+`"} 1`)
	}
	var old, other *manager
	switch {
	case leader(managers[0]):
		old, other = managers[0], managers[1]
	case leader(managers[1]):
		old, other = managers[1], managers[0]
	default:
		t.Fatal("neither manager leads, yet the rollout started")
	}
	old.kill(t)
	killed := time.Now()
	eventually(t, time.Minute, "the other manager leads", func(context.Context) (bool, string, error) { return leader(other), "", nil })
	took := time.Since(killed)
	s.completedOnce(3 * time.Minute)
	alive(t, other)
	t.Logf("the other manager led %s after the leader was killed (lease duration 15 s); 1.1.0 completed %s after the kill",
		took.Round(100*time.Millisecond), time.Since(killed).Round(time.Second))
}

// A loop edits the config's labels every 100 ms through a whole rollout: each edit is a new
// resourceVersion, so many of the manager's writes conflict. No status field is lost.
func TestScenarioLabelEditsThroughARollout(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "labels")
	readyDelay(t, s.ns, 5000) // a rollout of some seconds, for some 50 edits
	s.create(deployment(s.ns, "app", img("1.0.0"), 2), appVersion("1.0.0"), config())
	s.start()
	s.waitConfig(time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })

	// The edits have a client of their own: at 10 a second they would take the test client's whole
	// rate limit (5 a second).
	cfg := rest.CopyConfig(restConfig)
	cfg.QPS, cfg.Burst = 50, 50
	editor, err := client.New(cfg, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	var edits int
	var wg sync.WaitGroup
	wg.Go(func() {
		for tick := time.NewTicker(100 * time.Millisecond); ; {
			select {
			case <-ctx.Done():
				tick.Stop()
				return
			case <-tick.C:
			}
			patch := fmt.Sprintf(`{"metadata":{"labels":{"edited":"%d"}}}`, edits)
			obj := &v1alpha1.RollingUpgradeConfig{}
			obj.Namespace, obj.Name = s.ns, "app"
			if err := editor.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch))); err == nil {
				edits++
			}
		}
	})
	// A conflict needs an edit between the manager's read and its write; most rollouts have some.
	// Until one has, roll out another version.
	var c *v1alpha1.RollingUpgradeConfig
	var conflicts int
	for i, version := range []string{"1.1.0", "1.2.0", "1.3.0"} {
		s.announce(version)
		c = s.completed(version, i+1, 2*time.Minute)
		if conflicts = requestsAnswered(t, s.manager, http.StatusConflict); conflicts > 0 {
			break
		}
	}
	stop()
	wg.Wait()
	if edits < 30 || conflicts == 0 {
		t.Fatalf("%d label edits and %d of the manager's writes conflicted: the test did not do what it is for", edits, conflicts)
	}
	if c.Status.CurrentImage != img(c.Status.CurrentVersion) || c.Status.ObservedGeneration != c.Generation || len(c.Status.Conditions) == 0 ||
		c.Status.LastUpdate == nil || c.Status.RecordedTarget == nil || c.Annotations[v1alpha1.UpdatePhaseAnnotation] != "" {
		t.Errorf("after %d label edits: %s, status %+v", edits, describeConfig(c), c.Status)
	}
	t.Logf("%d label edits during the rollout, %d of the manager's writes conflicted", edits, conflicts)
}
