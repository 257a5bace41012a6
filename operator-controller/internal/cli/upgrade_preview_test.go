package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/bundlerender"
)

// TestUpgradePreviewDiffsAgainstLiveObjects: hub installed on 1.0.0 with its dependencies (the
// objects rukpak applied are in the cluster); the preview of 1.1.0 shows the spec change, the
// diffs, the Operator of beta-operator that nothing needs any more, and writes nothing.
func TestUpgradePreviewDiffsAgainstLiveObjects(t *testing.T) {
	hub := installedOperator("hub", "hub-operator", "1.0.0", nil)
	hub.Spec.Version, hub.Spec.DependencyPolicy = "1.0.0", operatorsv1alpha1.DependencyPolicyInstall
	alpha := installedOperator("alpha-operator", "alpha-operator", "1.0.0", hub)
	beta := installedOperator("beta-operator", "beta-operator", "1.0.0", hub)
	var objs []client.Object
	for _, op := range []*operatorsv1alpha1.Operator{hub, alpha, beta} {
		objs = append(objs, op, installedBundleDeployment(op, "registry.test/bundles/"+op.Spec.PackageName+":1.0.0"))
	}
	objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hub-operator"}})
	// What rukpak applied for hub 1.0.0.
	rendered, err := bundlerender.Render(context.Background(), filepath.Join(compositeBundles, "hub-operator", "1.0.0"), bundlerender.Options{Name: "hub", InstallNamespace: "hub-operator"})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range rendered.Objects {
		objs = append(objs, u)
	}
	pc := newPreviewCluster(t, objs...)
	get := func() (int64, string) {
		op, bd := &operatorsv1alpha1.Operator{}, &rukpakv1alpha1.BundleDeployment{}
		if err := pc.client.Get(context.Background(), client.ObjectKey{Name: "hub"}, op); err != nil {
			t.Fatal(err)
		}
		if err := pc.client.Get(context.Background(), client.ObjectKey{Name: "hub"}, bd); err != nil {
			t.Fatal(err)
		}
		return op.Generation, bd.ResourceVersion + "/" + op.ResourceVersion
	}
	gen, rv := get()

	out, errOut, err := pc.run(t, "upgrade", "hub", "--version", "1.1.0", "--preview")
	if err != nil {
		t.Fatalf("upgrade --preview: %v\n%s\n%s", err, out, errOut)
	}
	t.Logf("kubectl olmv1 upgrade hub --version 1.1.0 --preview\n%s", out)
	for _, want := range []string{
		"Upgrade Operator hub (package hub-operator): 1.0.0 -> 1.1.0",
		"(preview: nothing was changed in the cluster)",
		"hub              hub-operator.v1.1.0     1.1.0     upgrade from 1.0.0   composite",
		"upgrade: from hub-operator.v1.0.0 (1.0.0): the catalog's upgrade edge replaces hub-operator.v1.0.0 in channel stable",
		"update      Operator                   -               hub",
		"delete      Operator                   -               beta-operator",
		"update      BundleDeployment           -               hub",
		"update      Deployment                 hub-operator    hub-operator",
		"unchanged   CustomResourceDefinition   -               hubs.composite.olmv1.io",
		// The diffs: the spec, the BundleDeployment's image, the Deployment's image.
		"--- Operator hub (live)\n+++ Operator hub (after)\n",
		"-  version: 1.0.0\n+  version: 1.1.0\n",
		"-      ref: registry.test/bundles/hub-operator:1.0.0\n+      ref: registry.test/bundles/hub-operator:1.1.0\n",
		"--- Deployment hub-operator/hub-operator (live)\n+++ Deployment hub-operator/hub-operator (after)\n",
		"-        image: registry.example.test/hub-operator:v1.0.0\n",
		"+        image: registry.example.test/hub-operator:v1.1.0\n",
		"(unchanged), bound cluster-wide by ClusterRoleBinding",
		"hubs.composite.olmv1.io: safe: no scope change, no stored version removed, every existing object valid under the new schema [Operator hub]",
	} {
		if !containsText(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if w := pc.realWrites(); len(w) > 0 {
		t.Fatalf("a preview wrote: %q", w)
	}
	if g, r := get(); g != gen || r != rv {
		t.Fatalf("the preview changed the Operator or its BundleDeployment: generation %d→%d, resourceVersions %s→%s", gen, g, rv, r)
	}

	// An Automatic Operator without a new version or channel has nothing to upgrade.
	if _, _, err := pc.run(t, "upgrade", "hub", "--preview"); err == nil || !strings.Contains(err.Error(), "upgrades by itself within its spec") {
		t.Errorf("upgrade without a change: %v", err)
	}

	// The upgrade itself writes the spec change, and only that.
	if _, errOut, err := pc.run(t, "upgrade", "hub", "--version", "1.1.0"); err != nil || !strings.Contains(errOut, "operator hub: upgrading: spec.version 1.0.0 -> 1.1.0") {
		t.Fatalf("upgrade: %v\n%s", err, errOut)
	}
	if w := pc.realWrites(); len(w) != 1 || !strings.HasPrefix(w[0], "patch *v1alpha1.Operator hub") {
		t.Errorf("upgrade wrote %q, want one patch of the Operator", w)
	}
	op := &operatorsv1alpha1.Operator{}
	if err := pc.client.Get(context.Background(), client.ObjectKey{Name: "hub"}, op); err != nil || op.Spec.Version != "1.1.0" {
		t.Errorf("spec.version after the upgrade: %q (%v)", op.Spec.Version, err)
	}
}

// TestUpgradePreviewApprovesTheManualUpgrade: a Manual Operator without --version is previewed with
// the upgrade it waits for approved.
func TestUpgradePreviewApprovesTheManualUpgrade(t *testing.T) {
	alpha := installedOperator("alpha-operator", "alpha-operator", "1.0.0", nil)
	hub := installedOperator("hub", "hub-operator", "1.0.0", nil)
	hub.Spec.UpgradePolicy = operatorsv1alpha1.UpgradePolicyManual
	beta := installedOperator("beta-operator", "beta-operator", "1.0.0", nil)
	pc := newPreviewCluster(t, alpha, beta, hub,
		installedBundleDeployment(alpha, "registry.test/bundles/alpha-operator:1.0.0"),
		installedBundleDeployment(beta, "registry.test/bundles/beta-operator:1.0.0"),
		installedBundleDeployment(hub, "registry.test/bundles/hub-operator:1.0.0"))
	out, errOut, err := pc.run(t, "upgrade", "hub", "--preview")
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errOut)
	}
	for _, want := range []string{"1.0.0 -> 1.1.0", "+  approvedVersion: 1.1.0\n", "approved version 1.1.0 (upgradePolicy Manual)"} {
		if !containsText(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if w := pc.realWrites(); len(w) > 0 {
		t.Fatalf("a preview wrote: %q", w)
	}
}
