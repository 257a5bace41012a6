package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/platform/apiservertest"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

var bundleDeploymentKind = apiservertest.Kind{
	Group: "core.rukpak.io", Version: "v1alpha1", Kind: "BundleDeployment", Resource: "bundledeployments",
}

// plainSpec is a minimal valid spec; cases change one thing in it.
const plainSpec = `
provisionerClassName: core-rukpak-io-plain
installNamespace: default
source: {type: Image, image: {ref: "quay.io/org/bundle:v1"}}
`

func bdSpec(provisioner, config string) string {
	spec := apiservertest.SpecWith(plainSpec, "provisionerClassName", provisioner)
	if config != "" {
		spec = apiservertest.SpecWith(spec, "config", config)
	}
	return spec
}

func TestBundleDeploymentValidation(t *testing.T) {
	suite.CheckCases(t, bundleDeploymentKind, []apiservertest.Case{
		{Name: "plain bundle", Spec: plainSpec},
		{Name: "registry bundle with every config field", Spec: bdSpec("core-rukpak-io-registry", `
watchNamespaces: [team-a, team-b]
deploymentConfig:
  env: [{name: HTTP_PROXY, value: "http://proxy:3128"}, {name: LOG_LEVEL, value: debug}]
  resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {memory: 128Mi}}
  nodeSelector: {kubernetes.io/os: linux}
  tolerations: [{key: dedicated, operator: Equal, value: olm, effect: NoSchedule}]
  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]}}}
`)},
		{Name: "helm bundle with values and valuesFrom", Spec: bdSpec("core-rukpak-io-helm", `
values: {replicaCount: 2, image: {tag: v1}, list: [1, 2]}
valuesFrom: [{kind: ConfigMap, name: base-values}, {kind: Secret, name: secret-values, key: prod.yaml, optional: true}]
`)},
		{Name: "kustomize bundle with a path", Spec: bdSpec("core-rukpak-io-kustomize", `{path: overlays/prod}`)},
		{Name: "the longest name", ObjectName: apiservertest.LongName(63), Spec: plainSpec},

		{Name: "name is at most 63 characters", ObjectName: apiservertest.LongName(64), Spec: plainSpec,
			WantErrs: []string{"metadata.name must be at most 63 characters"}},
		{Name: "spec is required", Spec: `{}`,
			WantErrs: []string{"spec.provisionerClassName: Required value", "spec.installNamespace: Required value", "spec.source: Required value"}},
		{Name: "provisionerClassName must be known", Spec: bdSpec("core-rukpak-io-docker", ""),
			WantErrs: []string{`spec.provisionerClassName: Unsupported value: "core-rukpak-io-docker"`}},
		{Name: "installNamespace must be a namespace name", Spec: apiservertest.SpecWith(plainSpec, "installNamespace", "Team_A"),
			WantErrs: []string{"spec.installNamespace", "should match"}},
		{Name: "installNamespace is at most 63 characters", Spec: apiservertest.SpecWith(plainSpec, "installNamespace", apiservertest.LongName(64)),
			WantErrs: []string{"spec.installNamespace: Too long"}},
		{Name: "helm values need the helm provisioner", Spec: bdSpec("core-rukpak-io-registry", `{values: {a: 1}}`),
			WantErrs: []string{"config.values and config.valuesFrom can only be used with provisionerClassName core-rukpak-io-helm"}},
		{Name: "helm valuesFrom needs the helm provisioner", Spec: bdSpec("core-rukpak-io-plain", `{valuesFrom: [{kind: Secret, name: v}]}`),
			WantErrs: []string{"config.values and config.valuesFrom can only be used with provisionerClassName core-rukpak-io-helm"}},
		{Name: "watchNamespaces needs the registry provisioner", Spec: bdSpec("core-rukpak-io-helm", `{watchNamespaces: [a]}`),
			WantErrs: []string{"config.watchNamespaces, config.deploymentConfig and config.olmv0 can only be used with provisionerClassName core-rukpak-io-registry"}},
		{Name: "deploymentConfig needs the registry provisioner", Spec: bdSpec("core-rukpak-io-plain", `{deploymentConfig: {nodeSelector: {a: b}}}`),
			WantErrs: []string{"config.watchNamespaces, config.deploymentConfig and config.olmv0 can only be used with provisionerClassName core-rukpak-io-registry"}},
		{Name: "kustomize path needs the kustomize provisioner", Spec: bdSpec("core-rukpak-io-helm", `{path: overlays/prod}`),
			WantErrs: []string{"config.path can only be used with provisionerClassName core-rukpak-io-kustomize"}},
		{Name: "kustomize path must be relative", Spec: bdSpec("core-rukpak-io-kustomize", `{path: /overlays}`),
			WantErrs: []string{"path must be relative (must not start with '/')"}},
		{Name: "kustomize path must not escape", Spec: bdSpec("core-rukpak-io-kustomize", `{path: overlays/../../etc}`),
			WantErrs: []string{"path must not contain '..' elements"}},
		{Name: "helm values must be an object", Spec: bdSpec("core-rukpak-io-helm", `{values: [1, 2]}`),
			WantErrs: []string{"spec.config.values", "must be of type object"}},
		{Name: "valuesFrom kind must be Secret or ConfigMap", Spec: bdSpec("core-rukpak-io-helm", `{valuesFrom: [{kind: Pod, name: v}]}`),
			WantErrs: []string{`spec.config.valuesFrom[0].kind: Unsupported value: "Pod"`}},
		{Name: "valuesFrom name is required", Spec: bdSpec("core-rukpak-io-helm", `{valuesFrom: [{kind: Secret}]}`),
			WantErrs: []string{"spec.config.valuesFrom[0].name: Required value"}},
		{Name: "valuesFrom key must be a data key", Spec: bdSpec("core-rukpak-io-helm", `{valuesFrom: [{kind: Secret, name: v, key: "a/b"}]}`),
			WantErrs: []string{"spec.config.valuesFrom[0].key", "should match"}},
		{Name: "watchNamespaces items must be namespace names", Spec: bdSpec("core-rukpak-io-registry", `{watchNamespaces: [ok, Not_OK]}`),
			WantErrs: []string{"spec.config.watchNamespaces[1]", "should match"}},
		{Name: "watchNamespaces items are unique", Spec: bdSpec("core-rukpak-io-registry", `{watchNamespaces: [a, a]}`),
			WantErrs: []string{"spec.config.watchNamespaces[1]: Duplicate value"}},
		{Name: "deploymentConfig env names are unique", Spec: bdSpec("core-rukpak-io-registry", `{deploymentConfig: {env: [{name: A, value: "1"}, {name: A, value: "2"}]}}`),
			WantErrs: []string{"spec.config.deploymentConfig.env[1]: Duplicate value"}},
	})
}

