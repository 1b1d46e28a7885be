//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// podLog watches the pods of a namespace and keeps, in order, each change of a pod's image and of
// its readiness gate's condition, and how many pods the upgrade had out of service at once.
type podLog struct {
	mu      sync.Mutex
	changes []string         // "db-4 gate False", "db-4 image …:1.1.0"
	last    map[string]podAt // by pod name
	worst   int              // most pods out of service at once: gate False, or not ready
	uids    map[string]string
}

type podAt struct {
	image, gate string
	ready       bool
	restarts    int32
}

func watchPods(t *testing.T, ns string, start map[string]corev1.Pod) *podLog {
	t.Helper()
	wc, err := client.NewWithWatch(restConfig, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := wc.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	l := &podLog{last: map[string]podAt{}, uids: map[string]string{}}
	for name, p := range start {
		l.last[name], l.uids[name] = stateOf(&p), string(p.UID)
	}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			l.observe(p)
		}
	}()
	return l
}

func stateOf(p *corev1.Pod) podAt {
	s := podAt{image: p.Spec.Containers[0].Image, ready: isReady(p)}
	for _, c := range p.Status.Conditions {
		if string(c.Type) == v1alpha1.InPlaceReadinessGate {
			s.gate = string(c.Status)
		}
	}
	for _, c := range p.Status.ContainerStatuses {
		s.restarts = c.RestartCount
	}
	return s
}

func (l *podLog) observe(p *corev1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now, was := stateOf(p), l.last[p.Name]
	if now.gate != was.gate {
		l.changes = append(l.changes, p.Name+" gate "+now.gate)
	}
	if now.image != was.image {
		l.changes = append(l.changes, p.Name+" image "+now.image)
	}
	l.last[p.Name] = now
	out := 0
	for _, s := range l.last {
		if s.gate == "False" || !s.ready {
			out++
		}
	}
	l.worst = max(l.worst, out)
}

func (l *podLog) snapshot() ([]string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.changes), l.worst
}

// atLeast waits until the watch has delivered n changes (the config's status may be read before
// the last pod's), and returns them.
func (l *podLog) atLeast(t *testing.T, n int) ([]string, int) {
	t.Helper()
	eventually(t, 10*time.Second, fmt.Sprintf("%d pod changes", n), func(context.Context) (bool, string, error) {
		changes, _ := l.snapshot()
		return len(changes) >= n, strings.Join(changes, ", "), nil
	})
	return l.snapshot()
}

// inPlaceStatefulSet is a StatefulSet of 5 pods on 1.0.0, OnDelete, with rollgate's readiness gate.
func inPlaceStatefulSet() *appsv1.StatefulSet {
	labels := map[string]string{"app": "db"}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To[int32](5),
			ServiceName:         "db",
			PodManagementPolicy: appsv1.ParallelPodManagement,
			UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: img("1.0.0")}},
					ReadinessGates: []corev1.PodReadinessGate{{ConditionType: v1alpha1.InPlaceReadinessGate}}},
			},
		},
	}
}

// inPlaceConfig upgrades the StatefulSet db in place with strategy ip (a 2 s drain grace unless it
// says otherwise) under a health timeout of health.
func inPlaceConfig(health time.Duration, ip v1alpha1.InPlaceStrategy) *v1alpha1.RollingUpgradeConfig {
	if ip.DrainGracePeriod == nil {
		ip.DrainGracePeriod = &metav1.Duration{Duration: 2 * time.Second}
	}
	return config(func(c *v1alpha1.RollingUpgradeConfig) {
		c.Spec.TargetRef = v1alpha1.WorkloadReference{Kind: v1alpha1.KindStatefulSet, Name: "db"}
		c.Spec.HealthTimeout = &metav1.Duration{Duration: health}
		c.Spec.Strategy = &v1alpha1.UpgradeStrategy{Type: v1alpha1.StrategyInPlace, InPlace: &ip}
	})
}

func podsByName(t *testing.T, ns string) map[string]corev1.Pod {
	t.Helper()
	var list corev1.PodList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range list.Items {
		out[p.Name] = p
	}
	return out
}

