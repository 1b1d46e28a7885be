package registry

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/rollgate/rollgate/internal/registry/registrytest"
)

// Created reads the build time in the image's config, tells a missing tag from a registry that
// fails, and gives the zero time of an image that has none.
func TestCreated(t *testing.T) {
	srv := httptest.NewServer(registrytest.Handler())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	built := time.Date(2026, 11, 20, 8, 30, 0, 0, time.UTC)
	registrytest.PushCreated(t, host, "demo/app", built, "1.0.0")
	registrytest.Push(t, host, "demo/app", "1.1.0")
	r := Remote{Transport: http.DefaultTransport}
	keys := authn.NewMultiKeychain()
	if got, err := r.Created(context.Background(), host+"/demo/app:1.0.0", keys); err != nil || !got.Equal(built) {
		t.Errorf("Created = %v, %v; want %v", got, err, built)
	}
	if got, err := r.Created(context.Background(), host+"/demo/app:1.1.0", keys); err != nil || !got.IsZero() {
		t.Errorf("an image without a build time: %v, %v; want the zero time", got, err)
	}
	if _, err := r.Created(context.Background(), host+"/demo/app:9.9.9", keys); !errors.Is(err, ErrImageNotFound) {
		t.Errorf("a missing tag: %v, want ErrImageNotFound", err)
	}
	var rerr *Error
	if _, err := r.Created(context.Background(), "127.0.0.1:1/demo/app:1.0.0", keys); errors.Is(err, ErrImageNotFound) || !errors.As(err, &rerr) {
		t.Errorf("an unreachable registry: %v, want a registry *Error", err)
	}
}
