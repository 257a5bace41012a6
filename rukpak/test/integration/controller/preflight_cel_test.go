package controller

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// gizmoCRD is a CRD with one version v1 whose spec schema is specSchema.
func gizmoCRD(specSchema string) string {
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.celpreflight.example.com
spec:
  group: celpreflight.example.com
  scope: Namespaced
  names: {kind: Gizmo, plural: gizmos, singular: gizmo, listKind: GizmoList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: ` + specSchema + `
`
}

// TestCRDUpgradeSafetyEvaluatesCELRules: a new CRD revision whose x-kubernetes-validations rule an
// existing custom resource violates is blocked, naming the object and the rule's message; a rule the
// existing objects satisfy lets the upgrade through.
func TestCRDUpgradeSafetyEvaluatesCELRules(t *testing.T) {
	const name = "celpreflight"
	open := `{type: object, properties: {min: {type: integer}, max: {type: integer}}}`
	writeBundle(t, "example.com/celpreflight:v1", map[string]string{"crd.yaml": gizmoCRD(open)})
	newBD(t, name, "example.com/celpreflight:v1")
	waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
	if err := k8s.Create(t.Context(), mustObject(t, "apiVersion: celpreflight.example.com/v1\nkind: Gizmo\nmetadata:\n  name: g1\n  namespace: celpreflight\nspec:\n  min: 5\n  max: 2\n")); err != nil {
		t.Fatal(err)
	}

	violated := `{type: object, properties: {min: {type: integer}, max: {type: integer}},
    x-kubernetes-validations: [{rule: "self.min <= self.max", message: "min must not exceed max"}]}`
	writeBundle(t, "example.com/celpreflight:v2", map[string]string{"crd.yaml": gizmoCRD(violated)})
	setRef(t, name, "example.com/celpreflight:v2")
	bd := waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, "UpgradeBlocked")
	msg := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled).Message
	for _, want := range []string{"Gizmo celpreflight/g1", "min must not exceed max", "rejects 1 existing object"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
	if bd.Status.InstalledRevision != 1 {
		t.Errorf("installedRevision %d, want 1", bd.Status.InstalledRevision)
	}

	satisfied := `{type: object, properties: {min: {type: integer}, max: {type: integer}},
    x-kubernetes-validations: [{rule: "self.min >= 0", message: "min must not be negative"}]}`
	writeBundle(t, "example.com/celpreflight:v3", map[string]string{"crd.yaml": gizmoCRD(satisfied)})
	setRef(t, name, "example.com/celpreflight:v3")
	bd = waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
	if bd.Status.InstalledRevision != 2 {
		t.Errorf("installedRevision %d, want 2", bd.Status.InstalledRevision)
	}
}
