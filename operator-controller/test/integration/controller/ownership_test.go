package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/controller"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// waitForBDPolicies waits until the Operator's BundleDeployment states the policies.
func waitForBDPolicies(t *testing.T, name string, c rukpakv1alpha1.CollisionPolicy, d rukpakv1alpha1.DeletionPolicy) *rukpakv1alpha1.BundleDeployment {
	t.Helper()
	var bd *rukpakv1alpha1.BundleDeployment
	eventually(t, fmt.Sprintf("BundleDeployment %s has collisionPolicy %s, deletionPolicy %s", name, c, d), func() error {
		var err error
		if bd, err = getBD(name); err != nil {
			return err
		}
		if bd.Spec.CollisionPolicy != c || bd.Spec.DeletionPolicy != d {
			return fmt.Errorf("collisionPolicy %q, deletionPolicy %q", bd.Spec.CollisionPolicy, bd.Spec.DeletionPolicy)
		}
		return nil
	})
	return bd
}

// namespaceOwners lists the Operators that own namespace ns (ownerReferences) and its owner label.
func namespaceOwners(t *testing.T, ns string) (owners []string, label string) {
	t.Helper()
	got, err := getNamespace(ns)
	if err != nil {
		t.Fatalf("install namespace %s: %v", ns, err)
	}
	for _, ref := range got.OwnerReferences {
		if ref.Kind == "Operator" {
			owners = append(owners, ref.Name)
		}
	}
	return owners, got.Labels[controller.LabelOwnerKind] + "/" + got.Labels[controller.LabelOwnerName]
}

// TestDeletionPolicyOrphanKeepsTheNamespace: the Operator's policies reach its BundleDeployment; with
// deletionPolicy Orphan the install namespace OLM created loses every Operator ownerReference (the
// garbage collector would otherwise delete it, and everything orphaned in it, with the Operator)
// before the BundleDeployment says Orphan, and no Operator sharing it owns it again.
func TestDeletionPolicyOrphanKeepsTheNamespace(t *testing.T) {
	serveCatalog(t, "orphan", "h1", packageFBC("iota", bundleFBC{version: "1.0.0"})+packageFBC("kappa", bundleFBC{version: "1.0.0"}), nil)
	createOperator(t, "iota-op", operatorsv1alpha1.OperatorSpec{PackageName: "iota"})
	waitForBDImage(t, "iota-op", image("iota", "1.0.0"))
	waitForBDPolicies(t, "iota-op", rukpakv1alpha1.CollisionPolicyPrevent, rukpakv1alpha1.DeletionPolicyDelete)
	createOperator(t, "kappa-op", operatorsv1alpha1.OperatorSpec{PackageName: "kappa", InstallNamespace: "iota"})
	waitForBDImage(t, "kappa-op", image("kappa", "1.0.0"))
	if owners, label := namespaceOwners(t, "iota"); len(owners) != 2 || label != "Operator/iota-op" {
		t.Fatalf("namespace iota: owners %v, label %s; want iota-op and kappa-op, Operator/iota-op", owners, label)
	}
	// Installed: the reconciles that follow skip the namespace unless the deletionPolicy changes.
	playRukpak(t, "iota-op", true, true)
	waitForCondition(t, "iota-op", operatorsv1alpha1.TypeInstalled, metav1.ConditionTrue, operatorsv1alpha1.ReasonInstallationSucceeded)

	updateOperator(t, "iota-op", func(op *operatorsv1alpha1.Operator) {
		op.Spec.DeletionPolicy, op.Spec.CollisionPolicy = rukpakv1alpha1.DeletionPolicyOrphan, rukpakv1alpha1.CollisionPolicyIfNoController
	})
	waitForBDPolicies(t, "iota-op", rukpakv1alpha1.CollisionPolicyIfNoController, rukpakv1alpha1.DeletionPolicyOrphan)
	// The namespace was released before the BundleDeployment was updated: check it now, no waiting.
	if owners, label := namespaceOwners(t, "iota"); len(owners) != 0 || label != "/" {
		t.Fatalf("namespace iota once the BundleDeployment says Orphan: owners %v, label %s; want none", owners, label)
	}
	// Another reconcile of every Operator (a catalog update) must not give it an owner again.
	serveCatalog(t, "orphan", "h2", packageFBC("iota", bundleFBC{version: "1.0.0"})+packageFBC("kappa", bundleFBC{version: "1.0.0"}), nil)
	consistently(t, "namespace iota stays without owner", 2*time.Second, func() error {
		if owners, label := namespaceOwners(t, "iota"); len(owners) != 0 || label != "/" {
			return fmt.Errorf("owners %v, label %s", owners, label)
		}
		return nil
	})

	// An Operator that says Orphan from the start gets a namespace nobody owns.
	serveCatalog(t, "orphan-from-start", "h1", packageFBC("lambda", bundleFBC{version: "1.0.0"}), nil)
	createOperator(t, "lambda-op", operatorsv1alpha1.OperatorSpec{PackageName: "lambda", DeletionPolicy: rukpakv1alpha1.DeletionPolicyOrphan})
	waitForBDPolicies(t, "lambda-op", rukpakv1alpha1.CollisionPolicyPrevent, rukpakv1alpha1.DeletionPolicyOrphan)
	if owners, label := namespaceOwners(t, "lambda"); len(owners) != 0 || label != "/" {
		t.Errorf("namespace lambda created for an Orphan Operator: owners %v, label %s; want none", owners, label)
	}
}

