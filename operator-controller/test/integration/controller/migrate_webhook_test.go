package controller

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/operator-controller/internal/cli/command"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/migrate/v0fixture"
	"github.com/olmv1/olmv1/platform/sharedtestdata"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/bundlerender"
)

// gizmoWebhookBundle is the gizmo bundle with a validating webhook.
var gizmoWebhookBundle = filepath.Join("..", "..", "..", "internal", "cli", "migrate", "testdata", "gizmo-webhook-operator")

// A webhook operator as OLM v0 leaves it (its Service, serving Secret, RBAC, webhook configuration
// named from generateName, and the cert volumes and olmcahash in the pod template) is refused with
// what blocks and what to do, and nothing changes: rukpak's own render of the same bundle mounts
// the Secret under other volume names, so adopting would replace the pods.
func TestMigrateRefusesAWebhookOperatorPrecisely(t *testing.T) {
	playCatalogdAndRukpak(t)
	ctx := context.Background()
	pkg, ns, dep := "gizmo-webhook-operator", "mig-webhook", "gizmo-webhook-controller-manager"
	_, cr := v0Install(t, pkg, ns, v0fixture.Options{Dir: gizmoWebhookBundle})
	t.Cleanup(func() {
		_ = k8s.DeleteAllOf(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{}, client.MatchingLabels{"olm.webhook-description-generate-name": "vgizmo.example.com"})
		_ = k8s.Delete(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: dep + "-service-system:auth-delegator"}})
		_ = k8s.Delete(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: dep + "-service-auth-reader", Namespace: "kube-system"}})
	})
	before := &appsv1.Deployment{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: dep}, before); err != nil {
		t.Fatal(err)
	}
	// The fixture is OLM v0's shape.
	if before.Spec.Template.Annotations["olmcahash"] == "" || !hasVolume(before.Spec.Template.Spec.Volumes, "webhook-cert", dep+"-service-cert") ||
		!hasVolume(before.Spec.Template.Spec.Volumes, "apiservice-cert", dep+"-service-cert") {
		t.Fatalf("OLM v0's pod template: %+v %+v", before.Spec.Template.Annotations, before.Spec.Template.Spec.Volumes)
	}
	sec := &corev1.Secret{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: dep + "-service-cert"}, sec); err != nil || sec.Annotations["olmcahash"] != before.Spec.Template.Annotations["olmcahash"] {
		t.Fatalf("serving Secret: %v %v", err, sec.Annotations)
	}
	vwcs := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	if err := k8s.List(ctx, vwcs, client.MatchingLabels{"olm.webhook-description-generate-name": "vgizmo.example.com"}); err != nil || len(vwcs.Items) != 1 ||
		!strings.HasPrefix(vwcs.Items[0].Name, "vgizmo.example.com-") || vwcs.Items[0].Name == "vgizmo.example.com-" {
		t.Fatalf("OLM v0's webhook configuration: %v %+v", err, vwcs.Items)
	}
	// rukpak's render of the same bundle: other volume names, no olmcahash.
	res, err := bundlerender.Render(ctx, gizmoWebhookBundle, bundlerender.Options{Name: pkg, InstallNamespace: ns, Provisioner: rukpakv1alpha1.ProvisionerRegistry,
		CertProvider: bundlerender.SelfSigned, Cluster: &bundlerender.Cluster{Mapper: k8s.RESTMapper()}})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range res.Objects {
		if u.GetKind() != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
			t.Fatal(err)
		}
		if !hasVolume(d.Spec.Template.Spec.Volumes, "rukpak-webhook-cert", dep+"-service-cert") || hasVolume(d.Spec.Template.Spec.Volumes, "webhook-cert", dep+"-service-cert") ||
			d.Spec.Template.Annotations["olmcahash"] != "" {
			t.Errorf("rukpak's render changed: the refusal's wording must follow it: %+v %+v", d.Spec.Template.Annotations, d.Spec.Template.Spec.Volumes)
		}
	}

	for _, dryRun := range []bool{true, false} {
		out, err := runMigrate(t, ns, dryRun, 0)
		if !command.IsSilent(err) {
			t.Fatalf("migrate (dry run %v): %v, want it refused\n%s", dryRun, err, out)
		}
		for _, want := range []string{
			"Cannot migrate:",
			"CSV gizmo-webhook-operator.v1.2.0 has webhooks that cannot be adopted without restarting the operator: Deployment " + dep +
				" serves ValidatingWebhookConfiguration vgizmo.example.com-<suffix> (OLM v1 would add vgizmo.example.com beside it)",
			"OLM v0 mounts Secret " + dep + "-service-cert (signed by OLM v0's CA) as volumes webhook-cert and apiservice-cert",
			"What to do: keep it on OLM v0 (nothing was changed)",
			"then install it with `kubectl olmv1 install " + pkg + "`",
		} {
			if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	}
	// Nothing changed: no Operator or Catalog, the Deployment, its template, the webhook configuration
	// and the custom resource as they were.
	if _, err := getOperator(pkg); !apierrors.IsNotFound(err) {
		t.Errorf("an Operator was created: %v", err)
	}
	after := &appsv1.Deployment{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: dep}, after); err != nil {
		t.Fatal(err)
	}
	if after.UID != before.UID || after.Generation != before.Generation || !reflect.DeepEqual(after.Spec.Template, before.Spec.Template) ||
		!reflect.DeepEqual(after.OwnerReferences, before.OwnerReferences) {
		t.Errorf("the Deployment changed")
	}
	got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: vwcs.Items[0].Name}, got); err != nil || got.ResourceVersion != vwcs.Items[0].ResourceVersion {
		t.Errorf("OLM v0's webhook configuration changed: %v", err)
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(cr.GroupVersionKind())
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(cr), live); err != nil {
		t.Errorf("the Gizmo: %v", err)
	}
}

