package controller

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
)

// bdStays checks for a second that the Operator's BundleDeployment keeps referencing ref.
func bdStays(t *testing.T, name, ref string) {
	t.Helper()
	consistently(t, "BundleDeployment "+name+" stays on "+ref, time.Second, func() error {
		bd, err := getBD(name)
		if err == nil && (bd.Spec.Source.Image == nil || bd.Spec.Source.Image.Ref != ref) {
			err = fmt.Errorf("BundleDeployment moved to %+v", bd.Spec.Source)
		}
		return err
	})
}

// TestSemverGuardRails: a catalog update offers a successor within the installed major (1.0.0 →
// 1.1.0, installed by itself) and one beyond it (2.0.0, which waits: UpgradeAvailable says so and
// why); raising spec.version takes it.
func TestSemverGuardRails(t *testing.T) {
	serveCatalog(t, "guard", "h1", packageFBC("omicron", bundleFBC{version: "1.0.0"}), nil)
	createOperator(t, "omicron-op", operatorsv1alpha1.OperatorSpec{PackageName: "omicron"})
	waitForBDImage(t, "omicron-op", image("omicron", "1.0.0"))
	playRukpak(t, "omicron-op", true, true)
	waitForCondition(t, "omicron-op", operatorsv1alpha1.TypeInstalled, metav1.ConditionTrue, operatorsv1alpha1.ReasonInstallationSucceeded)

	serveCatalog(t, "guard", "h2", packageFBC("omicron", bundleFBC{version: "1.0.0"}, bundleFBC{version: "1.1.0", replaces: "1.0.0"},
		bundleFBC{version: "2.0.0", replaces: "1.1.0"}), nil)
	waitForBDImage(t, "omicron-op", image("omicron", "1.1.0"))
	playRukpak(t, "omicron-op", true, true)
	waitForCondition(t, "omicron-op", operatorsv1alpha1.TypeUpgradeAvailable, metav1.ConditionTrue, operatorsv1alpha1.ReasonSemverGuardRail,
		"2.0.0 is available but waits: automatic upgrades stay within major 1", `spec.version`, `">=2.0.0 <3.0.0"`, "spec.upgradeScope: AnyVersion",
		`bundle omicron.v2.0.0 from catalog "guard"`)
	waitForCondition(t, "omicron-op", operatorsv1alpha1.TypeInstalled, metav1.ConditionTrue, operatorsv1alpha1.ReasonInstallationSucceeded, "omicron.v1.1.0")
	bdStays(t, "omicron-op", image("omicron", "1.1.0"))

	// Raising spec.version takes the next major.
	updateOperator(t, "omicron-op", func(op *operatorsv1alpha1.Operator) { op.Spec.Version = ">=2.0.0 <3.0.0" })
	waitForBDImage(t, "omicron-op", image("omicron", "2.0.0"))
	playRukpak(t, "omicron-op", true, true)
	waitForCondition(t, "omicron-op", operatorsv1alpha1.TypeUpgradeAvailable, metav1.ConditionFalse, operatorsv1alpha1.ReasonUpToDate)
	waitForCondition(t, "omicron-op", operatorsv1alpha1.TypeInstalled, metav1.ConditionTrue, operatorsv1alpha1.ReasonInstallationSucceeded, "omicron.v2.0.0")
}

// TestSemverGuardRailsOptOut: in 0.x the guard rails keep a 0.1 install within minor 0.1 (0.1.0 →
// 0.1.1 by itself, 0.2.0 waits); spec.upgradeScope AnyVersion follows the catalog's edge to 0.2.0.
func TestSemverGuardRailsOptOut(t *testing.T) {
	serveCatalog(t, "guard-zero", "h1", packageFBC("pi", bundleFBC{version: "0.1.0"}), nil)
	createOperator(t, "pi-op", operatorsv1alpha1.OperatorSpec{PackageName: "pi"})
	waitForBDImage(t, "pi-op", image("pi", "0.1.0"))
	playRukpak(t, "pi-op", true, true)

	serveCatalog(t, "guard-zero", "h2", packageFBC("pi", bundleFBC{version: "0.1.0"}, bundleFBC{version: "0.1.1", replaces: "0.1.0"},
		bundleFBC{version: "0.2.0", replaces: "0.1.1"}), nil)
	waitForBDImage(t, "pi-op", image("pi", "0.1.1"))
	playRukpak(t, "pi-op", true, true)
	waitForCondition(t, "pi-op", operatorsv1alpha1.TypeUpgradeAvailable, metav1.ConditionTrue, operatorsv1alpha1.ReasonSemverGuardRail,
		"0.2.0 is available but waits: automatic upgrades stay within minor 0.1", `">=0.2.0 <0.3.0"`)
	bdStays(t, "pi-op", image("pi", "0.1.1"))

	updateOperator(t, "pi-op", func(op *operatorsv1alpha1.Operator) { op.Spec.UpgradeScope = operatorsv1alpha1.UpgradeScopeAnyVersion })
	waitForBDImage(t, "pi-op", image("pi", "0.2.0"))
	playRukpak(t, "pi-op", true, true)
	waitForCondition(t, "pi-op", operatorsv1alpha1.TypeUpgradeAvailable, metav1.ConditionFalse, operatorsv1alpha1.ReasonUpToDate)
	waitForCondition(t, "pi-op", operatorsv1alpha1.TypeInstalled, metav1.ConditionTrue, operatorsv1alpha1.ReasonInstallationSucceeded, "pi.v0.2.0")
}
