package controller

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/controller"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// Each test uses its own packages and catalogs: every Operator of the API server is resolved together.

func TestOperatorInstallsResolvedBundle(t *testing.T) {
	serveCatalog(t, "install", "h1", packageFBC("alpha", bundleFBC{version: "0.1.0"}, bundleFBC{version: "0.2.0", replaces: "0.1.0"}), nil)
	createOperator(t, "alpha-op", operatorsv1alpha1.OperatorSpec{PackageName: "alpha"})

	bd := waitForBDImage(t, "alpha-op", image("alpha", "0.2.0"))
	if bd.Spec.ProvisionerClassName != rukpakv1alpha1.ProvisionerRegistry || bd.Spec.InstallNamespace != "alpha" {
		t.Errorf("BundleDeployment spec: %+v", bd.Spec)
	}
	if owner := metav1.GetControllerOf(bd); owner == nil || owner.Kind != "Operator" || owner.Name != "alpha-op" {
		t.Errorf("BundleDeployment owner: %+v", bd.OwnerReferences)
	}
	ns, err := getNamespace("alpha")
	if err != nil {
		t.Fatalf("install namespace: %v", err)
	}
	if ns.Labels[controller.LabelOwnerName] != "alpha-op" || metav1.GetControllerOf(ns) == nil {
		t.Errorf("install namespace was not created for the Operator: labels %v, owners %v", ns.Labels, ns.OwnerReferences)
	}

	op := waitForCondition(t, "alpha-op", operatorsv1alpha1.TypeResolved, metav1.ConditionTrue, operatorsv1alpha1.ReasonResolutionSucceeded, "alpha.v0.2.0")
	if rb := op.Status.ResolvedBundle; rb == nil || rb.Name != "alpha.v0.2.0" || rb.Version != "0.2.0" || rb.Catalog != "install" || rb.Source != image("alpha", "0.2.0") {
		t.Errorf("resolvedBundle %+v", op.Status.ResolvedBundle)
	}
	if op.Status.InstallNamespace != "alpha" || op.Status.InstalledBundle != nil {
		t.Errorf("status before rukpak reports: %+v", op.Status)
	}
	waitForCondition(t, "alpha-op", operatorsv1alpha1.TypeInstalled, metav1.ConditionUnknown, operatorsv1alpha1.ReasonInstallationStatusUnknown)
	waitForCondition(t, "alpha-op", operatorsv1alpha1.TypeDeprecated, metav1.ConditionFalse, operatorsv1alpha1.ReasonNotDeprecated)
	waitForCondition(t, "alpha-op", operatorsv1alpha1.TypeUpgradeAvailable, metav1.ConditionFalse, operatorsv1alpha1.ReasonUpToDate)

	playRukpak(t, "alpha-op", true, false)
	waitForCondition(t, "alpha-op", operatorsv1alpha1.TypeHealthy, metav1.ConditionFalse, operatorsv1alpha1.ReasonUnhealthy)
	playRukpak(t, "alpha-op", true, true)
	waitForCondition(t, "alpha-op", operatorsv1alpha1.TypeHealthy, metav1.ConditionTrue, operatorsv1alpha1.ReasonHealthy)
	op = waitForCondition(t, "alpha-op", operatorsv1alpha1.TypeInstalled, metav1.ConditionTrue, operatorsv1alpha1.ReasonInstallationSucceeded, "alpha.v0.2.0")
	if ib := op.Status.InstalledBundle; ib == nil || ib.Name != "alpha.v0.2.0" || ib.Source != image("alpha", "0.2.0") || ib.Catalog != "install" {
		t.Errorf("installedBundle %+v", op.Status.InstalledBundle)
	}
}

