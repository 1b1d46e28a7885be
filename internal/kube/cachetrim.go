package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// lastAppliedAnnotation is kubectl's copy of the whole object as last applied: often the largest
// part of a workload, and nothing rollgate reads.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// CacheTrim is the manager's cache transform (Transform): it drops from every cached object what
// rollgate never reads. Every Deployment and StatefulSet of the cluster is watched, so that a
// config that comes to name one finds it; in a large cluster most of them are named by no config,
// and those are cached as shells, their name and little more (getWorkload reads a shell's
// workload live). The others keep all but:
//   - managedFields, except the entries that own a container image, and of those the images alone,
//     which the renderer reads to tell who changed the image (releaseWorkload, which rewrites the
//     list, reads the workload afresh);
//   - kubectl's last-applied-configuration annotation. Workloads are only ever written by patch or
//     apply, which leave out what the cached copy lacks.
//
// Other objects lose their managedFields only. Configs keep their annotations (the in-flight state),
// and ApplicationVersions theirs too: their status is written by update.
type CacheTrim struct {
	mu sync.RWMutex
	// named counts the configs that name each workload, by workloadKey.
	named map[string]int
	// tracking: Track was called, so a workload is a shell unless a config names it; without it
	// every workload is kept whole.
	tracking atomic.Bool
	// counted is closed once the configs that exist when the cache starts are counted: until then
	// no workload can be known to be a shell.
	counted chan struct{}
	once    sync.Once
}

// NewCacheTrim returns a transform that keeps every workload whole until Track is called.
func NewCacheTrim() *CacheTrim {
	return &CacheTrim{named: map[string]int{}, counted: make(chan struct{})}
}

// CacheOptions are the manager's cache options that rollgate needs: workloads cached by this
// trim, and of the ConfigMaps only the labelled ones, the signals (clusters hold many large
// ConfigMaps). Pods are never cached: they are read directly, and rarely.
func (t *CacheTrim) CacheOptions() cache.Options {
	return cache.Options{DefaultTransform: t.Transform, NewInformer: t.NewInformer, ByObject: map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {Label: labels.SelectorFromSet(labels.Set{v1alpha1.VersionSourceLabel: "true"})},
	}}
}

// Transform trims one object on its way into the cache.
func (c *CacheTrim) Transform(obj any) (any, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return obj, nil // a tombstone of a deleted object
	}
	var kind v1alpha1.WorkloadKind
	switch o.(type) {
	case *appsv1.Deployment:
		kind = v1alpha1.KindDeployment
	case *appsv1.StatefulSet:
		kind = v1alpha1.KindStatefulSet
	default:
		o.SetManagedFields(nil)
		return o, nil
	}
	if !c.isNamed(o.GetNamespace(), kind, o.GetName()) {
		return Shell(o, kind), nil
	}
	o.SetManagedFields(imageEntries(o.GetManagedFields()))
	if a := o.GetAnnotations(); a[lastAppliedAnnotation] != "" {
		delete(a, lastAppliedAnnotation)
		o.SetAnnotations(a)
	}
	return o, nil
}

// Track counts the configs in the cache as they come and go, from now on. Call it before the
// cache starts: until the configs present at its start are counted, workloads wait to be cached.
// Only the first call counts.
func (c *CacheTrim) Track(ctx context.Context, informers cache.Informers) (err error) {
	c.once.Do(func() { err = c.track(ctx, informers) })
	return err
}

func (c *CacheTrim) track(ctx context.Context, informers cache.Informers) error {
	inf, err := informers.GetInformer(ctx, &v1alpha1.RollingUpgradeConfig{})
	if err != nil {
		return err
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.move(nil, obj) },
		UpdateFunc: func(old, obj any) { c.move(old, obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			c.move(obj, nil)
		},
	})
	if err != nil {
		return err
	}
	c.tracking.Store(true)
	go func() {
		toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced) // or the manager stops
		close(c.counted)
	}()
	return nil
}

// move counts a config that named the workload of from and now names that of to (either may be
// nil: added, deleted), in one step, so that a workload both name is never counted as unnamed.
func (c *CacheTrim) move(from, to any) {
	was, is := namedBy(from), namedBy(to)
	if was == is {
		return // most updates: a status write
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if was != "" {
		if c.named[was]--; c.named[was] <= 0 {
			delete(c.named, was)
		}
	}
	if is != "" {
		c.named[is]++
	}
}

// namedBy is the key of the workload a config names; "" for anything else.
func namedBy(obj any) string {
	r, ok := obj.(*v1alpha1.RollingUpgradeConfig)
	if !ok || r == nil {
		return ""
	}
	return workloadKey(r.Namespace, r.Spec.TargetRef.Kind, r.Spec.TargetRef.Name)
}

// isNamed: some config names the workload, or configs are not tracked. It waits until the configs
// present at the cache's start are counted.
func (c *CacheTrim) isNamed(namespace string, kind v1alpha1.WorkloadKind, name string) bool {
	if !c.tracking.Load() {
		return true
	}
	<-c.counted
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.named[workloadKey(namespace, kind, name)] > 0
}

func workloadKey(namespace string, kind v1alpha1.WorkloadKind, name string) string {
	return namespace + "/" + TargetKey(kind, name)
}

// Shell keeps of a workload what an event about it needs: who it is. It is metadata alone, a
// fifth of the smallest Deployment or StatefulSet struct (in a cluster of 25,000 workloads that is
// about 20 MB of heap); whoever reads the store gets it back as a workload (NewInformer).
func Shell(o client.Object, kind v1alpha1.WorkloadKind) client.Object {
	s := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: string(kind)},
		ObjectMeta: metav1.ObjectMeta{Name: o.GetName(), Namespace: o.GetNamespace(), UID: o.GetUID(),
			ResourceVersion: o.GetResourceVersion(), Generation: o.GetGeneration(), DeletionTimestamp: o.GetDeletionTimestamp()},
	}
	if sts, ok := o.(*appsv1.StatefulSet); ok && HasGate(sts.Spec.Template.Spec.ReadinessGates) {
		s.Annotations = map[string]string{GatedAnnotation: "true"} // for GateReconciler
	}
	return s
}

