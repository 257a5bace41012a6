package controller

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/controller"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// operator-lib (github.com/operator-framework/operator-lib) is not served by the module proxy this
// repository builds from, so the tests make the API calls its conditions package makes: as the
// operator's ServiceAccount, get the OperatorCondition named by OPERATOR_CONDITION_NAME in the
// operator's namespace and update spec.conditions.

// installWithServiceAccount installs pkg 1.0.0 from catalog cat for Operator name, playing rukpak:
// the ServiceAccount sa it would create for the bundle's Deployment, then revision 1 Installed and
// Healthy.
func installWithServiceAccount(t *testing.T, cat, pkg, name, sa string) {
	t.Helper()
	serveCatalog(t, cat, "h1", packageFBC(pkg, bundleFBC{version: "1.0.0"}), nil)
	createOperator(t, name, operatorsv1alpha1.OperatorSpec{PackageName: pkg})
	bd := waitForBDImage(t, name, image(pkg, "1.0.0"))
	if got := conditionEnv(bd); got != pkg+".v1.0.0" {
		t.Fatalf("BundleDeployment %s sets %s=%q, want the bundle's (CSV's) name %q", name, controller.OperatorConditionEnv, got, pkg+".v1.0.0")
	}
	playRukpakRevision(t, name, sa, 1)
	waitForCondition(t, name, operatorsv1alpha1.TypeInstalled, metav1.ConditionTrue, operatorsv1alpha1.ReasonInstallationSucceeded)
}

// conditionEnv is the OPERATOR_CONDITION_NAME bd passes to the bundle's Deployments ("" if none).
func conditionEnv(bd *rukpakv1alpha1.BundleDeployment) string {
	if bd.Spec.Config == nil || bd.Spec.Config.DeploymentConfig == nil {
		return ""
	}
	for _, e := range bd.Spec.Config.DeploymentConfig.Env {
		if e.Name == controller.OperatorConditionEnv {
			return e.Value
		}
	}
	return ""
}

// playRukpakRevision does what rukpak does for BundleDeployment name: creates ServiceAccount sa in
// its install namespace (labelled as rukpak labels what it applies) and reports revision installed.
func playRukpakRevision(t *testing.T, name, sa string, revision int64) {
	t.Helper()
	ctx := context.Background()
	bd, err := getBD(name)
	if err != nil {
		t.Fatal(err)
	}
	obj := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: bd.Spec.InstallNamespace,
		Labels: map[string]string{"core.rukpak.io/owner-kind": "BundleDeployment", "core.rukpak.io/owner-name": name}}}
	if err := k8s.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating ServiceAccount %s: %v", sa, err)
	}
	playRukpak(t, name, true, true)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		bd, err := getBD(name)
		if err != nil {
			return err
		}
		bd.Status.InstalledRevision = revision
		return k8s.Status().Update(ctx, bd)
	})
	if err != nil {
		t.Fatalf("writing the installed revision of BundleDeployment %s: %v", name, err)
	}
}

