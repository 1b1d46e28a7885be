package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/kube/kubetest"
	"github.com/rollgate/rollgate/internal/rollout"
)

// bindWorld runs the rollout engine through Reconcile against the fake client, and plays the
// renderer, the Deployment controller and the kubelet in between: the Deployment runs what
// rollout.RenderImage says, and is healthy unless its image is broken (then one of its two pods is
// not Ready). failAt makes the failAt-th
// write of the config (metadata or status) fail once.
type bindWorld struct {
	t      *testing.T
	c      client.Client
	r      *RollingUpgradeConfigReconciler
	rec    *events.FakeRecorder
	clock  *clocktesting.FakePassiveClock
	broken map[string]bool
	writes int
	engine bool // the engine is reconciling: its writes are counted (and one may fail)
}

var errInjected = errors.New("injected write failure")

func newBindWorld(t *testing.T, failAt int) *bindWorld {
	w := &bindWorld{t: t, broken: map[string]bool{}, rec: events.NewFakeRecorder(1000),
		clock: clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))}
	fail := func() error {
		if !w.engine {
			return nil
		}
		w.writes++
		if w.writes == failAt {
			return errInjected
		}
		return nil
	}
	objs := kubetest.Objects()
	objs[2].(*v1alpha1.RollingUpgradeConfig).Spec.MaxRollbacks = 2
	w.c = fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.RollingUpgradeConfig{}, &appsv1.Deployment{}, &corev1.Pod{}).
		WithIndex(&v1alpha1.RollingUpgradeConfig{}, kube.IndexTarget, kube.ConfigIndexes[kube.IndexTarget]).
		WithInterceptorFuncs(interceptor.Funcs{
			Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				if _, ok := obj.(*v1alpha1.RollingUpgradeConfig); ok {
					if err := fail(); err != nil {
						return err
					}
				}
				return cl.Patch(ctx, obj, patch, opts...)
			},
			SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				if _, ok := obj.(*v1alpha1.RollingUpgradeConfig); ok {
					if err := fail(); err != nil {
						return err
					}
				}
				return cl.SubResource(sub).Update(ctx, obj, opts...)
			},
		}).Build()
	w.r = &RollingUpgradeConfigReconciler{Client: w.c, APIReader: w.c, Recorder: w.rec, Clock: w.clock}
	return w
}

func (w *bindWorld) config() *v1alpha1.RollingUpgradeConfig {
	var ruc v1alpha1.RollingUpgradeConfig
	if err := w.c.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: "web"}, &ruc); err != nil {
		w.t.Fatal(err)
	}
	return &ruc
}

// step reconciles once (an injected failure is just a failed reconcile), plays the world, and
// lets 20 seconds pass.
func (w *bindWorld) step() {
	ctx := context.Background()
	w.engine = true
	_, err := w.r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "shop", Name: "web"}})
	w.engine = false
	if err != nil && !errors.Is(err, errInjected) {
		w.t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, &d); err != nil {
		w.t.Fatal(err)
	}
	if img, _ := rollout.RenderImage(w.config(), w.clock.Now()); img != "" && img != d.Spec.Template.Spec.Containers[0].Image {
		d.Spec.Template.Spec.Containers[0].Image = img
		if err := w.c.Update(ctx, &d); err != nil {
			w.t.Fatal(err)
		}
	}
	ready := int32(2)
	if w.broken[d.Spec.Template.Spec.Containers[0].Image] {
		ready = 1
	}
	d.Status.ObservedGeneration, d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = d.Generation, 2, 2, ready, ready
	if err := w.c.Status().Update(ctx, &d); err != nil {
		w.t.Fatal(err)
	}
	w.playPods(&d, ready)
	w.clock.SetTime(w.clock.Now().Add(20 * time.Second))
}

// playPods keeps the Deployment's two pods on its template's image, ready of them Ready: a new
// image replaces both, created and started now.
func (w *bindWorld) playPods(d *appsv1.Deployment, ready int32) {
	ctx := context.Background()
	img := d.Spec.Template.Spec.Containers[0].Image
	for i := range int32(2) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: fmt.Sprintf("%s-%d", d.Name, i)}}
		err := w.c.Get(ctx, client.ObjectKeyFromObject(p), p)
		if err == nil && p.Spec.Containers[0].Image != img {
			if err := w.c.Delete(ctx, p); err != nil {
				w.t.Fatal(err)
			}
			p = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: p.Name}}
			err = apierrors.NewNotFound(corev1.Resource("pods"), p.Name)
		}
		if apierrors.IsNotFound(err) {
			p.Labels, p.CreationTimestamp = d.Spec.Template.Labels, metav1.NewTime(w.clock.Now())
			p.Spec = *d.Spec.Template.Spec.DeepCopy()
			if err := w.c.Create(ctx, p); err != nil {
				w.t.Fatal(err)
			}
		} else if err != nil {
			w.t.Fatal(err)
		}
		status := corev1.ConditionFalse
		if i < ready {
			status = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
		p.Status.StartTime = &p.CreationTimestamp
		if err := w.c.Status().Update(ctx, p); err != nil {
			w.t.Fatal(err)
		}
	}
}

