//go:build integration

package v1alpha1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// These tests install the generated CRDs into a real kube-apiserver and etcd (envtest) and check
// what the API server itself enforces: schema, defaults, CEL rules, subresources, printer columns.

var (
	cfg *rest.Config
	k8s client.Client
)

func TestMain(m *testing.M) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run these tests with `make test-integration`")
		os.Exit(1)
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	var err error
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "starting envtest:", err)
		os.Exit(1)
	}
	scheme := runtime.NewScheme()
	_ = v1alpha1.AddToScheme(scheme)
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		_ = env.Stop()
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	os.Exit(code)
}

func TestIntegrationCRDsAreServedWithNamesAndCategory(t *testing.T) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	list, err := dc.ServerResourcesForGroupVersion(v1alpha1.GroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"rollingupgradeconfigs": "ruc", "applicationversions": "appver", "gitwritebacks": "gwb", "rolloutcalendars": "rcal"}
	for _, r := range list.APIResources {
		short, ok := want[r.Name]
		if !ok {
			continue
		}
		delete(want, r.Name)
		// A calendar is the cluster admin's: cluster-scoped; the others are a tenant's.
		if r.Namespaced == (r.Name == "rolloutcalendars") || !slices.Equal(r.ShortNames, []string{short}) || !slices.Contains(r.Categories, "rollgate") {
			t.Errorf("%s: namespaced=%v shortNames=%v categories=%v", r.Name, r.Namespaced, r.ShortNames, r.Categories)
		}
	}
	if len(want) > 0 {
		t.Errorf("not served: %v", want)
	}
}

func TestIntegrationSamplesAreAccepted(t *testing.T) {
	ns := namespace(t)
	for _, f := range []string{"rollgate_v1alpha1_rollingupgradeconfig.yaml", "rollgate_v1alpha1_applicationversion.yaml"} {
		obj := readObject(t, filepath.Join("..", "..", "config", "samples", f))
		obj.SetNamespace(ns)
		if err := k8s.Create(context.Background(), obj); err != nil {
			t.Errorf("%s rejected: %v", f, err)
		}
	}
}

// A config that orders builds by a tag policy is taken, and its constraint defaulted as any other:
// the manager reads the default beside a tag policy as no constraint.
func TestIntegrationATagPolicyIsTaken(t *testing.T) {
	ns := namespace(t)
	ruc := validConfig(ns, "builds")
	unstructured.RemoveNestedField(ruc.Object, "spec", "versionConstraint")
	set(ruc, map[string]any{"numerical": map[string]any{"order": "asc"}}, "spec", "tagPolicy")
	set(ruc, map[string]any{"pattern": `^main-[0-9a-f]{7}-(?P<ts>[0-9]+)$`, "extract": "$ts"}, "spec", "filterTags")
	if err := k8s.Create(context.Background(), ruc); err != nil {
		t.Fatal(err)
	}
	var got v1alpha1.RollingUpgradeConfig
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ruc), &got); err != nil {
		t.Fatal(err)
	}
	if s := got.Spec; s.TagPolicy == nil || s.TagPolicy.Numerical == nil || s.FilterTags == nil || s.FilterTags.Extract != "$ts" ||
		s.VersionConstraint != ">=0.0.0" {
		t.Errorf("spec %+v", s)
	}
}

// A config that follows a tag is taken with registry sources and the defaulted constraint.
func TestIntegrationAFollowedTagIsTaken(t *testing.T) {
	ns := namespace(t)
	ruc := validConfig(ns, "follows")
	unstructured.RemoveNestedField(ruc.Object, "spec", "versionConstraint")
	set(ruc, "stable", "spec", "followTag")
	set(ruc, []any{map[string]any{"registry": map[string]any{"interval": "5m"}}}, "spec", "sources")
	if err := k8s.Create(context.Background(), ruc); err != nil {
		t.Fatal(err)
	}
	var got v1alpha1.RollingUpgradeConfig
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ruc), &got); err != nil {
		t.Fatal(err)
	}
	if s := got.Spec; s.FollowTag != "stable" || s.VersionConstraint != ">=0.0.0" {
		t.Errorf("spec %+v", s)
	}
}

