package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// publishCatalogStatus writes, in one status update, what catalogd writes once it has unpacked a
// catalog: content hash, counts and Serving. The content served stays whatever the fixture holds,
// which is how a catalogd replica that has not loaded the catalog yet looks. (serveCatalog writes no
// counts, and setting them in a second update would let a reconcile read the catalog in between.)
func publishCatalogStatus(t *testing.T, name, hash string, counts catalogdv1alpha1.CatalogCounts) {
	t.Helper()
	ctx := context.Background()
	cat := &catalogdv1alpha1.Catalog{}
	err := k8s.Get(ctx, types.NamespacedName{Name: name}, cat)
	if apierrors.IsNotFound(err) {
		cat = &catalogdv1alpha1.Catalog{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: catalogdv1alpha1.CatalogSpec{Source: rukpakv1alpha1.Source{
				Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: "registry.test/" + name + ":latest"},
			}},
		}
		if err := k8s.Create(ctx, cat); err != nil {
			t.Fatalf("creating Catalog %s: %v", name, err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), cat) })
	} else if err != nil {
		t.Fatal(err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, types.NamespacedName{Name: name}, cat); err != nil {
			return err
		}
		cat.Status.ContentHash = hash
		cat.Status.Counts = &counts
		for _, c := range []metav1.Condition{
			{Type: catalogdv1alpha1.TypeServing, Status: metav1.ConditionTrue, Reason: catalogdv1alpha1.ReasonServing, Message: "serving"},
			{Type: catalogdv1alpha1.TypeUnpacked, Status: metav1.ConditionTrue, Reason: catalogdv1alpha1.ReasonUnpackSucceeded, Message: "unpacked"},
		} {
			c.ObservedGeneration = cat.Generation
			apimeta.SetStatusCondition(&cat.Status.Conditions, c)
		}
		return k8s.Status().Update(ctx, cat)
	})
	if err != nil {
		t.Fatalf("updating the status of Catalog %s: %v", name, err)
	}
}

// TestHalfReadCatalogIsNotResolved: content that is not what the Catalog's status names (catalogd
// restarted on empty storage, or not done loading an update) is never resolved with; the Operator
// says so, nothing installed changes, and resolution resumes by itself once the content is served,
// without any Catalog event.
func TestHalfReadCatalogIsNotResolved(t *testing.T) {
	const cat, op = "half-read", "xi-op"
	v1 := packageFBC("xi", bundleFBC{version: "1.0.0"})
	v2 := packageFBC("xi", bundleFBC{version: "1.0.0"}, bundleFBC{version: "1.1.0", replaces: "1.0.0"})
	noBD := func() error {
		if _, err := getBD(op); !apierrors.IsNotFound(err) {
			return fmt.Errorf("want no BundleDeployment, got err %v", err)
		}
		return nil
	}

	// The status names v1; the replica serving the metadata API has nothing yet.
	fixtures.set(cat, "")
	publishCatalogStatus(t, cat, "sha256:half-read-v1", catalogdv1alpha1.CatalogCounts{Packages: 1, Channels: 1, Bundles: 1})
	createOperator(t, op, operatorsv1alpha1.OperatorSpec{PackageName: "xi"})
	waitForCondition(t, op, operatorsv1alpha1.TypeResolved, metav1.ConditionFalse, operatorsv1alpha1.ReasonResolutionFailed,
		`catalog "half-read": read content does not match status.contentHash sha256:half-read-v1`,
		"0 packages, 0 channels and 0 bundles where status.counts says 1, 1 and 1", "still loading", "retrying")
	consistently(t, "no BundleDeployment from an empty read", 2*time.Second, noBD)

	// catalogd has loaded it: the Catalog does not change, the retry finds it.
	start := time.Now()
	fixtures.set(cat, v1)
	waitForBDImage(t, op, image("xi", "1.0.0"))
	t.Logf("resolved %v after the content was served", time.Since(start).Round(100*time.Millisecond))
	waitForCondition(t, op, operatorsv1alpha1.TypeResolved, metav1.ConditionTrue, operatorsv1alpha1.ReasonResolutionSucceeded)
	playRukpak(t, op, true, true)
	waitForCondition(t, op, operatorsv1alpha1.TypeInstalled, metav1.ConditionTrue, operatorsv1alpha1.ReasonInstallationSucceeded)

	// An update to v2 that the serving replica has not loaded: it still answers v1.
	publishCatalogStatus(t, cat, "sha256:half-read-v2", catalogdv1alpha1.CatalogCounts{Packages: 1, Channels: 1, Bundles: 2})
	o := waitForCondition(t, op, operatorsv1alpha1.TypeResolved, metav1.ConditionFalse, operatorsv1alpha1.ReasonResolutionFailed,
		"does not match status.contentHash sha256:half-read-v2", "1 packages, 1 channels and 1 bundles where status.counts says 1, 1 and 2",
		"xi.v1.0.0 stays installed")
	if o.Status.InstalledBundle == nil || o.Status.InstalledBundle.Version != "1.0.0" {
		t.Errorf("installedBundle %+v", o.Status.InstalledBundle)
	}
	consistently(t, "the BundleDeployment keeps bundle 1.0.0", 2*time.Second, func() error {
		bd, err := getBD(op)
		if err != nil {
			return err
		}
		if bd.Spec.Source.Image.Ref != image("xi", "1.0.0") {
			return fmt.Errorf("BundleDeployment changed to %s", bd.Spec.Source.Image.Ref)
		}
		return nil
	})
	waitForCondition(t, op, operatorsv1alpha1.TypeInstalled, metav1.ConditionTrue, operatorsv1alpha1.ReasonInstallationSucceeded)

	// Loaded: the upgrade goes on.
	fixtures.set(cat, v2)
	waitForBDImage(t, op, image("xi", "1.1.0"))
	waitForCondition(t, op, operatorsv1alpha1.TypeResolved, metav1.ConditionTrue, operatorsv1alpha1.ReasonResolutionSucceeded, "1.1.0")
}
