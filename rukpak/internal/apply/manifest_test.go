package apply

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func testScheme(t testing.TB) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func crd(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind("CustomResourceDefinition")
	u.SetName(name)
	return u
}

func TestToUnstructuredLabelsAndStrips(t *testing.T) {
	typed := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", ResourceVersion: "7", Labels: map[string]string{"app": "web"}}}
	typed.Status.Replicas = 3
	objs, err := toUnstructured(testScheme(t), "my-bd", []client.Object{typed, crd("widgets.example.com")})
	if err != nil {
		t.Fatal(err)
	}
	d := objs[0]
	if d.GetAPIVersion() != "apps/v1" || d.GetKind() != "Deployment" {
		t.Errorf("typed object without TypeMeta got GVK %s", d.GroupVersionKind())
	}
	if d.GetResourceVersion() != "" {
		t.Error("resourceVersion not stripped")
	}
	if _, ok := d.Object["status"]; ok {
		t.Error("status not stripped")
	}
	want := map[string]string{"app": "web", OwnerKindLabel: OwnerKind, OwnerNameLabel: "my-bd"}
	for k, v := range want {
		if d.GetLabels()[k] != v {
			t.Errorf("label %s = %q, want %q", k, d.GetLabels()[k], v)
		}
	}
	if typed.Labels[OwnerNameLabel] != "" {
		t.Error("the renderer's object was modified")
	}
}

func TestToUnstructuredRejectsDuplicates(t *testing.T) {
	_, err := toUnstructured(testScheme(t), "bd", []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "x"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "x"}},
	})
	if err == nil || !strings.Contains(err.Error(), "ConfigMap x/a twice") {
		t.Fatalf("want a duplicate error naming the object, got %v", err)
	}
}

func TestApplyOrderAndManifestRoundTrip(t *testing.T) {
	objs, err := toUnstructured(testScheme(t), "bd", []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa", Namespace: "ns"}},
		crd("widgets.example.com"),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	applyOrder(objs)
	var got []string
	for _, u := range objs {
		got = append(got, KeyOf(u).String())
	}
	want := "CustomResourceDefinition.apiextensions.k8s.io widgets.example.com|Namespace ns|ServiceAccount ns/sa|ConfigMap ns/a|ConfigMap ns/b|Deployment.apps ns/web"
	if strings.Join(got, "|") != want {
		t.Errorf("apply order:\n got  %s\n want %s", strings.Join(got, "|"), want)
	}
	m, err := encodeManifest(objs)
	if err != nil {
		t.Fatal(err)
	}
	back, err := decodeManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(objs) {
		t.Fatalf("decoded %d objects, want %d", len(back), len(objs))
	}
	for i := range back {
		if KeyOf(back[i]) != KeyOf(objs[i]) {
			t.Errorf("object %d: %s, want %s", i, KeyOf(back[i]), KeyOf(objs[i]))
		}
	}
	// The same objects in another order give the same manifest.
	objs[0], objs[len(objs)-1] = objs[len(objs)-1], objs[0]
	applyOrder(objs)
	if m2, _ := encodeManifest(objs); m2 != m {
		t.Error("the manifest depends on the order the renderer returned objects in")
	}
}

// bundle returns n ConfigMaps and n Deployments, the shape of a mid-sized operator bundle.
func bundle(n int) []client.Object {
	var out []client.Object
	for i := 0; i < n; i++ {
		out = append(out,
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Namespace: "ns"}, Data: map[string]string{"k": strings.Repeat("v", 512)}},
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("d-%d", i), Namespace: "ns"}, Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/x:1"}}}},
			}})
	}
	return out
}

// BenchmarkPrepareManifest measures what every reconcile pays before talking to the API server:
// converting, labelling and ordering 100 rendered objects and digesting them to compare with the
// deployed revision.
func BenchmarkPrepareManifest(b *testing.B) {
	s := testScheme(b)
	objs := bundle(50)
	b.ReportAllocs()
	for b.Loop() {
		us, err := toUnstructured(s, "bd", objs)
		if err != nil {
			b.Fatal(err)
		}
		applyOrder(us)
		if _, err := manifestDigest(us); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeManifest measures encoding the YAML manifest of a new 100-object revision.
func BenchmarkEncodeManifest(b *testing.B) {
	us, err := toUnstructured(testScheme(b), "bd", bundle(50))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeManifest(us); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeManifest measures reading a stored 100-object revision back (prune, rollback).
func BenchmarkDecodeManifest(b *testing.B) {
	us, err := toUnstructured(testScheme(b), "bd", bundle(50))
	if err != nil {
		b.Fatal(err)
	}
	m, err := encodeManifest(us)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeManifest(m); err != nil {
			b.Fatal(err)
		}
	}
}
