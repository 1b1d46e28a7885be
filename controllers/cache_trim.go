package controllers

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
//   - managedFields, except the entries that own a container image, which the renderer reads to
//     tell who changed the image (releaseWorkload, which rewrites the list, reads the workload
//     afresh);
//   - kubectl's last-applied-configuration annotation. Workloads are only ever written by patch or
//     apply, which leave out what the cached copy lacks.
//
// Other objects lose their managedFields only. Configs and ApplicationVersions keep their
// annotations: they are written by update, which would drop them.
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
		return shell(o), nil
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
	return namespace + "/" + targetKey(kind, name)
}

// shell keeps of a workload what an event about it needs: who it is. A workload has a selector
// (apps/v1 requires one), a shell has none: getWorkload tells them apart by it.
func shell(o client.Object) client.Object {
	meta := metav1.ObjectMeta{Name: o.GetName(), Namespace: o.GetNamespace(), UID: o.GetUID(),
		ResourceVersion: o.GetResourceVersion(), Generation: o.GetGeneration(), DeletionTimestamp: o.GetDeletionTimestamp()}
	if _, ok := o.(*appsv1.StatefulSet); ok {
		return &appsv1.StatefulSet{ObjectMeta: meta}
	}
	return &appsv1.Deployment{ObjectMeta: meta}
}

// imageEntries keeps the managedFields entries that own some container's image.
func imageEntries(fields []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	kept := fields[:0]
	for _, e := range fields {
		if e.FieldsV1 != nil && bytes.Contains(e.FieldsV1.GetRawBytes(), []byte(`"f:image"`)) {
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return kept
}
