//go:build integration

package controller

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"go.uber.org/zap/zapcore"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/controller/engine"
	"github.com/rollgate/rollgate/internal/kube"
	"github.com/rollgate/rollgate/internal/registry"
)

// These tests run the controllers in a manager against a real kube-apiserver and etcd (envtest).
// There is no kube-controller-manager here: the tests play the Deployment controller by writing
// the workload status themselves.

var (
	k8s client.WithWatch
	mgr ctrl.Manager
)

func TestMain(m *testing.M) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run these tests with `make test-integration`")
		os.Exit(1)
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting envtest:", err)
		os.Exit(1)
	}
	code := func() int {
		scheme := runtime.NewScheme()
		_ = clientgoscheme.AddToScheme(scheme)
		_ = v1alpha1.AddToScheme(scheme)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		trim := kube.NewCacheTrim()
		mgr, err = ctrl.NewManager(cfg, ctrl.Options{
			Scheme:  scheme,
			Metrics: metricsserver.Options{BindAddress: "0"},
			Cache:   trim.CacheOptions(),
		})
		var local registry.AddressPolicy // the test registries listen on 127.0.0.1
		if err == nil {
			local, err = registry.ParseAllowList([]string{"127.0.0.1"})
		}
		if err == nil {
			err = Setup(ctx, mgr, Config{Controllers: AllControllers, Clock: clock.RealClock{}, Tags: registry.Remote{Transport: local.Transport()}, CacheTrim: trim,
				Calendars: true})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
			return 1
		}
		go func() {
			if err := mgr.Start(ctx); err != nil {
				fmt.Fprintln(os.Stderr, "manager stopped:", err)
			}
		}()
		k8s, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme})
		if err != nil {
			fmt.Fprintln(os.Stderr, "client:", err)
			return 1
		}
		return m.Run()
	}()
	_ = env.Stop()
	os.Exit(code)
}

const repo = "ghcr.io/acme/web"

// fixture is a namespace with a healthy Deployment "web" at 1.0.0.
func fixture(t *testing.T) string {
	t.Helper()
	ns := "it-" + rand.String(6)
	must(t, k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	healthyDeployment(t, ns, "web", repo+":1.0.0")
	return ns
}

// healthyDeployment creates a Deployment at 1.0.0 with the status of a finished rollout.
func healthyDeployment(t *testing.T, ns, name, image string) {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
			},
		},
	}
	must(t, k8s.Create(context.Background(), d))
	markRolledOut(t, d)
}

// markRolledOut writes the status the Deployment controller would write after a rollout.
func markRolledOut(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
	must(t, k8s.Status().Update(context.Background(), d))
}

// settleWorkload waits for the renderer's first apply (it adds its annotations, which bumps a
// Deployment's generation) and then plays the Deployment controller observing it.
func settleWorkload(t *testing.T, ns string) {
	t.Helper()
	var d appsv1.Deployment
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &d); err != nil {
			return false, err
		}
		return d.Annotations[v1alpha1.LastUpdatedByAnnotation] != "", nil
	})
	must(t, err)
	markRolledOut(t, &d)
}

func newConfig(ns, name string, sources ...v1alpha1.VersionSource) *v1alpha1.RollingUpgradeConfig {
	return &v1alpha1.RollingUpgradeConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.RollingUpgradeConfigSpec{
			TargetRef: v1alpha1.WorkloadReference{Kind: v1alpha1.KindDeployment, Name: "web"},
			Image:     repo,
			Sources:   sources,
		},
	}
}

func cmSource(name, key string) v1alpha1.VersionSource {
	return v1alpha1.VersionSource{ConfigMap: &v1alpha1.ConfigMapSource{Name: name, Key: key}}
}

func waitCondition(t *testing.T, key client.ObjectKey, typ string, ok func(*metav1.Condition) bool) *v1alpha1.RollingUpgradeConfig {
	t.Helper()
	return waitConfig(t, key, "condition "+typ, func(ruc *v1alpha1.RollingUpgradeConfig) bool {
		c := apimeta.FindStatusCondition(ruc.Status.Conditions, typ)
		return c != nil && ok(c)
	})
}

