//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/internal/health"
)

// These tests prove the cluster itself: the controller-manager rolls Deployments, the scheduler
// places pods on kwok nodes, and the kwok stages make pods Ready — or, on purpose, not.

func TestDeploymentMovesToNewImageAndBecomesReady(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "rollout")
	d := deployment(ns, "web", "e2e.local/demo/web:1.0.0", 3)
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, client.ObjectKeyFromObject(d), time.Minute)

	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Template.Spec.Containers[0].Image = "e2e.local/demo/web:1.1.0"
	if err := k8s.Patch(ctx, d, patch); err != nil {
		t.Fatal(err)
	}
	d = waitRolledOut(t, client.ObjectKeyFromObject(d), time.Minute)

	eventually(t, 30*time.Second, "only new pods remain", func(ctx context.Context) (bool, string, error) {
		pods, err := podsOf(ctx, d)
		if err != nil {
			return false, "", err
		}
		if len(pods) != 3 {
			return false, fmt.Sprintf("%d pods", len(pods)), nil
		}
		for _, p := range pods {
			if img := p.Spec.Containers[0].Image; img != "e2e.local/demo/web:1.1.0" {
				return false, p.Name + " runs " + img, nil
			}
			if !isReady(&p) || p.Spec.NodeName == "" {
				return false, p.Name + " is not Ready on a node", nil
			}
		}
		return true, "", nil
	})
}

// TestNeverReadyImageDoesNotBecomeReady: `make never-ready IMAGES=...` names images for the whole
// cluster.
func TestNeverReadyImageDoesNotBecomeReady(t *testing.T) {
	ctx := context.Background()
	const broken = "e2e.local/demo/broken:1.2.0"
	clusterScript(t, "never-ready", broken)
	t.Cleanup(func() { setKnobs(t, func() {}) }) // the list of the tests' own entries again
	ns := newNamespace(t, "never-ready")
	d := deployment(ns, "web", "e2e.local/demo/broken:1.0.0", 3)
	// A short progress deadline turns "never Ready" into a condition the test can wait for.
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](10)
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, client.ObjectKeyFromObject(d), time.Minute)

	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Template.Spec.Containers[0].Image = broken
	if err := k8s.Patch(ctx, d, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "ProgressDeadlineExceeded", func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return false, "", err
		}
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentProgressing {
				return c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded", c.Reason, nil
			}
		}
		return false, "no Progressing condition", nil
	})

	pods, err := podsOf(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	var brokenPods, readyOld int
	for _, p := range pods {
		ready := isReady(&p)
		switch p.Spec.Containers[0].Image {
		case broken:
			brokenPods++
			if ready || p.Status.Phase != corev1.PodRunning {
				t.Errorf("pod %s of the never-ready image: phase %s, ready %v", p.Name, p.Status.Phase, ready)
			}
		default:
			if ready {
				readyOld++
			}
		}
	}
	if brokenPods == 0 {
		t.Error("no pod of the never-ready image was created")
	}
	// The rolling update stops at maxUnavailable (25% of 3 rounds down to 0): the old pods keep serving.
	if readyOld != 3 || d.Status.ReadyReplicas != 3 || d.Status.UpdatedReplicas == 0 {
		t.Errorf("old ready pods %d, status %+v", readyOld, d.Status)
	}
}

// TestReadyDelayHoldsPodsBack: `make ready-delay MS=...` sets the delay of every pod.
func TestReadyDelayHoldsPodsBack(t *testing.T) {
	ctx := context.Background()
	const delay = 3 * time.Second
	before := strings.TrimSpace(mustKubectl(t, "get", "stages.kwok.x-k8s.io", "pod-ready", "-o", "jsonpath={.spec.delay.durationMilliseconds}"))
	clusterScript(t, "ready-delay", strconv.FormatInt(delay.Milliseconds(), 10))
	t.Cleanup(func() { clusterScript(t, "ready-delay", before) })
	ns := newNamespace(t, "ready-delay")
	d := deployment(ns, "web", "e2e.local/demo/slow:1.0.0", 2)
	if err := k8s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	d = waitRolledOut(t, client.ObjectKeyFromObject(d), time.Minute)
	pods, err := podsOf(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		c := health.ReadyCondition(&p)
		if c == nil {
			t.Fatalf("pod %s has no Ready condition", p.Name)
		}
		// Timestamps have whole seconds: allow one second of rounding.
		if took := c.LastTransitionTime.Sub(p.CreationTimestamp.Time); took < delay-time.Second {
			t.Errorf("pod %s was Ready %s after creation, want at least %s", p.Name, took, delay)
		}
	}
}

// TestKnobsOfANamespaceStayInIt: a never-ready image and a ready delay set for one namespace change
// the pods of that namespace only, so that tests in parallel do not see each other's.
func TestKnobsOfANamespaceStayInIt(t *testing.T) {
	inNamespaceOnly(t)
	const broken, fine = "e2e.local/demo/knobs:1.2.0", "e2e.local/demo/knobs:1.0.0"
	mine, other := newNamespace(t, "knobs"), newNamespace(t, "knobs-other")
	neverReady(t, mine, broken)
	readyDelay(t, mine, (5 * time.Minute).Milliseconds())
	slow, stuck := deployment(mine, "slow", fine, 1), deployment(mine, "stuck", broken, 1)
	create(t, slow, stuck)
	// In the other namespace the same broken image becomes Ready, without the delay.
	web := deployment(other, "web", broken, 1)
	create(t, web)
	waitRolledOut(t, client.ObjectKeyFromObject(web), time.Minute)

	eventually(t, time.Minute, "the broken image running, never Ready, in its namespace", func(ctx context.Context) (bool, string, error) {
		pods, err := podsOf(ctx, stuck)
		if err != nil || len(pods) != 1 {
			return false, fmt.Sprintf("%d pods", len(pods)), err
		}
		p, ready := pods[0], isReady(&pods[0])
		return p.Status.Phase == corev1.PodRunning && !ready, fmt.Sprintf("phase %s, ready %v", p.Status.Phase, ready), nil
	})
	eventually(t, time.Minute, "a pod of the delayed Deployment", func(ctx context.Context) (bool, string, error) {
		pods, err := podsOf(ctx, slow)
		if err != nil || len(pods) != 1 {
			return false, fmt.Sprintf("%d pods", len(pods)), err
		}
		if isReady(&pods[0]) {
			t.Errorf("pod %s is Ready: the 5-minute delay of its namespace did not hold it back", pods[0].Name)
		}
		return true, "", nil
	})
}
