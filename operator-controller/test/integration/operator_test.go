package integration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/platform/apiservertest"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

var operatorKind = apiservertest.Kind{
	Group: "operators.operatorframework.io", Version: "v1alpha1", Kind: "Operator", Resource: "operators",
}

// minimalSpec is a minimal valid spec; cases change one thing in it.
const minimalSpec = `packageName: argocd-operator`

func with(field, value string) string { return apiservertest.SpecWith(minimalSpec, field, value) }

func TestOperatorValidation(t *testing.T) {
	suite.CheckCases(t, operatorKind, []apiservertest.Case{
		{Name: "package only", Spec: minimalSpec},
		{Name: "every field", Spec: `
packageName: argocd-operator
version: ">=0.6.0 <1.0.0"
channel: stable-v0.6
catalogSelector: {matchLabels: {tier: prod}, matchExpressions: [{key: team, operator: In, values: [a, b]}]}
upgradeConstraintPolicy: Ignore
upgradePolicy: Manual
upgradeScope: AnyVersion
approvedVersion: 0.6.1
installNamespace: argocd
watchNamespaces: [team-a, team-b]
config: {deploymentConfig: {env: [{name: A, value: "1"}], nodeSelector: {kubernetes.io/os: linux}}}
collisionPolicy: IfNoController
deletionPolicy: Orphan
dependencyPolicy: Install
`},
		{Name: "several channels", Spec: with("channels", `[stable, fast]`)},
		{Name: "channel and channels together", Spec: apiservertest.SpecWith(with("channel", "stable"), "channels", `[fast]`),
			WantErrs: []string{"set channel or channels, not both"}},
		{Name: "channels entries are channel names", Spec: with("channels", `["st able"]`),
			WantErrs: []string{"channels must be letters, digits"}},
		{Name: "channels at most 16", Spec: with("channels", `[a1, a2, a3, a4, a5, a6, a7, a8, a9, b1, b2, b3, b4, b5, b6, b7, b8]`),
			WantErrs: []string{"spec.channels: Too many"}},
		{Name: "paused with a progress deadline and Rollback", Spec: apiservertest.SpecWith(apiservertest.SpecWith(with("paused", "true"), "progressDeadline", "10m"), "upgradeFailurePolicy", "Rollback")},
		{Name: "Rollback needs progressDeadline", Spec: with("upgradeFailurePolicy", "Rollback"),
			WantErrs: []string{"upgradeFailurePolicy Rollback needs spec.progressDeadline"}},
		{Name: "progressDeadline at least 1s", Spec: with("progressDeadline", "500ms"),
			WantErrs: []string{"progressDeadline must be a duration of at least 1s"}},
		{Name: "upgradeFailurePolicy must be known", Spec: with("upgradeFailurePolicy", "Retry"),
			WantErrs: []string{`spec.upgradeFailurePolicy: Unsupported value: "Retry"`}},
		{Name: "upgradeScope must be known", Spec: with("upgradeScope", `SameMajor`),
			WantErrs: []string{`spec.upgradeScope: Unsupported value: "SameMajor"`}},
		{Name: "dependencyPolicy must be known", Spec: with("dependencyPolicy", `Always`),
			WantErrs: []string{`spec.dependencyPolicy: Unsupported value: "Always"`}},
		{Name: "collisionPolicy None", Spec: with("collisionPolicy", `None`)},
		{Name: "dotted package name", Spec: `packageName: example.com.operator`},
		{Name: "version pins an exact version", Spec: with("version", `"1.2.3"`)},
		{Name: "version with a v prefix and prerelease", Spec: with("version", `v1.2.3-rc.1`)},
		{Name: "version wildcard", Spec: with("version", `1.2.x`)},
		{Name: "version tilde and caret", Spec: with("version", `"~1.2 || ^2"`)},
		{Name: "version comma-separated", Spec: with("version", `">=1.0.0, <2.0.0"`)},
		{Name: "version hyphen range", Spec: with("version", `1.2 - 1.4.5`)},
		{Name: "version empty", Spec: with("version", `""`)},
		{Name: "watchNamespaces in config only", Spec: with("config", `{watchNamespaces: [a]}`)},
		{Name: "the longest name", ObjectName: apiservertest.LongName(63), Spec: minimalSpec},

		{Name: "name is at most 63 characters", ObjectName: apiservertest.LongName(64), Spec: minimalSpec,
			WantErrs: []string{"metadata.name must be at most 63 characters"}},
		{Name: "packageName is required", Spec: `{channel: stable}`,
			WantErrs: []string{"packageName is required unless spec.source.type is Bundle"}},
		{Name: "packageName must not be empty", Spec: `{packageName: ""}`,
			WantErrs: []string{"spec.packageName", "at least 1 chars long", "packageName must be lowercase letters", "packageName is required unless spec.source.type is Bundle"}},
		{Name: "packageName must be DNS-like", Spec: `{packageName: Argo_CD}`,
			WantErrs: []string{"packageName must be lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"}},
		{Name: "packageName has a maximum length", Spec: `{packageName: ` + apiservertest.LongName(254) + `}`,
			WantErrs: []string{"spec.packageName: Too long"}},
		{Name: "version must be a range, not a word", Spec: with("version", `latest`),
			WantErrs: []string{"version must be a semver version or range"}},
		{Name: "version must not have four parts", Spec: with("version", `1.2.3.4`),
			WantErrs: []string{"version must be a semver version or range"}},
		{Name: "version must not end with an operator", Spec: with("version", `"1.2.3 ||"`),
			WantErrs: []string{"version must be a semver version or range"}},
		{Name: "version has a maximum length", Spec: with("version", `"`+apiservertest.LongName(65)+`"`),
			WantErrs: []string{"spec.version: Too long"}},
		{Name: "channel must be a channel name", Spec: with("channel", `-stable`),
			WantErrs: []string{"channel must be letters, digits, '-', '_' and '.', starting and ending with a letter or digit"}},
		{Name: "upgradeConstraintPolicy must be known", Spec: with("upgradeConstraintPolicy", `Sometimes`),
			WantErrs: []string{`spec.upgradeConstraintPolicy: Unsupported value: "Sometimes"`}},
		{Name: "upgradePolicy must be known", Spec: with("upgradePolicy", `Never`),
			WantErrs: []string{`spec.upgradePolicy: Unsupported value: "Never"`}},
		{Name: "collisionPolicy must be known", Spec: with("collisionPolicy", `Always`),
			WantErrs: []string{`spec.collisionPolicy: Unsupported value: "Always"`}},
		{Name: "deletionPolicy must be known", Spec: with("deletionPolicy", `Keep`),
			WantErrs: []string{`spec.deletionPolicy: Unsupported value: "Keep"`}},
		{Name: "approvedVersion needs upgradePolicy Manual", Spec: with("approvedVersion", `1.2.3`),
			WantErrs: []string{"approvedVersion can only be set when upgradePolicy is Manual"}},
		{Name: "approvedVersion must be an exact version", Spec: apiservertest.SpecWith(with("upgradePolicy", "Manual"), "approvedVersion", `">=1.2.3"`),
			WantErrs: []string{"approvedVersion must be an exact semver version such as 1.2.3"}},
		{Name: "installNamespace must be a namespace name", Spec: with("installNamespace", `Argo.CD`),
			WantErrs: []string{"spec.installNamespace", "should match"}},
		{Name: "watchNamespaces items must be namespace names", Spec: with("watchNamespaces", `[ok, "not ok"]`),
			WantErrs: []string{"spec.watchNamespaces[1]", "should match"}},
		{Name: "watchNamespaces items are unique", Spec: with("watchNamespaces", `[a, a]`),
			WantErrs: []string{"spec.watchNamespaces[1]: Duplicate value"}},
		{Name: "watchNamespaces set in one place only", Spec: apiservertest.SpecWith(with("watchNamespaces", `[a]`), "config", `{watchNamespaces: [b]}`),
			WantErrs: []string{"set watchNamespaces in spec.watchNamespaces or in spec.config.watchNamespaces, not both"}},
		{Name: "catalogSelector expressions need an operator", Spec: with("catalogSelector", `{matchExpressions: [{key: team}]}`),
			WantErrs: []string{"spec.catalogSelector.matchExpressions[0].operator: Required value"}},
		{Name: "config is validated like a BundleDeployment's", Spec: with("config", `{valuesFrom: [{kind: Pod, name: v}]}`),
			WantErrs: []string{`spec.config.valuesFrom[0].kind: Unsupported value: "Pod"`}},
	})
}

