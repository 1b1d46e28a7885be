package main

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/rollgate/rollgate/internal/notify"
)

// notifyOptions are where the manager sends its events besides the cluster.
type notifyOptions struct {
	EventsAddr     string
	WebhookURL     string
	WebhookURLFile string
	WebhookKeyFile string
	QueueSize      int
}

func bindNotifyFlags(fs *flag.FlagSet, o *notifyOptions) {
	fs.StringVar(&o.EventsAddr, "events-addr", "",
		"Address of Flux's notification-controller event receiver, e.g. http://notification-controller.flux-system.svc.cluster.local./; "+
			"every event is posted to it as Flux's own controllers post theirs, so Flux's Alerts and Providers take them. Default: none.")
	fs.StringVar(&o.WebhookURL, "notify-webhook-url", "",
		"URL every event is posted to as JSON, signed with --notify-webhook-key-file. Default: none.")
	fs.StringVar(&o.WebhookURLFile, "notify-webhook-url-file", "",
		"File holding the URL of --notify-webhook-url, for a URL that carries a token (mounted from a Secret).")
	fs.StringVar(&o.WebhookKeyFile, "notify-webhook-key-file", "",
		"File holding the key of the webhook's signature (X-Rollgate-Signature-256: sha256=<HMAC-SHA256 of the body>). Default: unsigned.")
	fs.IntVar(&o.QueueSize, "notify-queue-size", notify.DefaultQueueSize,
		"Events each receiver's queue holds while the receiver is slow or down; newer ones are dropped and counted "+
			"(rollgate_notifications_dropped_total{reason=QueueFull}).")
}

// check checks what can be checked before the files are read.
func (o notifyOptions) check() error {
	if o.WebhookURL != "" && o.WebhookURLFile != "" {
		return errors.New("--notify-webhook-url and --notify-webhook-url-file: give one")
	}
	if o.WebhookKeyFile != "" && o.WebhookURL == "" && o.WebhookURLFile == "" {
		return errors.New("--notify-webhook-key-file needs --notify-webhook-url or --notify-webhook-url-file")
	}
	if o.QueueSize < 1 {
		return fmt.Errorf("--notify-queue-size must be at least 1, not %d", o.QueueSize)
	}
	if o.EventsAddr != "" {
		if err := notify.CheckURL(o.EventsAddr); err != nil {
			return fmt.Errorf("--events-addr: %w", err)
		}
	}
	if o.WebhookURL != "" {
		if err := notify.CheckURL(o.WebhookURL); err != nil {
			return fmt.Errorf("--notify-webhook-url: %w", err)
		}
	}
	return nil
}

// queues are the receivers' queues the flags ask for, none without them. Errors never show the
// URL, which may carry a token.
func (o notifyOptions) queues() ([]*notify.Queue, error) {
	var qs []*notify.Queue
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if o.EventsAddr != "" {
		f, err := notify.NewFlux(o.EventsAddr, transport)
		if err != nil {
			return nil, fmt.Errorf("--events-addr: %w", err)
		}
		qs = append(qs, notify.NewQueue("flux", f, o.QueueSize))
	}
	url, flag := o.WebhookURL, "--notify-webhook-url"
	if o.WebhookURLFile != "" {
		b, err := os.ReadFile(o.WebhookURLFile)
		if err != nil {
			return nil, fmt.Errorf("--notify-webhook-url-file: %w", err)
		}
		url, flag = strings.TrimSpace(string(b)), "--notify-webhook-url-file"
	}
	if url == "" {
		return qs, nil
	}
	var key []byte
	if o.WebhookKeyFile != "" {
		b, err := os.ReadFile(o.WebhookKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--notify-webhook-key-file: %w", err)
		}
		if key = []byte(strings.TrimSpace(string(b))); len(key) == 0 {
			return nil, errors.New("--notify-webhook-key-file: the file is empty")
		}
	}
	w, err := notify.NewWebhook(url, key, transport)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return append(qs, notify.NewQueue("webhook", w, o.QueueSize)), nil
}

// addNotifications runs the receivers' queues with the manager, and is what hands them each
// recorded event; nil without receivers.
func addNotifications(mgr manager.Manager, o notifyOptions) (func(*eventsv1.Event), error) {
	qs, err := o.queues()
	if err != nil || len(qs) == 0 {
		return nil, err
	}
	for _, q := range qs {
		if err := mgr.Add(q); err != nil {
			return nil, err
		}
	}
	return notify.Fanout(qs).Tee, nil
}