// TestPoliciesReachTheBundleDeploymentWithoutResolution: orphaning an Operator that no longer
// resolves (its catalog lost the package, or its version range matches nothing) still reaches the
// BundleDeployment, which keeps installing the same bundle.
func TestPoliciesReachTheBundleDeploymentWithoutResolution(t *testing.T) {
	serveCatalog(t, "unresolvable", "h1", packageFBC("mu", bundleFBC{version: "1.0.0"}), nil)
	createOperator(t, "mu-op", operatorsv1alpha1.OperatorSpec{PackageName: "mu"})
	waitForBDImage(t, "mu-op", image("mu", "1.0.0"))
	playRukpak(t, "mu-op", true, true)
	updateOperator(t, "mu-op", func(op *operatorsv1alpha1.Operator) { op.Spec.Version = "9.0.0" })
	waitForCondition(t, "mu-op", operatorsv1alpha1.TypeResolved, metav1.ConditionFalse, operatorsv1alpha1.ReasonResolutionFailed, "stays installed")

	updateOperator(t, "mu-op", func(op *operatorsv1alpha1.Operator) { op.Spec.DeletionPolicy = rukpakv1alpha1.DeletionPolicyOrphan })
	bd := waitForBDPolicies(t, "mu-op", rukpakv1alpha1.CollisionPolicyPrevent, rukpakv1alpha1.DeletionPolicyOrphan)
	if bd.Spec.Source.Image.Ref != image("mu", "1.0.0") {
		t.Errorf("the BundleDeployment moved to %s", bd.Spec.Source.Image.Ref)
	}
	if owners, label := namespaceOwners(t, "mu"); len(owners) != 0 || label != "/" {
		t.Errorf("namespace mu: owners %v, label %s; want none", owners, label)
	}
}

// TestConfigReachesTheBundleDeploymentWithTheCatalogDeleted: with no catalog left, a change of
// spec.config.deploymentConfig (and of spec.paused) still reaches the installed BundleDeployment,
// which keeps its bundle, and Resolved says that resolution is unavailable and what was applied.
func TestConfigReachesTheBundleDeploymentWithTheCatalogDeleted(t *testing.T) {
	serveCatalog(t, "going-away", "h1", packageFBC("nu", bundleFBC{version: "1.0.0"}), nil)
	createOperator(t, "nu-op", operatorsv1alpha1.OperatorSpec{PackageName: "nu"})
	waitForBDImage(t, "nu-op", image("nu", "1.0.0"))
	playRukpak(t, "nu-op", true, true)
	waitForCondition(t, "nu-op", operatorsv1alpha1.TypeInstalled, metav1.ConditionTrue, operatorsv1alpha1.ReasonInstallationSucceeded)

	cat := &catalogdv1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "going-away"}}
	if err := k8s.Delete(context.Background(), cat); err != nil {
		t.Fatal(err)
	}
	waitForCondition(t, "nu-op", operatorsv1alpha1.TypeResolved, metav1.ConditionFalse, operatorsv1alpha1.ReasonResolutionFailed,
		"stays installed", "resolution is unavailable")

	env := corev1.EnvVar{Name: "LOG_LEVEL", Value: "debug"}
	updateOperator(t, "nu-op", func(op *operatorsv1alpha1.Operator) {
		op.Spec.Config = &rukpakv1alpha1.BundleConfig{DeploymentConfig: &rukpakv1alpha1.DeploymentConfig{Env: []corev1.EnvVar{env}}}
		op.Spec.Paused = true
	})
	eventually(t, "the deploymentConfig env and the pause reach the BundleDeployment", func() error {
		bd, err := getBD("nu-op")
		if err != nil {
			return err
		}
		if bd.Spec.Source.Image.Ref != image("nu", "1.0.0") {
			return fmt.Errorf("the BundleDeployment moved to %s", bd.Spec.Source.Image.Ref)
		}
		// OPERATOR_CONDITION_NAME, given with the install, is kept.
		ours := corev1.EnvVar{Name: controller.OperatorConditionEnv, Value: "nu.v1.0.0"}
		if c := bd.Spec.Config; c == nil || c.DeploymentConfig == nil || len(c.DeploymentConfig.Env) != 2 || c.DeploymentConfig.Env[0] != env || c.DeploymentConfig.Env[1] != ours {
			return fmt.Errorf("config %+v", bd.Spec.Config)
		}
		if !bd.Spec.Paused {
			return fmt.Errorf("not paused")
		}
		return nil
	})
	waitForCondition(t, "nu-op", operatorsv1alpha1.TypeResolved, metav1.ConditionFalse, operatorsv1alpha1.ReasonResolutionFailed,
		"stays installed", "still apply to the installed bundle", "BundleDeployment nu-op has the current ones")
}

