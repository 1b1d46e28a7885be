//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/renovate"
)

// runRenovate runs the real Renovate (RENOVATE_BIN, with NODE_DIR first on PATH) over dir in local
// mode, offline: every host is disabled but the registry on 127.0.0.1 and those hostRules enable.
// Renovate exits 0 even when it fails, so the report is checked instead.
func runRenovate(t *testing.T, dir, registryHost string, hostRules ...map[string]any) (*renovate.Report, string) {
	t.Helper()
	bin, nodeDir := os.Getenv("RENOVATE_BIN"), os.Getenv("NODE_DIR")
	if bin == "" || nodeDir == "" {
		t.Fatal("RENOVATE_BIN and NODE_DIR are not set: run through `make test-e2e`")
	}
	work := t.TempDir()
	global := map[string]any{
		"hostRules": []any{
			map[string]any{"enabled": false},
			map[string]any{"matchHost": strings.Split(registryHost, ":")[0], "hostType": "docker", "insecureRegistry": true, "enabled": true},
		},
	}
	for _, r := range hostRules {
		global["hostRules"] = append(global["hostRules"].([]any), r)
	}
	globalFile := filepath.Join(work, "global.json")
	writeJSON(t, globalFile, global)
	reportFile := filepath.Join(work, "report.json")
	cmd := exec.Command(bin, "--platform=local", "--report-type=file", "--report-path="+reportFile)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"PATH="+nodeDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"RENOVATE_CONFIG_FILE="+globalFile,
		"RENOVATE_BASE_DIR="+filepath.Join(work, "base"), // fresh: no cached tag lists
		"LOG_LEVEL=info",
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("renovate: %v\n%s", err, out.String())
	}
	f, err := os.Open(reportFile)
	if err != nil {
		t.Fatalf("renovate wrote no report: %v\n%s", err, out.String())
	}
	defer f.Close()
	rep, err := renovate.Parse(f)
	if err != nil {
		t.Fatalf("report: %v\n%s", err, out.String())
	}
	if p := rep.AllProblems(); len(p) > 0 {
		t.Fatalf("renovate reported problems: %v\n%s", p, out.String())
	}
	if _, ok := rep.Repositories["local"]; !ok {
		t.Fatalf("report has no repository \"local\"\n%s", out.String())
	}
	return rep, reportFile
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(b))
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newValueFor finds the update Renovate proposes for image in file, through the preset's managers.
func newValueFor(rep *renovate.Report, file, image string) (current, newest string) {
	for _, d := range rep.Dependencies() {
		if d.Manager != "regex" || d.PackageFile != file || d.DepName != image {
			continue
		}
		for _, u := range d.Updates {
			if u.UpdateType != "major" && u.NewValue > newest {
				newest = u.NewValue
			}
		}
		return d.CurrentValue, newest
	}
	return "", ""
}

// TestRenovateFindsVersionsAndRollgateRollsThem: a GitOps repository holds an ApplicationVersion
// and a labelled ConfigMap at 1.0.0 and rollgate's Renovate preset; the registry has 1.1.0 and
// 1.3.0. Renovate reports 1.3.0 for both files. Path A: `rollgate renovate import` updates the
// ApplicationVersion and rollgate rolls out the first Deployment. Path B: the ConfigMap, updated as
// Renovate's pull request would, is applied the way Flux applies it, and rollgate rolls out the
// second Deployment.
func TestRenovateFindsVersionsAndRollgateRollsThem(t *testing.T) {
	inNamespaceOnly(t)
	host := startRegistry(t, "1.0.0", "1.1.0", "1.3.0", "latest")
	repo := host + "/demo/app"
	preset, err := os.ReadFile(filepath.Join(repoRoot, "renovate", "rollgate.json"))
	if err != nil {
		t.Fatal(err)
	}
	gitops := t.TempDir()
	writeFile(t, filepath.Join(gitops, "renovate.json"), string(preset))
	writeFile(t, filepath.Join(gitops, "apps/shop/appversion.yaml"), `apiVersion: rollgate.dev/v1alpha1
kind: ApplicationVersion
metadata:
  name: app
spec:
  image: `+repo+`
  version: 1.0.0
`)
	cmManifest := `apiVersion: v1
kind: ConfigMap
metadata:
  name: versions
  labels:
    rollgate.dev/version-source: "true"
data:
  # renovate: image=` + repo + `
  app: "1.0.0"
`
	writeFile(t, filepath.Join(gitops, "apps/shop/versions.yaml"), cmManifest)

	rep, report := runRenovate(t, gitops, host)
	for _, file := range []string{"apps/shop/appversion.yaml", "apps/shop/versions.yaml"} {
		if cur, next := newValueFor(rep, file, repo); cur != "1.0.0" || next != "1.3.0" {
			t.Fatalf("%s: Renovate reports %q -> %q, want 1.0.0 -> 1.3.0", file, cur, next)
		}
	}

	s := newScenario(t, "renovate")
	s.create(deployment(s.ns, "app", repo+":1.0.0", 2), deployment(s.ns, "web", repo+":1.0.0", 2),
		config(func(c *v1alpha1.RollingUpgradeConfig) { c.Spec.Image = repo }))
	mustKubectl(t, "-n", s.ns, "apply", "--server-side", "--field-manager", "kustomize-controller", "-f", filepath.Join(gitops, "apps/shop/versions.yaml"))
	web := config(func(c *v1alpha1.RollingUpgradeConfig) {
		c.Name = "web"
		c.Spec.Image = repo
		c.Spec.TargetRef.Name = "web"
		c.Spec.Sources = []v1alpha1.VersionSource{{ConfigMap: &v1alpha1.ConfigMapSource{Name: "versions", Key: "app"}}}
	})
	s.create(web)
	mustKubectl(t, "-n", s.ns, "apply", "--server-side", "--field-manager", "kustomize-controller", "-f", filepath.Join(gitops, "apps/shop/appversion.yaml"))
	s.start()

	// Path A.
	if out := renovateImport(t, "--report", report, "--namespace", s.ns); !strings.Contains(out, "ApplicationVersion app 1.0.0 -> 1.3.0") {
		t.Errorf("import said:\n%s", out)
	}
	c := s.waitPhase(2*time.Minute, v1alpha1.PhaseCompleted)
	if c.Status.CurrentImage != repo+":1.3.0" {
		t.Errorf("path A: %s", describeConfig(c))
	}

	// Path B: the pull request Renovate would open changes the value; Flux applies the file.
	writeFile(t, filepath.Join(gitops, "apps/shop/versions.yaml"), strings.Replace(cmManifest, `app: "1.0.0"`, `app: "1.3.0"`, 1))
	mustKubectl(t, "-n", s.ns, "apply", "--server-side", "--field-manager", "kustomize-controller", "-f", filepath.Join(gitops, "apps/shop/versions.yaml"))
	var got v1alpha1.RollingUpgradeConfig
	eventually(t, 2*time.Minute, "path B rolled out", func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: "web"}, &got); err != nil {
			return false, err.Error(), nil
		}
		return got.Status.Phase == v1alpha1.PhaseCompleted && got.Status.CurrentImage == repo+":1.3.0", describeConfig(&got), nil
	})
}