// asServiceAccount is a client that acts as ServiceAccount ns/sa.
func asServiceAccount(t *testing.T, ns, sa string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: fmt.Sprintf("system:serviceaccount:%s:%s", ns, sa)}
	c, err := client.New(cfg, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitForOperatorCondition waits until operator-controller created OperatorCondition ns/name for
// Operator op, with its Role (this object only) and a RoleBinding to ServiceAccount sa.
func waitForOperatorCondition(t *testing.T, ns, name, op, sa string) {
	t.Helper()
	key := types.NamespacedName{Namespace: ns, Name: name}
	eventually(t, "OperatorCondition "+key.String()+" with its Role and RoleBinding", func() error {
		ctx := context.Background()
		oc, role, rb := &operatorsv2.OperatorCondition{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}
		for _, o := range []client.Object{oc, role, rb} {
			if err := k8s.Get(ctx, key, o); err != nil {
				return err
			}
			if o.GetLabels()[controller.LabelOwnerName] != op || len(o.GetOwnerReferences()) != 1 || o.GetOwnerReferences()[0].Name != op {
				return fmt.Errorf("%T %s is not labelled and owned for Operator %s: %v %v", o, key, op, o.GetLabels(), o.GetOwnerReferences())
			}
		}
		if len(role.Rules) != 1 || !slices.Equal(role.Rules[0].ResourceNames, []string{name}) {
			return fmt.Errorf("Role rules %+v, want only OperatorCondition %s", role.Rules, name)
		}
		if len(rb.Subjects) != 1 || rb.Subjects[0].Name != sa || rb.Subjects[0].Namespace != ns {
			return fmt.Errorf("RoleBinding subjects %+v, want ServiceAccount %s/%s", rb.Subjects, ns, sa)
		}
		return nil
	})
}

// setUpgradeable writes (status "") or removes the Upgradeable condition of OperatorCondition
// ns/name, in spec.conditions as the operator does or in spec.overrides as an admin does, with c.
func setUpgradeable(t *testing.T, c client.Client, ns, name string, override bool, status metav1.ConditionStatus, reason, msg string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		oc := &operatorsv2.OperatorCondition{}
		if err := c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, oc); err != nil {
			return err
		}
		conds := &oc.Spec.Conditions
		if override {
			conds = &oc.Spec.Overrides
		}
		if status == "" {
			apimeta.RemoveStatusCondition(conds, operatorsv2.Upgradeable)
		} else {
			apimeta.SetStatusCondition(conds, metav1.Condition{Type: operatorsv2.Upgradeable, Status: status, Reason: reason, Message: msg})
		}
		return c.Update(context.Background(), oc)
	})
	if err != nil {
		t.Fatalf("setting Upgradeable=%s on OperatorCondition %s/%s: %v", status, ns, name, err)
	}
}

// TestOperatorConditionHoldsUpgrade: the installed operator (its ServiceAccount, through the Role
// operator-controller made) sets Upgradeable=False; a successor in the catalog is then not
// installed and UpgradeAvailable quotes the operator; removing the condition lets the upgrade
// proceed within seconds, with a new OperatorCondition for the new bundle and the old one removed;
// deleting the Operator removes the OperatorCondition and its RBAC.
func TestOperatorConditionHoldsUpgrade(t *testing.T) {
	installWithServiceAccount(t, "oc-hold", "rho", "rho-op", "rho-operator")
	waitForOperatorCondition(t, "rho", "rho.v1.0.0", "rho-op", "rho-operator")

	operator := asServiceAccount(t, "rho", "rho-operator")
	setUpgradeable(t, operator, "rho", "rho.v1.0.0", false, metav1.ConditionFalse, "Migrating", "data migration in progress")
	// The Role allows its own OperatorCondition only.
	other := &operatorsv2.OperatorCondition{ObjectMeta: metav1.ObjectMeta{Namespace: "rho", Name: "someone-else"}}
	if err := k8s.Create(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	if err := operator.Get(context.Background(), client.ObjectKeyFromObject(other), other); !apierrors.IsForbidden(err) {
		t.Fatalf("the operator's ServiceAccount reading another OperatorCondition: %v, want Forbidden", err)
	}

	serveCatalog(t, "oc-hold", "h2", packageFBC("rho", bundleFBC{version: "1.0.0"}, bundleFBC{version: "1.1.0", replaces: "1.0.0"}), nil)
	waitForCondition(t, "rho-op", operatorsv1alpha1.TypeUpgradeAvailable, metav1.ConditionTrue, operatorsv1alpha1.ReasonUpgradeBlocked,
		"version 1.1.0 (bundle rho.v1.1.0", "OperatorCondition rho/rho.v1.0.0", "Upgradeable=False", "Migrating", `"data migration in progress"`,
		"as soon as the operator removes that condition")
	waitForCondition(t, "rho-op", operatorsv1alpha1.TypeInstalled, metav1.ConditionTrue, operatorsv1alpha1.ReasonInstallationSucceeded)
	bdStays(t, "rho-op", image("rho", "1.0.0"))

	// The operator clears the condition: the upgrade proceeds within seconds.
	cleared := time.Now()
	setUpgradeable(t, operator, "rho", "rho.v1.0.0", false, "", "", "")
	bd := waitForBDImage(t, "rho-op", image("rho", "1.1.0"))
	if d := time.Since(cleared); d > 10*time.Second {
		t.Errorf("the upgrade took %s after the condition was removed, want seconds", d)
	}
	if got := conditionEnv(bd); got != "rho.v1.1.0" {
		t.Errorf("after the upgrade %s=%q, want rho.v1.1.0", controller.OperatorConditionEnv, got)
	}
	// Until the new revision is installed, the running pods' OperatorCondition stays beside the new one.
	waitForOperatorCondition(t, "rho", "rho.v1.1.0", "rho-op", "rho-operator")
	waitForOperatorCondition(t, "rho", "rho.v1.0.0", "rho-op", "rho-operator")
	playRukpakRevision(t, "rho-op", "rho-operator", 2)
	waitForCondition(t, "rho-op", operatorsv1alpha1.TypeUpgradeAvailable, metav1.ConditionFalse, operatorsv1alpha1.ReasonUpToDate)
	waitGone(t, types.NamespacedName{Namespace: "rho", Name: "rho.v1.0.0"})

	// Deleting the Operator removes its OperatorCondition, Role and RoleBinding; not the other one.
	if err := k8s.Delete(context.Background(), &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "rho-op"}}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, types.NamespacedName{Namespace: "rho", Name: "rho.v1.1.0"})
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(other), other); err != nil {
		t.Errorf("the OperatorCondition operator-controller did not create: %v", err)
	}
}

