package controller

import (
	"fmt"

	"github.com/Masterminds/semver/v3"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operators "github.com/olmv1/olmv1/deppy/pkg/operators"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// The pure part of OperatorCondition compatibility (operatorcondition.go does the reads and writes):
// whether an OperatorCondition holds an upgrade, what the Operator then says, and the
// OPERATOR_CONDITION_NAME variable in the BundleDeployment's deploymentConfig.

// OperatorConditionEnv is the environment variable, set in every container of a registry+v1
// bundle's Deployments, that names the operator's OperatorCondition (in its own namespace). OLM v0
// sets the same variable to the same value (the ClusterServiceVersion's name); operator-lib's
// conditions package reads it.
const OperatorConditionEnv = "OPERATOR_CONDITION_NAME"

// heldUpgrade is an upgrade that resolution chose and the installed operator's OperatorCondition
// holds back.
type heldUpgrade struct {
	// bundle is the resolved bundle that is not installed.
	bundle *operators.Bundle
	// namespace and name are the OperatorCondition's.
	namespace, name string
	// why says which Upgradeable=False condition holds it (upgradeBlocked).
	why string
	// override is set when an admin's override holds it (spec.overrides), not the operator.
	override bool
}

// upgradeBlocked reports whether oc holds upgrades of the operator it belongs to, and why (naming
// the field, the reason and the message of the condition that does). An Upgradeable override in
// spec.overrides (an admin's) decides when there is one, whatever the operator says; otherwise an
// Upgradeable=False in spec.conditions (the operator's) blocks. Anything else does not block (nil).
// The result has no bundle yet.
func upgradeBlocked(oc *operatorsv2.OperatorCondition) *heldUpgrade {
	h := &heldUpgrade{namespace: oc.Namespace, name: oc.Name}
	if o := apimeta.FindStatusCondition(oc.Spec.Overrides, operatorsv2.Upgradeable); o != nil {
		if o.Status != metav1.ConditionFalse {
			return nil
		}
		h.why, h.override = fmt.Sprintf("spec.overrides has Upgradeable=False (reason %s): %q", o.Reason, o.Message), true
		return h
	}
	if c := apimeta.FindStatusCondition(oc.Spec.Conditions, operatorsv2.Upgradeable); c != nil && c.Status == metav1.ConditionFalse {
		h.why = fmt.Sprintf("the operator set Upgradeable=False in spec.conditions (reason %s): %q", c.Reason, c.Message)
		return h
	}
	return nil
}

// isUpgrade reports whether moving from the installed version to the resolved one is an upgrade
// (an OperatorCondition may hold it). A downgrade or the same version is not; versions that are not
// semver count as an upgrade when they differ.
func isUpgrade(installed, resolved string) bool {
	from, err1 := semver.NewVersion(installed)
	to, err2 := semver.NewVersion(resolved)
	if err1 != nil || err2 != nil {
		return installed != resolved
	}
	return to.GreaterThan(from)
}

// message is the UpgradeAvailable message of a held upgrade: the version waiting, the operator's
// (or the admin's) own words, and how to let it proceed.
func (h *heldUpgrade) message() string {
	how := "it is installed as soon as the operator removes that condition or sets it True; " +
		"an admin can let it proceed now by adding an Upgradeable=True override to the OperatorCondition's spec.overrides"
	if h.override {
		how = "it is installed as soon as the Upgradeable override is removed from the OperatorCondition's spec.overrides (or set True)"
	}
	return fmt.Sprintf("version %s (bundle %s from catalog %q) is available but blocked: OperatorCondition %s/%s: %s; %s",
		h.bundle.Version, h.bundle.Name, h.bundle.Catalog, h.namespace, h.name, h.why, how)
}

// hasConditionEnv reports whether spec's deploymentConfig sets OPERATOR_CONDITION_NAME.
func hasConditionEnv(spec *rukpakv1alpha1.BundleDeploymentSpec) bool {
	return conditionEnv(spec) != nil
}

// conditionEnvValue is the value spec's deploymentConfig gives OPERATOR_CONDITION_NAME ("" when
// none, or from a source other than a value).
func conditionEnvValue(spec *rukpakv1alpha1.BundleDeploymentSpec) string {
	if e := conditionEnv(spec); e != nil && e.ValueFrom == nil {
		return e.Value
	}
	return ""
}

func conditionEnv(spec *rukpakv1alpha1.BundleDeploymentSpec) *corev1.EnvVar {
	if spec.Config == nil || spec.Config.DeploymentConfig == nil {
		return nil
	}
	for i, e := range spec.Config.DeploymentConfig.Env {
		if e.Name == OperatorConditionEnv {
			return &spec.Config.DeploymentConfig.Env[i]
		}
	}
	return nil
}

// withConditionEnv adds OPERATOR_CONDITION_NAME=name to spec's deploymentConfig (rukpak sets it in
// every container of the bundle's Deployments). A value the Operator's own spec.config sets is
// kept.
func withConditionEnv(spec *rukpakv1alpha1.BundleDeploymentSpec, name string) {
	if hasConditionEnv(spec) {
		return
	}
	if spec.Config == nil {
		spec.Config = &rukpakv1alpha1.BundleConfig{}
	}
	if spec.Config.DeploymentConfig == nil {
		spec.Config.DeploymentConfig = &rukpakv1alpha1.DeploymentConfig{}
	}
	spec.Config.DeploymentConfig.Env = append(spec.Config.DeploymentConfig.Env, corev1.EnvVar{Name: OperatorConditionEnv, Value: name})
}

// wantsConditionEnv reports whether the BundleDeployment that installs bundle (want's spec, for a
// registry+v1 bundle from a catalog) gets OPERATOR_CONDITION_NAME, given the one written before
// (have, nil for a first install): always for a first install or a new bundle, which roll the
// operator's pods anyway; for the same bundle only when have already has it. An operator installed
// before OperatorConditions existed is never restarted to receive the variable: it gets it with its
// next upgrade (docs/operator-controller.md, "OperatorConditions (Upgradeable)").
func wantsConditionEnv(have *rukpakv1alpha1.BundleDeployment, want *rukpakv1alpha1.BundleDeploymentSpec, bundle string) bool {
	if want.ProvisionerClassName != rukpakv1alpha1.ProvisionerRegistry || bundle == "" {
		return false
	}
	return have == nil || have.Annotations[AnnotationBundleName] != bundle || hasConditionEnv(&have.Spec)
}
