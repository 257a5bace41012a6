package controller

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// TestPhaseWaitsOnProbe: a probe on an object of an early phase (a ConfigMap: storage) holds the
// later phases back: the custom resource (a Gizmo: phase other) is not created while the probe waits, the
// BundleDeployment says Installed=False/ProgressionProbeWaiting naming the probe, the object and the
// phase; once the ConfigMap passes (another manager annotates it), the next reconcile applies the
// rest and the revision is installed.
// phasesCRD defines the Gizmo of TestPhaseWaitsOnProbe (a CRD of its own: two BundleDeployments
// cannot both own one).
const phasesCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.phases.example.com
spec:
  group: phases.example.com
  scope: Namespaced
  names: {kind: Gizmo, plural: gizmos, singular: gizmo, listKind: GizmoList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

func TestPhaseWaitsOnProbe(t *testing.T) {
	const name = "phase-wait"
	settings := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n"
	gizmo := "apiVersion: phases.example.com/v1\nkind: Gizmo\nmetadata:\n  name: g1\nspec: {size: 1}\n"
	writeBundle(t, "example.com/phase-wait:v1", map[string]string{"crd.yaml": phasesCRD, "settings.yaml": settings, "gizmo.yaml": gizmo})
	newProbedBD(t, name, "example.com/phase-wait:v1", rukpakv1alpha1.ProgressionProbe{
		Name:     "settings-ready",
		Selector: rukpakv1alpha1.ProbeSelector{Kind: "ConfigMap"},
		Assertions: []rukpakv1alpha1.ProbeAssertion{{Type: rukpakv1alpha1.ProbeAssertionCEL,
			CEL: &rukpakv1alpha1.CELAssertion{Expression: `has(self.metadata.annotations) && 'example.com/ready' in self.metadata.annotations`}}},
	})
	bd := waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, rukpakv1alpha1.ReasonProgressionProbeWaiting)
	c := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled)
	for _, want := range []string{`progression probe "settings-ready" waits on ConfigMap phase-wait/settings`, "phase storage; phase other and later are applied once it passes"} {
		if !strings.Contains(c.Message, want) {
			t.Fatalf("Installed message %q does not contain %q", c.Message, want)
		}
	}
	if h := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeHealthy); h == nil || h.Reason != rukpakv1alpha1.ReasonProgressionProbeWaiting {
		t.Fatalf("Healthy: %+v", h)
	}
	g := &unstructured.Unstructured{}
	g.SetGroupVersionKind(schema.GroupVersionKind{Group: "phases.example.com", Version: "v1", Kind: "Gizmo"})
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "g1"}, g); !apierrors.IsNotFound(err) {
		t.Fatalf("the Gizmo of the last phase exists while an earlier phase waits (err %v)", err)
	}

	cm, err := getCM(t, name, "settings")
	if err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Annotations = map[string]string{"example.com/ready": "yes"}
	if err := k8s.Patch(t.Context(), cm, patch); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "g1"}, g); err != nil {
		t.Fatalf("the Gizmo was not applied once the ConfigMap passed: %v", err)
	}
	bd = waitCondition(t, name, rukpakv1alpha1.TypeHealthy, metav1.ConditionTrue, rukpakv1alpha1.ReasonHealthy)
	if bd.Status.InstalledRevision != 1 {
		t.Fatalf("installedRevision %d, want 1 (the waiting install stays one revision)", bd.Status.InstalledRevision)
	}
}

// TestPhaseWaitDefersPrune: an upgrade whose early phase waits leaves revision 1 installed and its
// objects in place: the Service revision 2 drops is not pruned and the one it adds (a later phase)
// not created until the probe passes; then revision 2 is applied in full, the old Service pruned.
func TestPhaseWaitDefersPrune(t *testing.T) {
	const name = "phase-prune"
	settings := func(annotated bool) string {
		s := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n"
		if annotated {
			s += "  annotations: {example.com/ready: \"yes\"}\n"
		}
		return s + "data:\n  a: b\n"
	}
	service := func(n string) string {
		return "apiVersion: v1\nkind: Service\nmetadata:\n  name: " + n + "\nspec:\n  ports:\n  - port: 80\n"
	}
	writeBundle(t, "example.com/phase-prune:v1", map[string]string{"settings.yaml": settings(true), "svc.yaml": service("svc-old")})
	writeBundle(t, "example.com/phase-prune:v2", map[string]string{"settings.yaml": settings(false), "svc.yaml": service("svc-new")})
	newProbedBD(t, name, "example.com/phase-prune:v1", rukpakv1alpha1.ProgressionProbe{
		Name:     "settings-ready",
		Selector: rukpakv1alpha1.ProbeSelector{Kind: "ConfigMap"},
		Assertions: []rukpakv1alpha1.ProbeAssertion{{Type: rukpakv1alpha1.ProbeAssertionCEL,
			CEL: &rukpakv1alpha1.CELAssertion{Expression: `has(self.metadata.annotations) && 'example.com/ready' in self.metadata.annotations`}}},
	})
	waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)

	setRef(t, name, "example.com/phase-prune:v2")
	bd := waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, rukpakv1alpha1.ReasonProgressionProbeWaiting)
	if c := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled); !strings.Contains(c.Message, "(revision 1 stays installed)") ||
		!strings.Contains(c.Message, "phase storage; phase workloads and later") {
		t.Fatalf("Installed message: %q", c.Message)
	}
	if bd.Status.InstalledRevision != 1 {
		t.Fatalf("installedRevision %d while revision 2 waits, want 1", bd.Status.InstalledRevision)
	}
	svc := &corev1.Service{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "svc-old"}, svc); err != nil {
		t.Fatalf("the Service revision 2 drops was pruned while revision 2 waits: %v", err)
	}
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "svc-new"}, svc); !apierrors.IsNotFound(err) {
		t.Fatalf("the Service of a later phase was created while an earlier phase waits (err %v)", err)
	}

	cm, err := getCM(t, name, "settings")
	if err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Annotations = map[string]string{"example.com/ready": "yes"}
	if err := k8s.Patch(t.Context(), cm, patch); err != nil {
		t.Fatal(err)
	}
	bd = waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
	if bd.Status.InstalledRevision != 2 {
		t.Fatalf("installedRevision %d, want 2", bd.Status.InstalledRevision)
	}
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "svc-new"}, svc); err != nil {
		t.Fatalf("revision 2's Service: %v", err)
	}
	waitFor(t, "svc-old to be pruned", func(ctx context.Context) (bool, error) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: name, Name: "svc-old"}, &corev1.Service{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}