func TestIntegrationDefaults(t *testing.T) {
	ns := namespace(t)
	ruc := validConfig(ns, "defaults")
	unstructured.RemoveNestedField(ruc.Object, "spec", "versionConstraint")
	unstructured.RemoveNestedField(ruc.Object, "spec", "healthTimeout")
	unstructured.RemoveNestedField(ruc.Object, "spec", "maxRollbacks")
	unstructured.RemoveNestedField(ruc.Object, "spec", "maintenanceWindow", "timeZone")
	must(t, unstructured.SetNestedSlice(ruc.Object, []any{map[string]any{"registry": map[string]any{}}}, "spec", "sources"))
	if err := k8s.Create(context.Background(), ruc); err != nil {
		t.Fatal(err)
	}
	var got v1alpha1.RollingUpgradeConfig
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ruc), &got); err != nil {
		t.Fatal(err)
	}
	s := got.Spec
	if s.VersionConstraint != ">=0.0.0" || s.HealthTimeout == nil || s.HealthTimeout.Duration != 10*time.Minute || s.MaxRollbacks != 3 ||
		s.MaintenanceWindow.TimeZone != "UTC" || s.Sources[0].Registry.Interval == nil || s.Sources[0].Registry.Interval.Duration != time.Hour ||
		s.Approval != v1alpha1.ApprovalNone {
		t.Errorf("defaults not applied: %+v", s)
	}

	analysis := validConfig(ns, "analysis-defaults")
	set(analysis, map[string]any{"metrics": []any{map[string]any{"name": "error-rate", "query": "errors", "successCondition": map[string]any{"max": "1e-2"}}}},
		"spec", "analysis")
	must(t, k8s.Create(context.Background(), analysis))
	must(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(analysis), &got))
	if m := got.Spec.Analysis.Metrics[0]; m.Interval == nil || m.Interval.Duration != time.Minute || m.ConsecutiveErrorLimit != 4 ||
		m.FailureLimit != 0 || m.Count != 0 || m.InitialDelay != nil {
		t.Errorf("metric check defaults not applied: %+v", m)
	}
}

