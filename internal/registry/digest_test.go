package registry

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/crane"

	"github.com/rollgate/rollgate/internal/registry/registrytest"
)

// Digest names the manifest a tag points to, tells a missing tag from a registry that fails, and
// reads no body.
func TestDigest(t *testing.T) {
	host, _ := testRegistry(t, "1.0.0")
	r := Remote{Transport: loopback(t).Transport}
	want, err := crane.Digest(host+"/demo/app:1.0.0", crane.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Digest(context.Background(), host+"/demo/app:1.0.0", authn.NewMultiKeychain())
	if err != nil || got != want || !strings.HasPrefix(got, "sha256:") {
		t.Errorf("Digest = %q, %v; want %s", got, err, want)
	}
	if _, err := r.Digest(context.Background(), host+"/demo/app:9.9.9", authn.NewMultiKeychain()); !errors.Is(err, ErrImageNotFound) {
		t.Errorf("a missing tag: %v, want ErrImageNotFound", err)
	}
	if _, err := r.Digest(context.Background(), host+"/demo/nothing:1.0.0", authn.NewMultiKeychain()); !errors.Is(err, ErrImageNotFound) {
		t.Errorf("a missing repository: %v, want ErrImageNotFound", err)
	}
	// A registry that does not answer is no missing image: the version must not be held as one.
	var rerr *Error
	if _, err := r.Digest(context.Background(), "127.0.0.1:1/demo/app:1.0.0", authn.NewMultiKeychain()); errors.Is(err, ErrImageNotFound) || !errors.As(err, &rerr) {
		t.Errorf("an unreachable registry: %v, want a registry *Error", err)
	}
}

// A registry that refuses HEAD (or answers it without the digest) is asked by GET: the version is
// not held for a registry's habit.
func TestDigestFallsBackToGet(t *testing.T) {
	reg := registrytest.Handler()
	var refuseHead atomic.Bool // once the image is pushed (a push asks by HEAD too)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuseHead.Load() && r.Method == http.MethodHead && strings.Contains(r.URL.Path, "/manifests/") {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	registrytest.Push(t, host, "demo/app", "1.0.0")
	want, err := crane.Digest(host+"/demo/app:1.0.0", crane.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	refuseHead.Store(true)
	got, err := Remote{Transport: loopback(t).Transport}.Digest(context.Background(), host+"/demo/app:1.0.0", authn.NewMultiKeychain())
	if err != nil || got != want {
		t.Errorf("Digest = %q, %v; want %s by GET", got, err, want)
	}
}