// waitGone waits until the OperatorCondition, Role and RoleBinding at key are deleted.
func waitGone(t *testing.T, key types.NamespacedName) {
	t.Helper()
	eventually(t, "OperatorCondition, Role and RoleBinding "+key.String()+" deleted", func() error {
		for _, o := range []client.Object{&operatorsv2.OperatorCondition{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}} {
			if err := k8s.Get(context.Background(), key, o); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%T: %v", o, err)
			}
		}
		return nil
	})
}

// TestOperatorConditionOverride: an admin's Upgradeable=True override wins over the operator's
// Upgradeable=False; an admin's Upgradeable=False override holds the next upgrade until it is
// removed.
func TestOperatorConditionOverride(t *testing.T) {
	installWithServiceAccount(t, "oc-override", "sigma", "sigma-op", "sigma-operator")
	waitForOperatorCondition(t, "sigma", "sigma.v1.0.0", "sigma-op", "sigma-operator")
	setUpgradeable(t, asServiceAccount(t, "sigma", "sigma-operator"), "sigma", "sigma.v1.0.0", false, metav1.ConditionFalse, "Busy", "not now")
	serveCatalog(t, "oc-override", "h2", packageFBC("sigma", bundleFBC{version: "1.0.0"}, bundleFBC{version: "1.1.0", replaces: "1.0.0"}), nil)
	waitForCondition(t, "sigma-op", operatorsv1alpha1.TypeUpgradeAvailable, metav1.ConditionTrue, operatorsv1alpha1.ReasonUpgradeBlocked, `"not now"`)

	setUpgradeable(t, k8s, "sigma", "sigma.v1.0.0", true, metav1.ConditionTrue, "AdminSaysGo", "upgrade anyway")
	waitForBDImage(t, "sigma-op", image("sigma", "1.1.0"))
	playRukpakRevision(t, "sigma-op", "sigma-operator", 2)
	waitForOperatorCondition(t, "sigma", "sigma.v1.1.0", "sigma-op", "sigma-operator")

	setUpgradeable(t, k8s, "sigma", "sigma.v1.1.0", true, metav1.ConditionFalse, "MaintenanceWindow", "wait for the weekend")
	serveCatalog(t, "oc-override", "h3", packageFBC("sigma", bundleFBC{version: "1.0.0"}, bundleFBC{version: "1.1.0", replaces: "1.0.0"},
		bundleFBC{version: "1.2.0", replaces: "1.1.0"}), nil)
	waitForCondition(t, "sigma-op", operatorsv1alpha1.TypeUpgradeAvailable, metav1.ConditionTrue, operatorsv1alpha1.ReasonUpgradeBlocked,
		"spec.overrides has Upgradeable=False (reason MaintenanceWindow)", `"wait for the weekend"`, "as soon as the Upgradeable override is removed")
	bdStays(t, "sigma-op", image("sigma", "1.1.0"))
	setUpgradeable(t, k8s, "sigma", "sigma.v1.1.0", true, "", "", "")
	waitForBDImage(t, "sigma-op", image("sigma", "1.2.0"))
}