// NewInformer makes the manager's informers (cache.Options.NewInformer) for this transform: an
// informer of workloads keeps shells in its store, and its store's readers (the cache's Get and
// List) get each shell back as its workload, with the shell's metadata and nothing else. A
// workload has a selector (apps/v1 requires one) and such a shell has none: getWorkload tells them
// apart by it, and reads a shell live.
func (c *CacheTrim) NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	inf := toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	switch obj.(type) {
	case *appsv1.Deployment, *appsv1.StatefulSet:
		return shellInformer{SharedIndexInformer: inf, indexer: shellIndexer{inf.GetIndexer()}}
	}
	return inf
}

// shellInformer is an informer of workloads whose store may hold shells.
type shellInformer struct {
	toolscache.SharedIndexInformer
	indexer toolscache.Indexer
}

func (s shellInformer) GetIndexer() toolscache.Indexer { return s.indexer }

// shellIndexer reads a store of workloads and gives each shell back as its workload.
type shellIndexer struct{ toolscache.Indexer }

func (s shellIndexer) Get(obj any) (any, bool, error) {
	o, ok, err := s.Indexer.Get(obj)
	return asWorkload(o), ok, err
}

func (s shellIndexer) GetByKey(key string) (any, bool, error) {
	o, ok, err := s.Indexer.GetByKey(key)
	return asWorkload(o), ok, err
}

func (s shellIndexer) List() []any { return asWorkloads(s.Indexer.List()) }

func (s shellIndexer) ByIndex(name, value string) ([]any, error) {
	objs, err := s.Indexer.ByIndex(name, value)
	return asWorkloads(objs), err
}

func (s shellIndexer) Index(name string, obj any) ([]any, error) {
	objs, err := s.Indexer.Index(name, obj)
	return asWorkloads(objs), err
}

// asWorkload is the workload a shell stands for: its metadata and no spec. Anything else is itself.
func asWorkload(o any) any {
	sh, ok := o.(*metav1.PartialObjectMetadata)
	switch {
	case !ok:
		return o
	case sh.Kind == string(v1alpha1.KindStatefulSet):
		return &appsv1.StatefulSet{ObjectMeta: sh.ObjectMeta}
	}
	return &appsv1.Deployment{ObjectMeta: sh.ObjectMeta}
}

func asWorkloads(objs []any) []any {
	out := make([]any, len(objs))
	for i, o := range objs {
		out[i] = asWorkload(o)
	}
	return out
}

// imageEntries keeps the managedFields entries that own some container's image, and of each the
// images alone (imageOwners reads nothing else): what a manager that created the workload owns is
// most of its spec, and most of what a cached workload holds.
func imageEntries(fields []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	kept := fields[:0]
	for _, e := range fields {
		if e.FieldsV1 == nil || !bytes.Contains(e.FieldsV1.GetRawBytes(), []byte(`"f:image"`)) {
			continue
		}
		if images := ownedImages(e.FieldsV1.GetRawBytes()); images != nil {
			e.FieldsV1 = metav1.NewFieldsV1(string(images))
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return kept
}

// ownedImages is the part of a managedFields entry's field set that owns the images of containers
// and init containers, in the same form; nil when it owns none. A set that does not read is kept
// whole, for ImageOwners to report.
func ownedImages(raw []byte) []byte {
	var tree map[string]any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return raw
	}
	spec := map[string]any{}
	for _, list := range []string{"f:containers", "f:initContainers"} {
		containers, _ := dig(tree, "f:spec", "f:template", "f:spec", list)
		images := map[string]any{}
		for key, c := range containers {
			if fields, ok := c.(map[string]any); ok {
				if _, owns := fields["f:image"]; owns {
					images[key] = map[string]any{"f:image": map[string]any{}}
				}
			}
		}
		if len(images) > 0 {
			spec[list] = images
		}
	}
	if len(spec) == 0 {
		return nil
	}
	out, err := json.Marshal(map[string]any{"f:spec": map[string]any{"f:template": map[string]any{"f:spec": spec}}})
	if err != nil {
		return raw
	}
	return out
}
