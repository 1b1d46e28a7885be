package notify

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func errorsAs(err error, target any) bool { return errors.As(err, target) }

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// The receiver checks the signature with the shared key; one signed with another key does not
// pass. The body is the payload, with the notice's ID in a header as well.
func TestAWebhookIsSignedWithTheKey(t *testing.T) {
	key := []byte("the admin's key")
	type got struct {
		payload           Payload
		delivery, event   string
		valid, validOther bool
	}
	seen := make(chan got, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var g got
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&g.payload); err != nil {
			t.Errorf("decoding the payload: %v", err)
		}
		sig := req.Header.Get(SignatureHeader)
		g.valid = hmac.Equal([]byte(sig), []byte(Sign(key, body)))
		g.validOther = hmac.Equal([]byte(sig), []byte(Sign([]byte("another key"), body)))
		g.delivery, g.event = req.Header.Get(DeliveryHeader), req.Header.Get(EventHeader)
		seen <- g
	}))
	defer srv.Close()
	w, err := NewWebhook(srv.URL, key, http.DefaultTransport)
	if err != nil {
		t.Fatal(err)
	}
	n := notice("web.18c2a")
	if err := w.Send(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	g := <-seen
	if !g.valid || g.validOther {
		t.Errorf("signature valid under the key: %v, under another: %v", g.valid, g.validOther)
	}
	want := Payload{ID: "web.18c2a", Time: n.Time.UTC(), Type: "Warning", Reason: "UpdateRollback", Message: "rolled back web.18c2a",
		Version: "1.2.0", Object: Object{APIVersion: "rollgate.dev/v1alpha1", Kind: "RollingUpgradeConfig", Namespace: "shop", Name: "web"}}
	if diff := cmp.Diff(want, g.payload); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}
	if g.delivery != "web.18c2a" || g.event != "UpdateRollback" {
		t.Errorf("headers: delivery %q, event %q", g.delivery, g.event)
	}
}

// URLs that are not absolute http(s) are refused, and the error never shows them.
func TestAWebhookURLMustBeAbsoluteHTTP(t *testing.T) {
	for _, u := range []string{"", "hooks.example.com/T0KEN", "ftp://hooks.example.com/T0KEN", "http:///T0KEN", "%zzT0KEN"} {
		_, err := NewWebhook(u, nil, http.DefaultTransport)
		if err == nil || strings.Contains(err.Error(), "T0KEN") {
			t.Errorf("%q: %v", u, err)
		}
	}
	if _, err := NewWebhook("https://hooks.example.com/T0KEN", nil, http.DefaultTransport); err != nil {
		t.Error(err)
	}
}

// A receiver that cannot be reached: the error names scheme and host, not the path or query.
func TestAnUnreachableReceiverIsNamedWithoutItsToken(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/hooks/T0KEN?token=s3cret"
	srv.Close()
	w, err := NewWebhook(url, nil, http.DefaultTransport)
	if err != nil {
		t.Fatal(err)
	}
	err = w.Send(context.Background(), notice("1"))
	if err == nil || containsAny(err.Error(), "T0KEN", "s3cret") || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("error %v: want one that names the host only", err)
	}
}
