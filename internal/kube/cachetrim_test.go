package kube

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"

	"github.com/rollgate/rollgate/api/v1alpha1"
	"github.com/rollgate/rollgate/internal/kube/kubetest"
	"github.com/rollgate/rollgate/internal/rollout"
)

func TestCacheTrimKeepsWhatRollgateReads(t *testing.T) {
	trim := NewCacheTrim() // not tracking configs: every workload is kept whole
	// What kubectl owns of a workload it created: the whole spec, the image of two containers among it.
	created := `{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{}},` +
		`"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{}},` +
		`"k:{\"name\":\"log\"}":{".":{},"f:image":{},"f:name":{}}},"f:initContainers":{"k:{\"name\":\"migrate\"}":{".":{},"f:image":{},"f:name":{}}},"f:restartPolicy":{}}}}}`
	image := `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{}}}}}}}`
	replicas := `{"f:spec":{"f:replicas":{}}}`
	status := `{"f:status":{"f:replicas":{},"f:conditions":{}}}`
	fields := []metav1.ManagedFieldsEntry{entry("kubectl", created), entry("kube-controller-manager", status),
		entry("hpa", replicas), entry(v1alpha1.FieldManager, image)}
	annotations := map[string]string{lastAppliedAnnotation: `{"big":"copy"}`, v1alpha1.LastImageAnnotation: "web:1.1.0"}

	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", ManagedFields: slices.Clone(fields), Annotations: maps.Clone(annotations)}}
	got, err := trim.Transform(d)
	if err != nil {
		t.Fatal(err)
	}
	trimmed := got.(*appsv1.Deployment)
	var kept []string
	for _, e := range trimmed.ManagedFields {
		kept = append(kept, e.Manager)
	}
	if !slices.Equal(kept, []string{"kubectl", v1alpha1.FieldManager}) {
		t.Errorf("kept managedFields of %v, want those owning an image: kubectl, rollgate", kept)
	}
	for _, container := range []rollout.Container{{Name: "web"}, {Name: "log"}, {Name: "migrate", Init: true}} {
		ownersBefore, _ := ImageOwners(fields, container)
		if ownersAfter, _ := ImageOwners(trimmed.ManagedFields, container); !slices.Equal(ownersAfter, ownersBefore) || len(ownersBefore) == 0 {
			t.Errorf("owners of the image of %s: %v after trimming, %v before", container.Name, ownersAfter, ownersBefore)
		}
	}
	// Of what an entry owns, the images alone are kept: the rest of a spec is most of a workload.
	wantKept := `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"log\"}":{"f:image":{}},"k:{\"name\":\"web\"}":{"f:image":{}}},` +
		`"f:initContainers":{"k:{\"name\":\"migrate\"}":{"f:image":{}}}}}}}`
	if got := string(trimmed.ManagedFields[0].FieldsV1.GetRawBytes()); got != wantKept {
		t.Errorf("kept of kubectl's entry:\n%s\nwant\n%s", got, wantKept)
	}
	if _, ok := trimmed.Annotations[lastAppliedAnnotation]; ok || trimmed.Annotations[v1alpha1.LastImageAnnotation] != "web:1.1.0" {
		t.Errorf("workload annotations = %v, want rollgate's without kubectl's last-applied copy", trimmed.Annotations)
	}

	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{entry("kube-controller-manager", status)}}}
	if got, _ := trim.Transform(s); got.(*appsv1.StatefulSet).ManagedFields != nil {
		t.Errorf("a workload whose image nobody owns kept managedFields %v", got.(*appsv1.StatefulSet).ManagedFields)
	}

	// Configs keep their annotations whole (the engine reads them), and lose their managedFields
	// (a write without them leaves the stored ones as they are).
	c := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{ManagedFields: slices.Clone(fields), Annotations: maps.Clone(annotations)}}
	trimmedConfig, _ := trim.Transform(c)
	if rc := trimmedConfig.(*v1alpha1.RollingUpgradeConfig); rc.ManagedFields != nil || len(rc.Annotations) != len(annotations) {
		t.Errorf("config: managedFields %v, annotations %v; want none, and all of them", rc.ManagedFields, rc.Annotations)
	}

	tombstone := toolscache.DeletedFinalStateUnknown{Key: "shop/web"}
	if got, err := trim.Transform(tombstone); err != nil || got != tombstone {
		t.Errorf("a tombstone came back as %v, %v", got, err)
	}
}