// TestScenarioInPlaceUpgradeOfAStatefulSet: a StatefulSet of 5 pods, OnDelete, partition 2,
// maxUnavailable 1. Pods 4, 3 and 2 take 1.1.0 in that order, one at a time, each out of its
// Service (its readiness gate False) before its image changes and back after; pods 0 and 1 are
// not touched, and every pod keeps its UID, node and IP, its container restarted once. A
// never-ready 1.2.0 fails on pod 4, which is changed back in place; the version is rolled back.
func TestScenarioInPlaceUpgradeOfAStatefulSet(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "inplace")
	neverReady(t, s.ns, img("1.2.0"))
	s.create(inPlaceStatefulSet(), appVersion("1.0.0"), inPlaceConfig(2*time.Minute, v1alpha1.InPlaceStrategy{Partition: 2, MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		PodReadyTimeout: &metav1.Duration{Duration: 15 * time.Second}}))
	s.start()
	s.waitConfig(2*time.Minute, "1.0.0 recorded, every pod in service", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })
	before := podsByName(t, s.ns)
	if len(before) != 5 {
		t.Fatalf("%d pods, want 5", len(before))
	}
	log := watchPods(t, s.ns, before)

	s.announce("1.1.0")
	c := s.completed("1.1.0", 1, 2*time.Minute)
	want := []string{"db-4 gate False", "db-4 image " + img("1.1.0"), "db-4 gate True", "db-3 gate False", "db-3 image " + img("1.1.0"), "db-3 gate True",
		"db-2 gate False", "db-2 image " + img("1.1.0"), "db-2 gate True"}
	changes, worst := log.atLeast(t, len(want))
	if !slices.Equal(changes, want) {
		t.Errorf("the pods changed as\n  %s\nwant\n  %s", strings.Join(changes, "\n  "), strings.Join(want, "\n  "))
	}
	if worst > 1 {
		t.Errorf("%d pods were out of service at once; maxUnavailable is 1", worst)
	}
	after := podsByName(t, s.ns)
	for name, b := range before {
		a := after[name]
		moved := name >= "db-2"
		wantImage, restarts := img("1.0.0"), int32(0)
		if moved {
			wantImage, restarts = img("1.1.0"), 1
		}
		if a.UID != b.UID || a.Spec.NodeName != b.Spec.NodeName || a.Status.PodIP != b.Status.PodIP || a.Spec.Containers[0].Image != wantImage ||
			a.Status.ContainerStatuses[0].RestartCount != b.Status.ContainerStatuses[0].RestartCount+restarts || !isReady(&a) {
			t.Errorf("%s: uid %s→%s, node %s→%s, ip %s→%s, image %s, restarts %d→%d, ready %v; want the same pod on %s, restarted %d times",
				name, b.UID, a.UID, b.Spec.NodeName, a.Spec.NodeName, b.Status.PodIP, a.Status.PodIP, a.Spec.Containers[0].Image,
				b.Status.ContainerStatuses[0].RestartCount, a.Status.ContainerStatuses[0].RestartCount, isReady(&a), wantImage, restarts)
		}
	}
	if ip := c.Status.InPlace; ip == nil || ip.Image != img("1.1.0") || len(ip.Pods) != 3 || ip.Pods[0].Name != "db-4" || ip.Pods[2].State != "Done" {
		t.Errorf("status.inPlace %+v, want db-4, db-3, db-2 done on 1.1.0", ip)
	}
	if n := s.countEvents(v1alpha1.EventPodUpgraded); n != 3 {
		t.Errorf("%d PodUpgraded events, want 3", n)
	}
	if got := mustKubectl(t, "-n", s.ns, "describe", "ruc", "app"); !strings.Contains(got, "db-3 runs "+img("1.1.0")+" in place") {
		t.Errorf("kubectl describe ruc does not show the pods' events:\n%s", got)
	}
	for _, e := range s.events() {
		if e.Reason == v1alpha1.EventPodUpgraded {
			t.Logf("%s", e.Message)
		}
	}

	// A version whose pods never become ready fails on the first pod, which goes back in place.
	s.announce("1.2.0")
	c = s.waitConfig(2*time.Minute, "1.2.0 rolled back", func(c *v1alpha1.RollingUpgradeConfig) bool {
		return slices.Contains(c.Status.FailedVersions, "1.2.0") && c.Annotations[v1alpha1.UpdatePhaseAnnotation] == "" &&
			c.Status.Phase != v1alpha1.PhaseRollingBack && c.Status.CurrentVersion == "1.1.0"
	})
	// Held out of its Service from its drain to its return: never put back in between.
	wantBack := []string{"db-4 gate False", "db-4 image " + img("1.2.0"), "db-4 image " + img("1.1.0"), "db-4 gate True"}
	changes, worst = log.atLeast(t, len(want)+len(wantBack))
	tail := changes[len(want):]
	if !slices.Equal(tail, wantBack) || worst > 1 {
		t.Errorf("the rollback changed the pods as\n  %s\nwant\n  %s\n(%d out of service at once)", strings.Join(tail, "\n  "), strings.Join(wantBack, "\n  "), worst)
	}
	if n := s.countEvents(v1alpha1.EventPodUpgradeFailed); n != 1 {
		t.Errorf("%d PodUpgradeFailed events, want 1", n)
	}
	final := podsByName(t, s.ns)
	for name, b := range before {
		if a := final[name]; a.UID != b.UID || !isReady(&a) {
			t.Errorf("%s after the rollback: uid %s→%s, ready %v", name, b.UID, a.UID, isReady(&a))
		}
	}
	t.Logf("rolled back: %s", describeConfig(c))
}

