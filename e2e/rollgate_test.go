//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// The repository every scenario's images belong to; kwok runs any image name.
const appRepo = "e2e.local/demo/app"

func img(tag string) string { return appRepo + ":" + tag }

// scenario is one namespace with a workload, an ApplicationVersion and a RollingUpgradeConfig,
// steered by a manager that watches only that namespace.
type scenario struct {
	t       *testing.T
	ns      string
	name    string // of the config: "app"
	manager *manager
}

func newScenario(t *testing.T, prefix string) *scenario {
	t.Helper()
	installCRDs(t)
	return &scenario{t: t, ns: newNamespace(t, prefix), name: "app"}
}

// start runs a manager for the scenario's namespace.
func (s *scenario) start(extra ...string) *manager {
	s.t.Helper()
	s.manager = startManager(s.t, append([]string{"--leader-elect=false", "--namespace", s.ns}, extra...)...)
	return s.manager
}

// kill SIGKILLs the scenario's manager and waits until it is gone.
func (s *scenario) kill() {
	s.t.Helper()
	s.manager.kill(s.t)
}

func (s *scenario) create(objs ...client.Object) {
	s.t.Helper()
	for _, o := range objs {
		o.SetNamespace(s.ns)
	}
	create(s.t, objs...)
}

// create creates objects in the namespaces they name.
func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := k8s.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

func appVersion(version string) *v1alpha1.ApplicationVersion {
	return &v1alpha1.ApplicationVersion{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec:       v1alpha1.ApplicationVersionSpec{Image: appRepo, Version: version},
	}
}

// config is a RollingUpgradeConfig for the Deployment "app", fed by the ApplicationVersion "app".
func config(mods ...func(*v1alpha1.RollingUpgradeConfig)) *v1alpha1.RollingUpgradeConfig {
	c := &v1alpha1.RollingUpgradeConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: v1alpha1.RollingUpgradeConfigSpec{
			TargetRef:         v1alpha1.WorkloadReference{Kind: v1alpha1.KindDeployment, Name: "app"},
			Image:             appRepo,
			VersionConstraint: ">=1.0.0, <2.0.0",
			Sources:           []v1alpha1.VersionSource{{ApplicationVersion: &v1alpha1.ApplicationVersionSource{Name: "app"}}},
			HealthTimeout:     &metav1.Duration{Duration: 30 * time.Second},
			MaxRollbacks:      3,
		},
	}
	for _, m := range mods {
		m(c)
	}
	return c
}

// announce sets the ApplicationVersion's version, as Flux would after Renovate's PR is merged.
func (s *scenario) announce(version string) {
	s.t.Helper()
	announceNamed(s.t, s.ns, "app", version)
}

// announceNamed sets the version of the ApplicationVersion name in namespace ns.
func announceNamed(t *testing.T, ns, name, version string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var av v1alpha1.ApplicationVersion
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &av); err != nil {
			return err
		}
		av.Spec.Version = version
		return k8s.Update(context.Background(), &av)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// annotate sets one annotation of the config, as a human would with kubectl annotate.
func (s *scenario) annotate(key, value string) {
	s.t.Helper()
	mustKubectl(s.t, "-n", s.ns, "annotate", "--overwrite", "ruc/app", key+"="+value)
}

func (s *scenario) config() *v1alpha1.RollingUpgradeConfig {
	s.t.Helper()
	var c v1alpha1.RollingUpgradeConfig
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: s.name}, &c); err != nil {
		s.t.Fatal(err)
	}
	return &c
}

// waitConfig waits until cond holds for the config.
func (s *scenario) waitConfig(timeout time.Duration, what string, cond func(c *v1alpha1.RollingUpgradeConfig) bool) *v1alpha1.RollingUpgradeConfig {
	s.t.Helper()
	return waitNamed(s.t, s.ns, s.name, timeout, what, cond)
}

// waitNamed waits until cond holds for the config name in namespace ns.
func waitNamed(t *testing.T, ns, name string, timeout time.Duration, what string, cond func(*v1alpha1.RollingUpgradeConfig) bool) *v1alpha1.RollingUpgradeConfig {
	t.Helper()
	var c v1alpha1.RollingUpgradeConfig
	eventually(t, timeout, name+": "+what, func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &c); err != nil {
			return false, err.Error(), nil
		}
		return cond(&c), describeConfig(&c), nil
	})
	return &c
}