func TestBundleDeploymentSourceValidation(t *testing.T) {
	suite.CheckCases(t, bundleDeploymentKind, apiservertest.InSpec(plainSpec, apiservertest.SourceCases()))
}

func TestBundleDeploymentDefaults(t *testing.T) {
	obj, err := bundleDeploymentKind.Object("defaults", bdSpec("core-rukpak-io-helm", `{valuesFrom: [{kind: Secret, name: v}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := suite.Client.Create(t.Context(), obj, client.DryRunAll); err != nil {
		t.Fatalf("creating: %v", err)
	}
	valuesFrom := obj.Object["spec"].(map[string]any)["config"].(map[string]any)["valuesFrom"].([]any)
	if key := valuesFrom[0].(map[string]any)["key"]; key != "values.yaml" {
		t.Errorf("spec.config.valuesFrom[0].key defaults to %v, want values.yaml", key)
	}
}

func TestBundleDeploymentImmutableFields(t *testing.T) {
	for _, tc := range []struct {
		name    string
		field   string
		value   string
		wantErr string
	}{
		{name: "installNamespace", field: "installNamespace", value: "elsewhere",
			wantErr: "installNamespace is immutable; delete and recreate the BundleDeployment to move it"},
		{name: "provisionerClassName", field: "provisionerClassName", value: "core-rukpak-io-helm",
			wantErr: "provisionerClassName is immutable; delete and recreate the BundleDeployment to change it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj, err := bundleDeploymentKind.Object("immutable-"+strings.ToLower(tc.name), plainSpec)
			if err != nil {
				t.Fatal(err)
			}
			if err := suite.Client.Create(t.Context(), obj); err != nil {
				t.Fatalf("creating: %v", err)
			}
			t.Cleanup(func() { _ = suite.Client.Delete(context.Background(), obj) })

			obj.Object["spec"].(map[string]any)["source"] = map[string]any{"type": "Image", "image": map[string]any{"ref": "quay.io/org/bundle:v2"}}
			if err := suite.Client.Update(t.Context(), obj); err != nil {
				t.Fatalf("changing spec.source (mutable) was rejected: %v", err)
			}
			obj.Object["spec"].(map[string]any)[tc.field] = tc.value
			apiservertest.CheckVerdict(t, suite.Client.Update(t.Context(), obj), []string{tc.wantErr})
		})
	}
}

// TestBundleDeploymentGoTypesRoundTrip writes a BundleDeployment with every spec field set through
// the Go types and reads it back unchanged: the CRD schema prunes nothing the Go types define.
func TestBundleDeploymentGoTypesRoundTrip(t *testing.T) {
	interval := metav1.Duration{Duration: 10 * time.Minute}
	bd := &rukpakv1alpha1.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "round-trip"},
		Spec: rukpakv1alpha1.BundleDeploymentSpec{
			ProvisionerClassName: rukpakv1alpha1.ProvisionerRegistry,
			InstallNamespace:     "operators",
			Source: rukpakv1alpha1.Source{
				Type: rukpakv1alpha1.SourceTypeImage,
				Image: &rukpakv1alpha1.ImageSource{
					Ref: "quay.io/org/bundle:v1", PullSecret: "pull", InsecureSkipTLSVerify: true, PollInterval: &interval,
					Verify: &rukpakv1alpha1.ImageVerification{Provider: rukpakv1alpha1.VerificationProviderCosign,
						Cosign: &rukpakv1alpha1.CosignVerification{SecretRef: &rukpakv1alpha1.SecretReference{Name: "keys"}}},
				},
			},
			Config: &rukpakv1alpha1.BundleConfig{
				WatchNamespaces: []string{"a", "b"},
				DeploymentConfig: &rukpakv1alpha1.DeploymentConfig{
					Env: []corev1.EnvVar{{Name: "A", Value: "1"}},
					Resources: &corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
					},
					NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
					Tolerations:  []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
					Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
						PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
							Weight:          1,
							PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname"},
						}},
					}},
				},
			},
		},
	}
	assertRoundTrip(t, bd)

	helm := &rukpakv1alpha1.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "round-trip-helm"},
		Spec: rukpakv1alpha1.BundleDeploymentSpec{
			ProvisionerClassName: rukpakv1alpha1.ProvisionerHelm,
			InstallNamespace:     "apps",
			Source: rukpakv1alpha1.Source{
				Type: rukpakv1alpha1.SourceTypeGit,
				Git: &rukpakv1alpha1.GitSource{
					Repository: "https://github.com/org/charts.git", Ref: rukpakv1alpha1.GitRef{Branch: "main"},
					Directory: "charts/app", AuthSecret: "git", PollInterval: &interval,
				},
			},
			Config: &rukpakv1alpha1.BundleConfig{
				Values:     &apiextensionsv1.JSON{Raw: []byte(`{"replicaCount":2}`)},
				ValuesFrom: []rukpakv1alpha1.ValuesReference{{Kind: "Secret", Name: "v", Key: "values.yaml", Optional: true}},
			},
		},
	}
	assertRoundTrip(t, helm)
}

func assertRoundTrip(t *testing.T, bd *rukpakv1alpha1.BundleDeployment) {
	t.Helper()
	want := bd.Spec.DeepCopy()
	if err := suite.Client.Create(t.Context(), bd); err != nil {
		t.Fatalf("creating BundleDeployment %q from the Go types: %v", bd.Name, err)
	}
	t.Cleanup(func() { _ = suite.Client.Delete(context.Background(), bd) })
	got := &rukpakv1alpha1.BundleDeployment{}
	if err := suite.Client.Get(t.Context(), client.ObjectKeyFromObject(bd), got); err != nil {
		t.Fatalf("getting: %v", err)
	}
	if !equality.Semantic.DeepEqual(got.Spec, *want) {
		t.Errorf("spec changed on the way through the API server:\n got  %+v\n want %+v", got.Spec, *want)
	}
}

func TestBundleDeploymentStatusSubresourceAndPrinterColumns(t *testing.T) {
	obj, err := bundleDeploymentKind.Object("printed", plainSpec)
	if err != nil {
		t.Fatal(err)
	}
	suite.AssertStatusSubresource(t, bundleDeploymentKind, obj, `
observedGeneration: 1
conditions:
- {type: Unpacked, status: "True", reason: UnpackSucceeded, message: unpacked, lastTransitionTime: "2026-01-01T00:00:00Z", observedGeneration: 1}
- {type: Installed, status: "True", reason: InstallationSucceeded, message: installed, lastTransitionTime: "2026-01-01T00:00:00Z", observedGeneration: 1}
- {type: Healthy, status: "False", reason: Unhealthy, message: "Deployment default/x is not available", lastTransitionTime: "2026-01-01T00:00:00Z", observedGeneration: 1}
- {type: Paused, status: "False", reason: NotPaused, message: "not paused", lastTransitionTime: "2026-01-01T00:00:00Z", observedGeneration: 1}
resolvedSource: {type: Image, image: {ref: "quay.io/org/bundle@sha256:0000000000000000000000000000000000000000000000000000000000000000"}}
contentHash: "sha256:1111"
installedRevision: 3
history:
- {revision: 3, contentHash: "sha256:1111", installedAt: "2026-01-01T00:00:00Z", healthyAt: "2026-01-01T00:01:00Z", description: "rollback to revision 1: revision 2 was not Healthy", chartVersion: "1.2.0", valuesHash: "sha256:2222", resolvedSource: {type: Image, image: {ref: "quay.io/org/bundle@sha256:0000000000000000000000000000000000000000000000000000000000000000"}}}
`)
	suite.AssertPrinterColumns(t, bundleDeploymentKind, "printed", []apiservertest.Column{
		{Name: "Name", Cell: "printed"},
		{Name: "Provisioner", Cell: "core-rukpak-io-plain"},
		{Name: "Install Namespace", Cell: "default"},
		{Name: "Installed", Cell: "True"},
		{Name: "Healthy", Cell: "False"},
		{Name: "Revision", Cell: "3"},
		{Name: "Paused", Priority: 1, Cell: "False"},
		{Name: "Unpacked", Priority: 1, Cell: "True"},
		{Name: "Source", Priority: 1, Cell: "Image"},
		{Name: "Age"},
	})
}

func TestBundleDeploymentFieldsDocumented(t *testing.T) {
	suite.AssertFieldsDocumented(t, bundleDeploymentKind)
}