func hasVolume(vols []corev1.Volume, name, secret string) bool {
	for _, v := range vols {
		if v.Name == name && v.Secret != nil && v.Secret.SecretName == secret {
			return true
		}
	}
	return false
}

// The real cert-manager 1.16.5 bundle (../shared/testdata, or $OLMV1_TESTDATA), installed the OLM v0
// way with its validating and mutating webhooks, is refused naming its webhook Deployment and both
// configurations; nothing changes.
func TestMigrateRefusesARealWebhookOperator(t *testing.T) {
	root, ok := sharedtestdata.Root()
	dir := filepath.Join(root, "bundles", "cert-manager", "1.16.5")
	if _, err := os.Stat(dir); !ok || err != nil {
		t.Skipf("the shared test data has no bundles/cert-manager/1.16.5 (set OLMV1_TESTDATA to ../shared/testdata): %v", err)
	}
	installV0CRDs(t)
	ctx := context.Background()
	ns := "mig-cert-manager"
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	inst, err := v0fixture.Install(ctx, k8s, v0fixture.Options{Dir: dir, Package: "cert-manager", Namespace: ns, OperatorGroup: "og", Subscription: "gizmo",
		Channel: "stable", CatalogSource: "cert-manager-catalog", CatalogNamespace: ns, CatalogImage: gizmoCatalogImage})
	if err != nil {
		t.Fatalf("installing cert-manager the OLM v0 way: %v", err)
	}
	owned := client.MatchingLabels{"olm.owner": inst.CSV.Name}
	t.Cleanup(func() {
		_ = k8s.DeleteAllOf(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{}, owned)
		_ = k8s.DeleteAllOf(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{}, owned)
	})
	before := map[string]*appsv1.Deployment{}
	for _, d := range inst.Deployments {
		live := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(d), live); err != nil {
			t.Fatal(err)
		}
		before[d.Name] = live
	}
	if !hasVolume(before["cert-manager-webhook"].Spec.Template.Spec.Volumes, "webhook-cert", "cert-manager-webhook-service-cert") {
		t.Fatalf("the webhook Deployment lacks OLM v0's cert volume: %+v", before["cert-manager-webhook"].Spec.Template.Spec.Volumes)
	}
	out, err := runMigrate(t, ns, true, 0)
	if !command.IsSilent(err) {
		t.Fatalf("migrate: %v, want it refused\n%s", err, out)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"CSV " + inst.CSV.Name + " has webhooks that cannot be adopted without restarting the operator: Deployment cert-manager-webhook serves " +
			"ValidatingWebhookConfiguration validate.webhooks.cert-manager.io-<suffix> (OLM v1 would add validate.webhooks.cert-manager.io beside it) and " +
			"MutatingWebhookConfiguration mutate.webhooks.cert-manager.io-<suffix>",
		"OLM v0 mounts Secret cert-manager-webhook-service-cert (signed by OLM v0's CA) as volumes webhook-cert and apiservice-cert",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for name, b := range before {
		after := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(b), after); err != nil {
			t.Fatal(err)
		}
		if after.UID != b.UID || !reflect.DeepEqual(after.Spec.Template, b.Spec.Template) {
			t.Errorf("Deployment %s changed", name)
		}
	}
}
