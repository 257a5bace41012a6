package apply

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/health"
)

func obj(apiVersion, kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func TestPhaseOf(t *testing.T) {
	for _, tc := range []struct {
		gvk  schema.GroupVersionKind
		want Phase
	}{
		{schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, PhaseNamespaces},
		{schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"}, PhasePolicies},
		{schema.GroupVersionKind{Version: "v1", Kind: "ResourceQuota"}, PhasePolicies},
		{schema.GroupVersionKind{Version: "v1", Kind: "LimitRange"}, PhasePolicies},
		{schema.GroupVersionKind{Group: "scheduling.k8s.io", Version: "v1", Kind: "PriorityClass"}, PhasePolicies},
		{schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}, PhaseRBAC},
		{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}, PhaseRBAC},
		{schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, PhaseCRDs},
		{schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"}, PhaseStorage},
		{schema.GroupVersionKind{Group: "storage.k8s.io", Version: "v1", Kind: "StorageClass"}, PhaseStorage},
		{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, PhaseStorage},
		{schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, PhaseStorage},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, PhaseWorkloads},
		{schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, PhaseWorkloads},
		{schema.GroupVersionKind{Version: "v1", Kind: "Service"}, PhaseWorkloads},
		{schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"}, PhaseWebhooks},
		{schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"}, PhaseWebhooks},
		{schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, PhaseOther},
		// A kind is known by its group too: a custom resource named like a built-in kind is "other".
		{schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Deployment"}, PhaseOther},
	} {
		if got := PhaseOf(tc.gvk); got != tc.want {
			t.Errorf("PhaseOf(%s) = %s, want %s", tc.gvk, got, tc.want)
		}
	}
}

func TestSplitPhasesOrder(t *testing.T) {
	objs := []*unstructured.Unstructured{
		obj("example.com/v1", "Widget", "ns", "w1"),
		obj("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "", "hook"),
		obj("apps/v1", "Deployment", "ns", "b"),
		obj("apps/v1", "Deployment", "ns", "a"),
		obj("v1", "ConfigMap", "ns", "cfg"),
		obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com"),
		obj("rbac.authorization.k8s.io/v1", "Role", "ns", "r"),
		obj("v1", "ServiceAccount", "ns", "sa"),
		obj("networking.k8s.io/v1", "NetworkPolicy", "ns", "deny"),
		obj("v1", "Namespace", "", "ns"),
	}
	var got []string
	for _, ph := range SplitPhases(objs) {
		var names []string
		for _, u := range ph.Objects {
			names = append(names, u.GetName())
		}
		got = append(got, ph.Phase.String()+":"+strings.Join(names, ","))
	}
	want := "namespaces:ns policies:deny rbac:r,sa crds:widgets.example.com storage:cfg workloads:b,a webhooks:hook other:w1"
	if strings.Join(got, " ") != want {
		t.Fatalf("phases:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if SplitPhases(nil) != nil {
		t.Fatal("no objects, no phases")
	}
}

func TestPhaseGateCheck(t *testing.T) {
	probes, err := health.CompileProbes([]rukpakv1alpha1.ProgressionProbe{{
		Name:     "operator-ready",
		Selector: rukpakv1alpha1.ProbeSelector{Group: "apps", Kind: "Deployment"},
		Assertions: []rukpakv1alpha1.ProbeAssertion{{Type: rukpakv1alpha1.ProbeAssertionFieldsEqual,
			FieldsEqual: &rukpakv1alpha1.FieldsEqualAssertion{FieldA: ".status.observedGeneration", FieldB: ".metadata.generation"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	live := obj("apps/v1", "Deployment", "ns", "op")
	live.SetGeneration(3)
	live.Object["status"] = map[string]interface{}{"observedGeneration": int64(2)}
	reader := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).WithObjects(live).Build()
	gate := &PhaseGate{Probes: probes, Reader: reader}
	ctx := context.Background()

	// Objects no probe selects are not read (the ConfigMap does not exist).
	if err := gate.Check(ctx, []*unstructured.Unstructured{obj("v1", "ConfigMap", "ns", "absent")}); err != nil {
		t.Fatalf("a phase without probed objects waited: %v", err)
	}
	err = gate.Check(ctx, []*unstructured.Unstructured{obj("apps/v1", "Deployment", "ns", "op")})
	var pe *health.ProbeError
	if !errors.As(err, &pe) || pe.Error() != `progression probe "operator-ready" waits on Deployment ns/op: .status.observedGeneration is 2 and .metadata.generation is 3, want them equal` {
		t.Fatalf("got %v", err)
	}
	live.Object["status"] = map[string]interface{}{"observedGeneration": int64(3)}
	if err := reader.Status().Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	if err := gate.Check(ctx, []*unstructured.Unstructured{obj("apps/v1", "Deployment", "ns", "op")}); err != nil {
		t.Fatalf("want the phase to pass, got %v", err)
	}
	if err := gate.Check(ctx, []*unstructured.Unstructured{obj("apps/v1", "Deployment", "ns", "gone")}); !health.IsProbeWaiting(err) || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("a missing probed object: got %v", err)
	}
	var nilGate *PhaseGate
	if err := nilGate.Check(ctx, []*unstructured.Unstructured{live}); err != nil {
		t.Fatalf("a nil gate waited: %v", err)
	}
	w := &PhaseWaitError{Phase: PhaseWorkloads, Next: PhaseWebhooks, Probe: pe}
	if !health.IsProbeWaiting(w) || !strings.Contains(w.Error(), "phase workloads; phase webhooks and later are applied once it passes") {
		t.Fatalf("PhaseWaitError: %v", w)
	}
}
