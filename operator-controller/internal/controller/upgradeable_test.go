package controller

import (
	"strings"
	"testing"

	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	operators "github.com/olmv1/olmv1/deppy/pkg/operators"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

func upgradeable(s metav1.ConditionStatus, reason, msg string) []metav1.Condition {
	return []metav1.Condition{{Type: operatorsv2.Upgradeable, Status: s, Reason: reason, Message: msg}}
}

func TestUpgradeBlocked(t *testing.T) {
	other := []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "R", Message: "m"}}
	for _, tc := range []struct {
		name                 string
		conditions, override []metav1.Condition
		blocked, byOverride  bool
		quotes               string
	}{
		{name: "no conditions"},
		{name: "other conditions only", conditions: other, override: other},
		{name: "operator says True", conditions: upgradeable(metav1.ConditionTrue, "Ok", "fine")},
		{name: "operator says Unknown", conditions: upgradeable(metav1.ConditionUnknown, "Hm", "unsure")},
		{name: "operator says False", conditions: upgradeable(metav1.ConditionFalse, "Migrating", "data migration in progress"),
			blocked: true, quotes: `the operator set Upgradeable=False in spec.conditions (reason Migrating): "data migration in progress"`},
		{name: "override True wins over the operator's False", conditions: upgradeable(metav1.ConditionFalse, "Migrating", "x"),
			override: upgradeable(metav1.ConditionTrue, "Admin", "go")},
		{name: "override False blocks", override: upgradeable(metav1.ConditionFalse, "Window", "weekend"),
			blocked: true, byOverride: true, quotes: `spec.overrides has Upgradeable=False (reason Window): "weekend"`},
		{name: "override False wins over the operator's True", conditions: upgradeable(metav1.ConditionTrue, "Ok", "fine"),
			override: upgradeable(metav1.ConditionFalse, "Window", "weekend"), blocked: true, byOverride: true, quotes: `"weekend"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oc := &operatorsv2.OperatorCondition{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pkg.v1.0.0"},
				Spec: operatorsv2.OperatorConditionSpec{Conditions: tc.conditions, Overrides: tc.override}}
			h := upgradeBlocked(oc)
			if (h != nil) != tc.blocked {
				t.Fatalf("blocked = %v, want %v (%+v)", h != nil, tc.blocked, h)
			}
			if h == nil {
				return
			}
			if h.override != tc.byOverride || !strings.Contains(h.why, tc.quotes) || h.namespace != "ns" || h.name != "pkg.v1.0.0" {
				t.Errorf("got %+v, want override=%v and a reason quoting %q", h, tc.byOverride, tc.quotes)
			}
		})
	}
}

func TestIsUpgrade(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		want     bool
	}{
		{"1.0.0", "1.1.0", true},
		{"1.0.0", "2.0.0-rc.1", true},
		{"1.1.0", "1.0.0", false}, // a downgrade is never held
		{"1.0.0", "1.0.0", false},
		{"1.0.0", "1.0.0+build.2", false},
		{"not-semver", "1.0.0", true}, // different and not comparable: treated as an upgrade
		{"", "", false},
	} {
		if got := isUpgrade(tc.from, tc.to); got != tc.want {
			t.Errorf("isUpgrade(%q, %q) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

func TestHeldUpgradeMessageSaysHowToProceed(t *testing.T) {
	b := &operators.Bundle{Name: "pkg.v1.1.0", Version: "1.1.0", Catalog: "main"}
	h := &heldUpgrade{bundle: b, namespace: "ns", name: "pkg.v1.0.0", why: `the operator set Upgradeable=False in spec.conditions (reason R): "busy"`}
	msg := h.message()
	for _, want := range []string{`version 1.1.0 (bundle pkg.v1.1.0 from catalog "main") is available but blocked`, "OperatorCondition ns/pkg.v1.0.0", `"busy"`,
		"the operator removes that condition", "Upgradeable=True override"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not contain %q", msg, want)
		}
	}
	h.override = true
	if msg := h.message(); !strings.Contains(msg, "override is removed") {
		t.Errorf("an override's message %q does not say to remove it", msg)
	}
}

func TestConditionEnv(t *testing.T) {
	registry := func(bundle string, env ...corev1.EnvVar) *rukpakv1alpha1.BundleDeployment {
		bd := &rukpakv1alpha1.BundleDeployment{Spec: rukpakv1alpha1.BundleDeploymentSpec{ProvisionerClassName: rukpakv1alpha1.ProvisionerRegistry}}
		bd.Annotations = map[string]string{AnnotationBundleName: bundle}
		if env != nil {
			bd.Spec.Config = &rukpakv1alpha1.BundleConfig{DeploymentConfig: &rukpakv1alpha1.DeploymentConfig{Env: env}}
		}
		return bd
	}
	ours := corev1.EnvVar{Name: OperatorConditionEnv, Value: "pkg.v1.0.0"}
	for _, tc := range []struct {
		name   string
		have   *rukpakv1alpha1.BundleDeployment
		want   *rukpakv1alpha1.BundleDeployment
		bundle string
		gets   bool
	}{
		{name: "first install", want: registry("pkg.v1.0.0"), bundle: "pkg.v1.0.0", gets: true},
		{name: "upgrade", have: registry("pkg.v1.0.0"), want: registry("pkg.v1.1.0"), bundle: "pkg.v1.1.0", gets: true},
		{name: "installed before OperatorConditions: no restart", have: registry("pkg.v1.0.0"), want: registry("pkg.v1.0.0"), bundle: "pkg.v1.0.0"},
		{name: "installed with it: kept", have: registry("pkg.v1.0.0", ours), want: registry("pkg.v1.0.0"), bundle: "pkg.v1.0.0", gets: true},
		{name: "not registry+v1", want: &rukpakv1alpha1.BundleDeployment{Spec: rukpakv1alpha1.BundleDeploymentSpec{ProvisionerClassName: rukpakv1alpha1.ProvisionerHelm}}, bundle: "chart.v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := wantsConditionEnv(tc.have, &tc.want.Spec, tc.bundle); got != tc.gets {
				t.Errorf("wantsConditionEnv = %v, want %v", got, tc.gets)
			}
		})
	}

	// The Operator's own value is kept; otherwise it is added after the Operator's variables.
	spec := registry("pkg.v1.0.0", corev1.EnvVar{Name: "A", Value: "a"}).Spec
	withConditionEnv(&spec, "pkg.v1.0.0")
	if env := spec.Config.DeploymentConfig.Env; len(env) != 2 || env[1] != ours {
		t.Errorf("env = %v, want A and %v", env, ours)
	}
	own := registry("pkg.v1.0.0", corev1.EnvVar{Name: OperatorConditionEnv, Value: "mine"}).Spec
	withConditionEnv(&own, "pkg.v1.0.0")
	if env := own.Config.DeploymentConfig.Env; len(env) != 1 || env[0].Value != "mine" {
		t.Errorf("env = %v, want the Operator's own value kept", env)
	}
	empty := rukpakv1alpha1.BundleDeploymentSpec{}
	withConditionEnv(&empty, "pkg.v1.0.0")
	if !hasConditionEnv(&empty) {
		t.Errorf("withConditionEnv on an empty config added nothing: %+v", empty.Config)
	}
}

func TestConditionNameFollowsTheVariable(t *testing.T) {
	bd := &rukpakv1alpha1.BundleDeployment{Spec: rukpakv1alpha1.BundleDeploymentSpec{ProvisionerClassName: rukpakv1alpha1.ProvisionerRegistry}}
	bd.Annotations = map[string]string{AnnotationBundleName: "pkg.v1.0.0"}
	if got := conditionName(bd); got != "pkg.v1.0.0" {
		t.Errorf("without the variable: %q, want the bundle's name", got)
	}
	// As `kubectl olmv1 migrate` writes it: OLM v0's value (the CSV's name), which may differ.
	bd.Spec.Config = &rukpakv1alpha1.BundleConfig{DeploymentConfig: &rukpakv1alpha1.DeploymentConfig{Env: []corev1.EnvVar{{Name: OperatorConditionEnv, Value: "csv.v1.0.0"}}}}
	if got := conditionName(bd); got != "csv.v1.0.0" {
		t.Errorf("with the variable: %q, want its value", got)
	}
	bd.Spec.ProvisionerClassName = rukpakv1alpha1.ProvisionerPlain
	if got := conditionName(bd); got != "" {
		t.Errorf("plain bundle: %q, want none", got)
	}
}

// TestNoOperatorConditions: with the OperatorCondition CRD missing (NoOperatorConditions, set by
// main), an install neither sets OPERATOR_CONDITION_NAME nor writes an OperatorCondition; with it,
// it does both.
func TestNoOperatorConditions(t *testing.T) {
	for _, off := range []bool{true, false} {
		h := newReconcilerHarness(t, newOperator("op"))
		h.r.NoOperatorConditions = off
		h.content.set(pkgFBC(""), nil)
		if _, err := h.reconcile(t, "op"); err != nil {
			t.Fatal(err)
		}
		bd := &rukpakv1alpha1.BundleDeployment{}
		if err := h.r.Client.Get(t.Context(), types.NamespacedName{Name: "op"}, bd); err != nil {
			t.Fatal(err)
		}
		ocs := &operatorsv2.OperatorConditionList{}
		if err := h.r.Client.List(t.Context(), ocs); err != nil {
			t.Fatal(err)
		}
		if hasConditionEnv(&bd.Spec) == off || (len(ocs.Items) == 0) != off {
			t.Errorf("NoOperatorConditions=%v: variable set %v, OperatorConditions %d", off, hasConditionEnv(&bd.Spec), len(ocs.Items))
		}
	}
}
