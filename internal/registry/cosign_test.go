package registry

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/rollgate/rollgate/internal/registry/registrytest"
)

// The signatures of an image are read where cosign writes them: the layers of the tag
// sha256-<hex>.sig, each a payload with its signature in an annotation, and a keyless one's
// certificate and log entry in two more. An image without that tag has none.
func TestCosignSignaturesAreReadWhereCosignWritesThem(t *testing.T) {
	host, _ := testRegistry(t)
	digest := registrytest.Push(t, host, "demo/app", "1.0.0")
	unsigned := registrytest.Push(t, host, "demo/app", "1.1.0")
	var layers []registrytest.Layer
	for i, sig := range []string{"c2lnLTE=", "c2lnLTI=", ""} { // the last layer is no signature
		ann := map[string]string{}
		if sig != "" {
			ann["dev.cosignproject.cosign/signature"] = sig
		}
		if i == 1 {
			ann["dev.sigstore.cosign/certificate"] = "-----BEGIN CERTIFICATE-----"
			ann["dev.sigstore.cosign/bundle"] = `{"SignedEntryTimestamp":"c2V0"}`
		}
		layers = append(layers, registrytest.Layer{Payload: fmt.Appendf(nil, `{"critical":{"n":%d}}`, i), Annotations: ann})
	}
	registrytest.PushSignatures(t, host, "demo/app", digest, layers...)
	r := loopback(t)
	got, err := r.CosignSignatures(context.Background(), host+"/demo/app:1.0.0@"+digest, authn.DefaultKeychain)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Signature != "c2lnLTE=" || got[0].Certificate != "" || string(got[1].Payload) != `{"critical":{"n":1}}` ||
		got[1].Certificate != "-----BEGIN CERTIFICATE-----" || got[1].Bundle != `{"SignedEntryTimestamp":"c2V0"}` {
		t.Errorf("signatures %+v", got)
	}
	if got, err := r.CosignSignatures(context.Background(), host+"/demo/app@"+unsigned, authn.DefaultKeychain); err != nil || got != nil {
		t.Errorf("an unsigned image: %+v, %v", got, err)
	}
	if _, err := r.CosignSignatures(context.Background(), host+"/demo/app:1.0.0", authn.DefaultKeychain); err == nil {
		t.Error("an image without a digest was looked up")
	}
}

// Registries hand blobs out from another host (Docker Hub and GHCR from a CDN, ECR from S3): a
// blob's redirect is followed there, to an address the policy allows, while any other redirect to
// another host is still refused.
func TestBlobsAreReadWhereTheRegistryRedirects(t *testing.T) {
	reg := registrytest.Handler()
	var cdnRequests atomic.Int32
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cdnRequests.Add(1)
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(cdn.Close)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/blobs/sha256:") && r.Method == http.MethodGet {
			http.Redirect(w, r, cdn.URL+r.URL.Path, http.StatusTemporaryRedirect)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/tags/list") {
			http.Redirect(w, r, cdn.URL+r.URL.Path, http.StatusTemporaryRedirect)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	host := strings.TrimPrefix(front.URL, "http://")
	digest := registrytest.Push(t, host, "demo/app", "1.0.0")
	registrytest.PushSignatures(t, host, "demo/app", digest,
		registrytest.Layer{Payload: []byte(`{"critical":{}}`), Annotations: map[string]string{"dev.cosignproject.cosign/signature": "c2ln"}})
	cdnRequests.Store(0)
	r := loopback(t)
	got, err := r.CosignSignatures(context.Background(), host+"/demo/app@"+digest, authn.DefaultKeychain)
	if err != nil || len(got) != 1 || cdnRequests.Load() == 0 {
		t.Errorf("signatures %+v, %v, %d requests to the CDN; want the one signature, read there", got, err, cdnRequests.Load())
	}
	if _, err := r.ListTags(context.Background(), host+"/demo/app", authn.DefaultKeychain); err == nil || !strings.Contains(err.Error(), "redirected to another host") {
		t.Errorf("a tag listing redirected to another host: %v", err)
	}
}
