// Command image builds rollgate's container image without a container engine, with
// go-containerregistry: the static manager binary of each platform on an empty base, run as the
// non-root user 65532, with OCI labels, written into an OCI image layout (an index of one image per
// platform); and pushes such a layout to a registry. `make image` and `make image-push` run it.
//
//	image build -out DIR -version V -revision SHA -created RFC3339 -source URL -bin linux/amd64=PATH ...
//	image push -layout DIR -image REGISTRY/REPOSITORY:TAG   (prints "index|os/arch REPOSITORY@DIGEST" lines)
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The user the manager runs as, as the shipped Deployment says (runAsUser 65532).
const uid = 65532

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: image build|push ...")
	}
	switch args[0] {
	case "build":
		return build(args[1:], out)
	case "push":
		return push(args[1:], out)
	}
	return fmt.Errorf("unknown command %q: build or push", args[0])
}

// binaries are -bin os/arch=path flags, in the order given.
type binaries []string

func (b *binaries) String() string     { return strings.Join(*b, ",") }
func (b *binaries) Set(v string) error { *b = append(*b, v); return nil }

// Meta is what the image says of itself.
type Meta struct {
	Version, Revision, Source string
	Created                   time.Time
}

func build(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("image build", flag.ContinueOnError)
	dir := fs.String("out", "", "directory of the OCI image layout to write (replaced)")
	var m Meta
	fs.StringVar(&m.Version, "version", "dev", "the version (org.opencontainers.image.version)")
	fs.StringVar(&m.Revision, "revision", "", "the commit (org.opencontainers.image.revision)")
	fs.StringVar(&m.Source, "source", "https://github.com/rollgate/rollgate", "the source repository (org.opencontainers.image.source)")
	created := fs.String("created", "", "RFC 3339 time of the image and its files: the commit's, so that a build of one commit is the same image")
	var bins binaries
	fs.Var(&bins, "bin", "os/arch=path of the manager binary for that platform; repeat per platform")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || len(bins) == 0 {
		return errors.New("-out and at least one -bin are needed")
	}
	if *created != "" {
		t, err := time.Parse(time.RFC3339, *created)
		if err != nil {
			return fmt.Errorf("-created: %w", err)
		}
		m.Created = t
	}
	idx, err := Index(m, bins)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(*dir); err != nil {
		return err
	}
	if _, err := layout.Write(*dir, idx); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s: index %s, %d platforms (%s)\n", *dir, digest, len(bins), bins.String())
	return nil
}

// Index is the image index of one image per binary ("os/arch=path").
func Index(m Meta, bins []string) (v1.ImageIndex, error) {
	var idx v1.ImageIndex = mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, b := range bins {
		platform, path, ok := strings.Cut(b, "=")
		osName, arch, ok2 := strings.Cut(platform, "/")
		if !ok || !ok2 {
			return nil, fmt.Errorf("-bin %q: want os/arch=path", b)
		}
		bin, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		img, err := Image(m, osName, arch, bin)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", platform, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: osName, Architecture: arch}}})
	}
	return idx, nil
}

// Image is the manager's image for one platform: one layer of the binary at /rollgate and the
// files that name its user, nothing else. CA roots are in the binary (golang.org/x/crypto's
// fallback roots, used when the system has none), and so is the time zone database.
func Image(m Meta, osName, arch string, bin []byte) (v1.Image, error) {
	files, err := rootFS(bin, m.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(files)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(mutate.ConfigMediaType(empty.Image, types.OCIConfigJSON), types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created = osName, arch, v1.Time{Time: m.Created}
	cfg.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", uid, uid),
		Entrypoint: []string{"/rollgate"},
		WorkingDir: "/",
		Labels: map[string]string{
			"org.opencontainers.image.title":    "rollgate",
			"org.opencontainers.image.source":   m.Source,
			"org.opencontainers.image.version":  m.Version,
			"org.opencontainers.image.revision": m.Revision,
			"org.opencontainers.image.licenses": "Apache-2.0",
			"org.opencontainers.image.created":  m.Created.UTC().Format(time.RFC3339),
		},
	}
	cfg.History = []v1.History{{Created: v1.Time{Time: m.Created}, CreatedBy: "rollgate hack/image", Comment: "the manager binary and its user"}}
	return mutate.ConfigFile(img, cfg)
}

// rootFS is the layer's tar: the binary and the user and group files, owned by root (the user's
// home by the user), stamped with the commit's time.
func rootFS(bin []byte, at time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, mode int64, owner int, body []byte) error {
		typ := byte(tar.TypeReg)
		if strings.HasSuffix(name, "/") {
			typ = tar.TypeDir
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Uid: owner, Gid: owner, Size: int64(len(body)), Typeflag: typ,
			ModTime: at, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	for _, f := range []struct {
		name  string
		mode  int64
		owner int
		body  string
	}{
		{"etc/", 0o755, 0, ""},
		{"etc/passwd", 0o644, 0, fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", uid, uid)},
		{"etc/group", 0o644, 0, fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", uid)},
		{"home/", 0o755, 0, ""},
		{"home/nonroot/", 0o700, uid, ""},
		{"tmp/", 0o1777, 0, ""},
	} {
		if err := add(f.name, f.mode, f.owner, []byte(f.body)); err != nil {
			return nil, err
		}
	}
	if err := add("rollgate", 0o755, 0, bin); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func push(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("image push", flag.ContinueOnError)
	dir := fs.String("layout", "", "directory of the OCI image layout (image build -out)")
	ref := fs.String("image", "", "where to push it: registry/repository:tag")
	insecure := fs.Bool("insecure", false, "reach the registry over plain HTTP (a registry on 127.0.0.1)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var opts []name.Option
	if *insecure {
		opts = append(opts, name.Insecure)
	}
	tag, err := name.ParseReference(*ref, opts...)
	if err != nil {
		return fmt.Errorf("-image: %w", err)
	}
	p, err := layout.FromPath(*dir)
	if err != nil {
		return err
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return err
	}
	if err := remote.WriteIndex(tag, idx, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return err
	}
	return pushed(out, tag.Context(), idx)
}

// pushed prints what a push wrote, for whoever signs it next: the index, then each platform's
// image, one "PLATFORM REPOSITORY@DIGEST" line each (the index's platform is "index").
func pushed(out io.Writer, repo name.Repository, idx v1.ImageIndex) error {
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "index %s@%s\n", repo, digest)
	for _, d := range m.Manifests {
		fmt.Fprintf(out, "%s %s@%s\n", d.Platform, repo, d.Digest)
	}
	return nil
}
