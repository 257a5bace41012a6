package controller

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/controller"
)

// widgetCRD is a CRD serving the given versions (the first is the storage version); schema is the
// openAPIV3Schema of every version.
func widgetCRD(schema string, versions ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.preflight.example.com
spec:
  group: preflight.example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
`)
	for i, v := range versions {
		fmt.Fprintf(&b, "  - name: %s\n    served: true\n    storage: %t\n    schema:\n      openAPIV3Schema: %s\n", v, i == 0, schema)
	}
	return b.String()
}

const (
	openSchema     = `{type: object, x-kubernetes-preserve-unknown-fields: true}`
	requiresSize   = `{type: object, required: [spec], properties: {spec: {type: object, required: [size], properties: {size: {type: integer}}}}}`
	widgetNoSizeCR = "apiVersion: preflight.example.com/v1\nkind: Widget\nmetadata:\n  name: w1\n  namespace: preflight\nspec:\n  color: red\n"
)

func TestCRDUpgradeSafety(t *testing.T) {
	const name = "preflight"
	writeBundle(t, "example.com/preflight:v1", map[string]string{"crd.yaml": widgetCRD(openSchema, "v1")})
	newBD(t, name, "example.com/preflight:v1")
	waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
	if err := k8s.Create(t.Context(), mustObject(t, widgetNoSizeCR)); err != nil {
		t.Fatal(err)
	}

	// Dropping v1, which is stored, is blocked.
	writeBundle(t, "example.com/preflight:v2", map[string]string{"crd.yaml": widgetCRD(openSchema, "v2")})
	setRef(t, name, "example.com/preflight:v2")
	bd := waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, "UpgradeBlocked")
	msg := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled).Message
	for _, want := range []string{"removes version v1", "storedVersions", controller.SkipCRDUpgradeSafetyAnnotation} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}

	// Requiring a field the existing Widget lacks is blocked, naming the Widget.
	writeBundle(t, "example.com/preflight:v3", map[string]string{"crd.yaml": widgetCRD(requiresSize, "v1")})
	setRef(t, name, "example.com/preflight:v3")
	bd = waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, "UpgradeBlocked")
	msg = meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled).Message
	if !strings.Contains(msg, "Widget preflight/w1") || !strings.Contains(msg, "size") {
		t.Errorf("message %q does not name the invalid Widget and field", msg)
	}
	if bd.Status.InstalledRevision != 1 {
		t.Errorf("installedRevision %d, want 1", bd.Status.InstalledRevision)
	}

	// The documented opt-out applies it anyway.
	patch := client.MergeFrom(bd.DeepCopy())
	bd.Annotations = map[string]string{controller.SkipCRDUpgradeSafetyAnnotation: "true"}
	if err := k8s.Patch(t.Context(), bd, patch); err != nil {
		t.Fatal(err)
	}
	bd = waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
	if bd.Status.InstalledRevision != 2 {
		t.Errorf("installedRevision %d, want 2", bd.Status.InstalledRevision)
	}
}

func mustObject(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}