func TestOperatorDefaults(t *testing.T) {
	obj, err := operatorKind.Object("defaults", minimalSpec)
	if err != nil {
		t.Fatal(err)
	}
	if err := suite.Client.Create(t.Context(), obj, client.DryRunAll); err != nil {
		t.Fatalf("creating: %v", err)
	}
	for field, want := range map[string]string{
		"upgradeConstraintPolicy": string(operatorsv1alpha1.UpgradeConstraintPolicyEnforce),
		"upgradePolicy":           string(operatorsv1alpha1.UpgradePolicyAutomatic),
		"collisionPolicy":         string(rukpakv1alpha1.CollisionPolicyPrevent),
		"deletionPolicy":          string(rukpakv1alpha1.DeletionPolicyDelete),
		"dependencyPolicy":        string(operatorsv1alpha1.DependencyPolicyRequire),
		"upgradeScope":            string(operatorsv1alpha1.UpgradeScopeSemverCompatible),
	} {
		if got, _, _ := unstructured.NestedString(obj.Object, "spec", field); got != want {
			t.Errorf("spec.%s defaults to %q, want %q", field, got, want)
		}
	}
}

func TestOperatorInstallNamespaceIsImmutable(t *testing.T) {
	obj, err := operatorKind.Object("immutable", with("installNamespace", "argocd"))
	if err != nil {
		t.Fatal(err)
	}
	if err := suite.Client.Create(t.Context(), obj); err != nil {
		t.Fatalf("creating: %v", err)
	}
	t.Cleanup(func() { _ = suite.Client.Delete(context.Background(), obj) })

	if err := unstructured.SetNestedField(obj.Object, "1.x", "spec", "version"); err != nil {
		t.Fatal(err)
	}
	if err := suite.Client.Update(t.Context(), obj); err != nil {
		t.Fatalf("changing spec.version (mutable) was rejected: %v", err)
	}
	if err := unstructured.SetNestedField(obj.Object, "elsewhere", "spec", "installNamespace"); err != nil {
		t.Fatal(err)
	}
	apiservertest.CheckVerdict(t, suite.Client.Update(t.Context(), obj),
		[]string{"installNamespace is immutable; delete and recreate the Operator to move it"})
}

