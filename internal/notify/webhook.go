package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"time"
)

// Headers of a webhook's request.
const (
	// SignatureHeader carries "sha256=" and the hex HMAC-SHA256 of the body under the sink's key,
	// as GitHub signs its webhooks.
	SignatureHeader = "X-Rollgate-Signature-256"
	// DeliveryHeader carries the notice's ID, the same on every try: a receiver drops repeats by it.
	DeliveryHeader = "X-Rollgate-Delivery"
	// EventHeader carries the event's reason.
	EventHeader = "X-Rollgate-Event"
)

// Webhook posts each notice as JSON to the cluster admin's URL, signed with the admin's key.
type Webhook struct {
	p   *poster
	key []byte
}

// NewWebhook posts to url, signed with key (none if empty).
func NewWebhook(url string, key []byte, transport http.RoundTripper) (*Webhook, error) {
	p, err := newPoster(url, transport)
	if err != nil {
		return nil, err
	}
	return &Webhook{p: p, key: key}, nil
}

// Payload is the body of a webhook's request.
type Payload struct {
	ID      string    `json:"id"`
	Time    time.Time `json:"time"`
	Type    string    `json:"type"` // Normal or Warning
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Version string    `json:"version,omitempty"`
	Object  Object    `json:"object"`
	// Controller is who recorded it: rollgate.
	Controller string `json:"controller"`
}

// Object names what the notice is about.
type Object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	UID        string `json:"uid,omitempty"`
}

// PayloadOf is n as a webhook's body.
func PayloadOf(n Notice) Payload {
	o := n.Object
	return Payload{ID: n.ID, Time: n.Time.UTC(), Type: n.Type, Reason: n.Reason, Message: n.Message, Version: n.Version,
		Object:     Object{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, UID: string(o.UID)},
		Controller: n.Controller}
}

// Send posts n.
func (w *Webhook) Send(ctx context.Context, n Notice) error {
	body, err := json.Marshal(PayloadOf(n))
	if err != nil {
		return &RefusedError{Why: err.Error()}
	}
	h := http.Header{}
	h.Set(DeliveryHeader, n.ID)
	h.Set(EventHeader, n.Reason)
	if len(w.key) > 0 {
		h.Set(SignatureHeader, Sign(w.key, body))
	}
	return w.p.post(ctx, body, h)
}

// Sign is the signature header's value for body under key.
func Sign(key, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}
