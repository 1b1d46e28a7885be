// Package notify passes the events rollgate records on to receivers outside the cluster: Flux's
// notification-controller, and a webhook of the cluster admin's. Each receiver has its own bounded
// queue and one sender, so a receiver that is slow or down costs bounded memory and holds up no
// reconcile, and what it is not sent is counted.
package notify

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// Notice is one event as the receivers get it.
type Notice struct {
	// ID names the Kubernetes Event it came from: every try of one notice carries it, and a
	// receiver finds the event in the cluster by it.
	ID   string
	Time time.Time
	// Object is what the event is about (a RollingUpgradeConfig, a GitWriteBack, a StatefulSet).
	Object corev1.ObjectReference
	// Type is Normal or Warning.
	Type, Reason, Message string
	// Version is the version the event is about, where it is about one.
	Version string
	// Controller and Instance say who recorded it.
	Controller, Instance string
}

// FromEvent is the notice of an event as recorded (events.k8s.io/v1).
func FromEvent(e *eventsv1.Event) Notice {
	return Notice{
		ID: e.Name, Time: e.EventTime.Time, Object: e.Regarding,
		Type: e.Type, Reason: e.Reason, Message: e.Note, Version: e.Annotations[v1alpha1.RevisionAnnotation],
		Controller: e.ReportingController, Instance: e.ReportingInstance,
	}
}

// Fanout offers each recorded event to every queue (kube.EventRecorder's Tee).
type Fanout []*Queue

// Tee offers e to the queues; it never blocks.
func (f Fanout) Tee(e *eventsv1.Event) {
	n := FromEvent(e)
	for _, q := range f {
		q.Offer(n)
	}
}
