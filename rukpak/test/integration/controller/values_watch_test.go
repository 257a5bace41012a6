package controller

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/controller"
)

// TestValuesWatchReconcilesByName: the Secrets and ConfigMaps a helm BundleDeployment names in
// valuesFrom are watched by name: creating, changing and deleting one asks for a reconcile of every
// BundleDeployment naming it at once; the watches stop when no BundleDeployment names them.
func TestValuesWatchReconcilesByName(t *testing.T) {
	const ns = "values-watch"
	createNamespace(t, ns)
	w := controller.NewValuesWatch(metadata.NewForConfigOrDie(restConfig))
	helmBD := func(name string, refs ...rukpakv1alpha1.ValuesReference) *rukpakv1alpha1.BundleDeployment {
		return &rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: rukpakv1alpha1.BundleDeploymentSpec{
			ProvisionerClassName: rukpakv1alpha1.ProvisionerHelm, InstallNamespace: ns, Config: &rukpakv1alpha1.BundleConfig{ValuesFrom: refs}}}
	}
	secretRef := rukpakv1alpha1.ValuesReference{Kind: "Secret", Name: "vals"}
	a, b := helmBD("a", secretRef), helmBD("b", secretRef, rukpakv1alpha1.ValuesReference{Kind: "ConfigMap", Name: "vals"})
	w.Track(a)
	w.Track(b)
	if w.Len() != 2 {
		t.Fatalf("watching %d objects, want 2 (Secret vals once, ConfigMap vals)", w.Len())
	}
	want := func(what string, names ...string) {
		t.Helper()
		got := map[string]bool{}
		deadline := time.After(eventDriven)
		for len(got) < len(names) {
			select {
			case e := <-w.Events():
				got[e.Object.GetName()] = true
			case <-deadline:
				t.Fatalf("%s: reconciles asked for %v, want %v", what, got, names)
			}
		}
		for _, n := range names {
			if !got[n] {
				t.Fatalf("%s: reconciles asked for %v, want %v", what, got, names)
			}
		}
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vals"}, StringData: map[string]string{"values.yaml": "a: 1\n"}}
	waitFor(t, "the Secret to be created", func(ctx context.Context) (bool, error) { return k8s.Create(ctx, s) == nil, nil })
	want("creating the Secret", "a", "b")
	s.StringData = map[string]string{"values.yaml": "a: 2\n"}
	if err := k8s.Update(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	want("changing the Secret", "a", "b")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vals"}, Data: map[string]string{"values.yaml": "b: 1\n"}}
	if err := k8s.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	want("creating the ConfigMap", "b")
	if err := k8s.Delete(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	want("deleting the Secret", "a", "b")

	w.Forget("a")
	b.Spec.Config.ValuesFrom = nil
	w.Track(b)
	if w.Len() != 0 {
		t.Errorf("watching %d objects after every reference went", w.Len())
	}
}
