package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/kube/kubetest"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(d)} }

func ready(status metav1.ConditionStatus, reason, msg string) []metav1.Condition {
	return []metav1.Condition{{Type: meta.ReadyCondition, Status: status, Reason: reason, Message: msg}}
}

func ruc(name string, st v1alpha1.RollingUpgradeConfigStatus) v1alpha1.RollingUpgradeConfig {
	return v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Annotations: map[string]string{}},
		Spec: v1alpha1.RollingUpgradeConfigSpec{Image: "ghcr.io/acme/" + name, VersionConstraint: ">=1.0.0, <2.0.0"}, Status: st}
}

var (
	held = ruc("web", v1alpha1.RollingUpgradeConfigStatus{CurrentVersion: "1.3.0", TargetVersion: "1.4.0", Phase: v1alpha1.PhasePending,
		Conditions: ready("True", v1alpha1.ReasonAwaitingApproval, "1.4.0 waits for approval"),
		Hold:       &v1alpha1.Hold{Gate: v1alpha1.GateApproval, Reason: v1alpha1.ReasonAwaitingApproval, Version: "1.4.0", Since: at(-50 * time.Hour), Message: "1.4.0 waits for approval"}})
	windowed = ruc("api", v1alpha1.RollingUpgradeConfigStatus{CurrentVersion: "2.0.0", TargetVersion: "2.1.0", Phase: v1alpha1.PhasePending, NextWindow: at(3 * time.Hour),
		Conditions: ready("True", v1alpha1.EventVersionHeld, "2.1.0 held until the window"),
		Hold: &v1alpha1.Hold{Gate: v1alpha1.GateCalendar, Reason: v1alpha1.EventVersionHeld, Version: "2.1.0", Since: at(-time.Hour), Until: at(3 * time.Hour),
			Calendars: []string{"nights"}, Message: "2.1.0 held until the window"}})
	stalled = ruc("cart", v1alpha1.RollingUpgradeConfigStatus{CurrentVersion: "1.0.0", Phase: v1alpha1.PhaseFailed,
		Conditions: append(ready("False", v1alpha1.EventCircuitOpen, "circuit breaker open after 3 consecutive rollbacks"),
			metav1.Condition{Type: meta.StalledCondition, Status: "True", Reason: v1alpha1.EventCircuitOpen, Message: "circuit breaker open after 3 consecutive rollbacks"}),
		FailedVersions: []string{"1.1.0", "1.2.0"},
		VersionHistory: []v1alpha1.VersionHistoryEntry{
			{Version: "1.1.0", AppliedAt: metav1.Time{Time: now.Add(-3 * time.Hour)}, Status: v1alpha1.ResultRolledBack, Reason: "analysis error-rate failed"},
			{Version: "1.2.0", AppliedAt: metav1.Time{Time: now.Add(-2 * time.Hour)}, Status: v1alpha1.ResultRejected, RequestedBy: "alice", Reason: "breaks checkout"},
		}})
)

