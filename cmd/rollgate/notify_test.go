package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNotifyFlags(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		want    notifyOptions
		wantErr string
	}{
		{name: "no receivers and a queue of 1000 by default", want: notifyOptions{QueueSize: 1000}},
		{name: "Flux and a webhook", args: []string{"--events-addr=http://notification-controller.flux-system.svc.cluster.local./",
			"--notify-webhook-url=https://hooks.example.com/T0KEN", "--notify-queue-size=10"},
			want: notifyOptions{EventsAddr: "http://notification-controller.flux-system.svc.cluster.local./",
				WebhookURL: "https://hooks.example.com/T0KEN", QueueSize: 10}},
		{name: "a URL and a URL file", args: []string{"--notify-webhook-url=https://a.example.com", "--notify-webhook-url-file=/u"},
			wantErr: "give one"},
		{name: "a key without a URL", args: []string{"--notify-webhook-key-file=/k"}, wantErr: "needs --notify-webhook-url"},
		{name: "an empty queue", args: []string{"--notify-queue-size=0"}, wantErr: "--notify-queue-size must be at least 1"},
		{name: "a Flux address that is no URL", args: []string{"--events-addr=notification-controller:80"}, wantErr: "--events-addr"},
		{name: "a webhook URL that is no URL, not shown", args: []string{"--notify-webhook-url=hooks.example.com/T0KEN"},
			wantErr: "--notify-webhook-url: not an absolute"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseOptions(tc.args)
			switch {
			case !wantsError(t, err, tc.wantErr):
			case o.Notify != tc.want:
				t.Errorf("options %+v, want %+v", o.Notify, tc.want)
			}
		})
	}
}

// The webhook's URL and key are read from their files (a Secret's keys), trimmed; a file that is
// missing, empty or holds no URL is an error that never shows what it holds.
func TestNotifyFilesAreRead(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	url, notURL, key, empty := write("url", "https://hooks.example.com/T0KEN\n"), write("bad", "hooks.example.com/T0KEN"),
		write("key", "s3cret\n"), write("empty", "\n")
	cases := []struct {
		name       string
		o          notifyOptions
		wantQueues int
		wantErr    string
	}{
		{name: "none", o: notifyOptions{QueueSize: 1}},
		{name: "Flux", o: notifyOptions{EventsAddr: "http://nc.flux-system/", QueueSize: 1}, wantQueues: 1},
		{name: "a URL and a key from files, and Flux", o: notifyOptions{EventsAddr: "http://nc.flux-system/", WebhookURLFile: url,
			WebhookKeyFile: key, QueueSize: 1}, wantQueues: 2},
		{name: "a URL file that holds no URL", o: notifyOptions{WebhookURLFile: notURL, QueueSize: 1},
			wantErr: "--notify-webhook-url-file: not an absolute"},
		{name: "a missing URL file", o: notifyOptions{WebhookURLFile: filepath.Join(dir, "none"), QueueSize: 1},
			wantErr: "--notify-webhook-url-file"},
		{name: "an empty key", o: notifyOptions{WebhookURLFile: url, WebhookKeyFile: empty, QueueSize: 1},
			wantErr: "--notify-webhook-key-file: the file is empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			qs, err := tc.o.queues()
			switch {
			case !wantsError(t, err, tc.wantErr):
			case len(qs) != tc.wantQueues:
				t.Errorf("%d queues, want %d", len(qs), tc.wantQueues)
			}
		})
	}
}

// wantsError checks err against want (empty: no error), and that it shows no token; it reports
// whether the test goes on to check the result, which it does when no error was wanted.
func wantsError(t *testing.T, err error, want string) bool {
	t.Helper()
	switch {
	case want != "":
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "T0KEN") {
			t.Errorf("error %v, want one with %q that shows no token", err, want)
		}
		return false
	case err != nil:
		t.Fatal(err)
	}
	return true
}