// waitConfig waits until the config satisfies ok; what is the state it waits for, for the failure.
func waitConfig(t *testing.T, key client.ObjectKey, what string, ok func(*v1alpha1.RollingUpgradeConfig) bool) *v1alpha1.RollingUpgradeConfig {
	t.Helper()
	var ruc v1alpha1.RollingUpgradeConfig
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := k8s.Get(ctx, key, &ruc); err != nil {
			return false, err
		}
		return ok(&ruc), nil
	})
	if err != nil {
		t.Fatalf("%s: %s not reached: %v; annotations %v, conditions %+v", key, what, err, ruc.Annotations, ruc.Status.Conditions)
	}
	return &ruc
}

// warnings lists the Warning events about one config.
func warnings(t *testing.T, key client.ObjectKey) []string {
	t.Helper()
	var list eventsv1.EventList
	must(t, k8s.List(context.Background(), &list, client.InNamespace(key.Namespace)))
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == key.Name && e.Regarding.Kind == "RollingUpgradeConfig" && e.Type == corev1.EventTypeWarning {
			out = append(out, e.Reason+": "+e.Note)
		}
	}
	return out
}

// TestIntegrationBadSourcesStallOnlyTheirConfig: each bad source gives its config Stalled with a
// specific reason and one Warning event; a healthy config beside it is not disturbed.
func TestIntegrationBadSourcesStallOnlyTheirConfig(t *testing.T) {
	cases := []struct {
		name    string
		objects []client.Object
		source  v1alpha1.VersionSource
		reason  string
		says    string
	}{
		{"ConfigMap key missing", []client.Object{labelledCM("versions", map[string]string{"api": "1.1.0"})},
			cmSource("versions", "web"), "InvalidSpec", `ConfigMap versions has no key "web"`},
		{"ConfigMap garbage", []client.Object{labelledCM("versions", map[string]string{"web": "{{ .Values.tag }}"})},
			cmSource("versions", "web"), "InvalidSpec", "is not an image tag"},
		{"ApplicationVersion of another image", []client.Object{&v1alpha1.ApplicationVersion{ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: v1alpha1.ApplicationVersionSpec{Image: "ghcr.io/acme/api", Version: "1.1.0"}}},
			v1alpha1.VersionSource{ApplicationVersion: &v1alpha1.ApplicationVersionSource{Name: "web"}}, "InvalidSpec", "announces image ghcr.io/acme/api"},
		{"ApplicationVersion with build metadata, semver but no image tag", []client.Object{&v1alpha1.ApplicationVersion{ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: v1alpha1.ApplicationVersionSpec{Image: "ghcr.io/acme/web", Version: "1.4.0+build.5"}}},
			v1alpha1.VersionSource{ApplicationVersion: &v1alpha1.ApplicationVersionSource{Name: "web"}}, "InvalidSpec", `announces "1.4.0+build.5", which is not an image tag`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := fixture(t)
			for _, o := range tc.objects {
				o.SetNamespace(ns)
				must(t, k8s.Create(context.Background(), o))
			}
			// The neighbour: a config of another workload whose source is fine (no newer version).
			healthyDeployment(t, ns, "api", repo+":1.0.0")
			good := &v1alpha1.ApplicationVersion{ObjectMeta: metav1.ObjectMeta{Name: "good", Namespace: ns},
				Spec: v1alpha1.ApplicationVersionSpec{Image: repo, Version: "1.0.0"}}
			must(t, k8s.Create(context.Background(), good))
			neighbour := newConfig(ns, "neighbour", v1alpha1.VersionSource{ApplicationVersion: &v1alpha1.ApplicationVersionSource{Name: "good"}})
			neighbour.Spec.TargetRef.Name = "api"
			must(t, k8s.Create(context.Background(), neighbour))
			must(t, k8s.Create(context.Background(), newConfig(ns, "bad", tc.source)))

			bad := client.ObjectKey{Namespace: ns, Name: "bad"}
			waitCondition(t, bad, meta.StalledCondition, func(c *metav1.Condition) bool {
				return c.Status == metav1.ConditionTrue && c.Reason == tc.reason && strings.Contains(c.Message, tc.says)
			})
			waitCondition(t, client.ObjectKey{Namespace: ns, Name: "neighbour"}, meta.ReadyCondition, func(c *metav1.Condition) bool {
				return c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonUpToDate
			})
			var w []string
			_ = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				w = warnings(t, bad)
				return len(w) > 0, nil
			})
			if len(w) != 1 || !strings.Contains(w[0], tc.says) {
				t.Errorf("warning events = %v, want one saying %q", w, tc.says)
			}
			if len(warnings(t, client.ObjectKey{Namespace: ns, Name: "neighbour"})) != 0 {
				t.Error("the neighbour got warnings")
			}
		})
	}
}