// get shows each config's Ready, its reason, versions, the gate that holds it and for how long,
// and the next window, sorted; -A adds the namespace.
func TestGetTable(t *testing.T) {
	other := windowed
	other.Namespace = "billing"
	got := table([]v1alpha1.RollingUpgradeConfig{held, stalled, other}, true, now)
	want := [][]string{
		{"NAMESPACE", "NAME", "READY", "STATUS", "CURRENT", "TARGET", "HELD BY", "NEXT WINDOW"},
		{"billing", "api", "True", "VersionHeld", "2.0.0", "2.1.0", "Calendar (nights) for 60m", "in 3h"},
		{"shop", "cart", "False", "CircuitOpen", "1.0.0", "-", "-", "-"},
		{"shop", "web", "True", "AwaitingApproval", "1.3.0", "1.4.0", "Approval for 2d2h", "-"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := table([]v1alpha1.RollingUpgradeConfig{ruc("new", v1alpha1.RollingUpgradeConfigStatus{})}, false, now); !cmp.Equal(got[1],
		[]string{"new", "Unknown", "-", "-", "-", "-", "-"}) {
		t.Errorf("a config never reconciled: %v", got[1])
	}
}

// why names the gate, since and until when, and the command that lets the version go; a failed
// version says how it failed and how to retry it; a Stalled config says why it cannot go on.
func TestWhy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     v1alpha1.RollingUpgradeConfig
		version string
		want    []string
	}{
		{name: "an approval", cfg: held,
			want: []string{"1.4.0 is held by the Approval gate, since 2026-11-30T10:00:00Z (2d2h) (AwaitingApproval): 1.4.0 waits for approval",
				"to let it go: kubectl rollgate -n shop approve web 1.4.0"}},
		{name: "a window of a calendar", cfg: windowed,
			want: []string{"2.1.0 is held by the Calendar gate of RolloutCalendar [nights], since 2026-12-02T11:00:00Z (60m), until 2026-12-02T15:00:00Z (in 3h)"}},
		{name: "a version rolled back", cfg: held, version: "1.3.5",
			want: []string{"1.3.5 is not a candidate of shop/web now"}},
		{name: "the running version", cfg: held, version: "1.3.0", want: []string{"shop/web runs 1.3.0"}},
		{name: "a version outside the constraint", cfg: held, version: "2.0.0", want: []string{"shop/web never rolls out 2.0.0:"}},
		{name: "a stalled config", cfg: stalled, want: []string{"shop/cart cannot go on (Stalled, CircuitOpen): circuit breaker open"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saysAll(t, "why", why(&tc.cfg, tc.version, now), tc.want...)
		})
	}
	failed := stalled
	failed.Status.Conditions = ready("True", v1alpha1.ReasonUpToDate, "running 1.0.0")
	for v, want := range map[string]string{
		"1.1.0": "1.1.0 is on the failed list of shop/cart and never rolls out again: rolled back, its rollout started 2026-12-02T09:00:00Z (analysis error-rate failed)\nto try it again: kubectl rollgate -n shop retry cart 1.1.0",
		"1.2.0": "1.2.0 is on the failed list of shop/cart and never rolls out again: rejected 2026-12-02T10:00:00Z by alice (breaks checkout)\nto try it again: kubectl rollgate -n shop retry cart 1.2.0",
	} {
		if got := why(&failed, v, now); got != want {
			t.Errorf("why %s:\n%s\nwant\n%s", v, got, want)
		}
	}
}

// saysAll fails the test for each of want that got does not contain.
func saysAll(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s says\n%s\nwithout %q", what, got, w)
		}
	}
}

// fixture is a plugin on a fake API server holding configs, as alice.
func fixture(t *testing.T, configs ...v1alpha1.RollingUpgradeConfig) (*app, *bytes.Buffer) {
	t.Helper()
	b := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t))
	for i := range configs {
		b = b.WithObjects(&configs[i])
	}
	var out bytes.Buffer
	return &app{c: b.Build(), namespace: "shop", out: &out, now: func() time.Time { return now },
		who: func(context.Context) string { return "alice" }, settle: 10 * time.Millisecond}, &out
}

func run(t *testing.T, a *app, args ...string) error {
	t.Helper()
	root := a.root()
	root.SetArgs(args)
	return root.ExecuteContext(context.Background())
}

func annotations(t *testing.T, a *app, name string) map[string]string {
	t.Helper()
	var got v1alpha1.RollingUpgradeConfig
	if err := a.c.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: name}, &got); err != nil {
		t.Fatal(err)
	}
	return got.Annotations
}

