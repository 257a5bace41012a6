package controller

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	operators "github.com/olmv1/olmv1/deppy/pkg/operators"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

func keyPolicy(secret string) *rukpakv1alpha1.ImageVerification {
	return &rukpakv1alpha1.ImageVerification{
		Provider: rukpakv1alpha1.VerificationProviderCosign,
		Cosign:   &rukpakv1alpha1.CosignVerification{SecretRef: &rukpakv1alpha1.SecretReference{Name: secret}},
	}
}

// TestBundleVerifyIsTheCatalogsPolicy: the resolved bundle's BundleDeployment gets the bundleVerify
// of the catalog it came from (and only that one's); a catalog without one sets none; a catalog
// that is not among those read is an error, not an unverified install.
func TestBundleVerifyIsTheCatalogsPolicy(t *testing.T) {
	cats := []catalogdv1alpha1.Catalog{
		{ObjectMeta: metav1.ObjectMeta{Name: "open"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "signed"}, Spec: catalogdv1alpha1.CatalogSpec{BundleVerify: keyPolicy("bundle-keys")}},
	}
	op := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "op"}, Spec: operatorsv1alpha1.OperatorSpec{PackageName: "pkg"}}
	for _, tc := range []struct {
		catalog string
		want    *rukpakv1alpha1.ImageVerification
	}{{"signed", keyPolicy("bundle-keys")}, {"open", nil}} {
		b := &operators.Bundle{Name: "pkg.v1", Package: "pkg", Version: "1.0.0", Catalog: tc.catalog, Image: "r/pkg:1"}
		v, err := bundleVerify(cats, tc.catalog)
		if err != nil {
			t.Fatalf("%s: %v", tc.catalog, err)
		}
		bd, err := desiredBundleDeployment(op, b, "ns", v)
		if err != nil {
			t.Fatal(err)
		}
		if got := bd.Spec.Source.Image.Verify; !equality.Semantic.DeepEqual(got, tc.want) {
			t.Errorf("catalog %s: verify %+v, want %+v", tc.catalog, got, tc.want)
		}
		pub, err := DesiredBundleDeployment(op, b, "ns", cats)
		if err != nil || !equality.Semantic.DeepEqual(pub.Spec, bd.Spec) {
			t.Errorf("catalog %s: the preview's BundleDeployment differs from the reconciler's: %v", tc.catalog, err)
		}
	}
	// The BundleDeployment does not share the Catalog's policy (a later change to it must not
	// change the Catalog read from the cache).
	bd, _ := desiredBundleDeployment(op, &operators.Bundle{Name: "pkg.v1", Image: "r/pkg:1"}, "ns", cats[1].Spec.BundleVerify)
	bd.Spec.Source.Image.Verify.Cosign.SecretRef.Name = "other"
	if cats[1].Spec.BundleVerify.Cosign.SecretRef.Name != "bundle-keys" {
		t.Error("the BundleDeployment's verify aliases the Catalog's bundleVerify")
	}

	if _, err := bundleVerify(cats, "gone"); err == nil || !strings.Contains(err.Error(), `catalog "gone"`) {
		t.Errorf("an unknown catalog: %v", err)
	}
	if _, err := DesiredBundleDeployment(op, &operators.Bundle{Name: "pkg.v1", Catalog: "gone", Image: "r/pkg:1"}, "ns", cats); err == nil {
		t.Error("DesiredBundleDeployment for a bundle of an unknown catalog: no error")
	}
}

// TestSettingsCannotChangeTheBundleVerify: nothing of the Operator's spec that applySettings writes
// touches the source's verify.
func TestSettingsCannotChangeTheBundleVerify(t *testing.T) {
	op := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "op"}, Spec: operatorsv1alpha1.OperatorSpec{
		PackageName: "pkg", Paused: true, CollisionPolicy: rukpakv1alpha1.CollisionPolicyIfNoController,
	}}
	bd, err := desiredBundleDeployment(op, &operators.Bundle{Name: "pkg.v1", Catalog: "signed", Image: "r/pkg:1"}, "ns", keyPolicy("bundle-keys"))
	if err != nil {
		t.Fatal(err)
	}
	if err := applySettings(&bd.Spec, op); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(bd.Spec.Source.Image.Verify, keyPolicy("bundle-keys")) {
		t.Errorf("verify after applySettings: %+v", bd.Spec.Source.Image.Verify)
	}
}