func (w *bindWorld) announce(version string, broken bool) {
	var av v1alpha1.ApplicationVersion
	ctx := context.Background()
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, &av); err != nil {
		w.t.Fatal(err)
	}
	av.Spec.Version = version
	if err := w.c.Update(ctx, &av); err != nil {
		w.t.Fatal(err)
	}
	w.broken["ghcr.io/acme/web:"+version] = broken
}

// setPaused pauses or resumes the Deployment, as a person would.
func (w *bindWorld) setPaused(paused bool) {
	var d appsv1.Deployment
	ctx := context.Background()
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, &d); err != nil {
		w.t.Fatal(err)
	}
	d.Spec.Paused = paused
	if err := w.c.Update(ctx, &d); err != nil {
		w.t.Fatal(err)
	}
}

// setTarget sets the target-image annotation, as a person would.
func (w *bindWorld) setTarget(image string) {
	c := w.config()
	c.Annotations[v1alpha1.TargetImageAnnotation] = image
	if err := w.c.Update(context.Background(), c); err != nil {
		w.t.Fatal(err)
	}
}

// until steps until cond holds of the config, idle.
func (w *bindWorld) until(what string, cond func(*v1alpha1.RollingUpgradeConfig) bool) {
	w.untilAny(what, func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Annotations[v1alpha1.UpdatePhaseAnnotation] == "" && cond(c)
	})
}

// untilAny steps until cond holds of the config.
func (w *bindWorld) untilAny(what string, cond func(*v1alpha1.RollingUpgradeConfig) bool) {
	for range 100 {
		w.step()
		if cond(w.config()) {
			return
		}
	}
	w.t.Fatalf("%s: not reached; config %+v", what, w.config().Status)
}

// run plays 1.1.0 (healthy); 1.1.1 (slow), whose check pauses while the Deployment is paused and is
// then replaced by hand with 1.1.2 (healthy); 1.2.0 (broken) and 1.2.1 (broken, opens the circuit at
// maxRollbacks 2).
func (w *bindWorld) run() {
	w.announce("1.1.0", false)
	w.until("1.1.0 completed", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.1.0" })
	w.announce("1.1.1", true)
	w.untilAny("1.1.1 in its check", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Annotations[v1alpha1.UpdatePhaseAnnotation] == rollout.StepHealthCheck && c.Status.TargetVersion == "1.1.1"
	})
	w.setPaused(true)
	w.untilAny("the check paused", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Annotations[v1alpha1.CheckPausedAnnotation] != ""
	})
	w.step()
	w.setPaused(false)
	w.untilAny("the check resumed", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Annotations[v1alpha1.CheckPausedAnnotation] == ""
	})
	w.setTarget("ghcr.io/acme/web:1.1.2")
	w.until("1.1.2 completed", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.1.2" })
	w.announce("1.2.0", true)
	w.until("1.2.0 rolled back", func(c *v1alpha1.RollingUpgradeConfig) bool { return len(c.Status.FailedVersions) == 1 })
	w.announce("1.2.1", true)
	w.until("1.2.1 rolled back, circuit open", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CircuitOpen })
}

func (w *bindWorld) eventCounts() map[string]int {
	n := map[string]int{}
	for {
		select {
		case e := <-w.rec.Events:
			n[strings.Fields(e)[1]]++
		default:
			return n
		}
	}
}

// TestVerdictsBindAcrossFailedWrites fails each write of the config once, at every write boundary
// of a run through starts, successes, a paused and resumed check, a target changed by hand, two
// rollbacks and the circuit opening: no history entry is lost or doubled, no version ends both
// current and failed, and every event goes out exactly once.
func TestVerdictsBindAcrossFailedWrites(t *testing.T) {
	clean := newBindWorld(t, 0)
	clean.run()
	total := clean.writes
	if total < 10 {
		t.Fatalf("the run made only %d writes", total)
	}
	wantEvents := clean.eventCounts()
	for reason, n := range map[string]int{"VersionAvailable": 4, "UpdateStarting": 5, "UpdateComplete": 2, "UpdateAbandoned": 1,
		"Paused": 1, "UpdateRollback": 2, "RollbackComplete": 2, "CircuitOpen": 1} {
		if wantEvents[reason] != n {
			t.Errorf("without failures: %d %s events, want %d (all: %v)", wantEvents[reason], reason, n, wantEvents)
		}
	}
	wantHistory := "1.1.0:Healthy,1.1.1:Abandoned,1.1.2:Healthy,1.2.0:RolledBack,1.2.1:RolledBack"
	for k := 1; k <= total; k++ {
		t.Run(fmt.Sprintf("write %d of %d fails once", k, total), func(t *testing.T) {
			w := newBindWorld(t, k)
			w.run()
			st := w.config().Status
			var h []string
			for _, e := range st.VersionHistory {
				h = append(h, e.Version+":"+string(e.Status))
			}
			if got := strings.Join(h, ","); got != wantHistory {
				t.Errorf("history = %s, want %s", got, wantHistory)
			}
			if st.CurrentVersion != "1.1.2" || strings.Join(st.FailedVersions, ",") != "1.2.0,1.2.1" || st.RollbackCount != 2 {
				t.Errorf("current %s, failed %v, rollbacks %d", st.CurrentVersion, st.FailedVersions, st.RollbackCount)
			}
			got := w.eventCounts()
			for reason, n := range wantEvents {
				if got[reason] != n {
					t.Errorf("%d %s events, want %d", got[reason], reason, n)
				}
			}
		})
	}
}