// TestCatalogUpdateMovesBundleDeployment: a catalog update offering a successor within the installed
// version's semver-compatible range (0.1.0 → 0.1.1) moves the BundleDeployment by itself.
func TestCatalogUpdateMovesBundleDeployment(t *testing.T) {
	serveCatalog(t, "update", "v1", packageFBC("beta", bundleFBC{version: "0.1.0"}), nil)
	createOperator(t, "beta-op", operatorsv1alpha1.OperatorSpec{PackageName: "beta"})
	waitForBDImage(t, "beta-op", image("beta", "0.1.0"))
	playRukpak(t, "beta-op", true, true)
	waitForCondition(t, "beta-op", operatorsv1alpha1.TypeInstalled, metav1.ConditionTrue, operatorsv1alpha1.ReasonInstallationSucceeded)

	reads := cache.Reads()
	serveCatalog(t, "update", "v2", packageFBC("beta", bundleFBC{version: "0.1.0"}, bundleFBC{version: "0.1.1", replaces: "0.1.0"}), nil)
	start := time.Now()
	bd := waitForBDImage(t, "beta-op", image("beta", "0.1.1"))
	t.Logf("BundleDeployment moved to 0.1.1 %v after the content hash changed", time.Since(start))
	if bd.Annotations[controller.AnnotationBundleVersion] != "0.1.1" {
		t.Errorf("annotations %v", bd.Annotations)
	}
	if cache.Reads() <= reads {
		t.Errorf("the changed catalog was not read again")
	}
	// Until rukpak reports on the new generation, the installed bundle is still 0.1.0.
	op := waitForCondition(t, "beta-op", operatorsv1alpha1.TypeInstalled, metav1.ConditionUnknown, operatorsv1alpha1.ReasonInstallationStatusUnknown)
	if op.Status.InstalledBundle == nil || op.Status.InstalledBundle.Version != "0.1.0" {
		t.Errorf("installedBundle during the upgrade: %+v", op.Status.InstalledBundle)
	}
	playRukpak(t, "beta-op", true, true)
	op = waitForCondition(t, "beta-op", operatorsv1alpha1.TypeInstalled, metav1.ConditionTrue, operatorsv1alpha1.ReasonInstallationSucceeded, "beta.v0.1.1")
	if op.Status.InstalledBundle.Version != "0.1.1" {
		t.Errorf("installedBundle %+v", op.Status.InstalledBundle)
	}
}

// TestCatalogUpdateUpgradesAlongAChain: after a catalog update the outcomes of one resolution are
// reused while Operators move to the bundles it chose, unless the new bundle opens a next upgrade:
// chain-op, at 0.1.0 when 0.1.1 (replaces 0.1.0) and 0.1.2 (replaces 0.1.1) appear, moves to
// 0.1.1 and then on to 0.1.2; single-op, whose 0.1.1 has no successor, moves to it and stays.
func TestCatalogUpdateUpgradesAlongAChain(t *testing.T) {
	serveCatalog(t, "chain", "v1", packageFBC("chain", bundleFBC{version: "0.1.0"})+packageFBC("single", bundleFBC{version: "0.1.0"}), nil)
	for _, name := range []string{"chain-op", "single-op"} {
		createOperator(t, name, operatorsv1alpha1.OperatorSpec{PackageName: strings.TrimSuffix(name, "-op")})
		waitForBDImage(t, name, image(strings.TrimSuffix(name, "-op"), "0.1.0"))
		playRukpak(t, name, true, true)
	}
	serveCatalog(t, "chain", "v2",
		packageFBC("chain", bundleFBC{version: "0.1.0"}, bundleFBC{version: "0.1.1", replaces: "0.1.0"}, bundleFBC{version: "0.1.2", replaces: "0.1.1"})+
			packageFBC("single", bundleFBC{version: "0.1.0"}, bundleFBC{version: "0.1.1", replaces: "0.1.0"}), nil)
	waitForBDImage(t, "single-op", image("single", "0.1.1"))
	waitForBDImage(t, "chain-op", image("chain", "0.1.2"))
	consistently(t, "single-op stays at 0.1.1", time.Second, func() error {
		bd, err := getBD("single-op")
		if err == nil && bd.Spec.Source.Image.Ref != image("single", "0.1.1") {
			err = fmt.Errorf("BundleDeployment moved to %s", bd.Spec.Source.Image.Ref)
		}
		return err
	})
}

