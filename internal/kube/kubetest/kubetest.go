// Package kubetest holds the objects and scheme the tests of the controllers share.
package kubetest

// Objects are Deployment shop/web on ghcr.io/acme/web:1.0.0, rolled out, its ApplicationVersion
import (
	"context"
	"slices"
	"testing"

	imagev1 "github.com/fluxcd/image-reflector-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rollgate/rollgate/api/v1alpha1"
)

// announcing 1.1.0, and the config that names both.
func Objects() []client.Object {
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Generation: 1},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "ghcr.io/acme/web:1.0.0"}}}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2},
	}
	av := &v1alpha1.ApplicationVersion{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: v1alpha1.ApplicationVersionSpec{Image: "ghcr.io/acme/web", Version: "1.1.0"}}
	ruc := &v1alpha1.RollingUpgradeConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Generation: 1},
		Spec: v1alpha1.RollingUpgradeConfigSpec{
			TargetRef: v1alpha1.WorkloadReference{Kind: v1alpha1.KindDeployment, Name: "web"},
			Image:     "ghcr.io/acme/web", VersionConstraint: ">=1.0.0", MaxRollbacks: 3,
			Sources: []v1alpha1.VersionSource{{ApplicationVersion: &v1alpha1.ApplicationVersionSource{Name: "web"}}},
		},
		Status: v1alpha1.RollingUpgradeConfigStatus{CurrentVersion: "1.0.0", CurrentImage: "ghcr.io/acme/web:1.0.0"},
	}
	return []client.Object{d, av, ruc}
}

// NewScheme knows the Kubernetes types and rollgate's.
func NewScheme(t testing.TB) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := imagev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// DBStatefulSet is StatefulSet shop/db: replicas pods labelled app=db on img, updated by update,
// its pod template with rollgate's readiness gate when gated.
func DBStatefulSet(replicas int32, update appsv1.StatefulSetUpdateStrategyType, img string, gated bool) *appsv1.StatefulSet {
	labels := map[string]string{"app": "db"}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db", Generation: 1}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
		UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: update},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: img}}}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: replicas}}
	if gated {
		sts.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: v1alpha1.InPlaceReadinessGate}}
	}
	return sts
}

// GatedPod is pod shop/<name> of DBStatefulSet on img, with rollgate's readiness gate, its
// condition gate ("": none yet).
func GatedPod(name, img string, gate corev1.ConditionStatus) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: map[string]string{"app": "db"}},
		Spec: corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: v1alpha1.InPlaceReadinessGate}},
			Containers: []corev1.Container{{Name: "db", Image: img}}}}
	if gate != "" {
		p.Status.Conditions = []corev1.PodCondition{{Type: v1alpha1.InPlaceReadinessGate, Status: gate}}
	}
	return p
}

// ShardCache is the cache of a manager that holds only some configs: the others are not found
// in it, as those of another shard.
type ShardCache struct {
	client.Client
	Foreign string // the config the shard does not hold
}

func (s ShardCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*v1alpha1.RollingUpgradeConfig); ok && key.Name == s.Foreign {
		return apierrors.NewNotFound(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "rollingupgradeconfigs"}, key.Name)
	}
	return s.Client.Get(ctx, key, obj, opts...)
}

func (s ShardCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := s.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if l, ok := list.(*v1alpha1.RollingUpgradeConfigList); ok {
		l.Items = slices.DeleteFunc(l.Items, func(c v1alpha1.RollingUpgradeConfig) bool { return c.Name == s.Foreign })
	}
	return nil
}
