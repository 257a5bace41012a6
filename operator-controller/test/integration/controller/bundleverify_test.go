package controller

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

func cosignKeys(secret string) *rukpakv1alpha1.ImageVerification {
	return &rukpakv1alpha1.ImageVerification{
		Provider: rukpakv1alpha1.VerificationProviderCosign,
		Cosign:   &rukpakv1alpha1.CosignVerification{SecretRef: &rukpakv1alpha1.SecretReference{Name: secret}},
	}
}

// waitForBDVerify waits until the Operator's BundleDeployment's image source has verify want.
func waitForBDVerify(t *testing.T, name string, want *rukpakv1alpha1.ImageVerification) {
	t.Helper()
	eventually(t, "BundleDeployment "+name+" verify", func() error {
		bd, err := getBD(name)
		if err != nil {
			return err
		}
		if got := bd.Spec.Source.Image.Verify; !equality.Semantic.DeepEqual(got, want) {
			return fmt.Errorf("verify %+v, want %+v", got, want)
		}
		return nil
	})
}

// setBundleVerify sets the Catalog's spec.bundleVerify.
func setBundleVerify(t *testing.T, name string, v *rukpakv1alpha1.ImageVerification) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cat := &catalogdv1alpha1.Catalog{}
		if err := k8s.Get(context.Background(), types.NamespacedName{Name: name}, cat); err != nil {
			return err
		}
		cat.Spec.BundleVerify = v
		return k8s.Update(context.Background(), cat)
	})
	if err != nil {
		t.Fatalf("setting bundleVerify of Catalog %s: %v", name, err)
	}
}

// TestCatalogBundleVerifyReachesTheBundleDeployment: an Operator resolved from a Catalog with
// bundleVerify gets a BundleDeployment whose image source verifies under that policy; a change of
// the policy reaches it; an edit of the BundleDeployment that drops it is undone; and rukpak's
// Unsigned and SignatureInvalid (played here) show on the Operator's Installed condition.
func TestCatalogBundleVerifyReachesTheBundleDeployment(t *testing.T) {
	serveCatalog(t, "signed-bundles", "h1", packageFBC("sigma", bundleFBC{version: "1.0.0"}), nil)
	setBundleVerify(t, "signed-bundles", cosignKeys("bundle-keys"))
	createOperator(t, "sigma-op", operatorsv1alpha1.OperatorSpec{PackageName: "sigma"})
	waitForBDImage(t, "sigma-op", image("sigma", "1.0.0"))
	waitForBDVerify(t, "sigma-op", cosignKeys("bundle-keys"))

	// The policy changes (key Secret renamed): the BundleDeployment follows.
	setBundleVerify(t, "signed-bundles", cosignKeys("bundle-keys-2"))
	waitForBDVerify(t, "sigma-op", cosignKeys("bundle-keys-2"))

	// Nobody weakens it by editing the BundleDeployment: operator-controller writes it back.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		bd, err := getBD("sigma-op")
		if err != nil {
			return err
		}
		bd.Spec.Source.Image.Verify = nil
		return k8s.Update(context.Background(), bd)
	})
	if err != nil {
		t.Fatal(err)
	}
	waitForBDVerify(t, "sigma-op", cosignKeys("bundle-keys-2"))

	pending := metav1.Condition{Type: rukpakv1alpha1.TypeInstalled, Status: metav1.ConditionFalse, Reason: rukpakv1alpha1.ReasonInstallPending,
		Message: "nothing is installed until the bundle is unpacked and rendered"}
	unsigned := `image "registry.test/sigma-bundle:1.0.0": image registry.test/sigma-bundle@sha256:5f0c is not trusted (Unsigned): no signature found`
	setBDConditions(t, "sigma-op",
		metav1.Condition{Type: rukpakv1alpha1.TypeUnpacked, Status: metav1.ConditionFalse, Reason: rukpakv1alpha1.ReasonUnsigned, Message: unsigned}, pending)
	waitForCondition(t, "sigma-op", operatorsv1alpha1.TypeInstalled, metav1.ConditionFalse, rukpakv1alpha1.ReasonUnsigned, `BundleDeployment "sigma-op": `+unsigned)

	invalid := `image "registry.test/sigma-bundle:1.0.0": image registry.test/sigma-bundle@sha256:5f0c is not trusted (SignatureInvalid): no signature verifies`
	setBDConditions(t, "sigma-op",
		metav1.Condition{Type: rukpakv1alpha1.TypeUnpacked, Status: metav1.ConditionFalse, Reason: rukpakv1alpha1.ReasonSignatureInvalid, Message: invalid}, pending)
	waitForCondition(t, "sigma-op", operatorsv1alpha1.TypeInstalled, metav1.ConditionFalse, rukpakv1alpha1.ReasonSignatureInvalid, invalid)

	// Without a policy on the catalog, nothing is verified.
	setBundleVerify(t, "signed-bundles", nil)
	waitForBDVerify(t, "sigma-op", nil)
}

// TestDirectBundleKeepsItsOwnVerify: a direct install is from no catalog; its BundleDeployment has
// the verify its source sets, whatever the catalogs require.
func TestDirectBundleKeepsItsOwnVerify(t *testing.T) {
	serveCatalog(t, "signed-direct", "h1", packageFBC("tau", bundleFBC{version: "1.0.0"}), nil)
	setBundleVerify(t, "signed-direct", cosignKeys("bundle-keys"))
	spec := directSpec("registry.test/tau-direct:1.0.0")
	spec.Source.Bundle.Source.Image.Verify = cosignKeys("my-keys")
	createOperator(t, "tau-direct", spec)
	waitForBDImage(t, "tau-direct", "registry.test/tau-direct:1.0.0")
	waitForBDVerify(t, "tau-direct", cosignKeys("my-keys"))
}