// TestScenarioInPlaceResumesAfterAKill: the manager is SIGKILLed after the first pod of an
// in-place upgrade moved; a new manager goes on from what the pods show: no pod changed twice,
// none left out of its Service.
func TestScenarioInPlaceResumesAfterAKill(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "inplace-kill")
	s.create(inPlaceStatefulSet(), appVersion("1.0.0"), inPlaceConfig(2*time.Minute, v1alpha1.InPlaceStrategy{}))
	s.start()
	s.waitConfig(2*time.Minute, "1.0.0 recorded", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })
	before := podsByName(t, s.ns)
	log := watchPods(t, s.ns, before)
	s.announce("1.1.0")
	eventually(t, time.Minute, "db-4 done, db-3 leaving", func(context.Context) (bool, string, error) {
		changes, _ := log.snapshot()
		return slices.Contains(changes, "db-3 gate False"), strings.Join(changes, ", "), nil
	})
	s.kill()
	s.start()
	s.completed("1.1.0", 1, 2*time.Minute)
	changes, worst := log.snapshot()
	for name := range before {
		var n int
		for _, c := range changes {
			if strings.HasPrefix(c, name+" image ") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s changed image %d times, want once", name, n)
		}
	}
	after := podsByName(t, s.ns)
	for name, a := range after {
		if b := before[name]; a.UID != b.UID || a.Status.ContainerStatuses[0].RestartCount != b.Status.ContainerStatuses[0].RestartCount+1 || !isReady(&a) {
			t.Errorf("%s: uid %s→%s, restarts %d→%d, ready %v", name, b.UID, a.UID, b.Status.ContainerStatuses[0].RestartCount, a.Status.ContainerStatuses[0].RestartCount, isReady(&a))
		}
	}
	if worst > 1 {
		t.Errorf("%d pods out of service at once", worst)
	}
	t.Logf("changes across the kill: %s", fmt.Sprint(changes))

	// The config is deleted while the template keeps the readiness gate: a pod the StatefulSet
	// creates afterwards (db-1, deleted here) becomes Ready all the same, rollgate answering its
	// gate, and says so once on the StatefulSet.
	ctx := context.Background()
	if err := k8s.Delete(ctx, s.config()); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the config gone", func(ctx context.Context) (bool, string, error) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: "app"}, &v1alpha1.RollingUpgradeConfig{})
		return apierrors.IsNotFound(err), fmt.Sprint(err), client.IgnoreNotFound(err)
	})
	if err := k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "db-1"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "db-1 recreated and Ready", func(ctx context.Context) (bool, string, error) {
		var p corev1.Pod
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: "db-1"}, &p); err != nil {
			return false, err.Error(), client.IgnoreNotFound(err)
		}
		return p.UID != before["db-1"].UID && isReady(&p), fmt.Sprintf("uid %s, conditions %+v", p.UID, p.Status.Conditions), nil
	})
	eventually(t, 30*time.Second, "one UnansweredReadinessGate event on the StatefulSet", func(ctx context.Context) (bool, string, error) {
		var list corev1.EventList
		if err := k8s.List(ctx, &list, client.InNamespace(s.ns),
			client.MatchingFields{"involvedObject.kind": "StatefulSet", "involvedObject.name": "db"}); err != nil {
			return false, "", err
		}
		var notes []string
		for _, e := range list.Items {
			if e.Reason == v1alpha1.EventUnansweredReadinessGate {
				notes = append(notes, e.Message)
			}
		}
		return len(notes) == 1 && strings.Contains(notes[0], "rollgate answered it for pods db-1"), fmt.Sprint(notes), nil
	})
}