// TestIntegrationInvalidSpecsAreRejected: each bad value is refused at admission with a message
// that tells the user what to write instead.
func TestIntegrationInvalidSpecsAreRejected(t *testing.T) {
	ns := namespace(t)
	window := func(fields map[string]any) func(*unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) { set(u, fields, "spec", "maintenanceWindow") }
	}
	sources := func(src ...any) func(*unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) { set(u, src, "spec", "sources") }
	}
	metric := func(fields map[string]any) func(*unstructured.Unstructured) {
		m := map[string]any{"name": "error-rate", "query": "errors", "successCondition": map[string]any{"max": "0.05"}}
		for k, v := range fields {
			m[k] = v
		}
		return func(u *unstructured.Unstructured) { set(u, map[string]any{"metrics": []any{m}}, "spec", "analysis") }
	}
	cases := []struct {
		name   string
		mutate func(*unstructured.Unstructured)
		want   string
	}{
		{"pinDigest with a GitFirst write-back", func(u *unstructured.Unstructured) {
			set(u, true, "spec", "pinDigest")
			set(u, map[string]any{"name": "repo", "path": "apps/web/kustomization.yaml", "mode": "GitFirst"}, "spec", "gitWriteBack")
		}, "pinDigest renders digests, and a GitFirst write-back commits tags: choose one"},
		{"strategy InPlace on a Deployment", func(u *unstructured.Unstructured) {
			set(u, map[string]any{"type": "InPlace"}, "spec", "strategy")
		}, "strategy InPlace changes the pods of a StatefulSet: targetRef.kind must be StatefulSet"},
		{"strategy InPlace with a GitFirst write-back", func(u *unstructured.Unstructured) {
			set(u, map[string]any{"kind": "StatefulSet", "name": "db"}, "spec", "targetRef")
			set(u, map[string]any{"type": "InPlace"}, "spec", "strategy")
			set(u, map[string]any{"name": "repo", "path": "apps/web/kustomization.yaml", "mode": "GitFirst"}, "spec", "gitWriteBack")
		}, "strategy InPlace does not work with a GitFirst write-back: use ClusterFirst"},
		{"an in-place maxUnavailable of 0", func(u *unstructured.Unstructured) {
			set(u, map[string]any{"kind": "StatefulSet", "name": "db"}, "spec", "targetRef")
			set(u, map[string]any{"type": "InPlace", "inPlace": map[string]any{"maxUnavailable": int64(0)}}, "spec", "strategy")
		}, "maxUnavailable must be a number from 1 to 100000 or a percentage such as 25%"},
		{"an in-place maxUnavailable of 0%", func(u *unstructured.Unstructured) {
			set(u, map[string]any{"kind": "StatefulSet", "name": "db"}, "spec", "targetRef")
			set(u, map[string]any{"type": "InPlace", "inPlace": map[string]any{"maxUnavailable": "0%"}}, "spec", "strategy")
		}, "maxUnavailable must be a number from 1 to 100000 or a percentage such as 25%"},
		{"an in-place maxUnavailable past an int32", func(u *unstructured.Unstructured) {
			set(u, map[string]any{"kind": "StatefulSet", "name": "db"}, "spec", "targetRef")
			set(u, map[string]any{"type": "InPlace", "inPlace": map[string]any{"maxUnavailable": int64(3000000000)}}, "spec", "strategy")
		}, "maxUnavailable must be a number from 1 to 100000 or a percentage such as 25%"},
		{"an in-place maxUnavailable that is neither", func(u *unstructured.Unstructured) {
			set(u, map[string]any{"kind": "StatefulSet", "name": "db"}, "spec", "targetRef")
			set(u, map[string]any{"type": "InPlace", "inPlace": map[string]any{"maxUnavailable": "two"}}, "spec", "strategy")
		}, "maxUnavailable must be a number from 1 to 100000 or a percentage such as 25%"},
		{"an in-place podReadyTimeout that is no duration", func(u *unstructured.Unstructured) {
			set(u, map[string]any{"kind": "StatefulSet", "name": "db"}, "spec", "targetRef")
			set(u, map[string]any{"type": "InPlace", "inPlace": map[string]any{"podReadyTimeout": "soon"}}, "spec", "strategy")
		}, "podReadyTimeout must be a duration of at least 1s"},
		{"a window both recurring and one-off", func(u *unstructured.Unstructured) {
			set(u, []any{map[string]any{"name": "x", "schedule": "0 3 * * *", "duration": "1h", "start": "2026-12-24T00:00:00Z", "end": "2026-12-27T00:00:00Z"}}, "spec", "windows")
		}, "a window is either recurring (schedule and duration) or one-off (start and end)"},
		{"a one-off window that ends before it starts", func(u *unstructured.Unstructured) {
			set(u, []any{map[string]any{"name": "x", "type": "Deny", "start": "2026-12-27T00:00:00Z", "end": "2026-12-24T00:00:00Z"}}, "spec", "windows")
		}, "a one-off window's end must come after its start"},
		{"a window of another type", func(u *unstructured.Unstructured) {
			set(u, []any{map[string]any{"name": "x", "type": "Maybe", "start": "2026-12-24T00:00:00Z", "end": "2026-12-27T00:00:00Z"}}, "spec", "windows")
		}, `Unsupported value: "Maybe"`},
		{"minReleaseAge not a duration", func(u *unstructured.Unstructured) { set(u, "3 days", "spec", "minReleaseAge") },
			"minReleaseAge must be a duration, e.g. 72h"},
		{"soakTime not a duration", func(u *unstructured.Unstructured) { set(u, "an hour", "spec", "soakTime") },
			"soakTime must be a duration, e.g. 30m"},
		{"analysis without metrics", func(u *unstructured.Unstructured) { set(u, map[string]any{"metrics": []any{}}, "spec", "analysis") },
			"spec.analysis.metrics: Invalid value: 0: spec.analysis.metrics in body should have at least 1 items"},
		{"metric without a bound", metric(map[string]any{"successCondition": map[string]any{}}), "successCondition needs min, max or both"},
		{"bound that is no number", metric(map[string]any{"successCondition": map[string]any{"max": "five percent"}}),
			"spec.analysis.metrics[0].successCondition.max: Invalid value"},
		{"metric interval 500ms", metric(map[string]any{"interval": "500ms"}), "interval must be a duration of at least 1s"},
		{"metric name not a DNS label", metric(map[string]any{"name": "Error Rate"}), "spec.analysis.metrics[0].name: Invalid value"},
		{"no errors allowed before inconclusive", metric(map[string]any{"consecutiveErrorLimit": int64(0)}),
			"spec.analysis.metrics[0].consecutiveErrorLimit: Invalid value: 0"},
		{"no query", metric(map[string]any{"query": ""}), "spec.analysis.metrics[0].query"},
		{"unknown kind", func(u *unstructured.Unstructured) { set(u, "DaemonSet", "spec", "targetRef", "kind") },
			`Unsupported value: "DaemonSet"`},
		{"no target name", func(u *unstructured.Unstructured) { set(u, "", "spec", "targetRef", "name") },
			"spec.targetRef.name"},
		{"no targetRef", func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, "spec", "targetRef") },
			"spec.targetRef: Required value"},
		{"no image", func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, "spec", "image") },
			"spec.image: Required value"},
		{"image with tag", func(u *unstructured.Unstructured) { set(u, "ghcr.io/acme/web:1.0.0", "spec", "image") },
			"image must be a repository without tag or digest"},
		{"image with digest", func(u *unstructured.Unstructured) {
			set(u, "ghcr.io/acme/web@sha256:"+strings.Repeat("a", 64), "spec", "image")
		}, "image must be a repository without tag or digest"},
		{"maxRollbacks 0", func(u *unstructured.Unstructured) { set(u, int64(0), "spec", "maxRollbacks") },
			"spec.maxRollbacks: Invalid value: 0: spec.maxRollbacks in body should be greater than or equal to 1"},
		{"healthTimeout 10s", func(u *unstructured.Unstructured) { set(u, "10s", "spec", "healthTimeout") },
			"healthTimeout must be a duration of at least 30s"},
		{"healthTimeout not a duration", func(u *unstructured.Unstructured) { set(u, "ten minutes", "spec", "healthTimeout") },
			"healthTimeout must be a duration of at least 30s"},
		{"window without duration", window(map[string]any{"schedule": "0 3 * * *"}),
			"a maintenance window needs both schedule and duration"},
		{"window without schedule", window(map[string]any{"duration": "2h"}),
			"a maintenance window needs both schedule and duration"},
		{"schedule of four fields", window(map[string]any{"schedule": "0 3 * *", "duration": "2h"}),
			"schedule must be a cron expression of five fields"},
		{"time zone inside the schedule", window(map[string]any{"schedule": "CRON_TZ=UTC 0 3 * *", "duration": "2h"}),
			"set the time zone in timeZone, not in the schedule"},
		{"window of 30s", window(map[string]any{"schedule": "0 3 * * *", "duration": "30s"}),
			"duration must be a duration of at least 1m"},
		{"a tag policy of no order", func(u *unstructured.Unstructured) { set(u, map[string]any{}, "spec", "tagPolicy") },
			"a tag policy sets exactly one of numerical or alphabetical"},
		{"a tag policy of two orders", func(u *unstructured.Unstructured) {
			set(u, map[string]any{"numerical": map[string]any{}, "alphabetical": map[string]any{}}, "spec", "tagPolicy")
		}, "a tag policy sets exactly one of numerical or alphabetical"},
		{"an order that is neither asc nor desc", func(u *unstructured.Unstructured) {
			set(u, map[string]any{"numerical": map[string]any{"order": "newest"}}, "spec", "tagPolicy")
		}, "spec.tagPolicy.numerical.order: Unsupported value"},
		{"an alphabetical tag policy without a filter", func(u *unstructured.Unstructured) {
			set(u, map[string]any{"alphabetical": map[string]any{}}, "spec", "tagPolicy")
		}, "an alphabetical tag policy needs filterTags"},
		{"a followed tag beside a tag policy", func(u *unstructured.Unstructured) {
			set(u, "stable", "spec", "followTag")
			unstructured.RemoveNestedField(u.Object, "spec", "versionConstraint")
			set(u, map[string]any{"numerical": map[string]any{}}, "spec", "tagPolicy")
		}, "followTag follows the digests of one tag: it takes no tagPolicy, filterTags or versionConstraint"},
		{"a followed tag within a constraint", func(u *unstructured.Unstructured) {
			set(u, "stable", "spec", "followTag")
			set(u, ">=1.0.0", "spec", "versionConstraint")
		}, "followTag follows the digests of one tag: it takes no tagPolicy, filterTags or versionConstraint"},
		{"a followed tag from a ConfigMap", func(u *unstructured.Unstructured) {
			set(u, "stable", "spec", "followTag")
			unstructured.RemoveNestedField(u.Object, "spec", "versionConstraint")
			set(u, []any{map[string]any{"configMap": map[string]any{"name": "versions", "key": "web"}}}, "spec", "sources")
		}, "followTag reads the tag's digest from one source, the registry or an ImagePolicy"},
		{"a followed tag written back to Git", func(u *unstructured.Unstructured) {
			set(u, "stable", "spec", "followTag")
			unstructured.RemoveNestedField(u.Object, "spec", "versionConstraint")
			set(u, map[string]any{"name": "fleet", "path": "apps/web.yaml"}, "spec", "gitWriteBack")
		}, "followTag rolls out digests, which a write-back to Git does not record: it takes no gitWriteBack"},
		{"a followed tag from two sources", func(u *unstructured.Unstructured) {
			set(u, "stable", "spec", "followTag")
			unstructured.RemoveNestedField(u.Object, "spec", "versionConstraint")
			set(u, []any{map[string]any{"registry": map[string]any{}}, map[string]any{"imagePolicy": map[string]any{"name": "web"}}}, "spec", "sources")
		}, "followTag reads the tag's digest from one source, the registry or an ImagePolicy"},
		{"a followed tag too long to name a version", func(u *unstructured.Unstructured) {
			set(u, strings.Repeat("s", 57), "spec", "followTag")
			unstructured.RemoveNestedField(u.Object, "spec", "versionConstraint")
		}, "spec.followTag: Too long"},
		{"a verified config that commits tags to Git", func(u *unstructured.Unstructured) {
			set(u, map[string]any{"cosign": map[string]any{"publicKeySecretRef": map[string]any{"name": "cosign"}}}, "spec", "verify")
			set(u, map[string]any{"name": "fleet", "path": "apps/web.yaml", "mode": "GitFirst"}, "spec", "gitWriteBack")
		}, "verify renders what it verified by digest, and a GitFirst write-back commits tags: use ClusterFirst"},
		{"a signature check of neither a key nor an identity", func(u *unstructured.Unstructured) {
			set(u, map[string]any{"cosign": map[string]any{}}, "spec", "verify")
		}, "set one of publicKeySecretRef and keyless"},
		{"a signature check of a key and an identity", func(u *unstructured.Unstructured) {
			set(u, map[string]any{"cosign": map[string]any{"publicKeySecretRef": map[string]any{"name": "cosign"},
				"keyless": map[string]any{"issuer": "https://token.actions.githubusercontent.com", "subject": "release@acme.example",
					"trustedRootRef": map[string]any{"name": "sigstore"}}}}, "spec", "verify")
		}, "set one of publicKeySecretRef and keyless"},
		{"a keyless identity of no subject", func(u *unstructured.Unstructured) {
			set(u, map[string]any{"cosign": map[string]any{"keyless": map[string]any{"issuer": "https://token.actions.githubusercontent.com",
				"trustedRootRef": map[string]any{"name": "sigstore"}}}}, "spec", "verify")
		}, "set one of subject and subjectRegExp"},
		{"a keyless identity of a subject and an expression", func(u *unstructured.Unstructured) {
			set(u, map[string]any{"cosign": map[string]any{"keyless": map[string]any{"issuer": "https://token.actions.githubusercontent.com",
				"subject": "release@acme.example", "subjectRegExp": "^release@", "trustedRootRef": map[string]any{"name": "sigstore"}}}}, "spec", "verify")
		}, "set one of subject and subjectRegExp"},
		{"a keyless subject matched anywhere", func(u *unstructured.Unstructured) {
			set(u, map[string]any{"cosign": map[string]any{"keyless": map[string]any{"issuer": "https://token.actions.githubusercontent.com",
				"subjectRegExp": "acme/web", "trustedRootRef": map[string]any{"name": "sigstore"}}}}, "spec", "verify")
		}, "subjectRegExp starts with ^: unanchored, it matches any subject that merely contains it"},
		{"a keyless identity without a trusted root", func(u *unstructured.Unstructured) {
			set(u, map[string]any{"cosign": map[string]any{"keyless": map[string]any{"issuer": "https://token.actions.githubusercontent.com",
				"subject": "release@acme.example"}}}, "spec", "verify")
		}, "spec.verify.cosign.keyless.trustedRootRef: Required value"},
		{"a followed tag that is no tag", func(u *unstructured.Unstructured) {
			set(u, "stable@sha256:0", "spec", "followTag")
			unstructured.RemoveNestedField(u.Object, "spec", "versionConstraint")
		}, "spec.followTag in body should match"},
		{"a container and several", func(u *unstructured.Unstructured) {
			set(u, "web", "spec", "container")
			set(u, []any{"web", "migrate"}, "spec", "containers")
		}, "name one container in container or several in containers, not both"},
		{"one container named twice", func(u *unstructured.Unstructured) { set(u, []any{"web", "web"}, "spec", "containers") },
			"spec.containers[1]: Duplicate value"},
		{"several containers changed in place", func(u *unstructured.Unstructured) {
			set(u, []any{"db", "init"}, "spec", "containers")
			set(u, "StatefulSet", "spec", "targetRef", "kind")
			set(u, map[string]any{"type": "InPlace"}, "spec", "strategy")
		}, "strategy InPlace changes the image of one container in place: use container, not containers"},
		{"a tag filter without a pattern", func(u *unstructured.Unstructured) { set(u, map[string]any{"extract": "$ts"}, "spec", "filterTags") },
			"spec.filterTags.pattern: Required value"},
		{"empty source", sources(map[string]any{}),
			"a source sets exactly one of applicationVersion, configMap, registry or imagePolicy"},
		{"source with two signals", sources(map[string]any{
			"applicationVersion": map[string]any{"name": "web"}, "registry": map[string]any{}}),
			"a source sets exactly one of applicationVersion, configMap, registry or imagePolicy"},
		{"configMap without key", sources(map[string]any{"configMap": map[string]any{"name": "versions"}}),
			"spec.sources[0].configMap.key: Required value"},
		{"approval of minors", func(u *unstructured.Unstructured) { set(u, "Minor", "spec", "approval") },
			`spec.approval: Unsupported value: "Minor": supported values: "None", "Required", "Major"`},
		{"registry interval 10s", sources(map[string]any{"registry": map[string]any{"interval": "10s"}}),
			"interval must be a duration of at least 1m"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := validConfig(ns, fmt.Sprintf("invalid-%d", i))
			tc.mutate(u)
			err := k8s.Create(context.Background(), u)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want Invalid, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\ndoes not say %q", err, tc.want)
			}
		})
	}
}