// TestCacheTrimKeepsShellsOfWorkloadsNoConfigNames: a workload that no config names is cached as a
// shell (getWorkload then reads it live); one that a config names is kept whole, from the config's
// arrival until its departure. Until the configs that exist at the start are counted, no workload
// is cached.
func TestCacheTrimKeepsShellsOfWorkloadsNoConfigNames(t *testing.T) {
	ctx := context.Background()
	s := kubetest.NewScheme(t)
	configs := controllertest.NewFakeInformer() // not synced yet
	informers := &informertest.FakeInformers{Scheme: s, InformersByGVK: map[schema.GroupVersionKind]toolscache.SharedIndexInformer{
		v1alpha1.GroupVersion.WithKind("RollingUpgradeConfig"): configs,
	}}
	trim := NewCacheTrim()
	for range 2 { // the second call counts nothing more
		if err := trim.Track(ctx, informers); err != nil {
			t.Fatal(err)
		}
	}
	naming := func(kind v1alpha1.WorkloadKind, name string) *v1alpha1.RollingUpgradeConfig {
		return &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cfg"},
			Spec: v1alpha1.RollingUpgradeConfigSpec{TargetRef: v1alpha1.WorkloadReference{Kind: kind, Name: name}}}
	}
	web := naming(v1alpha1.KindDeployment, "web")
	configs.Add(web)
	if n := trim.named[workloadKey("shop", v1alpha1.KindDeployment, "web")]; n != 1 {
		t.Errorf("one config naming web counted %d times", n)
	}
	whole := func(o client.Object) bool {
		got, err := trim.Transform(o)
		if err != nil {
			t.Error(err)
			return false
		}
		if !isShell(got) {
			return true
		}
		kind := "Deployment"
		if _, ok := o.(*appsv1.StatefulSet); ok {
			kind = "StatefulSet"
		}
		if sh := got.(*metav1.PartialObjectMetadata); sh.Name != o.GetName() || sh.Namespace != o.GetNamespace() || sh.UID != o.GetUID() ||
			sh.ResourceVersion != o.GetResourceVersion() || sh.Kind != kind || sh.APIVersion != "apps/v1" {
			t.Errorf("the shell of %T %s/%s lost who it is: %+v", o, o.GetNamespace(), o.GetName(), sh)
		}
		return false
	}

	first := make(chan bool)
	go func() { first <- whole(testDeployment("shop", "web")) }()
	select {
	case <-first:
		t.Fatal("a workload was cached before the configs present at the start were counted")
	case <-time.After(50 * time.Millisecond):
	}
	configs.Synced()
	if !<-first {
		t.Error("the workload a config names is a shell")
	}

	for _, o := range []client.Object{testDeployment("shop", "api"), testDeployment("other", "web"), testStatefulSet("shop", "web")} {
		if whole(o) {
			t.Errorf("%T %s/%s, which no config names, is cached whole", o, o.GetNamespace(), o.GetName())
		}
	}
	// A status write changes nothing of what the config names.
	written := web.DeepCopy()
	written.Status.Phase = v1alpha1.PhaseCompleted
	configs.Update(web, written)
	if !whole(testDeployment("shop", "web")) {
		t.Error("after a status write of the config that names it, the workload is a shell")
	}
	api := naming(v1alpha1.KindDeployment, "api")
	configs.Update(written, api)
	if whole(testDeployment("shop", "web")) || !whole(testDeployment("shop", "api")) {
		t.Error("after the config moved from web to api: want web a shell and api whole")
	}
	configs.Delete(api)
	if whole(testDeployment("shop", "api")) {
		t.Error("a workload is cached whole after the config that named it is gone")
	}
}

// TestAConfigUpdateNeverLeavesItsWorkloadUnnamed: each update of a config (a status write) moves
// its count in one step; a workload transformed meanwhile is never taken for unnamed.
func TestAConfigUpdateNeverLeavesItsWorkloadUnnamed(t *testing.T) {
	ctx := context.Background()
	informers := &informertest.FakeInformers{Scheme: kubetest.NewScheme(t)}
	trim := NewCacheTrim()
	if err := trim.Track(ctx, informers); err != nil {
		t.Fatal(err)
	}
	configs, err := informers.FakeInformerFor(ctx, &v1alpha1.RollingUpgradeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: v1alpha1.RollingUpgradeConfigSpec{TargetRef: v1alpha1.WorkloadReference{Kind: v1alpha1.KindDeployment, Name: "web"}}}
	configs.Add(cfg)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 20000 {
			configs.Update(cfg, cfg)
		}
	}()
	shells := 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		if got, _ := trim.Transform(testDeployment("shop", "web")); isShell(got) {
			shells++
		}
	}
	if shells > 0 {
		t.Errorf("the workload a config names was cached as a shell %d times during the config's updates", shells)
	}
}

