//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/internal/health"
)

// kubectl runs the cluster's kubectl against the cluster under test and returns its output.
func kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(kubectlBin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Dir = repoRoot
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), err
}

// mustKubectl is kubectl that fails the test on error.
func mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := kubectl(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// newNamespace creates a namespace for one test and deletes it when the test ends.
func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + rand.String(5)}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	return ns.Name
}

// eventually polls cond every 250ms until it is true or the timeout passes; the last reason cond
// gave is the failure message.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true,
		func(ctx context.Context) (bool, error) {
			ok, why, err := cond(ctx)
			last = why
			return ok, err
		})
	if err != nil {
		t.Fatalf("%s: not reached within %s (%v); last seen: %s", what, timeout, err, last)
	}
}

// deployment is a Deployment of one container named "app" running image.
func deployment(ns, name, image string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
			},
		},
	}
}

// rolledOut says whether every replica of the Deployment runs its current template and is ready.
func rolledOut(d *appsv1.Deployment) (bool, string) {
	want := ptr.Deref(d.Spec.Replicas, 1)
	s := d.Status
	why := fmt.Sprintf("generation %d observed %d, replicas %d updated %d ready %d available %d (want %d)",
		d.Generation, s.ObservedGeneration, s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas, want)
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.ReadyReplicas == want &&
		s.AvailableReplicas == want && s.Replicas == want, why
}

// waitRolledOut waits until the Deployment has rolled out its current template.
func waitRolledOut(t *testing.T, key client.ObjectKey, timeout time.Duration) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	eventually(t, timeout, "Deployment "+key.String()+" rolled out", func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, key, &d); err != nil {
			return false, err.Error(), nil
		}
		ok, why := rolledOut(&d)
		return ok, why, nil
	})
	return &d
}

// podsOf lists the pods of a Deployment's selector.
func podsOf(ctx context.Context, d *appsv1.Deployment) ([]corev1.Pod, error) {
	var pods corev1.PodList
	err := k8s.List(ctx, &pods, client.InNamespace(d.Namespace), client.MatchingLabels(d.Spec.Selector.MatchLabels))
	return pods.Items, err
}

// isReady: the pod's Ready condition is True.
func isReady(p *corev1.Pod) bool {
	c := health.ReadyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

// inNamespaceOnly marks a test that changes nothing outside its own namespaces: its kwok knobs are
// its namespace's (neverReady, readyDelay), its managers watch only its namespace, it restarts no
// control-plane process, and a cluster-scoped object it creates (an admission policy) is bound to
// its namespace. It runs in parallel with the other such tests, once the tests that do change the
// cluster are done.
func inNamespaceOnly(t *testing.T) {
	t.Parallel()
}

// runProcess starts cmd with its output in a log of the test's, and kills it when the test ends,
// showing the log if the test failed.
func runProcess(t *testing.T, name string, cmd *exec.Cmd) {
	t.Helper()
	log, err := os.CreateTemp(t.TempDir(), name+"-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			out, _ := os.ReadFile(log.Name())
			t.Logf("%s log:\n%s", name, out)
		}
	})
}
