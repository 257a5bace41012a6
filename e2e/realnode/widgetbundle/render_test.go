package widgetbundle

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/olmv1/olmv1/rukpak/pkg/bundlevalidate"
)

const testImage = "10.201.0.1:5000/widget-operator@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func renderCSV(t *testing.T, dir string) *operatorsv1alpha1.ClusterServiceVersion {
	t.Helper()
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	readYAML(t, filepath.Join(dir, CSVFile), csv)
	return csv
}

func TestRenderBundle(t *testing.T) {
	for _, version := range Versions {
		t.Run(version, func(t *testing.T) {
			dir := t.TempDir()
			if err := RenderBundle(dir, version, testImage); err != nil {
				t.Fatal(err)
			}
			csv := renderCSV(t, dir)
			if csv.Name != "widget-operator.v"+version || csv.Spec.Version.String() != version {
				t.Errorf("name %q version %q", csv.Name, csv.Spec.Version.String())
			}
			wantReplaces := map[string]string{"1.0.0": "", "1.1.0": "widget-operator.v1.0.0"}[version]
			if csv.Spec.Replaces != wantReplaces {
				t.Errorf("replaces %q, want %q", csv.Spec.Replaces, wantReplaces)
			}
			checkInstallModes(t, csv)
			checkDeployment(t, csv, version)
			checkWebhooks(t, csv)
			checkCRD(t, dir, csv)

			var ann struct{ Annotations map[string]string }
			readYAML(t, filepath.Join(dir, AnnotationsFile), &ann)
			if ann.Annotations["operators.operatorframework.io.bundle.package.v1"] != Package ||
				ann.Annotations["operators.operatorframework.io.bundle.mediatype.v1"] != "registry+v1" ||
				ann.Annotations["operators.operatorframework.io.bundle.channel.default.v1"] != Channel {
				t.Errorf("annotations %v", ann.Annotations)
			}

			report, err := bundlevalidate.Validate(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range report.Problems {
				t.Log(p.String())
			}
			if !report.Valid() || report.Package != Package || report.Version != version {
				t.Errorf("bundlevalidate: %d errors, package %q, version %q", report.Errors(), report.Package, report.Version)
			}
		})
	}
}

func checkInstallModes(t *testing.T, csv *operatorsv1alpha1.ClusterServiceVersion) {
	t.Helper()
	got := map[operatorsv1alpha1.InstallModeType]bool{}
	for _, m := range csv.Spec.InstallModes {
		got[m.Type] = m.Supported
	}
	want := map[operatorsv1alpha1.InstallModeType]bool{
		operatorsv1alpha1.InstallModeTypeAllNamespaces: true, operatorsv1alpha1.InstallModeTypeOwnNamespace: false,
		operatorsv1alpha1.InstallModeTypeSingleNamespace: false, operatorsv1alpha1.InstallModeTypeMultiNamespace: false,
	}
	if len(got) != len(want) {
		t.Errorf("install modes %v, want %v", got, want)
	}
	for k, v := range want {
		if s, ok := got[k]; !ok || s != v {
			t.Errorf("install mode %s supported=%v, want %v", k, s, v)
		}
	}
}

func checkDeployment(t *testing.T, csv *operatorsv1alpha1.ClusterServiceVersion, version string) {
	t.Helper()
	spec := csv.Spec.InstallStrategy.StrategySpec
	if csv.Spec.InstallStrategy.StrategyName != "deployment" || len(spec.DeploymentSpecs) != 1 {
		t.Fatalf("install strategy %q with %d deployments", csv.Spec.InstallStrategy.StrategyName, len(spec.DeploymentSpecs))
	}
	d := spec.DeploymentSpecs[0]
	pod := d.Spec.Template.Spec
	if d.Name != "widget-operator" || *d.Spec.Replicas != 1 || pod.ServiceAccountName != "widget-operator" || len(pod.Containers) != 1 {
		t.Fatalf("deployment %q replicas %d sa %q containers %d", d.Name, *d.Spec.Replicas, pod.ServiceAccountName, len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Name != "manager" || c.Image != testImage {
		t.Errorf("container %q image %q", c.Name, c.Image)
	}
	if len(c.Env) != 1 || c.Env[0] != (corev1.EnvVar{Name: "WIDGET_OPERATOR_VERSION", Value: version}) {
		t.Errorf("env %v", c.Env)
	}
	var ports []int32
	for _, p := range c.Ports {
		ports = append(ports, p.ContainerPort)
	}
	if !slices.Equal(ports, []int32{9443, 8081}) {
		t.Errorf("ports %v", ports)
	}
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.ReadinessProbe.HTTPGet.Port.IntValue() != 8081 ||
		c.LivenessProbe.HTTPGet.Path != "/healthz" || c.LivenessProbe.HTTPGet.Port.IntValue() != 8081 {
		t.Errorf("probes %+v %+v", c.ReadinessProbe, c.LivenessProbe)
	}
	if c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
		t.Errorf("terminationMessagePolicy %q", c.TerminationMessagePolicy)
	}
	r := c.Resources
	if r.Requests.Cpu().String() != "10m" || r.Requests.Memory().String() != "32Mi" || r.Limits.Memory().String() != "128Mi" {
		t.Errorf("resources %v", r)
	}
	sc := c.SecurityContext
	if sc == nil || !*sc.RunAsNonRoot || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("securityContext %+v", sc)
	}
	if len(spec.ClusterPermissions) != 1 || spec.ClusterPermissions[0].ServiceAccountName != "widget-operator" {
		t.Fatalf("clusterPermissions %+v", spec.ClusterPermissions)
	}
	verbs := map[string][]string{}
	for _, rule := range spec.ClusterPermissions[0].Rules {
		for _, res := range rule.Resources {
			verbs[res] = rule.Verbs
		}
	}
	for res, want := range map[string][]string{
		"widgets":        {"get", "list", "watch", "update", "patch"},
		"widgets/status": {"get", "update", "patch"},
		"events":         {"create", "patch"},
	} {
		if !slices.Equal(verbs[res], want) {
			t.Errorf("%s verbs %v, want %v", res, verbs[res], want)
		}
	}
}

func checkWebhooks(t *testing.T, csv *operatorsv1alpha1.ClusterServiceVersion) {
	t.Helper()
	want := map[string]struct {
		typ  operatorsv1alpha1.WebhookAdmissionType
		path string
	}{
		"vwidget.widgets.olmv1.io": {operatorsv1alpha1.ValidatingAdmissionWebhook, "/validate-widget"},
		"mwidget.widgets.olmv1.io": {operatorsv1alpha1.MutatingAdmissionWebhook, "/mutate-widget"},
		"cwidget.widgets.olmv1.io": {operatorsv1alpha1.ConversionWebhook, "/convert"},
	}
	if len(csv.Spec.WebhookDefinitions) != len(want) {
		t.Fatalf("%d webhook definitions, want %d", len(csv.Spec.WebhookDefinitions), len(want))
	}
	for _, w := range csv.Spec.WebhookDefinitions {
		exp, ok := want[w.GenerateName]
		if !ok {
			t.Errorf("unexpected webhook %q", w.GenerateName)
			continue
		}
		if w.Type != exp.typ || w.WebhookPath == nil || *w.WebhookPath != exp.path || w.DeploymentName != "widget-operator" ||
			w.ContainerPort != 443 || w.TargetPort == nil || w.TargetPort.IntValue() != 9443 {
			t.Errorf("webhook %s: %+v", w.GenerateName, w)
		}
		if w.Type == operatorsv1alpha1.ConversionWebhook {
			if !slices.Equal(w.ConversionCRDs, []string{"widgets.widgets.olmv1.io"}) {
				t.Errorf("conversionCRDs %v", w.ConversionCRDs)
			}
			continue
		}
		if w.FailurePolicy == nil || *w.FailurePolicy != "Fail" || w.SideEffects == nil || *w.SideEffects != "None" ||
			!slices.Equal(w.AdmissionReviewVersions, []string{"v1"}) || len(w.Rules) != 1 {
			t.Fatalf("webhook %s: %+v", w.GenerateName, w)
		}
		r := w.Rules[0]
		if !slices.Equal(r.APIGroups, []string{"widgets.olmv1.io"}) || !slices.Equal(r.APIVersions, []string{"v1", "v2"}) ||
			!slices.Equal(r.Resources, []string{"widgets"}) || len(r.Operations) != 2 || r.Operations[0] != "CREATE" || r.Operations[1] != "UPDATE" {
			t.Errorf("webhook %s rules %+v", w.GenerateName, r)
		}
	}
}

func checkCRD(t *testing.T, dir string, csv *operatorsv1alpha1.ClusterServiceVersion) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	readYAML(t, filepath.Join(dir, CRDFile), crd)
	if crd.Name != "widgets.widgets.olmv1.io" || crd.Spec.Scope != apiextensionsv1.NamespaceScoped || crd.Spec.Names.Kind != "Widget" {
		t.Fatalf("CRD %q scope %q kind %q", crd.Name, crd.Spec.Scope, crd.Spec.Names.Kind)
	}
	if c := crd.Spec.Conversion; c == nil || c.Strategy != apiextensionsv1.WebhookConverter {
		t.Errorf("conversion %+v", c)
	}
	field := map[string]string{"v1": "size", "v2": "replicas"}
	for _, v := range crd.Spec.Versions {
		if !v.Served || v.Storage != (v.Name == "v1") || v.Subresources == nil || v.Subresources.Status == nil {
			t.Errorf("version %s: served %v storage %v subresources %+v", v.Name, v.Served, v.Storage, v.Subresources)
		}
		props := v.Schema.OpenAPIV3Schema.Properties
		if props["spec"].Properties[field[v.Name]].Type != "integer" {
			t.Errorf("version %s: spec.%s is not an integer", v.Name, field[v.Name])
		}
		for f, typ := range map[string]string{"observedSize": "integer", "phase": "string", "operatorVersion": "string", "message": "string"} {
			if props["status"].Properties[f].Type != typ {
				t.Errorf("version %s: status.%s is not a %s", v.Name, f, typ)
			}
		}
		delete(field, v.Name)
	}
	if len(field) != 0 || len(crd.Spec.Versions) != 2 {
		t.Errorf("CRD versions: missing %v", field)
	}
	var owned []string
	for _, o := range csv.Spec.CustomResourceDefinitions.Owned {
		owned = append(owned, o.Name+"/"+o.Version+"/"+o.Kind)
	}
	if !slices.Equal(owned, []string{"widgets.widgets.olmv1.io/v1/Widget", "widgets.widgets.olmv1.io/v2/Widget"}) {
		t.Errorf("owned CRDs %v", owned)
	}
}

