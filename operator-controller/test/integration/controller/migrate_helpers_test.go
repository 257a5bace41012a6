package controller

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/migrate"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/migrate/v0fixture"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/bundlerender"
)

// The migrate tests run operator-controller's reconciler (this suite's), and play catalogd and
// rukpak in a loop: catalogd serves the Catalogs migrate creates from FBC fixtures; rukpak renders
// each BundleDeployment's bundle with rukpak's own renderer (rukpak/pkg/bundlerender, as the
// controller does), adopts existing objects only as collisionPolicy IfNoController allows (no
// controller ownerReference, no other BundleDeployment's owner label), server-side applies them
// with force as rukpak's apply engine does, and reports Installed and Healthy. rukpak's controller
// itself lives in rukpak/internal and cannot be started from this module.

// gizmoBundle is the registry+v1 bundle the migrate tests install with OLM v0.
var gizmoBundle = filepath.Join("..", "..", "..", "internal", "cli", "migrate", "testdata", "gizmo-operator")

const (
	rukpakFieldOwner  = "core.rukpak.io/applier"
	rukpakOwnerKind   = "core.rukpak.io/owner-kind"
	rukpakOwnerName   = "core.rukpak.io/owner-name"
	gizmoVersion      = "1.2.0"
	gizmoCatalogImage = "registry.test/gizmo-catalog:latest"
)

var v0CRDs sync.Once

// migratedBundles holds the bundle each package was installed from with OLM v0 (the test's rukpak
// renders it for the package's BundleDeployment); the gizmo bundle at gizmoVersion when absent.
var migratedBundles sync.Map

type migratedBundle struct{ dir, version string }

func migratedBundleOf(pkg string) migratedBundle {
	if b, ok := migratedBundles.Load(pkg); ok {
		return b.(migratedBundle)
	}
	return migratedBundle{dir: gizmoBundle, version: gizmoVersion}
}

// installV0CRDs installs OLM v0's CRDs once for the suite.
func installV0CRDs(t *testing.T) {
	t.Helper()
	var err error
	v0CRDs.Do(func() { err = v0fixture.InstallCRDs(context.Background(), k8s) })
	if err != nil {
		t.Fatalf("installing OLM v0's CRDs: %v", err)
	}
}

// v0Install installs the gizmo bundle as OLM v0 would, as package pkg in namespace ns, and a Gizmo
// custom resource; it serves the package in the catalog migrate will create.
func v0Install(t *testing.T, pkg, ns string, o v0fixture.Options) (*v0fixture.Installed, *unstructured.Unstructured) {
	t.Helper()
	installV0CRDs(t)
	ctx := context.Background()
	for _, n := range append([]string{ns}, o.Targets...) {
		if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	// The CRD is cluster-wide: a previous test's Operator adopted it; its uninstall released it.
	releaseGizmoCRD(t)
	if o.Dir == "" {
		o.Dir = gizmoBundle
	}
	o.Package, o.Namespace = pkg, ns
	if o.OperatorGroup == "" {
		o.OperatorGroup = "og"
	}
	o.Subscription, o.Channel = "gizmo", "stable"
	o.CatalogSource, o.CatalogNamespace = pkg+"-catalog", ns
	switch o.CatalogImage {
	case "":
		o.CatalogImage = gizmoCatalogImage
	case "-": // an address-only CatalogSource
		o.CatalogImage = ""
	}
	migratedBundles.Store(pkg, migratedBundle{dir: o.Dir, version: gizmoVersion})
	inst, err := v0fixture.Install(ctx, k8s, o)
	if err != nil {
		t.Fatalf("installing %s the OLM v0 way: %v", pkg, err)
	}
	fixtures.set(o.CatalogSource, packageFBC(pkg, bundleFBC{version: gizmoVersion}))
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Gizmo",
		"metadata": map[string]any{"name": "my-gizmo", "namespace": ns}, "spec": map[string]any{"size": int64(3)},
	}}
	eventually(t, "creating a Gizmo", func() error { return k8s.Create(ctx, cr) })
	t.Cleanup(func() { cleanupMigration(pkg, o.CatalogSource) })
	return inst, cr
}

// cleanupMigration removes what a migrate test created cluster-wide (envtest runs no garbage
// collector).
func cleanupMigration(pkg, catalog string) {
	ctx := context.Background()
	_ = k8s.Delete(ctx, &catalogdv1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: catalog}})
	op, err := getOperator(pkg)
	if err == nil {
		_ = k8s.Delete(ctx, op)
	}
	_ = k8s.Delete(ctx, &rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: pkg}})
	// Gone (the suite's stand-in removes rukpak's finalizer) before the CRD is released, as rukpak
	// releases it while uninstalling.
	_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: pkg}, &rukpakv1alpha1.BundleDeployment{})), nil
	})
	releaseGizmoCRD(nil)
}

// releaseGizmoCRD removes rukpak's owner labels from the Gizmo CRD, as rukpak does when it keeps a
// CRD on uninstall.
func releaseGizmoCRD(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "gizmos.example.com"}}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+rukpakOwnerKind+`":null,"`+rukpakOwnerName+`":null}}}`))
	if err := k8s.Patch(context.Background(), crd, patch); err != nil && !apierrors.IsNotFound(err) && t != nil {
		t.Fatal(err)
	}
}

