//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// A config deleted while its version is checked carries out spec.deletionPolicy, then gives up the
// image field: a GitOps tool applying the workload afterwards owns it again, without force and
// without a conflict.
func TestScenarioConfigDeletedMidCheck(t *testing.T) {
	inNamespaceOnly(t)
	for _, tc := range []struct {
		name   string
		policy v1alpha1.DeletionPolicy
		// expected
		wantImage string
	}{
		{name: "Rollback returns the version in flight to the current image", policy: v1alpha1.DeletionRollback, wantImage: img("1.0.0")},
		{name: "Keep leaves the version in flight", policy: v1alpha1.DeletionKeep, wantImage: img("1.1.0")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScenario(t, "delete")
			neverReady(t, s.ns, img("1.1.0"))
			s.create(deployment(s.ns, "app", img("1.0.0"), 2), appVersion("1.0.0"), config(func(c *v1alpha1.RollingUpgradeConfig) {
				c.Spec.HealthTimeout = &metav1.Duration{Duration: 3 * time.Minute}
				c.Spec.DeletionPolicy = tc.policy
			}))
			s.start()
			s.waitConfig(time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool {
				return c.Status.CurrentVersion == "1.0.0"
			})
			s.announce("1.1.0")
			s.waitConfig(time.Minute, "1.1.0 in its health check", func(c *v1alpha1.RollingUpgradeConfig) bool {
				return c.Status.Phase == v1alpha1.PhaseInProgress
			})
			eventually(t, time.Minute, "1.1.0 rendered", func(context.Context) (bool, string, error) {
				got := s.deploymentImage("app")
				return got == img("1.1.0"), got, nil
			})

			// The managers that own fields of the workload besides rollgate, which must keep them.
			var before appsv1.Deployment
			if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: "app"}, &before); err != nil {
				t.Fatal(err)
			}
			if err := k8s.Delete(context.Background(), s.config()); err != nil {
				t.Fatal(err)
			}
			eventually(t, time.Minute, "the config is gone", func(ctx context.Context) (bool, string, error) {
				var c v1alpha1.RollingUpgradeConfig
				err := k8s.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: "app"}, &c)
				if apierrors.IsNotFound(err) {
					return true, "", nil
				}
				return false, fmt.Sprintf("finalizers %v", c.Finalizers), client.IgnoreNotFound(err)
			})
			d := waitImage(t, s, tc.wantImage)
			owners := map[string]bool{}
			for _, e := range d.ManagedFields {
				owners[e.Manager+" "+e.Subresource] = true
				if e.Manager == v1alpha1.FieldManager {
					t.Errorf("rollgate still manages fields of the workload: %s", e.FieldsV1.String())
				}
			}
			for _, e := range before.ManagedFields {
				if e.Manager != v1alpha1.FieldManager && !owners[e.Manager+" "+e.Subresource] {
					t.Errorf("releasing the workload dropped the fields of %s %s", e.Manager, e.Subresource)
				}
			}
			for _, k := range []string{v1alpha1.LastImageAnnotation, v1alpha1.LastUpdatedByAnnotation} {
				if _, ok := d.Annotations[k]; ok {
					t.Errorf("annotation %s left on the workload", k)
				}
			}
			// The GitOps tool applies Git's image, without force: no conflict with rollgate.
			apply := appsv1ac.Deployment("app", s.ns).WithSpec(appsv1ac.DeploymentSpec().WithTemplate(
				corev1ac.PodTemplateSpec().WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName("app").WithImage(img("1.0.1"))))))
			if err := k8s.Apply(context.Background(), apply, client.FieldOwner("gitops")); err != nil {
				t.Errorf("the GitOps tool cannot take the image back: %v", err)
			}
		})
	}
}

func waitImage(t *testing.T, s *scenario, want string) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	eventually(t, time.Minute, "the workload runs "+want, func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: "app"}, &d); err != nil {
			return false, err.Error(), nil
		}
		got := d.Spec.Template.Spec.Containers[0].Image
		return got == want, got, nil
	})
	return &d
}

// namespaceRemedy is the command docs/install.md gives for a namespace deleted while the manager
// was down, for the namespace NAMESPACE.
const namespaceRemedy = `kubectl get rollingupgradeconfigs -n NAMESPACE -o name |
  xargs -r kubectl patch -n NAMESPACE --type=merge -p '{"metadata":{"finalizers":null}}'`

// A namespace deleted while the manager is down waits on its configs' finalizer: it stays
// Terminating, the API server naming rollgate's finalizer. Either remedy docs/install.md gives lets
// it go: the manager back (the workload is gone with the namespace, so there is nothing to roll
// back), or the command that drops the finalizers.
func TestScenarioNamespaceDeletedWhileTheManagerIsDown(t *testing.T) {
	inNamespaceOnly(t)
	docs, err := os.ReadFile(filepath.Join(repoRoot, "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(docs), namespaceRemedy) {
		t.Errorf("docs/install.md does not give the remedy the test runs:\n%s", namespaceRemedy)
	}
	for _, tc := range []struct {
		name   string
		remedy func(t *testing.T, s *scenario)
	}{
		{name: "the manager comes back", remedy: func(t *testing.T, s *scenario) { s.start() }},
		{name: "the documented command", remedy: func(t *testing.T, s *scenario) {
			cmd := exec.Command("bash", "-c", strings.ReplaceAll(namespaceRemedy, "NAMESPACE", s.ns))
			cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+filepath.Dir(kubectlBin)+":"+os.Getenv("PATH"))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScenario(t, "nsdown")
			s.create(deployment(s.ns, "app", img("1.0.0"), 1), appVersion("1.0.0"), config())
			s.start()
			s.waitConfig(time.Minute, "the config holds its finalizer", func(c *v1alpha1.RollingUpgradeConfig) bool {
				return controllerutil.ContainsFinalizer(c, v1alpha1.Finalizer) && c.Status.CurrentVersion == "1.0.0"
			})
			s.kill()
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}}
			if err := k8s.Delete(context.Background(), ns); err != nil {
				t.Fatal(err)
			}
			eventually(t, 2*time.Minute, "the namespace waits on rollgate's finalizer", func(ctx context.Context) (bool, string, error) {
				if err := k8s.Get(ctx, client.ObjectKeyFromObject(ns), ns); err != nil {
					return false, "", err
				}
				for _, c := range ns.Status.Conditions {
					if c.Type == corev1.NamespaceFinalizersRemaining && c.Status == corev1.ConditionTrue && strings.Contains(c.Message, v1alpha1.Finalizer) {
						return true, "", nil
					}
				}
				return false, fmt.Sprintf("phase %s, conditions %v", ns.Status.Phase, ns.Status.Conditions), nil
			})
			tc.remedy(t, s)
			eventually(t, 2*time.Minute, "the namespace is gone", func(ctx context.Context) (bool, string, error) {
				err := k8s.Get(ctx, client.ObjectKeyFromObject(ns), ns)
				if apierrors.IsNotFound(err) {
					return true, "", nil
				}
				return false, fmt.Sprintf("phase %s, conditions %v", ns.Status.Phase, ns.Status.Conditions), err
			})
		})
	}
}