func TestRenderBundleSpecEnv(t *testing.T) {
	dir := t.TempDir()
	err := RenderBundleSpec(dir, BundleSpec{Version: "1.2.0", OperatorImage: testImage, Replaces: "1.1.0",
		Env: map[string]string{"WIDGET_CRASH": "true", "A": `quote"d`}})
	if err != nil {
		t.Fatal(err)
	}
	csv := renderCSV(t, dir)
	if csv.Spec.Replaces != "widget-operator.v1.1.0" {
		t.Errorf("replaces %q", csv.Spec.Replaces)
	}
	env := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers[0].Env
	want := []corev1.EnvVar{{Name: "WIDGET_OPERATOR_VERSION", Value: "1.2.0"}, {Name: "A", Value: `quote"d`}, {Name: "WIDGET_CRASH", Value: "true"}}
	if !slices.Equal(env, want) {
		t.Errorf("env %v, want %v", env, want)
	}
}

func TestRenderBundleErrors(t *testing.T) {
	for name, c := range map[string]struct {
		spec BundleSpec
		want string
	}{
		"bad version":     {BundleSpec{Version: "v1", OperatorImage: testImage}, "is not a version such as 1.0.0"},
		"bad replaces":    {BundleSpec{Version: "1.0.1", Replaces: "x", OperatorImage: testImage}, `replaces "x" is not a version`},
		"no image":        {BundleSpec{Version: "1.0.0"}, "the operator image is empty"},
		"version env set": {BundleSpec{Version: "1.0.0", OperatorImage: testImage, Env: map[string]string{VersionEnv: "x"}}, "leave it out"},
	} {
		t.Run(name, func(t *testing.T) {
			err := RenderBundleSpec(t.TempDir(), c.spec)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