// TestIntegrationOneConfigPerWorkload: a second config for the same workload is refused, and the
// first one keeps working.
func TestIntegrationOneConfigPerWorkload(t *testing.T) {
	ns := fixture(t)
	cm := labelledCM("versions", map[string]string{"web": "1.0.0"})
	cm.Namespace = ns
	must(t, k8s.Create(context.Background(), cm))
	first := newConfig(ns, "first", cmSource("versions", "web"))
	must(t, k8s.Create(context.Background(), first))
	time.Sleep(1100 * time.Millisecond) // creation timestamps have whole seconds
	must(t, k8s.Create(context.Background(), newConfig(ns, "second", cmSource("versions", "web"))))

	waitCondition(t, client.ObjectKey{Namespace: ns, Name: "second"}, meta.StalledCondition, func(c *metav1.Condition) bool {
		return c.Reason == "InvalidSpec" && strings.Contains(c.Message, "managed by RollingUpgradeConfig first")
	})
	waitCondition(t, client.ObjectKey{Namespace: ns, Name: "first"}, meta.ReadyCondition, func(c *metav1.Condition) bool {
		return c.Status == metav1.ConditionTrue
	})
	var d appsv1.Deployment
	must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, &d))
	if by := d.Annotations[v1alpha1.LastUpdatedByAnnotation]; by != "" && by != "first" {
		t.Errorf("the refused config rendered the workload: last-updated-by=%s", by)
	}
}

// TestIntegrationRegistryDownHoldsRollouts: a registry that answers 500 gives Ready=False
// RegistryUnavailable and one Warning event; nothing is rolled out.
func TestIntegrationRegistryDownHoldsRollouts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	image := strings.TrimPrefix(srv.URL, "http://") + "/demo/app"
	ns := "it-" + rand.String(6)
	must(t, k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	healthyDeployment(t, ns, "web", image+":1.0.0")
	ruc := newConfig(ns, "web", v1alpha1.VersionSource{Registry: &v1alpha1.RegistrySource{}})
	ruc.Spec.Image = image
	must(t, k8s.Create(context.Background(), ruc))
	key := client.ObjectKey{Namespace: ns, Name: "web"}
	got := waitCondition(t, key, meta.ReadyCondition, func(c *metav1.Condition) bool {
		return c.Status == metav1.ConditionFalse && c.Reason == "RegistryUnavailable" && strings.Contains(c.Message, "registry failed (500)")
	})
	if got.Annotations[v1alpha1.TargetImageAnnotation] != "" || apimeta.FindStatusCondition(got.Status.Conditions, meta.StalledCondition) != nil {
		t.Errorf("config %+v", got)
	}
	var w []string
	_ = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		w = warnings(t, key)
		return len(w) > 0, nil
	})
	if len(w) != 1 || !strings.HasPrefix(w[0], "RegistryUnavailable") {
		t.Errorf("warnings %v", w)
	}
}

func labelledCM(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.VersionSourceLabel: "true"}}, Data: data}
}