// Each act writes its annotations, with who did it; a reject takes back a retry of the same
// version and a retry a rejection; suspend and resume write spec.suspend.
func TestActsWriteTheirAnnotations(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before map[string]string
		args   []string
		want   map[string]string
		says   string
	}{
		{name: "approve", args: []string{"approve", "web", "1.4.0"},
			want: map[string]string{v1alpha1.ApproveAnnotation: "1.4.0", v1alpha1.ApprovedByAnnotation: "alice"}, says: "approved 1.4.0 for shop/web as alice"},
		{name: "reject with a reason, taking back a retry", before: map[string]string{v1alpha1.RetryAnnotation: "1.4.0"},
			args: []string{"reject", "web", "1.4.0", "--reason", "breaks checkout"},
			want: map[string]string{v1alpha1.RejectAnnotation: "1.4.0", v1alpha1.RejectedByAnnotation: "alice", v1alpha1.RejectReasonAnnotation: "breaks checkout"},
			says: "rejected 1.4.0 for shop/web as alice"},
		{name: "retry, taking back a rejection", before: map[string]string{v1alpha1.RejectAnnotation: "1.4.0", v1alpha1.RejectedByAnnotation: "bob"},
			args: []string{"retry", "web", "1.4.0"},
			want: map[string]string{v1alpha1.RetryAnnotation: "1.4.0", v1alpha1.RetriedByAnnotation: "alice", v1alpha1.RejectedByAnnotation: "bob"},
			says: "retried 1.4.0 for shop/web as alice"},
		{name: "reset", args: []string{"reset", "web"},
			want: map[string]string{v1alpha1.ResetCircuitAnnotation: "1796212800000000000"}, says: "reset the circuit of shop/web"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := held
			cfg.Annotations = tc.before
			a, out := fixture(t, cfg)
			if err := run(t, a, tc.args...); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, annotations(t, a, "web")); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if !strings.Contains(out.String(), tc.says) {
				t.Errorf("it says %q, want %q", out.String(), tc.says)
			}
		})
	}

	a, _ := fixture(t, held)
	for _, want := range []bool{true, false} {
		args := []string{"suspend", "web"}
		if !want {
			args[0] = "resume"
		}
		if err := run(t, a, args...); err != nil {
			t.Fatal(err)
		}
		var got v1alpha1.RollingUpgradeConfig
		if err := a.c.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: "web"}, &got); err != nil || got.Spec.Suspend != want {
			t.Errorf("%s: spec.suspend %v (%v), want %v", args[0], got.Spec.Suspend, err, want)
		}
	}
}

// An approval of a version the config does not wait with is written, and the plugin says what the
// config waits for instead.
func TestApprovingAnotherVersionSaysWhatWaits(t *testing.T) {
	a, out := fixture(t, held)
	if err := run(t, a, "approve", "web", "1.5.0"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "note: shop/web does not wait for the approval of 1.5.0 now (1.4.0 is held by the Approval gate") {
		t.Errorf("it says %q", out.String())
	}
}

// A reject or retry of the value acted on before is removed first, and the manager must see it go
// before it is set again: without a manager to see it, the plugin says so and sets nothing.
func TestARequestActedOnBeforeWaitsForTheManager(t *testing.T) {
	cfg := stalled
	cfg.Annotations = map[string]string{v1alpha1.RetryAnnotation: "1.1.0"}
	cfg.Status.LastRetry = "1.1.0"
	a, _ := fixture(t, cfg)
	err := run(t, a, "retry", "cart", "1.1.0")
	if err == nil || !strings.Contains(err.Error(), "did not see it removed") {
		t.Fatalf("error %v, want one saying the manager did not see the annotation go", err)
	}
	if got := annotations(t, a, "cart"); got[v1alpha1.RetryAnnotation] != "" {
		t.Errorf("annotations %v: the retry was set again", got)
	}
}