// TestInstalledCarriesTheBundleDeploymentsFailure: the Operator's Installed condition has the
// BundleDeployment's reason and message, from Installed or from Unpacked.
func TestInstalledCarriesTheBundleDeploymentsFailure(t *testing.T) {
	serveCatalog(t, "failures", "h1", packageFBC("nu", bundleFBC{version: "1.0.0"}), nil)
	createOperator(t, "nu-op", operatorsv1alpha1.OperatorSpec{PackageName: "nu"})
	waitForBDImage(t, "nu-op", image("nu", "1.0.0"))

	conflict := `Deployment "nu/nu-operator" already exists and is not managed by OLM: delete it, or set collisionPolicy IfNoController to adopt it`
	setBDConditions(t, "nu-op",
		metav1.Condition{Type: rukpakv1alpha1.TypeUnpacked, Status: metav1.ConditionTrue, Reason: rukpakv1alpha1.ReasonUnpackSucceeded, Message: "unpacked"},
		metav1.Condition{Type: rukpakv1alpha1.TypeInstalled, Status: metav1.ConditionFalse, Reason: rukpakv1alpha1.ReasonObjectConflict, Message: conflict})
	waitForCondition(t, "nu-op", operatorsv1alpha1.TypeInstalled, metav1.ConditionFalse, rukpakv1alpha1.ReasonObjectConflict, `BundleDeployment "nu-op": `+conflict)

	setBDConditions(t, "nu-op",
		metav1.Condition{Type: rukpakv1alpha1.TypeUnpacked, Status: metav1.ConditionFalse, Reason: rukpakv1alpha1.ReasonUnpackFailed, Message: `image "registry.test/nu-bundle:1.0.0" not found`},
		metav1.Condition{Type: rukpakv1alpha1.TypeInstalled, Status: metav1.ConditionFalse, Reason: rukpakv1alpha1.ReasonInstallPending, Message: "nothing is installed until the bundle is unpacked and rendered"})
	waitForCondition(t, "nu-op", operatorsv1alpha1.TypeInstalled, metav1.ConditionFalse, rukpakv1alpha1.ReasonUnpackFailed, `image "registry.test/nu-bundle:1.0.0" not found`)
}

// TestDeletingRightAfterOrphanKeepsOrphan: deletionPolicy Orphan set and the Operator deleted at
// once, before operator-controller saw the change. The finalizer holds the Operator until Orphan
// has reached its BundleDeployment, so the garbage collector (not run by envtest; the BundleDeployment
// it would delete is checked instead) never deletes it under the old policy.
func TestDeletingRightAfterOrphanKeepsOrphan(t *testing.T) {
	serveCatalog(t, "orphan-race", "h1", packageFBC("lambda", bundleFBC{version: "1.0.0"}), nil)
	createOperator(t, "lambda-op", operatorsv1alpha1.OperatorSpec{PackageName: "lambda"})
	waitForBDPolicies(t, "lambda-op", rukpakv1alpha1.CollisionPolicyPrevent, rukpakv1alpha1.DeletionPolicyDelete)
	eventually(t, "the Operator carries the finalizer", func() error {
		op, err := getOperator("lambda-op")
		if err != nil {
			return err
		}
		for _, f := range op.Finalizers {
			if f == controller.Finalizer {
				return nil
			}
		}
		return fmt.Errorf("finalizers %v", op.Finalizers)
	})

	// rukpak's finalizer holds a deleted BundleDeployment until it has uninstalled or orphaned; this
	// one stands in for it (envtest runs no rukpak), so the policy it was deleted with can be read.
	bd, err := getBD("lambda-op")
	if err != nil {
		t.Fatal(err)
	}
	bd.Finalizers = append(bd.Finalizers, "test.olmv1.io/hold")
	if err := k8s.Update(t.Context(), bd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if bd, err := getBD("lambda-op"); err == nil {
			bd.Finalizers = nil
			_ = k8s.Update(context.Background(), bd)
		}
	})

	updateOperator(t, "lambda-op", func(op *operatorsv1alpha1.Operator) { op.Spec.DeletionPolicy = rukpakv1alpha1.DeletionPolicyOrphan })
	op, err := getOperator("lambda-op")
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(t.Context(), op); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Operator to be gone", func() error {
		if _, err := getOperator("lambda-op"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
	if bd, err = getBD("lambda-op"); err != nil {
		t.Fatal(err)
	}
	if bd.Spec.DeletionPolicy != rukpakv1alpha1.DeletionPolicyOrphan {
		t.Fatalf("the Operator went away while its BundleDeployment still said deletionPolicy %q", bd.Spec.DeletionPolicy)
	}
	// operator-controller deletes the BundleDeployment itself (not only through the garbage collector).
	if bd.DeletionTimestamp.IsZero() {
		t.Fatal("the BundleDeployment of the deleted Operator was not deleted")
	}
}