func TestIntegrationInvalidApplicationVersionsAreRejected(t *testing.T) {
	ns := namespace(t)
	cases := []struct {
		name string
		spec map[string]any
		want string
	}{
		{"image with tag", map[string]any{"image": "ghcr.io/acme/web:1.4.0", "version": "1.4.0"},
			"image must be a repository without tag or digest"},
		{"no version", map[string]any{"image": "ghcr.io/acme/web"}, "spec.version: Required value"},
		{"empty version", map[string]any{"image": "ghcr.io/acme/web", "version": ""}, "spec.version"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": v1alpha1.GroupVersion.String(), "kind": "ApplicationVersion",
				"metadata": map[string]any{"name": fmt.Sprintf("invalid-%d", i), "namespace": ns},
				"spec":     tc.spec,
			}}
			err := k8s.Create(context.Background(), u)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want Invalid saying %q, got %v", tc.want, err)
			}
		})
	}
}

// TestIntegrationGitWriteBackURLsAndPaths: a repository over HTTP(S) without credentials in the URL,
// or over SSH, with paths inside the repository; defaults for the rest.
func TestIntegrationGitWriteBackURLsAndPaths(t *testing.T) {
	ns := namespace(t)
	for i, tc := range []struct {
		name string
		spec map[string]any
		want string // "" for accepted
	}{
		{"https", map[string]any{"url": "https://git.example.com/acme/fleet.git"}, ""},
		{"ssh", map[string]any{"url": "ssh://git@git.example.com:2222/acme/fleet.git"}, ""},
		{"ssh without a user", map[string]any{"url": "ssh://git.example.com/acme/fleet.git"}, ""},
		{"credentials in the URL", map[string]any{"url": "https://rollgate:token@git.example.com/acme/fleet.git"}, "url must be"},
		{"scp-like", map[string]any{"url": "git@git.example.com:acme/fleet.git"}, "url must be"},
		{"a password in an ssh URL", map[string]any{"url": "ssh://git:secret@git.example.com/acme/fleet.git"}, "url must be"},
		{"file", map[string]any{"url": "file:///srv/fleet.git"}, "url must be"},
		{"record dir outside", map[string]any{"url": "https://git.example.com/fleet.git", "recordDir": "../elsewhere"}, "recordDir must be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": v1alpha1.GroupVersion.String(), "kind": "GitWriteBack",
				"metadata": map[string]any{"name": fmt.Sprintf("gwb-%d", i), "namespace": ns},
				"spec":     tc.spec,
			}}
			err := k8s.Create(context.Background(), u)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				var got v1alpha1.GitWriteBack
				must(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(u), &got))
				if s := got.Spec; s.Branch != "main" || s.RecordDir != ".rollgate" || s.RenovatePreset != ".rollgate/renovate.json" ||
					s.Author.Name != "rollgate" || s.Author.Email != "rollgate@rollgate.dev" {
					t.Errorf("defaults not applied: %+v", s)
				}
				return
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want Invalid saying %q, got %v", tc.want, err)
			}
		})
	}
}