// playCatalogdAndRukpak runs catalogd's and rukpak's part until the test ends.
func playCatalogdAndRukpak(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			serveMigratedCatalogs(ctx)
			installBundleDeployments(ctx)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func serveMigratedCatalogs(ctx context.Context) {
	cats := &catalogdv1alpha1.CatalogList{}
	if err := k8s.List(ctx, cats); err != nil {
		return
	}
	for i := range cats.Items {
		cat := &cats.Items[i]
		if cat.Annotations[migrate.AnnotationMigratedFrom] == "" || apimeta.IsStatusConditionTrue(cat.Status.Conditions, catalogdv1alpha1.TypeServing) {
			continue
		}
		cat.Status.ContentHash = "hash-" + cat.Name
		for _, c := range []metav1.Condition{
			{Type: catalogdv1alpha1.TypeServing, Status: metav1.ConditionTrue, Reason: catalogdv1alpha1.ReasonServing, Message: "serving"},
			{Type: catalogdv1alpha1.TypeUnpacked, Status: metav1.ConditionTrue, Reason: catalogdv1alpha1.ReasonUnpackSucceeded, Message: "unpacked"},
		} {
			c.ObservedGeneration = cat.Generation
			apimeta.SetStatusCondition(&cat.Status.Conditions, c)
		}
		_ = k8s.Status().Update(ctx, cat)
	}
}

func installBundleDeployments(ctx context.Context) {
	bds := &rukpakv1alpha1.BundleDeploymentList{}
	if err := k8s.List(ctx, bds); err != nil {
		return
	}
	for i := range bds.Items {
		bd := &bds.Items[i]
		// A deleted one is uninstalled, not applied (its deletion bumped its generation).
		if !bd.DeletionTimestamp.IsZero() || bd.Spec.Source.Image == nil || bd.Spec.Source.Image.Ref != image(bd.Name, migratedBundleOf(bd.Name).version) || bd.Status.ObservedGeneration == bd.Generation {
			continue
		}
		installed, reason, msg := metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded, "installed by the test's rukpak"
		if err := applyBundle(ctx, bd); err != nil {
			installed, reason, msg = metav1.ConditionFalse, rukpakv1alpha1.ReasonInstallFailed, err.Error()
		}
		bd.Status.ObservedGeneration = bd.Generation
		apimeta.SetStatusCondition(&bd.Status.Conditions, metav1.Condition{Type: rukpakv1alpha1.TypeInstalled, Status: installed, Reason: reason, Message: msg, ObservedGeneration: bd.Generation})
		apimeta.SetStatusCondition(&bd.Status.Conditions, metav1.Condition{Type: rukpakv1alpha1.TypeHealthy, Status: installed, Reason: rukpakv1alpha1.ReasonHealthy, Message: msg, ObservedGeneration: bd.Generation})
		_ = k8s.Status().Update(ctx, bd)
	}
}

// renderGizmo renders bd's bundle (see migratedBundles) with rukpak's renderer and its self-signed
// certificate provider.
func renderGizmo(ctx context.Context, bd *rukpakv1alpha1.BundleDeployment) ([]*unstructured.Unstructured, error) {
	res, err := bundlerender.Render(ctx, migratedBundleOf(bd.Name).dir, bundlerender.Options{
		Name: bd.Name, InstallNamespace: bd.Spec.InstallNamespace, Provisioner: rukpakv1alpha1.ProvisionerRegistry,
		Config: bd.Spec.Config, Cluster: &bundlerender.Cluster{Mapper: k8s.RESTMapper()}, CertProvider: bundlerender.SelfSigned,
	})
	if err != nil {
		return nil, err
	}
	return res.Objects, nil
}

// applyBundle applies the rendered bundle as rukpak's engine does with bd's collision policy
// (IfNoController for the migrate tests).
func applyBundle(ctx context.Context, bd *rukpakv1alpha1.BundleDeployment) error {
	objs, err := renderGizmo(ctx, bd)
	if err != nil {
		return err
	}
	for _, u := range objs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(u.GroupVersionKind())
		switch err := k8s.Get(ctx, client.ObjectKeyFromObject(u), live); {
		case err == nil:
			if owner := live.GetLabels()[rukpakOwnerName]; owner != "" && owner != bd.Name {
				return fmt.Errorf("%s %s is owned by BundleDeployment %s", u.GetKind(), u.GetName(), owner)
			}
			if c := metav1.GetControllerOfNoCopy(live); c != nil && bd.Spec.CollisionPolicy != rukpakv1alpha1.CollisionPolicyNone {
				return fmt.Errorf("%s %s has a controller %s %s", u.GetKind(), u.GetName(), c.Kind, c.Name)
			}
			if live.GetLabels()[rukpakOwnerName] != bd.Name && bd.Spec.CollisionPolicy != rukpakv1alpha1.CollisionPolicyIfNoController {
				return fmt.Errorf("%s %s exists (collisionPolicy %s)", u.GetKind(), u.GetName(), bd.Spec.CollisionPolicy)
			}
			u.SetUID(live.GetUID())
		case !apierrors.IsNotFound(err):
			return err
		}
		if err := k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(rukpakFieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}
