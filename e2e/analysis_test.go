//go:build e2e

package e2e

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// trafficExporter plays an application's request metrics: every 100 ms each version it knows
// serves 10 requests, of which the share the test set fails with code 500. It serves
// demo_http_requests_total{namespace, version, code} and demo_incident_open{namespace} on
// /metrics until the test ends.
type trafficExporter struct {
	addr     string
	mu       sync.Mutex
	failures map[string]float64 // version -> share of requests that fail
	// incident is demo_incident_open{namespace}: 1 while the test plays an open incident.
	incident prometheus.Gauge
}

func startTrafficExporter(t *testing.T, ns string, failures map[string]float64) *trafficExporter {
	t.Helper()
	e := &trafficExporter{failures: failures}
	reg := prometheus.NewRegistry()
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "demo_http_requests_total", Help: "Requests served, by version and code."},
		[]string{"namespace", "version", "code"})
	incidents := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "demo_incident_open", Help: "1 while an incident is open."}, []string{"namespace"})
	reg.MustRegister(requests, incidents)
	e.incident = incidents.WithLabelValues(ns)
	for v := range failures {
		// Both series exist from the start: a version without failures has a rate of 0, not no data.
		requests.WithLabelValues(ns, v, "200")
		requests.WithLabelValues(ns, v, "500")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.addr = l.Addr().String()
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			e.mu.Lock()
			for v, share := range e.failures {
				requests.WithLabelValues(ns, v, "500").Add(10 * share)
				requests.WithLabelValues(ns, v, "200").Add(10 * (1 - share))
			}
			e.mu.Unlock()
		}
	}()
	t.Cleanup(func() { close(done); _ = srv.Close() })
	return e
}

// errorRatioQuery is the share of failed requests of the version under check over the last 5 s.
const errorRatioQuery = `sum(rate(demo_http_requests_total{namespace="{{.Namespace}}",version="{{.Version}}",code="500"}[5s]))` +
	` / sum(rate(demo_http_requests_total{namespace="{{.Namespace}}",version="{{.Version}}"}[5s]))`

