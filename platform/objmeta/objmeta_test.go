package objmeta

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// RemoveFinalizer takes only the named finalizer off, also from a stale read (no lock), writes
// nothing when it is not there, and reports a vanished object as NotFound.
func TestRemoveFinalizer(t *testing.T) {
	ctx := t.Context()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Finalizers: []string{"example.com/f", "example.com/other"}}}
	c := fake.NewClientBuilder().WithObjects(cm).Build()
	stale := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), stale); err != nil {
		t.Fatal(err)
	}
	newer := stale.DeepCopy()
	newer.Labels = map[string]string{"written": "meanwhile"}
	if err := c.Update(ctx, newer); err != nil {
		t.Fatal(err)
	}
	if err := RemoveFinalizer(ctx, c, stale, "ConfigMap", "example.com/f"); err != nil {
		t.Fatalf("from a stale read: %v; want no conflict", err)
	}
	got := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatal(err)
	}
	if controllerutil.ContainsFinalizer(got, "example.com/f") || !controllerutil.ContainsFinalizer(got, "example.com/other") || got.Labels["written"] != "meanwhile" {
		t.Fatalf("after RemoveFinalizer: finalizers %v, labels %v; want only example.com/other left and the labels kept", got.Finalizers, got.Labels)
	}
	rv := got.ResourceVersion
	if err := RemoveFinalizer(ctx, c, got, "ConfigMap", "example.com/f"); err != nil || got.ResourceVersion != rv {
		t.Fatalf("without the finalizer: resourceVersion %s → %s, %v; want no write", rv, got.ResourceVersion, err)
	}
	gone := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: "ns", Finalizers: []string{"example.com/f"}}}
	if err := RemoveFinalizer(ctx, c, gone, "ConfigMap", "example.com/f"); !apierrors.IsNotFound(err) {
		t.Fatalf("on a deleted object: %v; want NotFound", err)
	}
}
