package registryv1

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// Conversion parity with OLM v0 and upstream OLM v1 (issue 16): olm.operatorNamespace, namespaces
// read access in AllNamespaces, deploymentConfig.affinity {} semantics, webhook Service names of
// Deployments with dots, revisionHistoryLimit 1.

const sprocketDeployment = "sprocket-operator.v0.3.1"

func sprocketsRendered(t *testing.T, cfg *rukpakv1alpha1.BundleConfig, edits ...func(map[string]string)) *rendered {
	t.Helper()
	res, err := renderSprockets(t, cfg, edits...)
	if err != nil {
		t.Fatal(err)
	}
	return newRendered(t, res.Objects)
}

func TestOperatorNamespaceAnnotation(t *testing.T) {
	check := func(t *testing.T, r *rendered, ns string) {
		t.Helper()
		n := 0
		for _, o := range r.objs {
			u := o.(*unstructured.Unstructured)
			if u.GetKind() != "Deployment" {
				continue
			}
			n++
			if got := str(u, "spec", "template", "metadata", "annotations", OperatorNamespaceAnnotation); got != ns {
				t.Errorf("Deployment %s: pod template %s = %q, want %q", u.GetName(), OperatorNamespaceAnnotation, got, ns)
			}
			if got := u.GetAnnotations()[OperatorNamespaceAnnotation]; got != ns {
				t.Errorf("Deployment %s: %s = %q, want %q", u.GetName(), OperatorNamespaceAnnotation, got, ns)
			}
		}
		if n == 0 {
			t.Fatalf("no Deployment rendered")
		}
	}
	for name, w := range map[string][]string{"AllNamespaces": nil, "OwnNamespace": {fixtureNS}, "SingleNamespace": {"team-a"}, "MultiNamespace": {"a", "b"}} {
		t.Run("widgets "+name, func(t *testing.T) {
			r, err := renderFS(t, fixtureFS(t, nil), watch(w...), selfSigned)
			if err != nil {
				t.Fatal(err)
			}
			check(t, r, fixtureNS)
		})
	}
	t.Run("sprockets SingleNamespace", func(t *testing.T) {
		r := sprocketsRendered(t, watch("team-a"))
		check(t, r, sprocketsNS)
		// The operator reads it through the downward API.
		d := typedDeploymentIn(t, r, sprocketsNS, sprocketDeployment)
		env := d.Spec.Template.Spec.Containers[0].Env
		if env[1].Name != "OPERATOR_NAMESPACE" || env[1].ValueFrom.FieldRef.FieldPath != "metadata.annotations['olm.operatorNamespace']" {
			t.Errorf("env %v", env)
		}
	})
	t.Run("the bundle's own value is replaced", func(t *testing.T) {
		r := sprocketsRendered(t, nil,
			editFile(t, sprocketCSV, "    capabilities: Seamless Upgrades\n", "    capabilities: Seamless Upgrades\n    olm.operatorNamespace: sprockets-author\n"),
			editFile(t, sprocketCSV, "kubectl.kubernetes.io/default-container: manager\n", "kubectl.kubernetes.io/default-container: manager\n                olm.operatorNamespace: sprockets-author\n"))
		check(t, r, sprocketsNS)
	})
	t.Run("deploymentConfig cannot set it", func(t *testing.T) {
		_, err := renderSprockets(t, &rukpakv1alpha1.BundleConfig{DeploymentConfig: &rukpakv1alpha1.DeploymentConfig{
			Annotations: map[string]string{OperatorNamespaceAnnotation: "x"}}})
		wantInvalid(t, err, ReasonInvalidBundle, `deploymentConfig for deployment "sprocket-operator.v0.3.1"`, `annotation "olm.operatorNamespace" is set by rukpak to the install namespace`)
	})
}

