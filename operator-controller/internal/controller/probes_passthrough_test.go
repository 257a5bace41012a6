package controller

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operators "github.com/olmv1/olmv1/deppy/pkg/operators"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// The Operator's spec.progressionProbes are the BundleDeployment's, and a change of them is a
// settings change named in the Operator's terms.
func TestProgressionProbesArePassedThrough(t *testing.T) {
	probes := []rukpakv1alpha1.ProgressionProbe{{
		Name:     "widget-ready",
		Selector: rukpakv1alpha1.ProbeSelector{Group: "example.com", Kind: "Widget"},
		Assertions: []rukpakv1alpha1.ProbeAssertion{{Type: rukpakv1alpha1.ProbeAssertionFieldValue,
			FieldValue: &rukpakv1alpha1.FieldValueAssertion{FieldPath: ".status.phase", Value: "Ready"}}},
	}}
	op := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "op", UID: "uid"},
		Spec: operatorsv1alpha1.OperatorSpec{PackageName: "pkg", ProgressionProbes: probes}}
	b := &operators.Bundle{Name: "pkg.v1", Package: "pkg", Version: "1.0.0", Image: "r/pkg:1", MediaType: "plain+v0"}
	bd, err := desiredBundleDeployment(op, b, "ns", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(bd.Spec.ProgressionProbes, probes) {
		t.Fatalf("BundleDeployment probes %+v, want %+v", bd.Spec.ProgressionProbes, probes)
	}
	before := bd.Spec.DeepCopy()
	before.ProgressionProbes = nil
	if changed := settingsChanged(before, &bd.Spec); !slices.Contains(changed, "spec.progressionProbes") {
		t.Fatalf("settingsChanged = %v, want spec.progressionProbes", changed)
	}
}