// history lists the entries oldest first, with who asked and why.
func TestHistoryTable(t *testing.T) {
	want := [][]string{{"APPLIED", "VERSION", "RESULT", "BY", "REASON"},
		{"2026-12-02T09:00:00Z", "1.1.0", "RolledBack", "-", "analysis error-rate failed"},
		{"2026-12-02T10:00:00Z", "1.2.0", "Rejected", "alice", "breaks checkout"}}
	if diff := cmp.Diff(want, historyTable(stalled.Status)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// describe shows the config, its workload and pods, why it waits, its last rollouts and its
// events, newest last, each section as a small table.
func TestDescribe(t *testing.T) {
	cfg := stalled
	cfg.Spec.TargetRef = v1alpha1.WorkloadReference{Kind: v1alpha1.KindDeployment, Name: "cart"}
	cfg.Spec.MaxRollbacks, cfg.Status.CircuitOpen, cfg.Status.RollbackCount = 3, true, 3
	replicas := int32(2)
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cart"}},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "cart", Image: "ghcr.io/acme/cart:1.0.0"}}}}}}
	pod := func(name string, ready corev1.ConditionStatus) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: map[string]string{"app": "cart"},
			CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "cart", Image: "ghcr.io/acme/cart:1.0.0"}}},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}}}
	}
	event := func(name, reason, note string, ago time.Duration, kind string) *eventsv1.Event {
		return &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}, Reason: reason, Note: note, Type: "Warning",
			EventTime: metav1.NewMicroTime(now.Add(-ago)), Regarding: corev1.ObjectReference{Kind: kind, Name: "cart", Namespace: "shop"}}
	}
	c := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).
		WithIndex(&eventsv1.Event{}, "regarding.kind", func(o client.Object) []string { return []string{o.(*eventsv1.Event).Regarding.Kind} }).
		WithIndex(&eventsv1.Event{}, "regarding.name", func(o client.Object) []string { return []string{o.(*eventsv1.Event).Regarding.Name} }).
		WithObjects(&cfg, deploy, pod("cart-1", corev1.ConditionTrue), pod("cart-2", corev1.ConditionFalse),
			event("e1", "UpdateRollback", "1.1.0 failed its analysis", 3*time.Hour, "RollingUpgradeConfig"),
			event("e2", "CircuitOpen", "circuit breaker open after 3 consecutive rollbacks", time.Hour, "RollingUpgradeConfig"),
			event("e3", "BackOff", "the Deployment's own event", time.Minute, "Deployment")).Build()
	var out bytes.Buffer
	a := &app{c: c, namespace: "shop", out: &out, now: func() time.Time { return now }}
	if err := run(t, a, "describe", "cart"); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	saysAll(t, "describe", got,
		"Name:      shop/cart",
		"Workload:  Deployment cart, cart=ghcr.io/acme/cart:1.0.0, 1 of 2 pods ready",
		"Failed:    1.1.0, 1.2.0",
		"Image:     ghcr.io/acme/cart, versions >=1.0.0, <2.0.0",
		"Circuit:   open, 3 consecutive rollbacks of 3",
		"Why:       shop/cart cannot go on (Stalled, CircuitOpen)",
		"  cart-1   true    ghcr.io/acme/cart:1.0.0   60m",
		"  2026-12-02T10:00:00Z   1.2.0     Rejected     alice   breaks checkout",
		"  3h    Warning   UpdateRollback   1.1.0 failed its analysis\n  60m   Warning   CircuitOpen")
	if strings.Contains(got, "BackOff") {
		t.Errorf("describe shows another object's event:\n%s", got)
	}
}

