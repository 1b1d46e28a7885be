package kube

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/kube/kubetest"
)

// newTestRecorder is a recorder over a fake API server whose event creates answer with fail's
// error (nil: created), and counts them.
func newTestRecorder(t *testing.T, fail func(n int64) error) (*EventRecorder, *fake.Clientset, *atomic.Int64) {
	clients := fake.NewClientset()
	var creates atomic.Int64
	clients.PrependReactor("create", "events", func(clienttesting.Action) (bool, runtime.Object, error) {
		if err := fail(creates.Add(1)); err != nil {
			return true, nil, err
		}
		return false, nil, nil
	})
	// A real clock: events are named by the nanosecond they are recorded at.
	r := NewEventRecorder(clients.EventsV1(), kubetest.NewScheme(t), clock.RealClock{}, "rollgate")
	r.Retry = time.Millisecond
	return r, clients, &creates
}

func testConfig() *v1alpha1.RollingUpgradeConfig {
	return &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "uid-web"}}
}

// start runs the recorder until the test ends, and waits until its workers have stopped.
func start(t *testing.T, r *EventRecorder) context.CancelFunc {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return cancel
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

func TestAnEventIsSentAsRecorded(t *testing.T) {
	r, clients, _ := newTestRecorder(t, func(int64) error { return nil })
	start(t, r)
	r.Eventf(testConfig(), nil, corev1.EventTypeWarning, v1alpha1.EventInvalidSpec, "Reconcile", "spec.%s: %v", "versionConstraint", "bad")
	waitFor(t, "the event created", func() bool {
		list, _ := clients.EventsV1().Events("shop").List(context.Background(), metav1.ListOptions{})
		for _, e := range list.Items {
			if e.Reason != v1alpha1.EventInvalidSpec || e.Type != corev1.EventTypeWarning || e.Note != "spec.versionConstraint: bad" ||
				e.Action != "Reconcile" || e.ReportingController != "rollgate" || e.Regarding.Kind != "RollingUpgradeConfig" ||
				e.Regarding.Name != "web" || e.Regarding.UID != "uid-web" || e.EventTime.IsZero() || e.Related != nil {
				t.Fatalf("event %+v", e)
			}
		}
		return len(list.Items) == 1
	})
}

// A failure that may pass (the API server away) is retried; one that cannot (the event refused,
// the namespace gone) is not.
func TestAnEventIsRetriedOnlyWhileItCanBeTaken(t *testing.T) {
	unavailable := apierrors.NewServiceUnavailable("starting")
	refused := apierrors.NewForbidden(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "x", nil)
	for _, tc := range []struct {
		name        string
		fail        func(n int64) error
		wantCreates int64
		wantSent    bool
	}{
		{"unavailable twice, then taken", func(n int64) error {
			if n <= 2 {
				return unavailable
			}
			return nil
		}, 3, true},
		{"refused", func(int64) error { return refused }, 1, false},
		{"unavailable for ever: given up after the last try", func(int64) error { return unavailable }, eventTries, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, clients, creates := newTestRecorder(t, tc.fail)
			start(t, r)
			r.Eventf(testConfig(), nil, corev1.EventTypeNormal, v1alpha1.EventUpdateStarting, "Reconcile", "rolling out")
			waitFor(t, "the creates", func() bool { return creates.Load() >= tc.wantCreates })
			time.Sleep(50 * time.Millisecond) // room for a create too many
			list, _ := clients.EventsV1().Events("shop").List(context.Background(), metav1.ListOptions{})
			if creates.Load() != tc.wantCreates || (len(list.Items) == 1) != tc.wantSent {
				t.Errorf("%d creates, %d events; want %d, sent %v", creates.Load(), len(list.Items), tc.wantCreates, tc.wantSent)
			}
		})
	}
}

// The queue is bounded: what does not fit is dropped, not waited for; what is queued when the
// manager stops is still sent.
func TestTheQueueIsBoundedAndFlushedOnStop(t *testing.T) {
	r, clients, _ := newTestRecorder(t, func(int64) error { return nil })
	r.Flush = time.Minute // a fake API server takes seconds for a thousand events
	for range eventQueue + 5 {
		r.Eventf(testConfig(), nil, corev1.EventTypeNormal, v1alpha1.EventVersionAvailable, "Reconcile", "1.1.0 is available")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // stopped before it started: the queue is flushed all the same
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	list, _ := clients.EventsV1().Events("shop").List(context.Background(), metav1.ListOptions{})
	if len(list.Items) != eventQueue {
		t.Errorf("%d events sent, want the %d that fit the queue", len(list.Items), eventQueue)
	}
}

// The manager stops its reconcilers after the recorder: what they record then is still sent.
func TestAnEventRecordedWhileTheManagerStopsIsSent(t *testing.T) {
	r, clients, _ := newTestRecorder(t, func(int64) error { return nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Start(ctx); close(done) }()
	cancel()
	<-done
	r.Eventf(testConfig(), nil, corev1.EventTypeWarning, v1alpha1.EventUpdateRollback, "Reconcile", "1.2.0 failed")
	list, _ := clients.EventsV1().Events("shop").List(context.Background(), metav1.ListOptions{})
	if len(list.Items) != 1 {
		t.Errorf("%d events sent after the recorder stopped, want 1", len(list.Items))
	}
}

// The version an event is about is an annotation of the Event in the cluster, and the Event the
// cluster gets is the one handed to the tee (notifications): one name, one message.
func TestAnAnnotatedEventIsTeedAsSent(t *testing.T) {
	r, clients, _ := newTestRecorder(t, func(int64) error { return nil })
	teed := make(chan *eventsv1.Event, 1)
	r.Tee = func(e *eventsv1.Event) { teed <- e }
	start(t, r)
	r.AnnotatedEventf(testConfig(), nil, map[string]string{v1alpha1.RevisionAnnotation: "1.2.0"}, corev1.EventTypeWarning,
		v1alpha1.EventUpdateRollback, "Reconcile", "%s failed", "1.2.0")
	e := <-teed
	waitFor(t, "the event created", func() bool {
		got, err := clients.EventsV1().Events("shop").Get(context.Background(), e.Name, metav1.GetOptions{})
		return err == nil && got.Annotations[v1alpha1.RevisionAnnotation] == "1.2.0" && got.Note == e.Note && got.Note == "1.2.0 failed"
	})
}
