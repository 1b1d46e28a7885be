package kube

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	eventsclient "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/client-go/tools/reference"
	"k8s.io/utils/clock"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rollgate/rollgate/internal/rollout"
)

// EventRecorder sends the reconcilers' events (events.k8s.io/v1) and keeps none once sent.
// client-go's recorder keeps each event it sent for six minutes, to merge repeats into a series;
// rollgate emits an event on a transition only, never the same twice, so that cache is all cost:
// 5,000 rollouts in one window left 15,000 events and 11 MB in it. Events wait in a bounded
// queue (a full one drops the newest, as client-go's does), and a few workers send them, each
// retried while the API server may take it later.
type EventRecorder struct {
	Client eventsclient.EventsGetter
	Scheme *runtime.Scheme
	Clock  clock.PassiveClock
	// Controller names the reporting controller; the instance is it and the host name.
	Controller string
	// Retry is the wait before a failed event is sent again, jittered; 10s by default.
	Retry time.Duration
	// Flush bounds the sending of what is queued when the manager stops; 5s by default.
	Flush time.Duration
	// Tee, if set, is handed each event as it is recorded, to pass on (notifications); it must not
	// block, nor change the event.
	Tee func(*eventsv1.Event)

	queue    chan *eventsv1.Event
	instance string
	mu       sync.RWMutex
	// stopped: Start has returned, or is sending what is left in the queue. The manager stops its
	// reconcilers after the recorder (controller-runtime stops the runnables that need no leader
	// first), so what they record then is sent by Eventf itself.
	stopped bool
}

// eventLog is the recorder's logger (the manager's, once it has set it: logf.Log delegates).
var eventLog = logf.Log.WithName("events")

const (
	eventQueue   = 1000 // client-go's maxQueuedEvents
	eventWorkers = 4
	eventTries   = 12 // client-go's maxTriesPerEvent
)

// NewEventRecorder is a recorder for controller; Start sends what it records.
func NewEventRecorder(client eventsclient.EventsGetter, scheme *runtime.Scheme, c clock.PassiveClock, controller string) *EventRecorder {
	host, _ := os.Hostname()
	return &EventRecorder{Client: client, Scheme: scheme, Clock: c, Controller: controller, Retry: 10 * time.Second,
		Flush: 5 * time.Second, queue: make(chan *eventsv1.Event, eventQueue), instance: controller + "-" + host}
}

// Eventf records an event about regarding (and related, if not nil). It does not block, but while
// the manager stops: it then sends the event itself, for at most Flush.
func (r *EventRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.AnnotatedEventf(regarding, related, nil, eventtype, reason, action, note, args...)
}

// AnnotatedEventf is Eventf with annotations on the event (v1alpha1.RevisionAnnotation).
func (r *EventRecorder) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...any) {
	ref, err := reference.GetReference(r.Scheme, regarding)
	if err != nil {
		eventLog.Error(err, "no reference to the object of an event", "reason", reason)
		return
	}
	now := r.Clock.Now()
	e := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: util.GenerateEventName(ref.Name, now.UnixNano()), Namespace: ref.Namespace,
			Annotations: annotations},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: r.Controller, ReportingInstance: r.instance,
		Action: action, Reason: reason, Type: eventtype, Regarding: *ref,
		Note: rollout.Bounded(fmt.Sprintf(note, args...)),
	}
	if e.Namespace == "" {
		e.Namespace = metav1.NamespaceDefault
	}
	if related != nil {
		if e.Related, err = reference.GetReference(r.Scheme, related); err != nil {
			eventLog.Error(err, "no reference to the related object of an event", "reason", reason)
			return
		}
	}
	if r.Tee != nil {
		r.Tee(e)
	}
	r.mu.RLock()
	if !r.stopped {
		select {
		case r.queue <- e:
		default:
			eventLog.Info("event queue full, event dropped", "object", ref.Namespace+"/"+ref.Name, "reason", reason)
		}
		r.mu.RUnlock()
		return
	}
	r.mu.RUnlock()
	ctx, cancel := context.WithTimeout(context.Background(), r.Flush)
	defer cancel()
	r.send(ctx, e)
}

// Start sends the recorded events until ctx is done (a manager.Runnable), and then what is still
// queued, for at most Flush more.
func (r *EventRecorder) Start(ctx context.Context) error {
	sendCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	var workers sync.WaitGroup
	for range eventWorkers {
		workers.Go(func() {
			// Until the queue is closed and empty: what was queued before the stop is sent too.
			for e := range r.queue {
				r.send(sendCtx, e)
			}
		})
	}
	<-ctx.Done()
	r.mu.Lock()
	r.stopped = true // nothing is queued from now on
	close(r.queue)
	r.mu.Unlock()
	stop := time.AfterFunc(r.Flush, cancel)
	defer stop.Stop()
	workers.Wait()
	return nil
}

// NeedLeaderElection: a manager that does not lead reconciles nothing, and records nothing.
func (r *EventRecorder) NeedLeaderElection() bool { return false }

// send creates the event, and tries again while the API server may take it later.
func (r *EventRecorder) send(ctx context.Context, e *eventsv1.Event) {
	for try := 1; ; try++ {
		_, err := r.Client.Events(e.Namespace).Create(ctx, e, metav1.CreateOptions{})
		switch {
		case err == nil, apierrors.IsAlreadyExists(err):
			return
		case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsForbidden(err), apierrors.IsNotFound(err),
			try == eventTries:
			// It will never be taken (a namespace that is terminating refuses new events), or
			// the API server has been away too long.
			eventLog.Error(err, "event not recorded", "object", e.Regarding.Namespace+"/"+e.Regarding.Name,
				"reason", e.Reason, "tries", try)
			return
		}
		select {
		case <-ctx.Done():
			eventLog.Error(err, "event not recorded: the manager stopped", "object",
				e.Regarding.Namespace+"/"+e.Regarding.Name, "reason", e.Reason, "tries", try)
			return
		case <-time.After(wait.Jitter(r.Retry, 0.25)):
		}
	}
}

// AnnotatedRecorder records events with annotations too; the engine annotates each of its events
// with the version it is about when its recorder is one.
type AnnotatedRecorder interface {
	events.EventRecorder
	AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...any)
}

// The reconcilers take client-go's recorder interface.
var _ AnnotatedRecorder = (*EventRecorder)(nil)
