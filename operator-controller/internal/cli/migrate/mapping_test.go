package migrate

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/lib/version"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	v0 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// installed is an operator as OLM v0 leaves it: package widget in namespace ops, watching targets.
func installed(targets ...string) *V0 {
	csv := v0.ClusterServiceVersion{
		ObjectMeta: metav1.ObjectMeta{Name: "widget.v1.4.2", Namespace: "ops", UID: "csv-uid"},
		Spec:       v0.ClusterServiceVersionSpec{Version: operatorVersion("1.4.2")},
		Status:     v0.ClusterServiceVersionStatus{Phase: v0.CSVPhaseSucceeded},
	}
	og := operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Name: "ops-og", Namespace: "ops"}}
	og.Spec.TargetNamespaces = targets
	og.Status.Namespaces = targets
	if len(targets) == 0 {
		og.Status.Namespaces = []string{""}
	}
	sub := v0.Subscription{
		ObjectMeta: metav1.ObjectMeta{Name: "widget-sub", Namespace: "ops"},
		Spec: &v0.SubscriptionSpec{CatalogSource: "community", CatalogSourceNamespace: "olm", Package: "widget", Channel: "stable",
			InstallPlanApproval: v0.ApprovalAutomatic},
		Status: v0.SubscriptionStatus{InstalledCSV: csv.Name},
	}
	cs := &v0.CatalogSource{
		ObjectMeta: metav1.ObjectMeta{Name: "community", Namespace: "olm"},
		Spec:       v0.CatalogSourceSpec{SourceType: v0.SourceTypeGrpc, Image: "quay.io/ops/community-index:v4.20", Priority: -100},
	}
	return &V0{Namespace: "ops", Subscription: &sub, CSV: &csv, CatalogSource: cs,
		OperatorGroups: []operatorsv1.OperatorGroup{og}, Subscriptions: []v0.Subscription{sub}, CSVs: []v0.ClusterServiceVersion{csv}}
}

func TestMapAllNamespaces(t *testing.T) {
	tgt, blockers := Map(installed())
	if len(blockers) > 0 {
		t.Fatalf("blockers: %v", blockers)
	}
	op := tgt.Operator
	want := operatorsv1alpha1.OperatorSpec{
		PackageName: "widget", Channel: "stable", Version: "1.4.2", InstallNamespace: "ops",
		CollisionPolicy: rukpakv1alpha1.CollisionPolicyIfNoController, DeletionPolicy: rukpakv1alpha1.DeletionPolicyOrphan,
		UpgradePolicy:   operatorsv1alpha1.UpgradePolicyAutomatic,
		CatalogSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"olm.operatorframework.io/metadata.name": "community"}},
		Config: &rukpakv1alpha1.BundleConfig{DeploymentConfig: &rukpakv1alpha1.DeploymentConfig{
			Env:         []corev1.EnvVar{{Name: "OPERATOR_CONDITION_NAME", Value: "widget.v1.4.2"}},
			Annotations: map[string]string{"olm.operatorGroup": "ops-og"},
		}},
	}
	if !reflect.DeepEqual(op.Spec, want) {
		t.Errorf("Operator spec\n got %+v\nwant %+v", op.Spec, want)
	}
	if op.Name != "widget" || op.Annotations[AnnotationMigratedFrom] != "ops/widget-sub/widget.v1.4.2" {
		t.Errorf("Operator %s, annotations %v", op.Name, op.Annotations)
	}
	cat := tgt.Catalog
	if cat.Name != "community" || cat.Spec.Source.Image.Ref != "quay.io/ops/community-index:v4.20" || cat.Spec.Priority != -100 ||
		cat.Labels["olm.operatorframework.io/metadata.name"] != "community" {
		t.Errorf("Catalog %+v", cat)
	}
}