func TestResolutionFailureKeepsInstalledBundle(t *testing.T) {
	serveCatalog(t, "failure", "h1", packageFBC("gamma", bundleFBC{version: "1.0.0"}), nil)
	createOperator(t, "gamma-op", operatorsv1alpha1.OperatorSpec{PackageName: "gamma"})
	waitForBDImage(t, "gamma-op", image("gamma", "1.0.0"))
	playRukpak(t, "gamma-op", true, true)
	waitForCondition(t, "gamma-op", operatorsv1alpha1.TypeInstalled, metav1.ConditionTrue, operatorsv1alpha1.ReasonInstallationSucceeded)

	updateOperator(t, "gamma-op", func(op *operatorsv1alpha1.Operator) { op.Spec.Version = "2.0.0" })
	op := waitForCondition(t, "gamma-op", operatorsv1alpha1.TypeResolved, metav1.ConditionFalse, operatorsv1alpha1.ReasonResolutionFailed,
		`package "gamma"`, `"2.0.0"`, "1.0.0", "stays installed")
	if op.Status.InstalledBundle == nil || op.Status.InstalledBundle.Version != "1.0.0" || op.Status.ResolvedBundle.Version != "1.0.0" {
		t.Errorf("status after a failed resolution: installed %+v resolved %+v", op.Status.InstalledBundle, op.Status.ResolvedBundle)
	}
	consistently(t, "the BundleDeployment keeps bundle 1.0.0", 2*time.Second, func() error {
		bd, err := getBD("gamma-op")
		if err != nil {
			return err
		}
		if bd.Spec.Source.Image.Ref != image("gamma", "1.0.0") {
			return fmt.Errorf("BundleDeployment changed to %s", bd.Spec.Source.Image.Ref)
		}
		return nil
	})
	waitForCondition(t, "gamma-op", operatorsv1alpha1.TypeInstalled, metav1.ConditionTrue, operatorsv1alpha1.ReasonInstallationSucceeded)
}

func TestUpgradeEdgesAndPolicies(t *testing.T) {
	// 0.1.0 → 0.2.0 by replaces in channel stable; 1.0.0, in channel fast, has no edge from either.
	fbc := packageFBC("delta", bundleFBC{version: "0.1.0"}, bundleFBC{version: "0.2.0", replaces: "0.1.0"}) +
		`{"schema":"olm.channel","package":"delta","name":"fast","entries":[{"name":"delta.v1.0.0"}]}` + "\n" +
		`{"schema":"olm.bundle","package":"delta","name":"delta.v1.0.0","image":"` + image("delta", "1.0.0") +
		`","properties":[{"type":"olm.package","value":{"packageName":"delta","version":"1.0.0"}}]}` + "\n"
	serveCatalog(t, "edges", "h1", packageFBC("delta", bundleFBC{version: "0.1.0"}), nil)
	// upgradeScope AnyVersion: the test is about upgrade edges and approval, and 0.1.0 → 0.2.0
	// crosses a 0.x minor, which the semver guard rails would hold back (TestSemverGuardRails).
	createOperator(t, "delta-op", operatorsv1alpha1.OperatorSpec{PackageName: "delta", UpgradePolicy: operatorsv1alpha1.UpgradePolicyManual,
		UpgradeScope: operatorsv1alpha1.UpgradeScopeAnyVersion})
	waitForBDImage(t, "delta-op", image("delta", "0.1.0"))
	playRukpak(t, "delta-op", true, true)
	waitForCondition(t, "delta-op", operatorsv1alpha1.TypeInstalled, metav1.ConditionTrue, operatorsv1alpha1.ReasonInstallationSucceeded)

	// Manual: the upgrade along the edge is offered, not installed.
	serveCatalog(t, "edges", "h2", fbc, nil)
	waitForCondition(t, "delta-op", operatorsv1alpha1.TypeUpgradeAvailable, metav1.ConditionTrue, operatorsv1alpha1.ReasonUpgradeAwaitingApproval,
		"version 0.2.0", `kubectl patch operator delta-op --type=merge -p '{"spec":{"approvedVersion":"0.2.0"}}'`)
	consistently(t, "Manual keeps bundle 0.1.0", time.Second, func() error {
		bd, err := getBD("delta-op")
		if err == nil && bd.Spec.Source.Image.Ref != image("delta", "0.1.0") {
			err = fmt.Errorf("BundleDeployment moved to %s without approval", bd.Spec.Source.Image.Ref)
		}
		return err
	})

	// Approval moves it along the edge (Enforce: to 0.2.0, not 1.0.0).
	updateOperator(t, "delta-op", func(op *operatorsv1alpha1.Operator) { op.Spec.ApprovedVersion = "0.2.0" })
	waitForBDImage(t, "delta-op", image("delta", "0.2.0"))
	playRukpak(t, "delta-op", true, true)
	waitForCondition(t, "delta-op", operatorsv1alpha1.TypeUpgradeAvailable, metav1.ConditionFalse, operatorsv1alpha1.ReasonUpToDate)

	// Enforce refuses 1.0.0: no edge leads there from 0.2.0.
	updateOperator(t, "delta-op", func(op *operatorsv1alpha1.Operator) {
		op.Spec.UpgradePolicy, op.Spec.ApprovedVersion, op.Spec.Version = operatorsv1alpha1.UpgradePolicyAutomatic, "", "1.0.0"
	})
	waitForCondition(t, "delta-op", operatorsv1alpha1.TypeResolved, metav1.ConditionFalse, operatorsv1alpha1.ReasonResolutionFailed, "no upgrade edge")
	// Ignore allows the jump.
	updateOperator(t, "delta-op", func(op *operatorsv1alpha1.Operator) {
		op.Spec.UpgradeConstraintPolicy = operatorsv1alpha1.UpgradeConstraintPolicyIgnore
	})
	waitForBDImage(t, "delta-op", image("delta", "1.0.0"))
	waitForCondition(t, "delta-op", operatorsv1alpha1.TypeResolved, metav1.ConditionTrue, operatorsv1alpha1.ReasonResolutionSucceeded, "delta.v1.0.0")
}