// TestIntegrationUnlabelledConfigMapIsNotRead: the manager caches only labelled ConfigMaps, so an
// unlabelled one is "not found", with a message that names the label.
func TestIntegrationUnlabelledConfigMapIsNotRead(t *testing.T) {
	ns := fixture(t)
	must(t, k8s.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "versions", Namespace: ns}, Data: map[string]string{"web": "1.1.0"}}))
	must(t, k8s.Create(context.Background(), newConfig(ns, "web", cmSource("versions", "web"))))
	waitCondition(t, client.ObjectKey{Namespace: ns, Name: "web"}, meta.ReadyCondition, func(c *metav1.Condition) bool {
		return c.Status == metav1.ConditionFalse && c.Reason == "SourceNotFound" && strings.Contains(c.Message, v1alpha1.VersionSourceLabel+"=true")
	})
	// Labelled, it is read and 1.1.0 starts rolling out.
	settleWorkload(t, ns)
	var cm corev1.ConfigMap
	must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "versions"}, &cm))
	cm.Labels = map[string]string{v1alpha1.VersionSourceLabel: "true"}
	must(t, k8s.Update(context.Background(), &cm))
	// A start writes the status before the annotations, so the annotation is what says it started.
	waitConfig(t, client.ObjectKey{Namespace: ns, Name: "web"}, "target-image "+repo+":1.1.0", func(ruc *v1alpha1.RollingUpgradeConfig) bool {
		return ruc.Annotations[v1alpha1.TargetImageAnnotation] == repo+":1.1.0"
	})
}

// TestIntegrationSettledConfigIsNotRewritten: once a config has settled, reconciling it again and
// again writes nothing and emits nothing.
func TestIntegrationSettledConfigIsNotRewritten(t *testing.T) {
	ns := fixture(t)
	must(t, k8s.Create(context.Background(), &v1alpha1.ApplicationVersion{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: v1alpha1.ApplicationVersionSpec{Image: repo, Version: "1.0.0"}}))
	must(t, k8s.Create(context.Background(), newConfig(ns, "web",
		v1alpha1.VersionSource{ApplicationVersion: &v1alpha1.ApplicationVersionSource{Name: "web"}})))
	key := client.ObjectKey{Namespace: ns, Name: "web"}
	settleWorkload(t, ns)
	settled := waitCondition(t, key, meta.ReadyCondition, func(c *metav1.Condition) bool { return c.Reason == v1alpha1.ReasonUpToDate })

	recorder := events.NewFakeRecorder(100)
	r := &engine.RollingUpgradeConfigReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: recorder, Clock: clock.RealClock{}}
	for i := 0; i < 25; i++ {
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
	}
	var after v1alpha1.RollingUpgradeConfig
	must(t, k8s.Get(context.Background(), key, &after))
	if after.ResourceVersion != settled.ResourceVersion {
		t.Errorf("the config was rewritten: resourceVersion %s -> %s", settled.ResourceVersion, after.ResourceVersion)
	}
	if n := len(recorder.Events); n != 0 {
		t.Errorf("%d events from reconciling a settled config", n)
	}
}

