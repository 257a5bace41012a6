package controller

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/olmv1/olmv1/platform/step"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/helm"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/plain"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
)

// renderIn runs the render step of bd over the bundle in dir.
func renderIn(t *testing.T, r *BundleDeploymentReconciler, bd *rukpakv1alpha1.BundleDeployment, dir string) (*state, error) {
	t.Helper()
	st := &state{unpacked: &source.Result{Dir: dir}}
	return st, r.render(t.Context(), bd, st)
}

func bdOf(class rukpakv1alpha1.ProvisionerClassName, cfg *rukpakv1alpha1.BundleConfig) *rukpakv1alpha1.BundleDeployment {
	return &rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec: rukpakv1alpha1.BundleDeploymentSpec{ProvisionerClassName: class, InstallNamespace: "ns", Config: cfg}}
}

// The render step gathers what the renderer needs before rendering; without a Gatherer the scopes
// of kinds come from the client's RESTMapper.
func TestRenderGathersScopesFromTheClient(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifests", "t.yaml"), []byte("apiVersion: tenancy.example.com/v1\nkind: Tenant\nmetadata: {name: acme}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "tenancy.example.com", Version: "v1", Kind: "Tenant"}, meta.RESTScopeRoot)
	r := &BundleDeploymentReconciler{
		Client:    fake.NewClientBuilder().WithRESTMapper(mapper).Build(),
		Renderers: map[rukpakv1alpha1.ProvisionerClassName]provisioner.Renderer{rukpakv1alpha1.ProvisionerPlain: plain.New()},
	}
	st, err := renderIn(t, r, bdOf(rukpakv1alpha1.ProvisionerPlain, nil), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.objects) != 1 || st.objects[0].GetNamespace() != "" {
		t.Fatalf("the Tenant (cluster-scoped per the client's mapper) was rendered as %v", st.objects)
	}
}

// What gathering cannot read, or finds missing, fails the Unpacked condition with the reason and
// message a render that read the cluster itself gave: retried, not terminal.
func TestRenderReportsGatheringProblems(t *testing.T) {
	demo := filepath.Join("..", "provisioner", "helm", "testdata", "demo")
	r := &BundleDeploymentReconciler{
		Client:    fake.NewClientBuilder().Build(),
		Renderers: map[rukpakv1alpha1.ProvisionerClassName]provisioner.Renderer{rukpakv1alpha1.ProvisionerHelm: helm.New()},
		Gatherer: &provisioner.Gatherer{
			Values: fake.NewClientBuilder().Build(),
			Capabilities: func(context.Context) (*provisioner.Capabilities, error) {
				return &provisioner.Capabilities{KubeVersion: "v1.37.2"}, nil
			},
		},
	}
	missing := bdOf(rukpakv1alpha1.ProvisionerHelm, &rukpakv1alpha1.BundleConfig{ValuesFrom: []rukpakv1alpha1.ValuesReference{{Kind: "Secret", Name: "absent"}}})
	_, err := renderIn(t, r, missing, demo)
	wantStepError(t, err, rukpakv1alpha1.ReasonInvalidBundle, false,
		`rendering the bundle: spec.config.valuesFrom[0]: Secret ns/absent key "values.yaml" does not exist: create it in the install namespace or mark the reference optional`)

	r.Gatherer.Capabilities = func(context.Context) (*provisioner.Capabilities, error) {
		return nil, errors.New("reading the server version: connection refused")
	}
	_, err = renderIn(t, r, bdOf(rukpakv1alpha1.ProvisionerHelm, nil), demo)
	wantStepError(t, err, rukpakv1alpha1.ReasonInvalidBundle, false,
		"rendering the bundle: discovering the cluster's version and API versions for .Capabilities: reading the server version: connection refused")
}

func wantStepError(t *testing.T, err error, reason string, terminal bool, msg string) {
	t.Helper()
	se, ok := step.As(err)
	if !ok || se.Condition != rukpakv1alpha1.TypeUnpacked || se.Reason != reason || se.Terminal != terminal || se.Error() != msg {
		t.Errorf("step error %+v, want Unpacked %s (terminal %v): %q", se, reason, terminal, msg)
	}
}

// The render step takes what a revision records from the render's Result (helm: the chart version
// and values hash, under the keys status.history reads); a renderer with nothing to record leaves
// st.info empty.
func TestRenderRecordsTheResultsRevisionInfo(t *testing.T) {
	if InfoChartVersion != helm.InfoChartVersion || InfoValuesHash != helm.InfoValuesHash {
		t.Fatalf("the controller reads %q and %q, the helm renderer reports %q and %q", InfoChartVersion, InfoValuesHash, helm.InfoChartVersion, helm.InfoValuesHash)
	}
	demo := filepath.Join("..", "provisioner", "helm", "testdata", "demo")
	r := &BundleDeploymentReconciler{
		Client: fake.NewClientBuilder().Build(),
		Renderers: map[rukpakv1alpha1.ProvisionerClassName]provisioner.Renderer{
			rukpakv1alpha1.ProvisionerHelm: helm.New(), rukpakv1alpha1.ProvisionerPlain: plain.New(),
		},
		Gatherer: &provisioner.Gatherer{Values: fake.NewClientBuilder().Build()},
	}
	st, err := renderIn(t, r, bdOf(rukpakv1alpha1.ProvisionerHelm, nil), demo)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := st.info[InfoChartVersion].(string); v != "1.2.0" {
		t.Errorf("chart version %v, want the demo chart's 1.2.0 (info %v)", st.info[InfoChartVersion], st.info)
	}
	if h, _ := st.info[InfoValuesHash].(string); len(h) != len("sha256:")+64 {
		t.Errorf("values hash %v (info %v)", st.info[InfoValuesHash], st.info)
	}

	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifests", "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err = renderIn(t, r, bdOf(rukpakv1alpha1.ProvisionerPlain, nil), dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.info != nil {
		t.Errorf("plain records %v with a revision, want nothing", st.info)
	}
}
