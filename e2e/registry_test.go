//go:build e2e

package e2e

import (
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/registry/registrytest"
)

// allowLoopbackRegistries lets the manager list tags from the test registries on 127.0.0.1, which
// it refuses by default.
const allowLoopbackRegistries = "--registry-allow=127.0.0.1"

// startRegistry serves go-containerregistry's in-memory registry on 127.0.0.1 with repository
// demo/app holding the given tags, and returns its host:port.
func startRegistry(t *testing.T, tags ...string) string {
	t.Helper()
	host, _ := startCountingRegistry(t, tags...)
	return host
}

// startCountingRegistry is startRegistry that also counts the requests it gets after the tags are
// pushed.
func startCountingRegistry(t *testing.T, tags ...string) (string, *atomic.Int32) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int32
	reg := registrytest.Handler()
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		reg.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	host := l.Addr().String()
	registrytest.Push(t, host, "demo/app", tags...)
	requests.Store(0)
	return host, &requests
}

// listedFrom makes a config's only source the tags of repo, listed every minute.
func listedFrom(repo string) func(*v1alpha1.RollingUpgradeConfig) {
	return func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.Image = repo
		c.Spec.Sources = []v1alpha1.VersionSource{{Registry: &v1alpha1.RegistrySource{Interval: &metav1.Duration{Duration: time.Minute}}}}
	}
}

// The registry source alone finds the newest tag and rolls it out.
func TestScenarioRegistrySource(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "registry")
	host := startRegistry(t, "1.0.0", "1.1.0", "1.3.0", "latest", "2.0.0")
	repo := host + "/demo/app"
	s.create(deployment(s.ns, "app", repo+":1.0.0", 2), config(listedFrom(repo)))
	s.start(allowLoopbackRegistries)
	c := s.waitPhase(2*time.Minute, v1alpha1.PhaseCompleted)
	if c.Status.CurrentVersion != "1.3.0" || c.Status.CurrentImage != repo+":1.3.0" {
		t.Errorf("after the rollout: %s", describeConfig(c))
	}
	d := waitRolledOut(t, client.ObjectKey{Namespace: s.ns, Name: "app"}, time.Minute)
	if got := d.Spec.Template.Spec.Containers[0].Image; got != repo+":1.3.0" {
		t.Errorf("workload runs %s", got)
	}
	s.waitEvent(10*time.Second, "UpdateStarting", "(from registry)")
}

// By default the manager does not list tags from loopback: a tenant who names 127.0.0.1 in
// spec.image gets a refusal in rollgate's words, one Warning, and not one request reaches the host.
func TestScenarioALoopbackRegistryIsRefusedByDefault(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "registry-refused")
	host, requests := startCountingRegistry(t, "1.0.0", "1.1.0")
	repo := host + "/demo/app"
	s.create(deployment(s.ns, "app", repo+":1.0.0", 1), config(listedFrom(repo)))
	s.start()
	c := s.waitConfig(time.Minute, "the registry refused", func(c *v1alpha1.RollingUpgradeConfig) bool {
		r := apimeta.FindStatusCondition(c.Status.Conditions, meta.ReadyCondition)
		return r != nil && r.Reason == v1alpha1.EventRegistryUnavailable
	})
	ready := apimeta.FindStatusCondition(c.Status.Conditions, meta.ReadyCondition)
	if want := "listing the tags of " + repo + ": registry refused: the registry's address is not allowed by the manager (--registry-allow)"; ready.Message != want {
		t.Errorf("Ready says %q", ready.Message)
	}
	s.waitEvent(10*time.Second, v1alpha1.EventRegistryUnavailable, "refused")
	if n := s.countEvents(v1alpha1.EventRegistryUnavailable); n != 1 {
		t.Errorf("%d RegistryUnavailable events, want 1", n)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the registry on loopback got %d requests", n)
	}
}
