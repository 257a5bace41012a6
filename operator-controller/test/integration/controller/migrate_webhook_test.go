package controller

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/operator-controller/internal/cli/migrate/v0fixture"
	"github.com/olmv1/olmv1/platform/sharedtestdata"
)

// gizmoWebhookBundle is the gizmo bundle with a validating webhook.
var gizmoWebhookBundle = filepath.Join("..", "..", "..", "internal", "cli", "migrate", "testdata", "gizmo-webhook-operator")

// A webhook operator as OLM v0 leaves it (its Service, serving Secret, RBAC, webhook configuration
// named from generateName, and the cert volumes and olmcahash in the pod template) is moved in
// place: the Operator renders OLM v0's cert volumes and keeps olmcahash (spec.config.olmv0), so the Deployment keeps its UID and pod template; OLM v1 adopts the Service and the
// Secret (re-signed by its CA), creates its webhook configuration and deletes OLM v0's, and the
// custom resource stays.
func TestMigrateAdoptsAWebhookOperatorInPlace(t *testing.T) {
	playCatalogdAndRukpak(t)
	ctx := context.Background()
	pkg, ns, dep := "gizmo-webhook-operator", "mig-webhook", "gizmo-webhook-controller-manager"
	_, cr := v0Install(t, pkg, ns, v0fixture.Options{Dir: gizmoWebhookBundle})
	t.Cleanup(func() {
		_ = k8s.DeleteAllOf(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{}, client.MatchingLabels{"olm.webhook-description-generate-name": "vgizmo.example.com"})
		_ = k8s.Delete(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "vgizmo.example.com"}})
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
	secBefore := &corev1.Secret{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: dep + "-service-cert"}, secBefore); err != nil || secBefore.Annotations["olmcahash"] != before.Spec.Template.Annotations["olmcahash"] {
		t.Fatalf("serving Secret: %v %v", err, secBefore.Annotations)
	}
	vwcs := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	if err := k8s.List(ctx, vwcs, client.MatchingLabels{"olm.webhook-description-generate-name": "vgizmo.example.com"}); err != nil || len(vwcs.Items) != 1 ||
		!strings.HasPrefix(vwcs.Items[0].Name, "vgizmo.example.com-") || vwcs.Items[0].Name == "vgizmo.example.com-" {
		t.Fatalf("OLM v0's webhook configuration: %v %+v", err, vwcs.Items)
	}

	out, err := runMigrate(t, ns, true, 0)
	if err != nil {
		t.Fatalf("migrate --dry-run: %v\n%s", err, out)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"Pod templates: OLM v1 renders the running pod templates unchanged",
		"adopt Deployment " + ns + " " + dep, "adopt Service " + ns + " " + dep + "-service", "adopt Secret " + ns + " " + dep + "-service-cert",
		"create ValidatingWebhookConfiguration - vgizmo.example.com",
		"delete after Installed ValidatingWebhookConfiguration - " + vwcs.Items[0].Name,
		"delete after Installed Role " + ns + " " + dep + "-service-cert", "delete after Installed RoleBinding " + ns + " " + dep + "-service-cert",
		"delete after Installed RoleBinding kube-system " + dep + "-service-auth-reader",
		"delete after Installed ClusterRoleBinding - " + dep + "-service-system:auth-delegator",
		"webhooks of Deployment " + dep + ": ValidatingWebhookConfiguration vgizmo.example.com (OLM v0's vgizmo.example.com-<suffix> is deleted); its pod template stays",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if out, err := runMigrate(t, ns, false, 0); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	op := checkMigratedCSV(t, pkg, ns, "gizmo-webhook-operator.v1.2.0", before, cr)
	if op.Spec.Config == nil || op.Spec.Config.OLMv0 == nil || op.Spec.Config.OLMv0.CAHash != before.Spec.Template.Annotations["olmcahash"] ||
		string(op.Spec.Config.OLMv0.CABundle) != string(vwcs.Items[0].Webhooks[0].ClientConfig.CABundle) {
		t.Errorf("Operator config %+v: want olmv0 with OLM v0's olmcahash and CA", op.Spec.Config)
	}
	// The Secret is the same object, now OLM v1's and signed by its CA; OLM v0's webhook
	// configuration is gone, OLM v1's calls the same Service with OLM v1's CA.
	sec := &corev1.Secret{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(secBefore), sec); err != nil || sec.UID != secBefore.UID || sec.Labels[rukpakOwnerName] != pkg ||
		string(sec.Data["tls.crt"]) == string(secBefore.Data["tls.crt"]) || len(sec.OwnerReferences) != 0 {
		t.Errorf("serving Secret: %v, UID %s (was %s), labels %v, ownerReferences %v, certificate replaced %v", err, sec.UID, secBefore.UID, sec.Labels, sec.OwnerReferences,
			string(sec.Data["tls.crt"]) != string(secBefore.Data["tls.crt"]))
	}
	if err := k8s.Get(ctx, client.ObjectKey{Name: vwcs.Items[0].Name}, &admissionregistrationv1.ValidatingWebhookConfiguration{}); !apierrors.IsNotFound(err) {
		t.Errorf("OLM v0's webhook configuration %s: %v, want it deleted", vwcs.Items[0].Name, err)
	}
	mine := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: "vgizmo.example.com"}, mine); err != nil || mine.Labels[rukpakOwnerName] != pkg || len(mine.Webhooks) != 1 ||
		mine.Webhooks[0].ClientConfig.Service == nil || mine.Webhooks[0].ClientConfig.Service.Name != dep+"-service" ||
		!bytes.HasSuffix(mine.Webhooks[0].ClientConfig.CABundle, vwcs.Items[0].Webhooks[0].ClientConfig.CABundle) ||
		bytes.Equal(mine.Webhooks[0].ClientConfig.CABundle, vwcs.Items[0].Webhooks[0].ClientConfig.CABundle) {
		t.Errorf("OLM v1's webhook configuration: %v %+v", err, mine)
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
// way with its validating and mutating webhooks, is moved in place: its three Deployments keep
// their UIDs and pod templates, OLM v1's webhook configurations replace OLM v0's.
func TestMigrateAdoptsARealWebhookOperatorInPlace(t *testing.T) {
	root, ok := sharedtestdata.Root()
	dir := filepath.Join(root, "bundles", "cert-manager", "1.16.5")
	if _, err := os.Stat(dir); !ok || err != nil {
		t.Skipf("the shared test data has no bundles/cert-manager/1.16.5 (set OLMV1_TESTDATA to ../shared/testdata): %v", err)
	}
	installV0CRDs(t)
	playCatalogdAndRukpak(t)
	ctx := context.Background()
	pkg, ns, version := "cert-manager", "mig-cert-manager", "1.16.5"
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	migratedBundles.Store(pkg, migratedBundle{dir: dir, version: version})
	inst, err := v0fixture.Install(ctx, k8s, v0fixture.Options{Dir: dir, Package: pkg, Namespace: ns, OperatorGroup: "og", Subscription: "gizmo",
		Channel: "stable", CatalogSource: "cert-manager-catalog", CatalogNamespace: ns, CatalogImage: gizmoCatalogImage})
	if err != nil {
		t.Fatalf("installing cert-manager the OLM v0 way: %v", err)
	}
	fixtures.set("cert-manager-catalog", packageFBC(pkg, bundleFBC{version: version}))
	owned := client.MatchingLabels{"olm.owner": inst.CSV.Name}
	t.Cleanup(func() {
		_ = k8s.DeleteAllOf(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{}, owned)
		_ = k8s.DeleteAllOf(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{}, owned)
		_ = k8s.Delete(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "validate.webhooks.cert-manager.io"}})
		_ = k8s.Delete(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "mutate.webhooks.cert-manager.io"}})
		cleanupMigration(pkg, "cert-manager-catalog")
	})
	before := map[string]*appsv1.Deployment{}
	for _, d := range inst.Deployments {
		live := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(d), live); err != nil {
			t.Fatal(err)
		}
		before[d.Name] = live
	}
	if len(before) != 3 || !hasVolume(before["cert-manager-webhook"].Spec.Template.Spec.Volumes, "webhook-cert", "cert-manager-webhook-service-cert") {
		t.Fatalf("want 3 Deployments, the webhook one with OLM v0's cert volume: %+v", before)
	}
	var v0Hooks []client.Object
	for _, l := range []client.ObjectList{&admissionregistrationv1.ValidatingWebhookConfigurationList{}, &admissionregistrationv1.MutatingWebhookConfigurationList{}} {
		if err := k8s.List(ctx, l, owned); err != nil {
			t.Fatal(err)
		}
		switch l := l.(type) {
		case *admissionregistrationv1.ValidatingWebhookConfigurationList:
			for i := range l.Items {
				v0Hooks = append(v0Hooks, &l.Items[i])
			}
		case *admissionregistrationv1.MutatingWebhookConfigurationList:
			for i := range l.Items {
				v0Hooks = append(v0Hooks, &l.Items[i])
			}
		}
	}
	if len(v0Hooks) != 2 {
		t.Fatalf("OLM v0's webhook configurations: %d, want 2", len(v0Hooks))
	}

	out, err := runMigrate(t, ns, false, 0)
	if err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	if !strings.Contains(out, "Pod templates: OLM v1 renders the running pod templates unchanged") {
		t.Errorf("plan:\n%s", out)
	}
	eventually(t, "Operator cert-manager Installed", func() error {
		op, err := getOperator(pkg)
		if err != nil {
			return err
		}
		return migrateInstalled(op)
	})
	for name, b := range before {
		after := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(b), after); err != nil {
			t.Fatal(err)
		}
		if after.UID != b.UID || !equality.Semantic.DeepEqual(after.Spec.Template, b.Spec.Template) || after.Labels[rukpakOwnerName] != pkg {
			t.Errorf("Deployment %s: UID %s -> %s, labels %v, template changed %v", name, b.UID, after.UID, after.Labels, !equality.Semantic.DeepEqual(after.Spec.Template, b.Spec.Template))
		}
	}
	for _, h := range v0Hooks {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(h), h); !apierrors.IsNotFound(err) {
			t.Errorf("OLM v0's webhook configuration %s: %v, want it deleted", h.GetName(), err)
		}
	}
	for _, h := range []client.Object{&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "validate.webhooks.cert-manager.io"}},
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "mutate.webhooks.cert-manager.io"}}} {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(h), h); err != nil || h.GetLabels()[rukpakOwnerName] != pkg {
			t.Errorf("OLM v1's webhook configuration %s: %v, labels %v", h.GetName(), err, h.GetLabels())
		}
	}
}
