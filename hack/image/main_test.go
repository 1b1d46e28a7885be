package main

import (
	"archive/tar"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image of two platforms, read back from its layout: an OCI index of one image each, run as
// 65532 from /rollgate, labelled, holding the binary and nothing of the machine that built it; the
// same inputs make the same digest; pushed to a registry, the same index arrives.
func TestTheImageIsBuiltWithoutAnEngine(t *testing.T) {
	dir := t.TempDir()
	bins := map[string]string{"amd64": "binary for amd64", "arm64": "binary for arm64"}
	var flags []string
	for arch, body := range bins {
		p := filepath.Join(dir, arch)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		flags = append(flags, "-bin", "linux/"+arch+"="+p)
	}
	build := func(out string) v1.ImageIndex {
		t.Helper()
		args := append([]string{"build", "-out", out, "-version", "v0.1.0", "-revision", "0123abc", "-created", "2026-12-02T06:00:00Z"}, flags...)
		if err := run(args, io.Discard); err != nil {
			t.Fatal(err)
		}
		idx, err := layout.ImageIndexFromPath(out)
		if err != nil {
			t.Fatal(err)
		}
		return idx
	}
	idx := build(filepath.Join(dir, "layout"))
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := idx.MediaType(); mt != types.OCIImageIndex || len(im.Manifests) != 2 {
		t.Fatalf("index %s of %d manifests", mt, len(im.Manifests))
	}
	for _, desc := range im.Manifests {
		arch := desc.Platform.Architecture
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cfg.Config
		if cfg.OS != "linux" || cfg.Architecture != arch || c.User != "65532:65532" || strings.Join(c.Entrypoint, " ") != "/rollgate" ||
			c.Labels["org.opencontainers.image.version"] != "v0.1.0" || c.Labels["org.opencontainers.image.revision"] != "0123abc" ||
			c.Labels["org.opencontainers.image.source"] != "https://github.com/rollgate/rollgate" || !cfg.Created.Equal(time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)) {
			t.Errorf("%s: config %+v", arch, cfg)
		}
		files := filesOf(t, img)
		if files["rollgate"] != bins[arch] || !strings.Contains(files["etc/passwd"], "nonroot:x:65532:65532:") || len(files) != 3 {
			t.Errorf("%s: files %v", arch, files)
		}
	}
	if again := build(filepath.Join(dir, "again")); digest(t, again) != digest(t, idx) {
		t.Error("the same inputs made another image")
	}

	reg := httptest.NewServer(registry.New())
	defer reg.Close()
	ref := strings.TrimPrefix(reg.URL, "http://") + "/rollgate/rollgate:v0.1.0"
	var out strings.Builder
	if err := run([]string{"push", "-layout", filepath.Join(dir, "layout"), "-image", ref, "-insecure"}, &out); err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Index(r)
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, pulled) != digest(t, idx) {
		t.Error("the registry holds another index")
	}
	// What it prints names every manifest it pushed, by platform, as the registry serves it.
	repo := r.Context().String()
	want := "index " + repo + "@" + digest(t, idx).String() + "\n"
	m, err := pulled.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range m.Manifests {
		want += d.Platform.String() + " " + repo + "@" + d.Digest.String() + "\n"
	}
	if out.String() != want || len(m.Manifests) != 2 {
		t.Errorf("push printed\n%s\nwant\n%s", out.String(), want)
	}
}

func TestBadArguments(t *testing.T) {
	for _, args := range [][]string{{}, {"bake"}, {"build", "-out", t.TempDir()}, {"build", "-out", t.TempDir(), "-bin", "amd64=x"}} {
		if err := run(args, io.Discard); err == nil {
			t.Errorf("%v: %v", args, err)
		}
	}
}

func digest(t *testing.T, idx v1.ImageIndex) v1.Hash {
	t.Helper()
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// filesOf are the regular files of the image, by path.
func filesOf(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		if h.Typeflag == tar.TypeReg {
			files[h.Name] = string(b)
		}
	}
}
