//go:build e2e

package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// fluxReceiver plays the event receiver of Flux's notification-controller: it decodes each request
// strictly into Flux's own event type and refuses (400), as the controller would, an event without
// its involved object, a severity it knows, a reason, a message or a reporting controller, and
// metadata under a key other than the object's API group.
type fluxReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	events  []eventv1.Event
	refused []string
}

func newFluxReceiver(t *testing.T) *fluxReceiver {
	r := &fluxReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var e eventv1.Event
		dec := json.NewDecoder(io.LimitReader(req.Body, 1<<20))
		dec.DisallowUnknownFields()
		err := dec.Decode(&e)
		if err == nil {
			err = fluxWouldRefuse(e)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if err != nil {
			r.refused = append(r.refused, err.Error())
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		// The controller keeps the metadata of the object's group, without the group.
		meta := map[string]string{}
		for k, v := range e.Metadata {
			meta[strings.TrimPrefix(k, e.InvolvedObject.GroupVersionKind().Group+"/")] = v
		}
		e.Metadata = meta
		r.events = append(r.events, e)
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(r.Close)
	return r
}

func fluxWouldRefuse(e eventv1.Event) error {
	o := e.InvolvedObject
	switch {
	case o.Kind == "" || o.Name == "" || o.Namespace == "" || o.APIVersion == "":
		return fmt.Errorf("involved object incomplete: %+v", o)
	case e.Severity != eventv1.EventSeverityInfo && e.Severity != eventv1.EventSeverityError:
		return fmt.Errorf("severity %q", e.Severity)
	case e.Reason == "" || e.Message == "" || e.ReportingController == "" || e.Timestamp.IsZero():
		return fmt.Errorf("reason %q, message %q, controller %q, time %v", e.Reason, e.Message, e.ReportingController, e.Timestamp)
	}
	for k := range e.Metadata {
		if !strings.HasPrefix(k, o.GroupVersionKind().Group+"/") {
			return fmt.Errorf("metadata key %q is not of the object's group: the controller drops it", k)
		}
	}
	return nil
}

func (r *fluxReceiver) got() ([]eventv1.Event, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events), slices.Clone(r.refused)
}

// hookPayload is what the test reads of a webhook's body.
type hookPayload struct {
	ID, Type, Reason, Message, Version string
	Object                             struct{ Kind, Namespace, Name string }
}

// hookReceiver is the admin's webhook: it answers its first failFirst requests with 503, checks
// each signature with the shared key, and keeps what it took.
type hookReceiver struct {
	*httptest.Server
	mu        sync.Mutex
	requests  int
	badSigned int
	took      []hookPayload
}

func newHookReceiver(t *testing.T, key string, failFirst int) *hookReceiver {
	r := &hookReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		mac := hmac.New(sha256.New, []byte(key))
		mac.Write(body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.requests++
		if r.requests <= failFirst {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if !hmac.Equal([]byte(req.Header.Get("X-Rollgate-Signature-256")), []byte("sha256="+hex.EncodeToString(mac.Sum(nil)))) {
			r.badSigned++
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var p hookPayload
		if err := json.Unmarshal(body, &p); err != nil || p.ID != req.Header.Get("X-Rollgate-Delivery") {
			http.Error(w, fmt.Sprintf("payload %v, delivery %q", err, req.Header.Get("X-Rollgate-Delivery")), http.StatusBadRequest)
			return
		}
		r.took = append(r.took, p)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *hookReceiver) got() (took []hookPayload, requests, badSigned int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.took), r.requests, r.badSigned
}

// TestScenarioHeldApprovedRolledBackNotifiedRetried is the day-two story, one plugin command per
// step, as a namespace editor: a version is held for approval, approved, fails and is rolled back;
// the rollback reaches the team through Flux's notification-controller (with the version as its
// revision) and through the admin's webhook, which fails its first tries and still gets every
// event, in order, signed; the fault is mended, the version retried, and it rolls out.
func TestScenarioHeldApprovedRolledBackNotifiedRetried(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "notify")
	const alice = "alice@example.com"
	run := pluginAs(t, asNamespaceEditor(t, s.ns, alice))
	flux := newFluxReceiver(t)
	const key = "the admin's key"
	hook := newHookReceiver(t, key, 2)
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	broken := img("1.2.0")
	neverReady(t, s.ns, broken)
	s.create(deployment(s.ns, "app", img("1.1.0"), 2), appVersion("1.1.0"), config(func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.Approval = v1alpha1.ApprovalRequired
	}))
	s.start("--events-addr="+flux.URL+"/", "--notify-webhook-url="+hook.URL+"/hooks/T0KEN", "--notify-webhook-key-file="+keyFile)
	s.waitConfig(time.Minute, "the running version is recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.1.0" })

	s.announce("1.2.0")
	s.waitConfig(time.Minute, "1.2.0 waits for its approval", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.Hold != nil && c.Status.Hold.Gate == v1alpha1.GateApproval && c.Status.Hold.Version == "1.2.0"
	})
	run("get", "app")
	run("approve", "app", "1.2.0")
	s.waitConfig(2*time.Minute, "1.2.0 rolled back", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return slices.Contains(c.Status.FailedVersions, "1.2.0") && c.Status.Phase == v1alpha1.PhaseIdle
	})
	run("get", "app")

	// Flux's receiver: the rollback, as an error about the config, with 1.2.0 as its revision.
	eventually(t, time.Minute, "the rollback at the notification-controller", func(context.Context) (bool, string, error) {
		events, refused := flux.got()
		if len(refused) > 0 {
			return false, "", fmt.Errorf("the notification-controller would refuse: %v", refused)
		}
		for _, e := range events {
			if rev, _ := e.GetRevision(); e.Reason == v1alpha1.EventUpdateRollback {
				return rev == "1.2.0" && e.Severity == eventv1.EventSeverityError && e.InvolvedObject.Kind == "RollingUpgradeConfig" &&
					e.InvolvedObject.Name == "app" && e.InvolvedObject.Namespace == s.ns && strings.Contains(e.Message, broken), fmt.Sprintf("%+v", e), nil
			}
		}
		return false, fmt.Sprintf("%d events, no rollback", len(events)), nil
	})

	why := run("why", "app", "1.2.0")
	if !strings.Contains(why, "retry app 1.2.0") || !strings.Contains(why, "not healthy after 30s") {
		t.Errorf("why does not say why 1.2.0 failed and how to retry it")
	}
	setKnobs(t, func() { delete(knobs.neverReady, s.ns+"/"+broken) }) // the fault of 1.2.0 mended
	run("retry", "app", "1.2.0")
	s.waitConfig(2*time.Minute, "1.2.0 rolled out", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return c.Status.Phase == v1alpha1.PhaseCompleted && c.Status.CurrentVersion == "1.2.0"
	})
	s.waitEvent(30*time.Second, v1alpha1.EventUpdateComplete, broken)
	run("get", "app")
	run("history", "app")

	// The webhook got every event the cluster got, signed, in the order recorded, after two 503s.
	cluster := s.events()
	eventually(t, time.Minute, "every event at the webhook", func(context.Context) (bool, string, error) {
		took, _, _ := hook.got()
		ids := map[string]bool{}
		for _, p := range took {
			ids[p.ID] = true
		}
		for _, e := range cluster {
			if !ids[e.Name] {
				return false, "missing " + e.Reason + " " + e.Name, nil
			}
		}
		return true, "", nil
	})
	took, requests, badSigned := hook.got()
	var reasons []string
	for _, p := range took {
		reasons = append(reasons, p.Reason)
		if p.Reason == v1alpha1.EventUpdateRollback && (p.Version != "1.2.0" || p.Type != "Warning" || p.Object.Name != "app") {
			t.Errorf("the rollback at the webhook: %+v", p)
		}
	}
	t.Logf("webhook: %d requests, took %s", requests, strings.Join(reasons, " "))
	order := []string{v1alpha1.EventApprovalRequired, v1alpha1.EventUpdateStarting, v1alpha1.EventUpdateRollback,
		v1alpha1.EventRollbackComplete, v1alpha1.EventVersionRetried, v1alpha1.EventUpdateComplete}
	if i := inOrder(reasons, order); i < len(order) {
		t.Errorf("the webhook took %v, without %s after the ones before it in %v", reasons, order[i], order)
	}
	if badSigned > 0 || requests < len(took)+2 {
		t.Errorf("%d requests with a bad signature, %d requests for %d events (want 2 refused first)", badSigned, requests, len(took))
	}
	for _, e := range cluster {
		if e.Reason == v1alpha1.EventUpdateRollback && e.Annotations[v1alpha1.RevisionAnnotation] != "1.2.0" {
			t.Errorf("the cluster's rollback event has revision %q", e.Annotations[v1alpha1.RevisionAnnotation])
		}
	}
}

// inOrder is the index of the first of want not found in got after the ones before it; len(want)
// if all are.
func inOrder(got, want []string) int {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i
}