// TestIntegrationTheEngineNeverRewritesTheSpec: the engine's writes of a config change its
// annotations, finalizer and status alone. A spec as a person or a GitOps tool wrote it (durations
// such as "10m", which Go would write "10m0s") stays byte for byte and keeps its generation: a
// rewritten spec would be a change of generation on every write, and a drift the GitOps tool puts
// back on every sync.
func TestIntegrationTheEngineNeverRewritesTheSpec(t *testing.T) {
	ns := fixture(t)
	cm := labelledCM("versions", map[string]string{"web": "1.1.0"})
	cm.Namespace = ns
	must(t, k8s.Create(context.Background(), cm))
	cfg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "RollingUpgradeConfig",
		"metadata": map[string]any{"namespace": ns, "name": "web"},
		"spec": map[string]any{"targetRef": map[string]any{"kind": "Deployment", "name": "web"}, "image": repo,
			"healthTimeout": "10m", "sources": []any{map[string]any{"configMap": map[string]any{"name": "versions", "key": "web"}}}},
	}}
	must(t, k8s.Create(context.Background(), cfg))
	key := client.ObjectKey{Namespace: ns, Name: "web"}
	waitConfig(t, key, "a rollout started", func(r *v1alpha1.RollingUpgradeConfig) bool {
		return r.Annotations[v1alpha1.TargetImageAnnotation] == repo+":1.1.0" && controllerutil.ContainsFinalizer(r, v1alpha1.Finalizer)
	})
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("RollingUpgradeConfig"))
	must(t, k8s.Get(context.Background(), key, got))
	if timeout, _, _ := unstructured.NestedString(got.Object, "spec", "healthTimeout"); timeout != "10m" || got.GetGeneration() != 1 {
		t.Errorf("after the engine's writes: spec.healthTimeout %q, generation %d; want \"10m\" and 1", timeout, got.GetGeneration())
	}
}

// TestIntegrationAWorkloadNoConfigNamesIsCachedAsMetadata: the manager's cache keeps a workload no
// config names as its metadata alone and gives it back through the client as a workload without a
// selector (which getWorkload reads live); once a config names it, its next change caches it whole.
func TestIntegrationAWorkloadNoConfigNamesIsCachedAsMetadata(t *testing.T) {
	ns := fixture(t)
	key := client.ObjectKey{Namespace: ns, Name: "web"}
	var live appsv1.Deployment
	must(t, k8s.Get(context.Background(), key, &live))
	cached := func() *appsv1.Deployment {
		var d appsv1.Deployment
		must(t, wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			err := mgr.GetClient().Get(ctx, key, &d)
			return err == nil && d.ResourceVersion == live.ResourceVersion, client.IgnoreNotFound(err)
		}))
		return &d
	}
	if d := cached(); d.Spec.Selector != nil || d.UID != live.UID || d.Name != "web" {
		t.Errorf("a workload no config names: cached as %+v; want its metadata alone", d)
	}
	must(t, k8s.Create(context.Background(), newConfig(ns, "web", cmSource("versions", "web"))))
	waitConfig(t, key, "looked at", func(r *v1alpha1.RollingUpgradeConfig) bool { return r.Status.ObservedGeneration > 0 })
	must(t, k8s.Get(context.Background(), key, &live))
	markRolledOut(t, &live)
	if d := cached(); d.Spec.Selector == nil || d.Spec.Template.Spec.Containers[0].Image != live.Spec.Template.Spec.Containers[0].Image {
		t.Errorf("the workload a config names, after it changed: cached as %+v; want it whole", d)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A calendar closed when created says so in status.open, false and present: `kubectl wait
// --for=jsonpath='{.status.open}'=false` returns, and the OPEN column is not empty.
func TestIntegrationACalendarClosedAtCreationSaysSo(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	cal := &v1alpha1.RolloutCalendar{ObjectMeta: metav1.ObjectMeta{Name: "closed-" + rand.String(6)}, Spec: v1alpha1.RolloutCalendarSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"calendar": "none-of-the-tests"}}, // freezes no other test's config
		Windows: []v1alpha1.CalendarWindow{{Name: "freeze", Type: v1alpha1.WindowDeny,
			Start: &metav1.Time{Time: now.Add(-time.Hour)}, End: &metav1.Time{Time: now.Add(24 * time.Hour)}}}}}
	must(t, k8s.Create(ctx, cal))
	t.Cleanup(func() { _ = k8s.Delete(ctx, cal) })
	var status map[string]any
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("RolloutCalendar"))
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(cal), u); err != nil {
			return false, err
		}
		status, _, _ = unstructured.NestedMap(u.Object, "status")
		return status["window"] != nil, nil
	})
	if err != nil {
		t.Fatalf("no status written: %v", err)
	}
	if open, ok := status["open"]; !ok || open != false {
		t.Errorf("status %v: open is %v (present %v), want false", status, open, ok)
	}
}