// waitPhase waits until the config shows the phase in its status and the matching in-flight state
// in its annotations (status and annotations are two writes, so one can be seen before the other).
func (s *scenario) waitPhase(timeout time.Duration, phase v1alpha1.Phase) *v1alpha1.RollingUpgradeConfig {
	s.t.Helper()
	return s.waitConfig(timeout, "phase "+string(phase), func(c *v1alpha1.RollingUpgradeConfig) bool { return inPhase(c, phase) })
}

// inPhase: the status shows the phase for the current generation, and the annotations the
// matching in-flight state.
func inPhase(c *v1alpha1.RollingUpgradeConfig, phase v1alpha1.Phase) bool {
	annotation := map[v1alpha1.Phase]string{v1alpha1.PhaseInProgress: "HealthCheck", v1alpha1.PhaseRollingBack: "RollingBack"}[phase]
	return c.Status.Phase == phase && c.Status.ObservedGeneration == c.Generation &&
		c.Annotations[v1alpha1.UpdatePhaseAnnotation] == annotation
}

func describeConfig(c *v1alpha1.RollingUpgradeConfig) string {
	ready := apimeta.FindStatusCondition(c.Status.Conditions, meta.ReadyCondition)
	msg := ""
	if ready != nil {
		msg = fmt.Sprintf("%s %s: %s", ready.Status, ready.Reason, ready.Message)
	}
	if git := apimeta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionGitWriteBack); git != nil {
		msg += fmt.Sprintf("] git=[%s %s (generation %d of %d): %s", git.Status, git.Reason, git.ObservedGeneration, c.Generation, git.Message)
	}
	return fmt.Sprintf("phase=%s current=%s target=%s rollbacks=%d circuit=%v failed=%v annotations=%v ready=[%s]",
		c.Status.Phase, c.Status.CurrentVersion, c.Status.TargetVersion, c.Status.RollbackCount, c.Status.CircuitOpen,
		c.Status.FailedVersions, rollgateAnnotations(c), msg)
}

func rollgateAnnotations(c *v1alpha1.RollingUpgradeConfig) map[string]string {
	out := map[string]string{}
	for k, v := range c.Annotations {
		if strings.HasPrefix(k, "rollgate.dev/") {
			out[k] = v
		}
	}
	return out
}

// events returns the reasons of the config's events, oldest first, one per event object.
func (s *scenario) events() []corev1.Event {
	s.t.Helper()
	var list corev1.EventList
	err := k8s.List(context.Background(), &list, client.InNamespace(s.ns),
		client.MatchingFields{"involvedObject.kind": "RollingUpgradeConfig", "involvedObject.name": s.name})
	if err != nil {
		s.t.Fatal(err)
	}
	return list.Items
}

// countEvents counts the events with a reason (a repeated event counts each time it happened).
func (s *scenario) countEvents(reason string) int {
	n := 0
	for _, e := range s.events() {
		switch {
		case e.Reason != reason:
		case e.Series != nil:
			n += int(e.Series.Count)
		default:
			n += max(int(e.Count), 1)
		}
	}
	return n
}

func (s *scenario) waitEvent(timeout time.Duration, reason, contains string) {
	s.t.Helper()
	eventually(s.t, timeout, "event "+reason, func(ctx context.Context) (bool, string, error) {
		var seen []string
		for _, e := range s.events() {
			if e.Reason == reason && strings.Contains(e.Message, contains) {
				return true, "", nil
			}
			seen = append(seen, e.Reason)
		}
		return false, fmt.Sprintf("events so far: %v", seen), nil
	})
}

// deploymentImage is the image of a container of the Deployment "app".
func (s *scenario) deploymentImage(container string) string {
	s.t.Helper()
	var d appsv1.Deployment
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: "app"}, &d); err != nil {
		s.t.Fatal(err)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == container {
			return c.Image
		}
	}
	s.t.Fatalf("no container %s", container)
	return ""
}