func TestAllNamespacesClusterRoleReadsNamespaces(t *testing.T) {
	nsRule := map[string]any{"apiGroups": []any{""}, "resources": []any{"namespaces"}, "verbs": []any{"get", "list", "watch"}}
	r, err := renderFS(t, fixtureFS(t, nil), nil, selfSigned)
	if err != nil {
		t.Fatal(err)
	}
	rules, _, _ := unstructured.NestedSlice(r.get("ClusterRole /bd-widget-operator").Object, "rules")
	if len(rules) != 3 || !reflect.DeepEqual(rules[2], nsRule) {
		t.Errorf("AllNamespaces ClusterRole from permissions: rules %v, want the bundle's 2 then get/list/watch namespaces", rules)
	}
	// clusterPermissions are the bundle's own, unchanged.
	rules, _, _ = unstructured.NestedSlice(r.get("ClusterRole /bd-widget-operator-cluster").Object, "rules")
	if len(rules) != 1 {
		t.Errorf("ClusterRole from clusterPermissions: rules %v, want only the bundle's", rules)
	}
	// Outside AllNamespaces the operator gets Roles, without access to namespaces.
	for _, w := range [][]string{{fixtureNS}, {"team-a"}, {"a", "b"}} {
		r, err := renderFS(t, fixtureFS(t, nil), watch(w...), selfSigned)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range r.objs {
			u := o.(*unstructured.Unstructured)
			if u.GetKind() == "Role" && grantsNamespacesRead(u) {
				t.Errorf("watch %v: Role %s/%s grants namespaces", w, u.GetNamespace(), u.GetName())
			}
		}
	}
}

func TestRevisionHistoryLimit(t *testing.T) {
	// The sprockets bundle sets 10 and widgets sets none: OLM v0 uses 1 for every CSV Deployment.
	g := typedDeploymentIn(t, sprocketsRendered(t, nil), sprocketsNS, sprocketDeployment)
	r, err := renderFS(t, fixtureFS(t, nil), nil, selfSigned)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []*appsv1.Deployment{g, typedDeployment(t, r, "widget-operator"), typedDeployment(t, r, "widget-reporter")} {
		if d.Spec.RevisionHistoryLimit == nil || *d.Spec.RevisionHistoryLimit != 1 {
			t.Errorf("Deployment %s revisionHistoryLimit %v, want 1", d.Name, d.Spec.RevisionHistoryLimit)
		}
	}
}

// bundleAffinity is the sprockets bundle's own affinity.
var bundleAffinity = &corev1.Affinity{
	NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}},
		}}},
	}},
	PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
		Weight: 100,
		PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"control-plane": "sprocket-operator"},
		}},
	}}},
}

func TestDeploymentConfigAffinity(t *testing.T) {
	zone := &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"eu-1a"}},
		}}},
	}}
	for _, tc := range []struct {
		name string
		// config is spec.config.deploymentConfig as a user writes it (YAML), so that `{}` is parsed
		// the way the API server hands it over.
		config string
		want   *corev1.Affinity
	}{
		{name: "unset keeps the bundle's", config: `{}`, want: bundleAffinity},
		{name: "empty affinity clears it", config: `{affinity: {}}`, want: nil},
		{name: "empty nodeAffinity clears only that", config: `{affinity: {nodeAffinity: {}}}`,
			want: &corev1.Affinity{PodAntiAffinity: bundleAffinity.PodAntiAffinity}},
		{name: "empty lists count as empty", config: `{affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: []}}}`,
			want: &corev1.Affinity{NodeAffinity: bundleAffinity.NodeAffinity}},
		{name: "clearing both parts leaves no affinity", config: `{affinity: {nodeAffinity: {}, podAntiAffinity: {}}}`, want: nil},
		{name: "a part replaces the bundle's part", config: `{affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [eu-1a]}]}]}}}}`,
			want: &corev1.Affinity{NodeAffinity: zone, PodAntiAffinity: bundleAffinity.PodAntiAffinity}},
		{name: "a new part is added, the others kept", config: `{affinity: {podAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, podAffinityTerm: {topologyKey: kubernetes.io/hostname}}]}}}`,
			want: &corev1.Affinity{NodeAffinity: bundleAffinity.NodeAffinity, PodAntiAffinity: bundleAffinity.PodAntiAffinity, PodAffinity: &corev1.PodAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname"}}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dc := &rukpakv1alpha1.DeploymentConfig{}
			if err := yaml.UnmarshalStrict([]byte(tc.config), dc); err != nil {
				t.Fatal(err)
			}
			d := typedDeploymentIn(t, sprocketsRendered(t, &rukpakv1alpha1.BundleConfig{DeploymentConfig: dc}), sprocketsNS, sprocketDeployment)
			if got := d.Spec.Template.Spec.Affinity; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("affinity\n got %v\nwant %v", got, tc.want)
			}
		})
	}
	// The bundle itself is not changed by an override (renders stay independent).
	if got := overrideAffinity(bundleAffinity, &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}); got.NodeAffinity != nil || bundleAffinity.NodeAffinity == nil {
		t.Errorf("overrideAffinity changed its input")
	}
}