func TestMapOwnNamespaceManualWithConfig(t *testing.T) {
	st := installed("ops")
	st.Subscription.Spec.InstallPlanApproval = v0.ApprovalManual
	st.Subscription.Spec.Config = &v0.SubscriptionConfig{
		Env:          []corev1.EnvVar{{Name: "HTTP_PROXY", Value: "http://proxy:3128"}},
		NodeSelector: map[string]string{"role": "infra"},
		Annotations:  map[string]string{"team": "a"},
	}
	tgt, blockers := Map(st)
	if len(blockers) > 0 {
		t.Fatalf("blockers: %v", blockers)
	}
	s := tgt.Operator.Spec
	if s.UpgradePolicy != operatorsv1alpha1.UpgradePolicyManual || !reflect.DeepEqual(s.WatchNamespaces, []string{"ops"}) {
		t.Errorf("upgradePolicy %s, watchNamespaces %v", s.UpgradePolicy, s.WatchNamespaces)
	}
	dc := s.Config.DeploymentConfig
	// spec.config's variables first, then the one OLM v0 injects after them.
	if env := envString(dc.Env); env != "HTTP_PROXY=http://proxy:3128 OPERATOR_CONDITION_NAME=widget.v1.4.2" {
		t.Errorf("env %s", env)
	}
	if !reflect.DeepEqual(dc.NodeSelector, map[string]string{"role": "infra"}) || !reflect.DeepEqual(dc.Annotations, map[string]string{"team": "a", "olm.operatorGroup": "ops-og"}) {
		t.Errorf("deploymentConfig %+v", dc)
	}
}

func TestMapBlockers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*V0)
		want   string
	}{
		{"CSV not Succeeded", func(st *V0) {
			st.CSV.Status = v0.ClusterServiceVersionStatus{Phase: v0.CSVPhaseFailed, Reason: v0.CSVReasonComponentUnhealthy, Message: "deployment not ready"}
		}, "CSV ops/widget.v1.4.2 is in phase Failed (ComponentUnhealthy: deployment not ready), not Succeeded"},
		{"shared OperatorGroup", func(st *V0) {
			st.Subscriptions = append(st.Subscriptions, v0.Subscription{ObjectMeta: metav1.ObjectMeta{Name: "gadget", Namespace: "ops"}})
		}, "OperatorGroup ops/ops-og is shared by Subscription widget-sub and gadget: OLM v0 resolves the operators of one OperatorGroup together"},
		{"two OperatorGroups", func(st *V0) {
			st.OperatorGroups = append(st.OperatorGroups, operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Name: "second"}})
		}, "namespace ops has 2 OperatorGroups (ops-og, second)"},
		{"no OperatorGroup", func(st *V0) { st.OperatorGroups = nil }, "namespace ops has no OperatorGroup"},
		{"required CRD", func(st *V0) {
			st.CSV.Spec.CustomResourceDefinitions.Required = []v0.CRDDescription{{Name: "databases.db.example.com"}}
		}, "CSV widget.v1.4.2 depends on CRD databases.db.example.com: OLM v0 installed it as part of a dependency chain"},
		{"package dependency", func(st *V0) {
			st.CSV.Annotations = map[string]string{"operatorframework.io/properties": `{"properties":[{"type":"olm.package.required","value":{"packageName":"db","versionRange":">=1.0.0"}}]}`}
		}, `depends on olm.package.required {"packageName":"db","versionRange":">=1.0.0"}`},
		{"dependent in the namespace", func(st *V0) {
			st.CSV.Spec.CustomResourceDefinitions.Owned = []v0.CRDDescription{{Name: "widgets.example.com"}}
			st.CSVs = append(st.CSVs, v0.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Name: "app.v1", Namespace: "ops"},
				Spec: v0.ClusterServiceVersionSpec{CustomResourceDefinitions: v0.CustomResourceDefinitions{Required: []v0.CRDDescription{{Name: "widgets.example.com"}}}}})
		}, "CSV ops/app.v1 requires CRD widgets.example.com that CSV widget.v1.4.2 provides"},
		{"APIServices", func(st *V0) {
			st.CSV.Spec.APIServiceDefinitions.Owned = []v0.APIServiceDescription{{Name: "widgets", Group: "example.com", Version: "v1", DeploymentName: "widget-controller"}}
		}, "CSV widget.v1.4.2 owns APIServices: OLM v1 does not install APIServices; keep this operator on OLM v0"},
		{"ConfigMap CatalogSource", func(st *V0) {
			st.CatalogSource.Spec = v0.CatalogSourceSpec{SourceType: v0.SourceTypeConfigmap, ConfigMap: "legacy-catalog"}
		}, "CatalogSource olm/community is served from ConfigMap legacy-catalog (sourceType configmap): OLM v1 Catalogs hold file-based catalogs"},
		{"address-only CatalogSource", func(st *V0) {
			st.CatalogSource.Spec = v0.CatalogSourceSpec{SourceType: v0.SourceTypeGrpc, Address: "10.0.0.5:50051"}
		}, `CatalogSource olm/community has no image (served from address "10.0.0.5:50051")`},
		{"missing CatalogSource", func(st *V0) { st.CatalogSource = nil }, "CatalogSource olm/community of Subscription widget-sub does not exist"},
		{"copied CSV", func(st *V0) { st.CSV.Labels = map[string]string{LabelCopiedFrom: "elsewhere"} }, "is a copy (olm.copiedFrom=elsewhere)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := installed()
			tc.change(st)
			_, blockers := Map(st)
			if !strings.Contains(strings.Join(blockers, "\n"), tc.want) {
				t.Errorf("blockers %q\nlack %q", blockers, tc.want)
			}
		})
	}
}

