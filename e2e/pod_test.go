//go:build e2e

package e2e

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// imageUID is the user the image runs as: kwok runs no containers, so the test runs the image's
// binary itself, as this user, when it may (as root).
const imageUID = 65532

// pulledBinary pulls ref back from the registry it was pushed to, checks what the image says of
// itself (its platforms, user, entrypoint and labels), and writes the entrypoint's file of the
// image of hostPlatform into dir.
func pulledBinary(t *testing.T, ref, version, dir string) string {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(r)
	if err != nil {
		t.Fatalf("pulling %s: %v", ref, err)
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, m := range manifest.Manifests {
		platforms = append(platforms, m.Platform.String())
	}
	if strings.Join(platforms, ",") != hostPlatform {
		t.Errorf("the image's platforms are %v, want the one it was built for, %s", platforms, hostPlatform)
	}
	img, err := remote.Image(r, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	head := strings.TrimSpace(mustGit(t, "rev-parse", "HEAD"))
	labels := cfg.Config.Labels
	if cfg.Config.User != "65532:65532" || strings.Join(cfg.Config.Entrypoint, " ") != "/rollgate" ||
		labels["org.opencontainers.image.version"] != version || labels["org.opencontainers.image.revision"] != head ||
		labels["org.opencontainers.image.source"] != "https://github.com/rollgate/rollgate" {
		t.Fatalf("the image's config: user %q, entrypoint %q, labels %v; want 65532:65532, /rollgate, version %s, revision %s and the source",
			cfg.Config.User, cfg.Config.Entrypoint, labels, version, head)
	}
	fs := mutate.Extract(img)
	defer fs.Close()
	tr := tar.NewReader(fs)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatal("the image has no /rollgate")
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != "rollgate" {
			continue
		}
		if h.Mode&0o111 == 0 || h.Uid != 0 {
			t.Errorf("/rollgate has mode %o, owner %d: want executable, owned by root", h.Mode, h.Uid)
		}
		bin := filepath.Join(dir, "rollgate")
		f, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, tr); err != nil { //nolint:gosec // the test's own image
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return bin
	}
}

func mustGit(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return string(out)
}

// shippedPod is the manager's pod as an install's Deployment describes it.
type shippedPod struct {
	serviceAccount string
	args           []string
	env            []string
	grace          time.Duration
}

// podOf reads the manager's Deployment out of a rendered install. It fails on env the test cannot
// give the process as the kubelet would (valueFrom), rather than leaving it out.
func podOf(t *testing.T, rendered string) shippedPod {
	t.Helper()
	for _, doc := range strings.Split(rendered, "\n---\n") {
		var d appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
			t.Fatal(err)
		}
		if d.Kind != "Deployment" {
			continue
		}
		spec := d.Spec.Template.Spec
		c := spec.Containers[0]
		p := shippedPod{serviceAccount: spec.ServiceAccountName, args: c.Args, grace: time.Duration(ptr.Deref(spec.TerminationGracePeriodSeconds, 30)) * time.Second}
		for _, e := range c.Env {
			if e.ValueFrom != nil {
				t.Fatalf("the manager's env %s is valueFrom, which the test does not resolve", e.Name)
			}
			p.env = append(p.env, e.Name+"="+e.Value)
		}
		if c.SecurityContext == nil || !ptr.Deref(c.SecurityContext.ReadOnlyRootFilesystem, false) || !ptr.Deref(c.SecurityContext.RunAsNonRoot, false) {
			t.Errorf("the manager's container is not non-root with a read-only root: %+v", c.SecurityContext)
		}
		return p
	}
	t.Fatal("the install has no Deployment")
	return shippedPod{}
}

// tokenKubeconfig is a kubeconfig that speaks to the cluster with a token of the ServiceAccount
// from the TokenRequest API, as the kubelet mounts one into the pod.
func tokenKubeconfig(t *testing.T, namespace, account, file string) {
	t.Helper()
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: account, Namespace: namespace}}
	if err := k8s.SubResource("token").Create(context.Background(), sa, tr); err != nil {
		t.Fatalf("TokenRequest for %s/%s: %v", namespace, account, err)
	}
	// The CA inline: the pod's user may not read the test's files, as the pod reads only its own.
	ca := restConfig.CAData
	if len(ca) == 0 {
		var err error
		if ca, err = os.ReadFile(restConfig.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cluster"] = &clientcmdapi.Cluster{Server: restConfig.Host, CertificateAuthorityData: ca}
	cfg.AuthInfos["pod"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["pod"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "pod"}
	cfg.CurrentContext = "pod"
	if err := clientcmd.WriteToFile(*cfg, file); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, 0o644); err != nil { //nolint:gosec // read by the image's user
		t.Fatal(err)
	}
}

// runAsPod runs the image's binary as the Deployment would run it: its args and env, the
// ServiceAccount's token, as the image's user, in a working directory it may not write, with a
// TMPDIR of its own as the pod's emptyDir at /tmp. The listen addresses are the test's free ports,
// and the leader-election namespace, which the pod reads from its mounted token, is a flag.
func runAsPod(t *testing.T, bin string, pod shippedPod, extra ...string) *manager {
	t.Helper()
	root, err := os.MkdirTemp("", "rollgate-pod-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	kube, work, tmp := filepath.Join(root, "kubeconfig"), filepath.Join(root, "work"), filepath.Join(root, "tmp")
	tokenKubeconfig(t, managerNamespace, pod.serviceAccount, kube)
	for _, d := range []string{work, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	metrics, probes := freeAddr(t), freeAddr(t)
	var args []string
	for _, a := range pod.args {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address="):
			a = "--metrics-bind-address=" + metrics
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			a = "--health-probe-bind-address=" + probes
		}
		args = append(args, a)
	}
	args = append(args, append([]string{"--kubeconfig=" + kube, "--leader-election-namespace=" + managerNamespace}, extra...)...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = work
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=/home/nonroot", "TMPDIR=" + tmp}, pod.env...)
	if os.Getuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: imageUID, Gid: imageUID}}
		for _, p := range []string{root, tmp} {
			if err := os.Chown(p, imageUID, imageUID); err != nil {
				t.Fatal(err)
			}
		}
		// The working directory stays root's and read-only, as the image's root filesystem.
		if err := os.Chmod(work, 0o555); err != nil { //nolint:gosec // a directory the user may enter
			t.Fatal(err)
		}
		if err := os.Chmod(root, 0o755); err != nil { //nolint:gosec // the binary and kubeconfig are read from it
			t.Fatal(err)
		}
	} else {
		t.Logf("not root: the binary runs as uid %d, not the image's %d", os.Getuid(), imageUID)
		if err := os.Chmod(work, 0o555); err != nil { //nolint:gosec // a directory the user may enter
			t.Fatal(err)
		}
	}
	m := runManager(t, cmd, metrics, probes)
	t.Cleanup(func() { _ = os.Chmod(work, 0o700) })
	return m
}
