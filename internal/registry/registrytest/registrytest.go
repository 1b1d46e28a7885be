// Package registrytest serves go-containerregistry's in-memory registry for tests, with a
// repository filled with tags of one random image, and cosign's signatures of it.
package registrytest

import (
	"io"
	"log"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Handler is the in-memory registry, without logging.
func Handler() http.Handler {
	return ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
}

// Push writes one random image to host/repository under every tag, and returns its digest.
func Push(t testing.TB, host, repository string, tags ...string) string {
	t.Helper()
	return PushCreated(t, host, repository, time.Time{}, tags...)
}

// PushCreated writes one random image built at created (its config's "created"; zero: none) to
// host/repository under every tag, and returns its digest.
func PushCreated(t testing.TB, host, repository string, created time.Time, tags ...string) string {
	t.Helper()
	img, err := random.Image(128, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !created.IsZero() {
		if img, err = mutate.CreatedAt(img, v1.Time{Time: created}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tag := range tags {
		ref, err := name.NewTag(host + "/" + repository + ":" + tag)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return digest.String()
}

// Layer is one layer of an image's cosign signatures: a payload and its annotations (the
// signature, and a keyless one's certificate and log entry).
type Layer struct {
	Payload     []byte
	Annotations map[string]string
}

// PushSignatures writes layers as cosign stores the signatures of the image of digest in
// host/repository: the layers of the manifest tagged sha256-<hex>.sig, each one simple-signing
// payload.
func PushSignatures(t testing.TB, host, repository, digest string, layers ...Layer) {
	t.Helper()
	var img v1.Image = empty.Image
	for _, l := range layers {
		var err error
		layer := static.NewLayer(l.Payload, types.MediaType("application/vnd.dev.cosign.simplesigning.v1+json"))
		if img, err = mutate.Append(img, mutate.Addendum{Layer: layer, Annotations: l.Annotations}); err != nil {
			t.Fatal(err)
		}
	}
	tag, err := name.NewTag(host + "/" + repository + ":" + strings.Replace(digest, ":", "-", 1) + ".sig")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
}