// TestOperatorGoTypesRoundTrip writes an Operator with every spec field set through the Go types
// and reads it back unchanged: the CRD schema prunes nothing the Go types define.
func TestOperatorGoTypesRoundTrip(t *testing.T) {
	op := &operatorsv1alpha1.Operator{
		ObjectMeta: metav1.ObjectMeta{Name: "round-trip"},
		Spec: operatorsv1alpha1.OperatorSpec{
			PackageName: "argocd-operator",
			Version:     ">=0.6.0 <1.0.0",
			Channel:     "alpha",
			CatalogSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"tier": "prod"},
				MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "team", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"x"}},
				},
			},
			UpgradeConstraintPolicy: operatorsv1alpha1.UpgradeConstraintPolicyIgnore,
			UpgradePolicy:           operatorsv1alpha1.UpgradePolicyManual,
			UpgradeScope:            operatorsv1alpha1.UpgradeScopeAnyVersion,
			ApprovedVersion:         "0.6.1",
			InstallNamespace:        "argocd",
			WatchNamespaces:         []string{"argocd"},
			Config: &rukpakv1alpha1.BundleConfig{
				DeploymentConfig: &rukpakv1alpha1.DeploymentConfig{
					Env:         []corev1.EnvVar{{Name: "A", Value: "1"}},
					Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
				},
			},
			CollisionPolicy:  rukpakv1alpha1.CollisionPolicyIfNoController,
			DeletionPolicy:   rukpakv1alpha1.DeletionPolicyOrphan,
			DependencyPolicy: operatorsv1alpha1.DependencyPolicyInstall,
		},
	}
	want := op.Spec.DeepCopy()
	if err := suite.Client.Create(t.Context(), op); err != nil {
		t.Fatalf("creating an Operator from the Go types: %v", err)
	}
	t.Cleanup(func() { _ = suite.Client.Delete(context.Background(), op) })
	got := &operatorsv1alpha1.Operator{}
	if err := suite.Client.Get(t.Context(), client.ObjectKeyFromObject(op), got); err != nil {
		t.Fatalf("getting: %v", err)
	}
	if !equality.Semantic.DeepEqual(got.Spec, *want) {
		t.Errorf("spec changed on the way through the API server:\n got  %+v\n want %+v", got.Spec, *want)
	}
}