// isShell: the transform kept the object's metadata alone.
func isShell(o any) bool {
	_, ok := o.(*metav1.PartialObjectMetadata)
	return ok
}

func testDeployment(ns, name string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: "uid-" + types.UID(name), ResourceVersion: "7"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}}
}

func testStatefulSet(ns, name string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: "uid-" + types.UID(name)},
		Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}}
}

// TestAShellIsReadBackAsItsWorkload: the store of a workload informer keeps shells, and reading it
// gives a shell back as a workload of its kind with the shell's metadata and no selector, however
// it is read (by key, listed, by index); whole workloads and other kinds come back as they are.
func TestAShellIsReadBackAsItsWorkload(t *testing.T) {
	trim := NewCacheTrim()
	indexers := toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}
	for _, tc := range []struct {
		kind  v1alpha1.WorkloadKind
		whole client.Object
	}{
		{v1alpha1.KindDeployment, testDeployment("shop", "web")},
		{v1alpha1.KindStatefulSet, testStatefulSet("shop", "web")},
	} {
		inf := trim.NewInformer(&toolscache.ListWatch{}, tc.whole.DeepCopyObject(), 0, indexers)
		store := inf.GetIndexer()
		sh := Shell(tc.whole, tc.kind)
		other := tc.whole.DeepCopyObject().(client.Object)
		other.SetName("api")
		if err := store.Add(sh); err != nil {
			t.Fatal(err)
		}
		if err := store.Add(other); err != nil {
			t.Fatal(err)
		}
		got, ok, err := store.GetByKey("shop/web")
		if err != nil || !ok {
			t.Fatalf("%s: %v, %v", tc.kind, ok, err)
		}
		w := &Workload{}
		switch o := got.(type) {
		case *appsv1.Deployment:
			w.Deployment = o
		case *appsv1.StatefulSet:
			w.StatefulSet = o
		default:
			t.Fatalf("%s: read back as %T", tc.kind, got)
		}
		if w.Kind() != tc.kind || w.Selector() != nil || w.Object().GetUID() != tc.whole.GetUID() || w.Object().GetName() != "web" {
			t.Errorf("%s: the shell read back as %+v", tc.kind, got)
		}
		listed, _ := store.ByIndex(toolscache.NamespaceIndex, "shop")
		for _, objs := range [][]any{store.List(), listed} {
			for _, o := range objs {
				if _, isShell := o.(*metav1.PartialObjectMetadata); isShell {
					t.Errorf("%s: a shell listed as such", tc.kind)
				}
				if o.(client.Object).GetName() == "api" && o != any(other) {
					t.Errorf("%s: a whole workload listed as another object", tc.kind)
				}
			}
		}
	}
	configs := trim.NewInformer(&toolscache.ListWatch{}, &v1alpha1.RollingUpgradeConfig{}, 0, indexers)
	if _, wrapped := configs.GetIndexer().(shellIndexer); wrapped {
		t.Error("the store of configs is read as one of workloads")
	}
}

// TestAShellIsReadLive: a workload the cache keeps as a shell is read from the API server.
func TestAShellIsReadLive(t *testing.T) {
	ruc := &v1alpha1.RollingUpgradeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: v1alpha1.RollingUpgradeConfigSpec{TargetRef: v1alpha1.WorkloadReference{Kind: v1alpha1.KindDeployment, Name: "web"}}}
	live := testDeployment("shop", "web")
	// What the manager's cache gives back for a shell (the informer's store, read through
	// asWorkload): a Deployment of metadata alone.
	readBack := asWorkload(Shell(live, v1alpha1.KindDeployment)).(*appsv1.Deployment)
	cached := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(readBack).Build()
	apiServer := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(live).Build()
	w, err := GetWorkload(context.Background(), cached, apiServer, ruc)
	if err != nil || w == nil || w.Selector() == nil {
		t.Fatalf("got %+v, %v; want the live workload", w, err)
	}
	whole := testDeployment("shop", "web")
	cachedWhole := fake.NewClientBuilder().WithScheme(kubetest.NewScheme(t)).WithObjects(whole).Build()
	if w, err := GetWorkload(context.Background(), cachedWhole, nil, ruc); err != nil || w.Selector() == nil {
		t.Errorf("a whole cached workload: %+v, %v", w, err)
	}
}