// lint --offline decodes each rollgate object strictly and parses what the manager parses; other
// objects pass by; any problem fails the run, naming the object and the field.
func TestLintOffline(t *testing.T) {
	const file = `apiVersion: rollgate.dev/v1alpha1
kind: RollingUpgradeConfig
metadata: {name: web, namespace: shop}
spec:
  targetRef: {kind: Deployment, name: web}
  image: ghcr.io/acme/web
  versionConstraint: ">=1.0.0, <2.0.0"
  maintenanceWindow: {schedule: "0 3 * * *", duration: 2h, timeZone: Europe/Berlin}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: other}
---
apiVersion: rollgate.dev/v1alpha1
kind: RollingUpgradeConfig
metadata: {name: typo, namespace: shop}
spec:
  targetRef: {kind: Deployment, name: web}
  image: ghcr.io/acme/web
  healthTimout: 10m
---
apiVersion: rollgate.dev/v1alpha1
kind: RollingUpgradeConfig
metadata: {name: bad, namespace: shop}
spec:
  targetRef: {kind: Deployment, name: web}
  image: ghcr.io/acme/web
  versionConstraint: ">=banana"
  maintenanceWindow: {schedule: "0 0 30 2 *", duration: 1h}
---
apiVersion: rollgate.dev/v1alpha1
kind: RollingUpgradeConfig
metadata: {name: builds, namespace: shop}
spec:
  targetRef: {kind: Deployment, name: worker}
  image: ghcr.io/acme/worker
  tagPolicy: {numerical: {}}
  filterTags: {pattern: '^main-(?P<ts>[0-9]+)$', extract: $time}
---
apiVersion: rollgate.dev/v1alpha1
kind: RolloutCalendar
metadata: {name: nights}
spec:
  windows: [{name: late, schedule: "0 25 * * *", duration: 1h}]
`
	path := filepath.Join(t.TempDir(), "objects.yaml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	a, out := fixture(t)
	err := run(t, a, "lint", "--offline", path)
	if !errors.Is(err, errLint) {
		t.Errorf("error %v, want %v", err, errLint)
	}
	got := out.String()
	saysAll(t, "lint", got,
		"ok: RollingUpgradeConfig shop/web\n",
		`error: RollingUpgradeConfig shop/typo: error unmarshaling JSON: while decoding JSON: json: unknown field "healthTimout"`,
		"error: RollingUpgradeConfig shop/bad: spec.versionConstraint: ",
		"error: RollingUpgradeConfig shop/bad: spec.maintenanceWindow: ",
		"error: RollingUpgradeConfig shop/builds: spec.filterTags.extract: $time: the pattern has no group of that name (it has ts)",
		"error: RolloutCalendar shop/nights: spec.windows[0] (late): ")
	if strings.Contains(got, "ConfigMap") {
		t.Errorf("lint checked a ConfigMap:\n%s", got)
	}
}

// A reject or retry whose outcome the status holds already writes nothing and says so.
func TestARequestDoneAlreadyWritesNothing(t *testing.T) {
	cfg := stalled
	cfg.Annotations = map[string]string{v1alpha1.RejectAnnotation: "1.2.0"}
	cfg.Status.LastReject = "1.2.0"
	a, out := fixture(t, cfg)
	if err := run(t, a, "reject", "cart", "1.2.0"); err != nil {
		t.Fatal(err)
	}
	saysAll(t, "reject", out.String(), "shop/cart: 1.2.0 was rejected already")
	if diff := cmp.Diff(map[string]string{v1alpha1.RejectAnnotation: "1.2.0"}, annotations(t, a, "cart")); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

// help and completion need no cluster.
func TestHelpNeedsNoCluster(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	for _, args := range [][]string{{"help"}, {"--help"}, {"completion", "bash"}, {"version"}} {
		var out bytes.Buffer
		root := NewCommand(&out)
		root.SetOut(&out)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// describe says how a config reads its tags: its constraint, or its tag policy and filter.
func TestDescribeSaysHowTagsAreRead(t *testing.T) {
	for _, tc := range []struct {
		spec v1alpha1.RollingUpgradeConfigSpec
		want string
	}{
		{v1alpha1.RollingUpgradeConfigSpec{VersionConstraint: ">=1.0.0"}, ">=1.0.0"},
		{v1alpha1.RollingUpgradeConfigSpec{VersionConstraint: ">=0.0.0", TagPolicy: &v1alpha1.TagPolicy{Numerical: &v1alpha1.TagOrder{}},
			FilterTags: &v1alpha1.TagFilter{Pattern: "^main-(?P<ts>[0-9]+)$", Extract: "$ts"}}, "numerical, tags matching ^main-(?P<ts>[0-9]+)$ by $ts"},
		{v1alpha1.RollingUpgradeConfigSpec{TagPolicy: &v1alpha1.TagPolicy{Alphabetical: &v1alpha1.TagOrder{Order: v1alpha1.TagOrderDescending}},
			FilterTags: &v1alpha1.TagFilter{Pattern: "^[0-9]{8}$"}}, "alphabetical (the lowest the newest), tags matching ^[0-9]{8}$"},
		{v1alpha1.RollingUpgradeConfigSpec{VersionConstraint: ">=0.0.0", FollowTag: "stable"}, "the digests of stable"},
	} {
		if got := versionRules(tc.spec); got != tc.want {
			t.Errorf("versionRules = %q, want %q", got, tc.want)
		}
	}
}