func TestOperatorStatusSubresourceAndPrinterColumns(t *testing.T) {
	obj, err := operatorKind.Object("printed", apiservertest.SpecWith(with("channel", "stable"), "upgradePolicy", "Manual"))
	if err != nil {
		t.Fatal(err)
	}
	suite.AssertStatusSubresource(t, operatorKind, obj, `
observedGeneration: 1
conditions:
- {type: Resolved, status: "True", reason: ResolutionSucceeded, message: "resolved to argocd-operator.v0.7.0", lastTransitionTime: "2026-01-01T00:00:00Z", observedGeneration: 1}
- {type: Installed, status: "True", reason: InstallationSucceeded, message: "installed argocd-operator.v0.6.0", lastTransitionTime: "2026-01-01T00:00:00Z", observedGeneration: 1}
- {type: Healthy, status: "True", reason: Healthy, message: healthy, lastTransitionTime: "2026-01-01T00:00:00Z", observedGeneration: 1}
- {type: Deprecated, status: "False", reason: NotDeprecated, message: "", lastTransitionTime: "2026-01-01T00:00:00Z", observedGeneration: 1}
- {type: UpgradeAvailable, status: "True", reason: AwaitingApproval, message: "approve 0.7.0", lastTransitionTime: "2026-01-01T00:00:00Z", observedGeneration: 1}
- {type: Paused, status: "False", reason: NotPaused, message: "not paused", lastTransitionTime: "2026-01-01T00:00:00Z", observedGeneration: 1}
resolvedBundle: {name: argocd-operator.v0.7.0, version: 0.7.0, catalog: operatorhub, source: "quay.io/org/argocd-bundle:v0.7.0"}
installedBundle: {name: argocd-operator.v0.6.0, version: 0.6.0, catalog: operatorhub, source: "quay.io/org/argocd-bundle:v0.6.0"}
installNamespace: argocd-operator
declaredDependencies:
- {type: olm.package.required, value: "sprocket >=1.0.0", status: Present, message: "Operator sprocket installs version 1.4.0"}
- {type: olm.gvk.required, value: "wheels.example.com/v1 Wheel", status: Missing, message: "not served"}
`)
	suite.AssertPrinterColumns(t, operatorKind, "printed", []apiservertest.Column{
		{Name: "Name", Cell: "printed"},
		{Name: "Package", Cell: "argocd-operator"},
		{Name: "Installed", Cell: "0.6.0"},
		{Name: "Resolved", Cell: "0.7.0"},
		{Name: "Install Status", Cell: "True"},
		{Name: "Healthy", Cell: "True"},
		{Name: "Upgrade Available", Priority: 1, Cell: "True"},
		{Name: "Channel", Priority: 1, Cell: "stable"},
		{Name: "Namespace", Priority: 1, Cell: "argocd-operator"},
		{Name: "Paused", Priority: 1, Cell: "False"},
		{Name: "Missing Dependencies", Priority: 1, Cell: "wheels.example.com/v1 Wheel"},
		{Name: "Age"},
	})
}

func TestOperatorFieldsDocumented(t *testing.T) {
	suite.AssertFieldsDocumented(t, operatorKind)
}
