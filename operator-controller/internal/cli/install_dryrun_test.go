package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/preview"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

func TestInstallDryRunPlansWithoutWriting(t *testing.T) {
	pc := newPreviewCluster(t)
	out, errOut, err := pc.run(t, "install", "hub-operator", "--name", "hub", "--version", "1.0.0", "--dependency-policy", "Install", "--dry-run")
	if err != nil {
		t.Fatalf("install --dry-run: %v\n%s\n%s", err, out, errOut)
	}
	t.Logf("kubectl olmv1 install hub-operator --name hub --version 1.0.0 --dependency-policy Install --dry-run\n%s", out)
	for _, want := range []string{
		"Install package hub-operator as Operator hub: version 1.0.0",
		"(dry run: nothing was changed in the cluster)",
		// The resolution: the three bundles, the dependencies' Operators created by operator-controller.
		"hub              hub-operator.v1.0.0     1.0.0     install   composite   kubectl olmv1",
		"alpha-operator   alpha-operator.v1.0.0   1.0.0     install   composite   operator-controller",
		"beta-operator    beta-operator.v1.0.0    1.0.0     install   composite   operator-controller",
		// Why.
		`requirement: Operator hub asks for package hub-operator, version "1.0.0", any channel`,
		"requirement: hub-operator.v1.0.0 (Operator hub) requires olm.gvk.required composite.olmv1.io/v1 Alpha",
		"channel: stable (the default channel)",
		"version: 1.0.0; newer in the catalogs: 1.1.0 (outside spec.version)",
		"catalog: composite (priority 0)",
		// The objects, in the order they would be written.
		"create   Operator                   -                hub",
		"create   Operator                   -                alpha-operator",
		"create   Namespace                  -                hub-operator",
		"create   BundleDeployment           -                hub",
		"create   CustomResourceDefinition   -                hubs.composite.olmv1.io",
		"create   Deployment                 hub-operator     hub-operator",
	} {
		if !containsText(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "RBAC\nClusterRole ") || !strings.Contains(out, "get,list,watch,update hubs.composite.olmv1.io") ||
		!strings.Contains(out, "bound cluster-wide by ClusterRoleBinding ") || !strings.Contains(out, "to ServiceAccount hub-operator/hub-operator") {
		t.Errorf("RBAC section:\n%s", out)
	}
	if !strings.Contains(out, "CRD UPGRADE SAFETY\nhubs.composite.olmv1.io: new, nothing installed to break [Operator hub]") {
		t.Errorf("CRD section:\n%s", out)
	}

	// Nothing was written: every write was a dry run, and nothing exists afterwards.
	if w := pc.realWrites(); len(w) > 0 {
		t.Fatalf("a dry run wrote: %q", w)
	}
	assertEmpty(t, pc.client, &operatorsv1alpha1.OperatorList{}, &rukpakv1alpha1.BundleDeploymentList{}, &corev1.NamespaceList{}, &apiextensionsv1.CustomResourceDefinitionList{})

	// -o json prints the same plan as data.
	out, errOut, err = pc.run(t, "install", "hub-operator", "--name", "hub", "--version", "1.0.0", "--dependency-policy", "Install", "--dry-run", "-o", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	var plan preview.Plan
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var got []string
	for _, b := range plan.Bundles {
		got = append(got, b.Operator+"="+b.Bundle+"/"+b.OperatorCreated)
	}
	if want := []string{"hub=hub-operator.v1.0.0/kubectl olmv1", "alpha-operator=alpha-operator.v1.0.0/operator-controller", "beta-operator=beta-operator.v1.0.0/operator-controller"}; !slices.Equal(got, want) {
		t.Errorf("bundles %q, want %q", got, want)
	}
	if plan.Objects[0].Kind != "Operator" || plan.Objects[0].Object.Object["spec"].(map[string]any)["dependencyPolicy"] != "Install" {
		t.Errorf("first object: %+v", plan.Objects[0])
	}

	// Without the Install policy nothing resolves: the message names the Operators to create, and
	// the exit is an error.
	out, _, err = pc.run(t, "install", "hub-operator", "--name", "hub", "--version", "1.0.0", "--dry-run")
	if err == nil || !IsSilent(err) || !strings.Contains(out, "Resolution fails: ") || !strings.Contains(out, `"alpha-operator", "beta-operator"`) {
		t.Errorf("Require policy: err %v\n%s", err, out)
	}
	if w := pc.realWrites(); len(w) > 0 {
		t.Fatalf("a dry run wrote: %q", w)
	}
}

// TestInstallDryRunWithExistingDependencyOperators: a dependency Operator another Operator created is
// joined, not created again; an Operator of another package holding a dependency's name is reported.
func TestInstallDryRunWithExistingDependencyOperators(t *testing.T) {
	other := installedOperator("other", "other-package", "1.0.0", nil)
	alpha := installedOperator("alpha-operator", "alpha-operator", "1.0.0", other)
	clash := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "beta-operator", UID: "uid-clash"}, Spec: operatorsv1alpha1.OperatorSpec{PackageName: "gadget"}}
	pc := newPreviewCluster(t, alpha, installedBundleDeployment(alpha, "registry.test/bundles/alpha-operator:1.0.0"), clash)
	out, errOut, err := pc.run(t, "install", "hub-operator", "--name", "hub", "--version", "1.0.0", "--dependency-policy", "Install", "--dry-run")
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errOut)
	}
	for _, want := range []string{
		"alpha-operator   alpha-operator.v1.0.0   1.0.0     unchanged   composite   -",
		"update   Operator   -   alpha-operator   alpha-operator   operator-controller   a dependency another Operator created: Operator hub becomes one more owner",
		`- Operator hub: package "beta-operator" is needed but the Operator "beta-operator" that would install it exists for package "gadget"`,
	} {
		if !containsText(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if containsText(out, "create Operator - alpha-operator") || containsText(out, "create Operator - beta-operator") {
		t.Errorf("a dependency Operator that exists is planned again:\n%s", out)
	}
	if w := pc.realWrites(); len(w) > 0 {
		t.Fatalf("a dry run wrote: %q", w)
	}
}