// TestScenarioAnalysisOnARealPrometheus: a config whose versions are checked by their error ratio
// in a real Prometheus, which scrapes a small exporter whose error ratio per version the test
// controls, and soaked for 20 s. A clean version completes after its soak; one that is Ready but
// fails 30% of its requests is rolled back by its analysis; with Prometheus stopped in the middle
// of a check the analysis is inconclusive, the version waits instead of being rolled back, and it
// completes once Prometheus is back.
func TestScenarioAnalysisOnARealPrometheus(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "analysis")
	exporter := startTrafficExporter(t, s.ns, map[string]float64{"1.1.0": 0, "1.2.0": 0.3, "1.3.0": 0})
	prom := startPrometheus(t, exporter.addr)
	const soakTime = 20 * time.Second
	s.create(deployment(s.ns, "app", img("1.0.0"), 2), appVersion("1.0.0"), config(func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.SoakTime = &metav1.Duration{Duration: soakTime}
		c.Spec.Analysis = &v1alpha1.Analysis{Metrics: []v1alpha1.MetricCheck{{
			Name: "error-ratio", Query: errorRatioQuery,
			// The first measurement comes when the version's pods are Ready (about a second here).
			InitialDelay: &metav1.Duration{Duration: 8 * time.Second}, Interval: &metav1.Duration{Duration: 2 * time.Second},
			Count: 3, SuccessCondition: v1alpha1.MetricRange{Max: ptr.To("0.05")}, ConsecutiveErrorLimit: 2,
		}}}
	}))
	s.start("--prometheus-url=http://" + prom.addr)
	s.waitConfig(time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })
	prom.waitQuery(t, `count(demo_http_requests_total{namespace="`+s.ns+`"})`, func(v float64) bool { return v == 6 })

	// A clean version: healthy, soaked, measured three times, passed.
	s.announce("1.1.0")
	soaking := s.waitConfig(time.Minute, "1.1.0 soaks", readyReason(v1alpha1.ReasonSoaking, "1.1.0 is healthy since"))
	since := soaking.Status.HealthCheck.HealthySince.Time
	s.completed("1.1.0", 1, time.Minute)
	passed := time.Since(since)
	if passed < soakTime {
		t.Errorf("1.1.0 passed %s after it was first healthy, before its soak of %s was over", passed, soakTime)
	}
	t.Logf("1.1.0 was seen Completed %s after it was first healthy (soak %s)", passed.Round(100*time.Millisecond), soakTime)
	s.waitEvent(10*time.Second, v1alpha1.EventUpdateComplete, "; soaked 20s; analysis passed: error-ratio 0 after ")

	// Ready, but failing 30% of its requests: rolled back by its analysis.
	s.announce("1.2.0")
	c := s.waitConfig(time.Minute, "1.2.0 rolled back", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return len(c.Status.VersionHistory) == 2 && c.Status.VersionHistory[1].Status == v1alpha1.ResultRolledBack
	})
	if e := c.Status.VersionHistory[1]; e.Version != "1.2.0" || !strings.HasPrefix(e.Reason, "analysis: error-ratio measured 0.3") || !strings.HasSuffix(e.Reason, ", not ≤ 0.05") {
		t.Errorf("history entry %+v, want 1.2.0 rolled back by its analysis, with the value and the threshold", e)
	}
	if hc := c.Status.HealthCheck; hc == nil || hc.Version != "1.2.0" || hc.HealthySince == nil {
		t.Errorf("status.healthCheck %+v: want 1.2.0 seen healthy (Ready) before its analysis failed it", hc)
	}
	s.waitEvent(10*time.Second, v1alpha1.EventUpdateRollback, "failed its analysis: metric error-ratio measured 0.3")
	// The query as it ran, which a person can paste into Prometheus.
	s.waitEvent(10*time.Second, v1alpha1.EventUpdateRollback, `; query: sum(rate(demo_http_requests_total{namespace="`+s.ns+`",version="1.2.0",code="500"}[5s]))`)
	s.waitConfig(time.Minute, "back on 1.1.0", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return inPhase(c, v1alpha1.PhaseIdle) && s.deploymentImage("app") == img("1.1.0")
	})

	// Prometheus stops in the middle of a check: inconclusive, and the version waits.
	s.announce("1.3.0")
	s.waitPhase(time.Minute, v1alpha1.PhaseInProgress)
	prom.stop(t)
	inconclusive := readyReason(v1alpha1.EventAnalysisInconclusive, "errors in a row, the last: ")
	s.waitConfig(time.Minute, "the analysis of 1.3.0 is inconclusive", inconclusive)
	s.waitEvent(10*time.Second, v1alpha1.EventAnalysisInconclusive, "the analysis of 1.3.0 is inconclusive")
	// Past its soak, and still waiting: no verdict without the analysis.
	time.Sleep(soakTime)
	if c := s.config(); !inconclusive(c) || c.Status.Phase != v1alpha1.PhaseInProgress || len(c.Status.FailedVersions) != 1 {
		t.Fatalf("with Prometheus down: %s, want 1.3.0 waiting InProgress, not rolled back", describeConfig(c))
	}
	get := mustKubectl(t, "-n", s.ns, "get", "ruc", "app", "-o", "wide")
	if !strings.Contains(get, "InProgress") || !strings.Contains(get, "inconclusive") {
		t.Errorf("kubectl get ruc -o wide does not show the inconclusive analysis:\n%s", get)
	}
	t.Logf("with Prometheus down:\n%s", get)

	prom.run(t)
	c = s.waitConfig(time.Minute, "1.3.0 completed", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return inPhase(c, v1alpha1.PhaseCompleted) && c.Status.CurrentVersion == "1.3.0"
	})
	if h := c.Status.VersionHistory; len(h) != 3 || h[2].Status != v1alpha1.ResultHealthy || len(c.Status.FailedVersions) != 1 {
		t.Errorf("history %+v, failed %v: want 1.3.0 healthy and only 1.2.0 failed", h, c.Status.FailedVersions)
	}
	eventually(t, 10*time.Second, "the events of 1.3.0", func(context.Context) (bool, string, error) {
		return s.countEvents(v1alpha1.EventUpdateComplete) == 2, "", nil
	})
	if n := s.countEvents(v1alpha1.EventAnalysisInconclusive); n != 1 {
		t.Errorf("%d AnalysisInconclusive events, want 1", n)
	}
	for _, e := range s.events() {
		t.Logf("event %s %s: %s", e.Type, e.Reason, e.Message)
	}
}

// readyReason: the config's Ready condition has the reason and a message with text.
func readyReason(reason, text string) func(c *v1alpha1.RollingUpgradeConfig) bool {
	return func(c *v1alpha1.RollingUpgradeConfig) bool {
		r := apimeta.FindStatusCondition(c.Status.Conditions, meta.ReadyCondition)
		return r != nil && r.Reason == reason && strings.Contains(r.Message, text)
	}
}