// A webhook operator is moved in place: OLM v0's volume layout, no blocker, and notes saying what
// changes (the serving certificate) and what to do if the operator does not reload it.
func TestMapWebhooks(t *testing.T) {
	st := installed()
	st.CSV.Spec.WebhookDefinitions = []v0.WebhookDescription{
		{GenerateName: "vwidget.example.com", Type: v0.ValidatingAdmissionWebhook, DeploymentName: "widget-controller"},
		{GenerateName: "cwidget.example.com", Type: v0.ConversionWebhook, DeploymentName: "widget-controller", ConversionCRDs: []string{"widgets.example.com"}},
	}
	v0CA := "-----BEGIN CERTIFICATE-----\nb2xtIHYwJ3MgQ0E=\n-----END CERTIFICATE-----\n"
	hook := map[string]any{"clientConfig": map[string]any{"caBundle": base64.StdEncoding.EncodeToString([]byte(v0CA))}}
	st.Marked = append(st.Marked, deploymentObj("widget-controller", map[string]string{"olmcahash": "0a1b"}, nil, nil),
		deploymentObj("widget-reporter", nil, nil, nil),
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
			"metadata": map[string]any{"name": "vwidget.example.com-x7k2p"}, "webhooks": []any{hook, hook}}})
	tgt, blockers := Map(st)
	if len(blockers) != 0 {
		t.Fatalf("blockers %q", blockers)
	}
	if got := tgt.Operator.Spec.Config.OLMv0; got == nil || got.CAHash != "0a1b" {
		t.Errorf("olmv0 %+v, want caHash 0a1b (the webhook Deployment's olmcahash)", got)
	} else if string(got.CABundle) != v0CA {
		t.Errorf("olmv0.caBundle %q, want OLM v0's CA once: %q", got.CABundle, v0CA)
	}
	notes := strings.Join(tgt.Notes, "\n")
	for _, want := range []string{
		"webhooks of Deployment widget-controller: ValidatingWebhookConfiguration vwidget.example.com (OLM v0's vwidget.example.com-<suffix> is deleted), conversion webhook cwidget.example.com of CRDs widgets.example.com; its pod template stays",
		"OLM v1 re-signs Secret widget-controller-service-cert with its own CA",
		"restart it after the move (kubectl rollout restart deployment/widget-controller)",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q\nlack %q", tgt.Notes, want)
		}
	}
	// Without webhooks the Operator keeps rukpak's default layout.
	if tgt, _ := Map(installed()); tgt.Operator.Spec.Config.OLMv0 != nil {
		t.Errorf("olmv0 %+v without webhooks", tgt.Operator.Spec.Config.OLMv0)
	}
}

func TestMapNothingInstalled(t *testing.T) {
	st := installed()
	st.Subscription.Status.InstalledCSV = ""
	if tgt, blockers := Map(st); tgt != nil || len(blockers) != 1 || !strings.Contains(blockers[0], "nothing is installed") {
		t.Errorf("target %v, blockers %v", tgt, blockers)
	}
}

func deploymentObj(name string, annotations map[string]string, env []any, extra map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": "ops"},
		"spec": map[string]any{"template": map[string]any{
			"metadata": map[string]any{"annotations": toAny(annotations)},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "manager", "image": "op:1", "env": env}}},
		}},
	}}
	for k, v := range extra {
		u.Object["metadata"].(map[string]any)[k] = v
	}
	return u
}

func toAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestCompareClassifiesAndFindsTemplateDifferences(t *testing.T) {
	yes := true
	live := []*unstructured.Unstructured{
		deploymentObj("op", map[string]string{"olm.operatorGroup": "og", "olm.targetNamespaces": ""}, []any{map[string]any{"name": "OPERATOR_CONDITION_NAME", "value": "op.v1"}},
			// A controller reference to the CSV does not block: its flag is cleared first.
			map[string]any{"ownerReferences": []any{map[string]any{"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion", "name": "op.v1", "uid": "c", "controller": yes}}}),
		{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": map[string]any{"name": "op.v1-sa-abc", "namespace": "ops", "labels": map[string]any{LabelOwner: "op.v1"}}}},
		{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "extra", "namespace": "ops"}}},
		{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "sa", "namespace": "ops",
			"ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "Thing", "name": "t", "uid": "u", "controller": yes}}}}},
	}
	rendered := []*unstructured.Unstructured{
		deploymentObj("op", map[string]string{"olm.targetNamespaces": ""}, nil, nil),
		{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "sa", "namespace": "ops"}}},
		{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": map[string]any{"name": "widget-sa", "namespace": "ops"}}},
	}
	r := Compare(live, rendered, "widget", "op.v1")
	var got []string
	for _, o := range r.Objects {
		got = append(got, o.Action+" "+o.Kind+" "+o.Name)
	}
	want := []string{"adopt Deployment op", "adopt ServiceAccount sa", "create Role widget-sa", "delete after Installed Role op.v1-sa-abc", "release ConfigMap extra"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("objects\n got %q\nwant %q", got, want)
	}
	if len(r.Blockers) != 1 || !strings.Contains(r.Blockers[0], "ServiceAccount ops/sa has a controller (Thing t)") {
		t.Errorf("blockers %q", r.Blockers)
	}
	if len(r.ControllerFlags) != 1 || r.ControllerFlags[0].Name != "op" {
		t.Errorf("controller flags to clear: %+v", r.ControllerFlags)
	}
	wantDiff := []string{
		"Deployment ops/op: container manager: env is [OPERATOR_CONDITION_NAME=op.v1], OLM v1 renders []",
		`Deployment ops/op: pod template annotation olm.operatorGroup="og" is running but OLM v1 does not render it`,
	}
	if !reflect.DeepEqual(r.Differences, wantDiff) {
		t.Errorf("differences\n got %q\nwant %q", r.Differences, wantDiff)
	}
	if m := MissingTemplateAnnotations(live, rendered); !reflect.DeepEqual(m, map[string]string{"olm.operatorGroup": "og"}) {
		t.Errorf("missing annotations %v", m)
	}
}

func TestMissingTemplateAnnotationsSkipsConflicts(t *testing.T) {
	live := []*unstructured.Unstructured{
		deploymentObj("a", map[string]string{"x": "1", "y": "same", "olm.operatorNamespace": "ops"}, nil, nil),
		deploymentObj("b", map[string]string{"x": "2", "y": "same"}, nil, nil),
	}
	rendered := []*unstructured.Unstructured{deploymentObj("a", nil, nil, nil), deploymentObj("b", nil, nil, nil)}
	if m := MissingTemplateAnnotations(live, rendered); !reflect.DeepEqual(m, map[string]string{"y": "same"}) {
		t.Errorf("missing annotations %v: want only y (x differs between Deployments; olm.operatorNamespace is rukpak's)", m)
	}
}

func TestParseMigratedFrom(t *testing.T) {
	ns, sub, csv, ok := ParseMigratedFrom(MigratedFrom("ops", "widget-sub", "widget.v1.4.2"))
	if !ok || ns != "ops" || sub != "widget-sub" || csv != "widget.v1.4.2" {
		t.Errorf("%s %s %s %v", ns, sub, csv, ok)
	}
	if _, _, _, ok := ParseMigratedFrom("ops/widget"); ok {
		t.Error("two parts parsed")
	}
}

func TestPhaseOrderSkipsDoneSteps(t *testing.T) {
	if got := len(remainingSteps("")); got != len(Steps) {
		t.Errorf("new migration: %d steps", got)
	}
	if got := remainingSteps(PhaseReleasing); len(got) != 7 || !strings.HasPrefix(got[0], "7. delete the Subscription") {
		t.Errorf("releasing: %q", got)
	}
	if got := remainingSteps(PhaseComplete); len(got) != 0 {
		t.Errorf("complete: %q", got)
	}
}

func operatorVersion(s string) version.OperatorVersion {
	var v version.OperatorVersion
	if err := v.UnmarshalJSON([]byte(`"` + s + `"`)); err != nil {
		panic(err)
	}
	return v
}