// TestOperatorConditionNotCreatedByOLMIsLeftAlone: an OperatorCondition that exists before the
// install, under the name operator-controller would use, is never changed or deleted, and does not
// hold upgrades (operator-controller does not read what it did not create).
func TestOperatorConditionNotCreatedByOLMIsLeftAlone(t *testing.T) {
	ctx := context.Background()
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tau"}}); err != nil {
		t.Fatal(err)
	}
	foreign := &operatorsv2.OperatorCondition{ObjectMeta: metav1.ObjectMeta{Namespace: "tau", Name: "tau.v1.0.0", Labels: map[string]string{"made-by": "someone"}}}
	apimeta.SetStatusCondition(&foreign.Spec.Conditions, metav1.Condition{Type: operatorsv2.Upgradeable, Status: metav1.ConditionFalse, Reason: "Theirs", Message: "theirs"})
	if err := k8s.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	rv := foreign.ResourceVersion

	installWithServiceAccount(t, "oc-foreign", "tau", "tau-op", "tau-operator")
	serveCatalog(t, "oc-foreign", "h2", packageFBC("tau", bundleFBC{version: "1.0.0"}, bundleFBC{version: "1.1.0", replaces: "1.0.0"}), nil)
	waitForBDImage(t, "tau-op", image("tau", "1.1.0"))
	playRukpakRevision(t, "tau-op", "tau-operator", 2)
	waitForOperatorCondition(t, "tau", "tau.v1.1.0", "tau-op", "tau-operator")
	if err := k8s.Delete(ctx, &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "tau-op"}}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, types.NamespacedName{Namespace: "tau", Name: "tau.v1.1.0"})
	consistently(t, "the OperatorCondition operator-controller did not create is unchanged", time.Second, func() error {
		got := &operatorsv2.OperatorCondition{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(foreign), got); err != nil {
			return err
		}
		if got.ResourceVersion != rv || len(got.OwnerReferences) != 0 {
			return fmt.Errorf("it was changed: resourceVersion %s (was %s), ownerReferences %v", got.ResourceVersion, rv, got.OwnerReferences)
		}
		return nil
	})
	for _, o := range []client.Object{&rbacv1.Role{}, &rbacv1.RoleBinding{}} {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(foreign), o); !apierrors.IsNotFound(err) {
			t.Errorf("%T for the OperatorCondition operator-controller did not create: %v, want none", o, err)
		}
	}
}

// TestOperatorConditionDoesNotHoldADowngrade: Upgradeable=False holds upgrades only: lowering
// spec.version (with upgradeConstraintPolicy Ignore) still moves the Operator down.
func TestOperatorConditionDoesNotHoldADowngrade(t *testing.T) {
	serveCatalog(t, "oc-down", "h1", packageFBC("upsilon", bundleFBC{version: "1.0.0"}, bundleFBC{version: "1.1.0", replaces: "1.0.0"}), nil)
	createOperator(t, "upsilon-op", operatorsv1alpha1.OperatorSpec{PackageName: "upsilon"})
	waitForBDImage(t, "upsilon-op", image("upsilon", "1.1.0"))
	playRukpakRevision(t, "upsilon-op", "upsilon-operator", 1)
	waitForOperatorCondition(t, "upsilon", "upsilon.v1.1.0", "upsilon-op", "upsilon-operator")
	setUpgradeable(t, asServiceAccount(t, "upsilon", "upsilon-operator"), "upsilon", "upsilon.v1.1.0", false, metav1.ConditionFalse, "Busy", "not now")

	updateOperator(t, "upsilon-op", func(op *operatorsv1alpha1.Operator) {
		op.Spec.Version = "1.0.0"
		op.Spec.UpgradeConstraintPolicy = operatorsv1alpha1.UpgradeConstraintPolicyIgnore
	})
	waitForBDImage(t, "upsilon-op", image("upsilon", "1.0.0"))
}