// TestScenarioInPlaceOutlastsItsHealthTimeout: 12 pods that each take 40 s to be ready again, one
// of them (db-0, below the partition) down before the upgrade and after: with maxUnavailable 2
// the other 11 go one at a time, some 8 minutes in all, and the version passes under a 5m health
// timeout. Never more than 2 pods are out of service, db-0 counted. Then a PodDisruptionBudget that
// allows no disruption holds the next version's first drain until it is deleted.
func TestScenarioInPlaceOutlastsItsHealthTimeout(t *testing.T) {
	inNamespaceOnly(t)
	s := newScenario(t, "inplace-slow")
	readyDelay(t, s.ns, 40_000)
	broken := img("0.9.9")
	neverReady(t, s.ns, broken)
	sts := inPlaceStatefulSet()
	sts.Spec.Replicas = ptr.To[int32](12)
	s.create(sts, appVersion("1.0.0"), inPlaceConfig(5*time.Minute, v1alpha1.InPlaceStrategy{Partition: 1, MaxUnavailable: ptr.To(intstr.FromInt32(2)),
		PodReadyTimeout: &metav1.Duration{Duration: 2 * time.Minute}}))
	s.start()
	s.waitConfig(3*time.Minute, "1.0.0 recorded, every pod in service", func(c *v1alpha1.RollingUpgradeConfig) bool { return c.Status.CurrentVersion == "1.0.0" })
	before := podsByName(t, s.ns)
	if len(before) != 12 {
		t.Fatalf("%d pods, want 12", len(before))
	}

	// db-0 goes down (a crash loop of its own) before the upgrade, and stays down.
	if err := k8s.Patch(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "db-0"}},
		client.RawPatch(types.StrategicMergePatchType, []byte(`{"spec":{"containers":[{"name":"db","image":"`+broken+`"}]}}`))); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "db-0 down", func(ctx context.Context) (bool, string, error) {
		var p corev1.Pod
		err := k8s.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: "db-0"}, &p)
		return err == nil && !isReady(&p), "still ready", err
	})
	s.announce("1.1.0")
	announced := time.Now()
	log := watchPods(t, s.ns, podsByName(t, s.ns))
	c := s.completed("1.1.0", 1, 12*time.Minute)
	took := time.Since(announced)
	h := c.Status.VersionHistory[len(c.Status.VersionHistory)-1]
	changes, worst := log.snapshot()
	t.Logf("11 pods upgraded in place in %s under a 5m health timeout; at most %d out of service at once, db-0 counted", took.Round(time.Second), worst)
	if h.Status != v1alpha1.ResultHealthy || len(c.Status.FailedVersions) != 0 {
		t.Errorf("1.1.0: %s, failed %v", h.Status, c.Status.FailedVersions)
	}
	if took < 5*time.Minute {
		t.Errorf("the upgrade took %s: it did not outlast the health timeout, and shows nothing", took)
	}
	if worst > 2 {
		t.Errorf("%d pods were out of service at once, db-0 counted; maxUnavailable is 2:\n  %s", worst, strings.Join(changes, "\n  "))
	}
	for name, p := range podsByName(t, s.ns) {
		if wantImage := img("1.1.0"); name != "db-0" && (p.Spec.Containers[0].Image != wantImage || !isReady(&p)) {
			t.Errorf("%s runs %s, ready %v", name, p.Spec.Containers[0].Image, isReady(&p))
		}
	}

	// A PodDisruptionBudget that allows no disruption holds the first drain of 1.2.0.
	readyDelay(t, s.ns, 1000)
	s.create(&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: policyv1.PodDisruptionBudgetSpec{
		MaxUnavailable: ptr.To(intstr.FromInt32(0)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}})
	eventually(t, time.Minute, "the budget's status", func(ctx context.Context) (bool, string, error) {
		var pdb policyv1.PodDisruptionBudget
		err := k8s.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: "db"}, &pdb)
		return err == nil && pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.ExpectedPods == 12, fmt.Sprintf("%+v", pdb.Status), err
	})
	changed, _ := log.snapshot()
	s.announce("1.2.0")
	var held string
	eventually(t, time.Minute, "1.2.0 held by the budget", func(context.Context) (bool, string, error) {
		held = describeConfig(s.config())
		return strings.Contains(held, "PodDisruptionBudget db allows no disruption: db-11 waits"), held, nil
	})
	time.Sleep(10 * time.Second) // room for a wrong drain
	if now, _ := log.snapshot(); len(now) != len(changed) {
		t.Errorf("pods changed under a budget that allows no disruption: %s (%s)", strings.Join(now[len(changed):], ", "), held)
	}
	if err := k8s.Delete(context.Background(), &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "db"}}); err != nil {
		t.Fatal(err)
	}
	s.completed("1.2.0", 2, 3*time.Minute)
}
