package notify

import (
	"context"
	"encoding/json"
	"net/http"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Flux posts notices to Flux's notification-controller (its event receiver, --events-addr), as
// Flux's own controllers do, so every Provider of Flux takes them unchanged. Flux's recorder
// (fluxcd/pkg/runtime/events) is not used: it posts within the reconcile and retries there, and
// keeps its failures to its log, where the queue bounds what a receiver that is away costs and
// counts what it never got.
type Flux struct{ p *poster }

// NewFlux posts to the notification-controller at addr, e.g.
// http://notification-controller.flux-system.svc.cluster.local./
func NewFlux(addr string, transport http.RoundTripper) (*Flux, error) {
	p, err := newPoster(addr, transport)
	if err != nil {
		return nil, err
	}
	p.tooManyTaken = true
	return &Flux{p: p}, nil
}

// Send posts n as a Flux event.
func (f *Flux) Send(ctx context.Context, n Notice) error {
	body, err := json.Marshal(FluxEvent(n))
	if err != nil {
		return &RefusedError{Why: err.Error()}
	}
	return f.p.post(ctx, body, http.Header{})
}

// FluxEvent is n as Flux's event type. A Warning is of severity error, anything else info. The
// version is metadata under the key of the object's API group (rollgate.dev/revision): the
// notification-controller keeps only the keys of the object's group, without the group, so a
// Provider reads it as the event's revision.
func FluxEvent(n Notice) eventv1.Event {
	severity := eventv1.EventSeverityInfo
	if n.Type == corev1.EventTypeWarning {
		severity = eventv1.EventSeverityError
	}
	var meta map[string]string
	if n.Version != "" {
		group := n.Object.GroupVersionKind().Group
		meta = map[string]string{group + "/" + eventv1.MetaRevisionKey: n.Version}
	}
	return eventv1.Event{InvolvedObject: n.Object, Severity: severity, Timestamp: metav1.NewTime(n.Time),
		Message: n.Message, Reason: n.Reason, Metadata: meta, ReportingController: n.Controller, ReportingInstance: n.Instance}
}