// TestOperatorInstalledBeforeOperatorConditionsIsNotRestarted: a BundleDeployment written before
// operator-controller set OPERATOR_CONDITION_NAME (as after an upgrade of OLM) does not get the
// variable for the bundle it runs (which would roll the operator's pods), but its OperatorCondition
// is created (an admin's override can hold it); the next upgrade brings the variable.
func TestOperatorInstalledBeforeOperatorConditionsIsNotRestarted(t *testing.T) {
	serveCatalog(t, "oc-before", "h1", packageFBC("phi", bundleFBC{version: "1.0.0"}), nil)
	createOperator(t, "phi-op", operatorsv1alpha1.OperatorSpec{PackageName: "phi"})
	waitForBDImage(t, "phi-op", image("phi", "1.0.0"))
	// As an earlier operator-controller wrote it: no variable.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		bd, err := getBD("phi-op")
		if err != nil {
			return err
		}
		bd.Spec.Config = nil
		return k8s.Update(context.Background(), bd)
	})
	if err != nil {
		t.Fatal(err)
	}
	playRukpakRevision(t, "phi-op", "phi-operator", 1)
	// A change that re-reconciles every Operator (the catalog's content) and one of its own spec.
	serveCatalog(t, "oc-before", "h1b", packageFBC("phi", bundleFBC{version: "1.0.0"}), nil)
	updateOperator(t, "phi-op", func(op *operatorsv1alpha1.Operator) { op.Spec.ProgressDeadline = &metav1.Duration{Duration: time.Hour} })
	eventually(t, "the progress deadline reaches the BundleDeployment", func() error {
		bd, err := getBD("phi-op")
		if err == nil && bd.Spec.ProgressDeadline == nil {
			err = fmt.Errorf("no progressDeadline yet")
		}
		return err
	})
	waitForOperatorCondition(t, "phi", "phi.v1.0.0", "phi-op", "phi-operator")
	consistently(t, "the installed bundle gets no OPERATOR_CONDITION_NAME", time.Second, func() error {
		bd, err := getBD("phi-op")
		if err == nil && conditionEnv(bd) != "" {
			err = fmt.Errorf("it got %s=%s", controller.OperatorConditionEnv, conditionEnv(bd))
		}
		return err
	})

	serveCatalog(t, "oc-before", "h2", packageFBC("phi", bundleFBC{version: "1.0.0"}, bundleFBC{version: "1.1.0", replaces: "1.0.0"}), nil)
	if bd := waitForBDImage(t, "phi-op", image("phi", "1.1.0")); conditionEnv(bd) != "phi.v1.1.0" {
		t.Errorf("the upgrade did not bring %s: %q", controller.OperatorConditionEnv, conditionEnv(bd))
	}
}

// TestOperatorConditionStaysWithAnOrphanedOperator: deleting an Operator with deletionPolicy
// Orphan leaves the operator running, so its OperatorCondition, Role and RoleBinding stay, released
// (no owner labels, no ownerReference to the Operator), and the operator can still update it.
func TestOperatorConditionStaysWithAnOrphanedOperator(t *testing.T) {
	installWithServiceAccount(t, "oc-orphan", "chi", "chi-op", "chi-operator")
	waitForOperatorCondition(t, "chi", "chi.v1.0.0", "chi-op", "chi-operator")
	updateOperator(t, "chi-op", func(op *operatorsv1alpha1.Operator) { op.Spec.DeletionPolicy = rukpakv1alpha1.DeletionPolicyOrphan })
	waitForBDPolicies(t, "chi-op", rukpakv1alpha1.CollisionPolicyPrevent, rukpakv1alpha1.DeletionPolicyOrphan)
	if err := k8s.Delete(context.Background(), &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "chi-op"}}); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "chi", Name: "chi.v1.0.0"}
	eventually(t, "OperatorCondition, Role and RoleBinding "+key.String()+" released", func() error {
		if _, err := getOperator("chi-op"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the Operator is still there: %v", err)
		}
		for _, o := range []client.Object{&operatorsv2.OperatorCondition{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}} {
			if err := k8s.Get(context.Background(), key, o); err != nil {
				return fmt.Errorf("%T: %v", o, err)
			}
			if o.GetLabels()[controller.LabelOwnerName] != "" || len(o.GetOwnerReferences()) != 0 {
				return fmt.Errorf("%T still owned: labels %v, ownerReferences %v", o, o.GetLabels(), o.GetOwnerReferences())
			}
		}
		return nil
	})
	setUpgradeable(t, asServiceAccount(t, "chi", "chi-operator"), "chi", "chi.v1.0.0", false, metav1.ConditionFalse, "StillHere", "still running")
}