func TestDependencyWaitsForItsOperator(t *testing.T) {
	fbc := packageFBC("needs", bundleFBC{version: "1.0.0", extra: `{"type":"olm.gvk.required","value":{"group":"provider.example.com","version":"v1","kind":"Thing"}}`}) +
		packageFBC("provider", bundleFBC{version: "1.0.0", extra: `{"type":"olm.gvk","value":{"group":"provider.example.com","version":"v1","kind":"Thing"}}`})
	serveCatalog(t, "deps", "h1", fbc, nil)
	createOperator(t, "needs-op", operatorsv1alpha1.OperatorSpec{PackageName: "needs"})
	waitForCondition(t, "needs-op", operatorsv1alpha1.TypeResolved, metav1.ConditionFalse, operatorsv1alpha1.ReasonResolutionFailed,
		"provider.example.com/v1 Thing", `packageName "provider"`)
	waitForCondition(t, "needs-op", operatorsv1alpha1.TypeInstalled, metav1.ConditionFalse, operatorsv1alpha1.ReasonInstallationPending)
	if _, err := getBD("needs-op"); err == nil {
		t.Fatal("a BundleDeployment was created for a bundle whose dependency is missing")
	}

	createOperator(t, "provider-op", operatorsv1alpha1.OperatorSpec{PackageName: "provider"})
	waitForBDImage(t, "provider-op", image("provider", "1.0.0"))
	waitForBDImage(t, "needs-op", image("needs", "1.0.0"))
	waitForCondition(t, "needs-op", operatorsv1alpha1.TypeResolved, metav1.ConditionTrue, operatorsv1alpha1.ReasonResolutionSucceeded)
}

func TestPlainBundleConfigAndDeprecation(t *testing.T) {
	extra := `{"type":"olm.bundle.mediatype","value":"plain+v0"},` +
		`{"type":"olm.csv.metadata","value":{"annotations":{"operatorframework.io/suggested-namespace":"epsilon-system"}}}`
	fbc := packageFBC("epsilon", bundleFBC{version: "1.0.0", extra: extra}) +
		`{"schema":"olm.deprecations","package":"epsilon","entries":[{"reference":{"schema":"olm.bundle","name":"epsilon.v1.0.0"},"message":"use 2.x"}]}` + "\n"
	fbc += packageFBC("theta", bundleFBC{version: "1.0.0"})
	serveCatalog(t, "plain", "h1", fbc, map[string]string{"tier": "plain"})
	createOperator(t, "epsilon-op", operatorsv1alpha1.OperatorSpec{
		PackageName:     "epsilon",
		CatalogSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "plain"}},
	})
	bd := waitForBDImage(t, "epsilon-op", image("epsilon", "1.0.0"))
	if bd.Spec.ProvisionerClassName != rukpakv1alpha1.ProvisionerPlain || bd.Spec.InstallNamespace != "epsilon-system" {
		t.Errorf("BundleDeployment spec: provisioner %s, namespace %s", bd.Spec.ProvisionerClassName, bd.Spec.InstallNamespace)
	}
	waitForCondition(t, "epsilon-op", operatorsv1alpha1.TypeDeprecated, metav1.ConditionTrue, operatorsv1alpha1.ReasonBundleDeprecated, "use 2.x")

	// watchNamespaces, config and installNamespace are passed to the BundleDeployment.
	createOperator(t, "theta-op", operatorsv1alpha1.OperatorSpec{
		PackageName:      "theta",
		InstallNamespace: "theta-ns",
		WatchNamespaces:  []string{"team-a"},
		Config:           &rukpakv1alpha1.BundleConfig{DeploymentConfig: &rukpakv1alpha1.DeploymentConfig{NodeSelector: map[string]string{"disk": "ssd"}}},
	})
	bd = waitForBDImage(t, "theta-op", image("theta", "1.0.0"))
	if c := bd.Spec.Config; bd.Spec.InstallNamespace != "theta-ns" || c == nil || !slices.Equal(c.WatchNamespaces, []string{"team-a"}) ||
		c.DeploymentConfig == nil || c.DeploymentConfig.NodeSelector["disk"] != "ssd" {
		t.Errorf("BundleDeployment namespace %q, config %+v", bd.Spec.InstallNamespace, bd.Spec.Config)
	}

	// A selector that matches no catalog says so.
	createOperator(t, "zeta-op", operatorsv1alpha1.OperatorSpec{
		PackageName: "zeta", CatalogSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "none"}},
	})
	waitForCondition(t, "zeta-op", operatorsv1alpha1.TypeResolved, metav1.ConditionFalse, operatorsv1alpha1.ReasonResolutionFailed, "catalogSelector matches no serving Catalog")
}

