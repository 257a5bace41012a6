package objmeta

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Ensure adds the finalizer and labels, keeps other labels, writes nothing when all is in place,
// and refuses a patch based on a stale read (optimistic locking).
func TestEnsure(t *testing.T) {
	ctx := t.Context()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Labels: map[string]string{"keep": "me"}}}
	c := fake.NewClientBuilder().WithObjects(cm).Build()
	got := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatal(err)
	}
	stale := got.DeepCopy()
	if err := Ensure(ctx, c, got, "ConfigMap", "example.com/f", map[string]string{"name": "c"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatal(err)
	}
	if !controllerutil.ContainsFinalizer(got, "example.com/f") || got.Labels["name"] != "c" || got.Labels["keep"] != "me" {
		t.Fatalf("after Ensure: finalizers %v, labels %v", got.Finalizers, got.Labels)
	}
	rv := got.ResourceVersion
	if err := Ensure(ctx, c, got, "ConfigMap", "example.com/f", map[string]string{"name": "c"}); err != nil || got.ResourceVersion != rv {
		t.Fatalf("a second Ensure wrote (resourceVersion %s → %s, %v)", rv, got.ResourceVersion, err)
	}
	if err := Ensure(ctx, c, stale, "ConfigMap", "example.com/g", nil); err == nil {
		t.Fatal("a patch from a stale read succeeded; want a conflict")
	}
}