// TestIntegrationStatusIsASubresource: a write of the main resource cannot change status, and a
// status write cannot change spec — so users and the controller never overwrite each other.
func TestIntegrationStatusIsASubresource(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	var ruc v1alpha1.RollingUpgradeConfig
	toTyped(t, validConfig(ns, "status"), &ruc)
	if err := k8s.Create(ctx, &ruc); err != nil {
		t.Fatal(err)
	}
	ruc.Status.Phase = v1alpha1.PhaseCompleted
	if err := k8s.Update(ctx, &ruc); err != nil {
		t.Fatal(err)
	}
	if ruc.Status.Phase != "" {
		t.Errorf("main resource update stored status.phase %q", ruc.Status.Phase)
	}
	ruc.Status.Phase = v1alpha1.PhaseCompleted
	ruc.Status.CurrentVersion = "1.3.0"
	ruc.Spec.MaxRollbacks = 7
	if err := k8s.Status().Update(ctx, &ruc); err != nil {
		t.Fatal(err)
	}
	if ruc.Status.Phase != v1alpha1.PhaseCompleted || ruc.Status.CurrentVersion != "1.3.0" || ruc.Spec.MaxRollbacks != 3 {
		t.Errorf("after status update: phase=%q current=%q maxRollbacks=%d", ruc.Status.Phase, ruc.Status.CurrentVersion, ruc.Spec.MaxRollbacks)
	}
}