func TestOnePackageOneOperator(t *testing.T) {
	serveCatalog(t, "dup", "h1", packageFBC("eta", bundleFBC{version: "1.0.0"}), nil)
	createOperator(t, "eta-first", operatorsv1alpha1.OperatorSpec{PackageName: "eta"})
	waitForBDImage(t, "eta-first", image("eta", "1.0.0"))
	createOperator(t, "eta-second", operatorsv1alpha1.OperatorSpec{PackageName: "eta"})
	waitForCondition(t, "eta-second", operatorsv1alpha1.TypeResolved, metav1.ConditionFalse, operatorsv1alpha1.ReasonResolutionFailed, `already requested by Operator "eta-first"`)
	waitForCondition(t, "eta-first", operatorsv1alpha1.TypeResolved, metav1.ConditionTrue, operatorsv1alpha1.ReasonResolutionSucceeded)
}

// TestSeedCatalogUpdateWithExampleOperator is demo 1 of issue 8 with the e2e fixtures
// (e2e/testdata/example-operator): index 0.1.0 installs bundle 0.1.0; the catalog moving to index
// 0.2.0 moves the same BundleDeployment to bundle 0.2.0. The Operator sets upgradeScope AnyVersion:
// 0.1.0 → 0.2.0 crosses a 0.x minor, which the semver guard rails hold back by default.
func TestSeedCatalogUpdateWithExampleOperator(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "..", "e2e", "testdata", "example-operator", "catalogs")
	read := func(index string) string {
		data, err := os.ReadFile(filepath.Join(dir, index, "catalog.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	serveCatalog(t, "example-catalog", "sha256:index-0.1.0", read("index-0.1.0"), nil)
	createOperator(t, "example-operator", operatorsv1alpha1.OperatorSpec{PackageName: "example-operator", UpgradeScope: operatorsv1alpha1.UpgradeScopeAnyVersion})
	bd := waitForBDImage(t, "example-operator", "registry.invalid/bundles/example-operator:0.1.0")
	if bd.Spec.ProvisionerClassName != rukpakv1alpha1.ProvisionerRegistry || bd.Spec.InstallNamespace != "example-operator-system" {
		t.Errorf("BundleDeployment spec: provisioner %s, namespace %s", bd.Spec.ProvisionerClassName, bd.Spec.InstallNamespace)
	}
	playRukpak(t, "example-operator", true, true)
	waitForCondition(t, "example-operator", operatorsv1alpha1.TypeInstalled, metav1.ConditionTrue, operatorsv1alpha1.ReasonInstallationSucceeded, "example-operator.v0.1.0")

	serveCatalog(t, "example-catalog", "sha256:index-0.2.0", read("index-0.2.0"), nil)
	moved := waitForBDImage(t, "example-operator", "registry.invalid/bundles/example-operator:0.2.0")
	if moved.UID != bd.UID {
		t.Errorf("a new BundleDeployment was created instead of updating the existing one")
	}
	playRukpak(t, "example-operator", true, true)
	op := waitForCondition(t, "example-operator", operatorsv1alpha1.TypeInstalled, metav1.ConditionTrue, operatorsv1alpha1.ReasonInstallationSucceeded, "example-operator.v0.2.0")
	if op.Status.InstalledBundle.Version != "0.2.0" || op.Status.ResolvedBundle.Version != "0.2.0" {
		t.Errorf("status %+v", op.Status)
	}
}