func TestWebhookServiceName(t *testing.T) {
	long := strings.Repeat("a", 70)
	for _, tc := range []struct{ deployment, want string }{
		{"widget-operator", "widget-operator-service"},
		{"sprocket-operator.v0.3.1", "sprocket-operator-v0-3-1-service"},
		{"3scale-operator", "svc-3scale-operator-service"},
		{long, strings.Repeat("a", 63-len("-service")-11) + "-" + hash10(long) + "-service"},
		{long + ".b", strings.Repeat("a", 63-len("-service")-11) + "-" + hash10(long+".b") + "-service"},
		{strings.Repeat("a", 43) + "." + strings.Repeat("b", 30), strings.Repeat("a", 43) + "-" + hash10(strings.Repeat("a", 43)+"."+strings.Repeat("b", 30)) + "-service"},
	} {
		got := WebhookServiceName(tc.deployment)
		if got != tc.want {
			t.Errorf("WebhookServiceName(%q) = %q, want %q", tc.deployment, got, tc.want)
		}
		if errs := validation.IsDNS1035Label(got); len(errs) > 0 {
			t.Errorf("WebhookServiceName(%q) = %q is no valid Service name: %v", tc.deployment, got, errs)
		}
	}
}

// hash10 is the first 10 hex digits of the SHA-256 of s.
func hash10(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:10]
}

func TestWebhookOfDeploymentWithDots(t *testing.T) {
	for _, w := range [][]string{nil, {"team-a"}} {
		r := sprocketsRendered(t, watch(w...))
		const svc = "sprocket-operator-v0-3-1-service"
		s := r.get("Service " + sprocketsNS + "/" + svc)
		if sel, _, _ := unstructured.NestedStringMap(s.Object, "spec", "selector"); !reflect.DeepEqual(sel, map[string]string{"control-plane": "sprocket-operator"}) {
			t.Errorf("Service selector %v", sel)
		}
		r.get("Secret " + sprocketsNS + "/" + svc + "-cert")
		if got := webhookTargets(r); !reflect.DeepEqual(got, []string{"ValidatingWebhookConfiguration/vsprocket.example.com→" + sprocketsNS + "/" + svc + ":443"}) {
			t.Errorf("webhooks %v", got)
		}
		d := typedDeploymentIn(t, r, sprocketsNS, sprocketDeployment)
		mounted := false
		for _, v := range d.Spec.Template.Spec.Volumes {
			mounted = mounted || (v.Secret != nil && v.Secret.SecretName == svc+"-cert")
		}
		if !mounted {
			t.Errorf("the serving Secret %s-cert is not mounted: %v", svc, d.Spec.Template.Spec.Volumes)
		}
	}

	// Two webhook Deployments whose names differ only by dots and dashes would share a Service.
	_, err := renderSprockets(t, nil, func(f map[string]string) {
		csv := f[sprocketCSV]
		i := strings.Index(csv, "      - name: sprocket-operator.v0.3.1\n")
		j := strings.Index(csv, "  webhookdefinitions:\n")
		second := strings.Replace(csv[i:j], "name: sprocket-operator.v0.3.1", "name: sprocket-operator-v0-3-1", 1)
		hook := csv[j+len("  webhookdefinitions:\n"):]
		hook2 := strings.Replace(strings.Replace(hook, "deploymentName: sprocket-operator.v0.3.1", "deploymentName: sprocket-operator-v0-3-1", 1), "vsprocket.example.com", "v2sprocket.example.com", 1)
		f[sprocketCSV] = csv[:j] + second + csv[j:] + hook2
	})
	wantInvalid(t, err, ReasonInvalidBundle, `the webhook Deployments "sprocket-operator-v0-3-1" and "sprocket-operator.v0.3.1" would both be served by Service "sprocket-operator-v0-3-1-service"`, "rename one of them")
}