// TestIntegrationPrinterColumns asks the API server for the table kubectl prints.
func TestIntegrationPrinterColumns(t *testing.T) {
	ns := namespace(t)
	if err := k8s.Create(context.Background(), validConfig(ns, "columns")); err != nil {
		t.Fatal(err)
	}
	cases := map[string][]string{
		// Ready and its message by default: a Stalled config is never shown as merely Idle.
		"rollingupgradeconfigs": {"Name", "Target", "Current", "Target Version", "Phase", "Circuit", "Next Window", "Ready", "Status", "Age"},
		"applicationversions":   {"Name", "Image", "Version", "Ready", "Age"},
		"gitwritebacks":         {"Name", "URL", "Branch", "Ready", "Configs", "Last Commit", "Age"},
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	for resource, want := range cases {
		raw, err := cs.RESTClient().Get().
			AbsPath("/apis", v1alpha1.GroupVersion.Group, v1alpha1.GroupVersion.Version, "namespaces", ns, resource).
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var table metav1.Table
		if err := json.Unmarshal(raw, &table); err != nil {
			t.Fatal(err)
		}
		var defaultCols []string
		for _, c := range table.ColumnDefinitions {
			if c.Priority == 0 {
				defaultCols = append(defaultCols, c.Name)
			}
		}
		if !slices.Equal(defaultCols, want) {
			t.Errorf("%s columns = %v, want %v", resource, defaultCols, want)
		}
	}
}

// --- helpers ---

var nsCount int

// namespace creates a namespace for one test, so that tests do not see each other's objects.
func namespace(t *testing.T) string {
	t.Helper()
	nsCount++
	name := fmt.Sprintf("crd-%d-%d", time.Now().UnixNano()%100000, nsCount)
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return name
}

// validConfig is a RollingUpgradeConfig that passes every rule; cases change one field of it.
func validConfig(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "RollingUpgradeConfig",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"targetRef":         map[string]any{"kind": "Deployment", "name": "web"},
			"image":             "127.0.0.1:5000/acme/web",
			"versionConstraint": ">=1.0.0",
			"sources":           []any{map[string]any{"applicationVersion": map[string]any{"name": "web"}}},
			"maintenanceWindow": map[string]any{"schedule": "0 3 * * *", "duration": "2h", "timeZone": "Europe/Berlin"},
			"healthTimeout":     "5m",
			"maxRollbacks":      int64(3),
		},
	}}
}

