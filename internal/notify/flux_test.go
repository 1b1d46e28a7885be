package notify

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What the notification-controller gets decodes strictly into Flux's event type, with a severity,
// the object, and the version under the object's group (the controller keeps only those keys). A
// 429, Flux's answer to a duplicate, counts as taken.
func TestAFluxEventIsWhatTheNotificationControllerReads(t *testing.T) {
	seen := make(chan eventv1.Event, 2)
	answers := []int{http.StatusAccepted, http.StatusTooManyRequests}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var e eventv1.Event
		dec := json.NewDecoder(req.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			t.Errorf("decoding the event: %v", err)
		}
		seen <- e
		w.WriteHeader(answers[len(seen)-1])
	}))
	defer srv.Close()
	f, err := NewFlux(srv.URL, http.DefaultTransport)
	if err != nil {
		t.Fatal(err)
	}
	n := notice("web.1")
	n.Controller, n.Instance = "rollgate", "rollgate-pod-1"
	for range 2 {
		if err := f.Send(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
	want := eventv1.Event{InvolvedObject: n.Object, Severity: eventv1.EventSeverityError, Timestamp: metav1.NewTime(n.Time),
		Message: "rolled back web.1", Reason: "UpdateRollback", Metadata: map[string]string{"rollgate.dev/revision": "1.2.0"},
		ReportingController: "rollgate", ReportingInstance: "rollgate-pod-1"}
	got := <-seen
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b metav1.Time) bool { return a.Unix() == b.Unix() })); diff != "" {
		t.Errorf("event (-want +got):\n%s", diff)
	}

	normal := notice("web.2")
	normal.Type, normal.Version = corev1.EventTypeNormal, ""
	if e := FluxEvent(normal); e.Severity != eventv1.EventSeverityInfo || e.Metadata != nil {
		t.Errorf("a Normal event about no version: severity %s, metadata %v", e.Severity, e.Metadata)
	}
}
