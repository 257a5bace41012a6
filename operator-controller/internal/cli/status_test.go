package cli

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
)

// TestStatusShowsTheUpgradeTheGuardRailsHold: the UPGRADE column names the version an
// UpgradeAvailable condition of reason SemverGuardRail holds back, and the details show the
// Operator's upgradeScope.
func TestStatusShowsTheUpgradeTheGuardRailsHold(t *testing.T) {
	hub := installedOperator("hub", "hub-operator", "1.0.0", nil)
	hub.Status.Conditions = []metav1.Condition{{
		Type: operatorsv1alpha1.TypeUpgradeAvailable, Status: metav1.ConditionTrue, Reason: operatorsv1alpha1.ReasonSemverGuardRail, ObservedGeneration: 1,
		LastTransitionTime: metav1.Now(),
		Message:            `2.0.0 is available but waits: automatic upgrades stay within major 1 (set spec.version to a range that includes it, e.g. ">=2.0.0 <3.0.0", or spec.upgradeScope: AnyVersion to follow every upgrade the catalogs offer); bundle hub-operator.v2.0.0 from catalog "composite"`,
	}}
	pc := newPreviewCluster(t, hub)
	out, errOut, err := pc.run(t, "status")
	if err != nil || !containsText(out, "hub    hub-operator   1.0.0       <none>     <none>       <none>    2.0.0 (SemverGuardRail)") {
		t.Errorf("status: %v\n%s%s", err, out, errOut)
	}
	out, errOut, err = pc.run(t, "status", "hub")
	if err != nil || !containsText(out, "Upgrade scope:     SemverCompatible") || !containsText(out, "2.0.0 is available but waits") {
		t.Errorf("status hub: %v\n%s%s", err, out, errOut)
	}
}

// TestStatusShowsTheUpgradeAnOperatorConditionHolds: the UPGRADE column names the version an
// UpgradeAvailable condition of reason UpgradeBlocked (the operator's Upgradeable=False) holds.
func TestStatusShowsTheUpgradeAnOperatorConditionHolds(t *testing.T) {
	hub := installedOperator("hub", "hub-operator", "1.0.0", nil)
	hub.Status.Conditions = []metav1.Condition{{
		Type: operatorsv1alpha1.TypeUpgradeAvailable, Status: metav1.ConditionTrue, Reason: operatorsv1alpha1.ReasonUpgradeBlocked, ObservedGeneration: 1,
		LastTransitionTime: metav1.Now(),
		Message: `version 1.1.0 (bundle hub-operator.v1.1.0 from catalog "composite") is available but blocked: OperatorCondition hub/hub-operator.v1.0.0: ` +
			`the operator set Upgradeable=False in spec.conditions (reason Migrating): "busy"; it is installed as soon as the operator removes that condition or sets it True`,
	}}
	out, errOut, err := newPreviewCluster(t, hub).run(t, "status")
	if err != nil || !containsText(out, "1.1.0 (UpgradeBlocked)") {
		t.Errorf("status: %v\n%s%s", err, out, errOut)
	}
}