func set(u *unstructured.Unstructured, value any, path ...string) {
	if err := unstructured.SetNestedField(u.Object, runtime.DeepCopyJSONValue(value), path...); err != nil {
		panic(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func readObject(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	must(t, err)
	u := &unstructured.Unstructured{}
	must(t, yaml.Unmarshal(data, &u.Object))
	return u
}

func toTyped(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into))
}

// A RolloutCalendar is cluster-scoped and needs windows, freezes, a cap or a jitter; the cap is at
// least 1 and the jitter at most a day.
func TestIntegrationRolloutCalendars(t *testing.T) {
	cal := func(name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": v1alpha1.GroupVersion.String(), "kind": "RolloutCalendar",
			"metadata": map[string]any{"name": name}, "spec": spec}}
	}
	for _, tc := range []struct {
		spec map[string]any
		want string
	}{
		{spec: map[string]any{}, want: "a calendar needs windows, freezeWhile, maxConcurrent or jitter"},
		{spec: map[string]any{"maxConcurrent": 0}, want: "should be greater than or equal to 1"},
		{spec: map[string]any{"jitter": "25h"}, want: "jitter must be a duration of at most 24h"},
		{spec: map[string]any{"jitter": "soon"}, want: "jitter must be a duration of at most 24h"},
	} {
		if err := k8s.Create(context.Background(), cal("bad", tc.spec)); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("spec %v: %v, want %q", tc.spec, err, tc.want)
		}
	}
	must(t, k8s.Create(context.Background(), cal("waves", map[string]any{"maxConcurrent": 2, "jitter": "10m"})))
	ok := cal("ops", map[string]any{"freezeWhile": []any{map[string]any{"name": "sev1", "query": `ALERTS{severity="critical"}`}}})
	must(t, k8s.Create(context.Background(), ok))
	if ok.GetNamespace() != "" {
		t.Errorf("a calendar in namespace %q, want cluster-scoped", ok.GetNamespace())
	}
}

// An in-place maxUnavailable is a number or a percentage of the replicas.
func TestIntegrationInPlaceMaxUnavailableTakesPercentages(t *testing.T) {
	ns := namespace(t)
	for i, v := range []any{int64(2), "25%", "100%"} {
		u := validConfig(ns, fmt.Sprintf("max-unavailable-%d", i))
		must(t, unstructured.SetNestedMap(u.Object, map[string]any{"kind": "StatefulSet", "name": "db"}, "spec", "targetRef"))
		must(t, unstructured.SetNestedField(u.Object, map[string]any{"type": "InPlace", "inPlace": map[string]any{"maxUnavailable": v}}, "spec", "strategy"))
		if err := k8s.Create(context.Background(), u); err != nil {
			t.Errorf("maxUnavailable %v: %v", v, err)
		}
	}
}
