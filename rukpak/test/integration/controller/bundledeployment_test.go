package controller

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
)

const timeout = 30 * time.Second

func configMap(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: %q\n", name, value)
}

// newBD creates a namespace and a plain BundleDeployment of ref installing into it.
func newBD(t *testing.T, name, ref string) *rukpakv1alpha1.BundleDeployment {
	t.Helper()
	return newBDFrom(t, name, rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: ref}})
}

// newBDFrom creates namespace name and a plain BundleDeployment name installing src into it.
func newBDFrom(t *testing.T, name string, src rukpakv1alpha1.Source) *rukpakv1alpha1.BundleDeployment {
	t.Helper()
	ctx := t.Context()
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	bd := &rukpakv1alpha1.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: rukpakv1alpha1.BundleDeploymentSpec{
			ProvisionerClassName: rukpakv1alpha1.ProvisionerPlain,
			InstallNamespace:     name,
			Source:               src,
		},
	}
	if err := k8s.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	return bd
}

func setRef(t *testing.T, name, ref string) {
	t.Helper()
	bd := &rukpakv1alpha1.BundleDeployment{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Name: name}, bd); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(bd.DeepCopy())
	bd.Spec.Source.Image.Ref = ref
	if err := k8s.Patch(t.Context(), bd, patch); err != nil {
		t.Fatal(err)
	}
}

// waitCondition waits until condition typ has status and reason (and, if set, observes the latest
// generation), returning the BundleDeployment.
func waitCondition(t *testing.T, name, typ string, status metav1.ConditionStatus, reason string) *rukpakv1alpha1.BundleDeployment {
	t.Helper()
	bd := &rukpakv1alpha1.BundleDeployment{}
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(bd.Status.Conditions, typ)
		if c == nil {
			last = "no condition"
			return false, nil
		}
		last = fmt.Sprintf("%s/%s: %s (observedGeneration %d of %d)", c.Status, c.Reason, c.Message, c.ObservedGeneration, bd.Generation)
		return c.Status == status && c.Reason == reason && c.ObservedGeneration == bd.Generation, nil
	})
	if err != nil {
		t.Fatalf("BundleDeployment %s: condition %s never became %s/%s; last: %s", name, typ, status, reason, last)
	}
	return bd
}

func getCM(t *testing.T, ns, name string) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	err := k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, cm)
	return cm, err
}

func waitFor(t *testing.T, what string, f func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, f); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func TestInstallUpgradePrune(t *testing.T) {
	const name = "upgrade"
	writeBundle(t, "example.com/upgrade:v1", map[string]string{"a.yaml": configMap("a", "1"), "b.yaml": configMap("b", "1")})
	newBD(t, name, "example.com/upgrade:v1")
	bd := waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
	if bd.Status.InstalledRevision != 1 || !strings.HasPrefix(bd.Status.ContentHash, "sha256:") || bd.Status.ResolvedSource == nil {
		t.Fatalf("after install: revision %d, contentHash %q, resolvedSource %v", bd.Status.InstalledRevision, bd.Status.ContentHash, bd.Status.ResolvedSource)
	}
	waitCondition(t, name, rukpakv1alpha1.TypeUnpacked, metav1.ConditionTrue, rukpakv1alpha1.ReasonUnpackSucceeded)
	waitCondition(t, name, rukpakv1alpha1.TypeHealthy, metav1.ConditionTrue, rukpakv1alpha1.ReasonHealthy)
	cm, err := getCM(t, name, "b")
	if err != nil {
		t.Fatal(err)
	}
	if cm.Labels[apply.OwnerNameLabel] != name || cm.Labels[apply.OwnerKindLabel] != apply.OwnerKind {
		t.Fatalf("applied object lacks the owner labels: %v", cm.Labels)
	}
	firstHash := bd.Status.ContentHash

	writeBundle(t, "example.com/upgrade:v2", map[string]string{"a.yaml": configMap("a", "2"), "c.yaml": configMap("c", "1")})
	setRef(t, name, "example.com/upgrade:v2")
	waitFor(t, "revision 2", func(ctx context.Context) (bool, error) {
		bd = waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
		return bd.Status.InstalledRevision == 2, nil
	})
	if bd.Status.ContentHash == firstHash {
		t.Errorf("contentHash did not change with the content: %s", firstHash)
	}
	if len(bd.Status.History) != 2 || bd.Status.History[0].Revision != 2 || bd.Status.History[1].ContentHash != firstHash {
		t.Errorf("history: %+v", bd.Status.History)
	}
	if cm, err := getCM(t, name, "a"); err != nil || cm.Data["value"] != "2" {
		t.Errorf("ConfigMap a not upgraded: %v %v", cm.Data, err)
	}
	if _, err := getCM(t, name, "c"); err != nil {
		t.Errorf("ConfigMap c not created: %v", err)
	}
	if _, err := getCM(t, name, "b"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap b, dropped by revision 2, was not pruned: %v", err)
	}
	secrets, err := clientset.CoreV1().Secrets(systemNamespace).List(t.Context(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + name})
	if err != nil || len(secrets.Items) != 2 {
		t.Fatalf("want 2 Helm release Secrets in %s, got %d (%v)", systemNamespace, len(secrets.Items), err)
	}
}

// A new bundle version whose rendered objects are the same as the installed one's (here only a
// comment differs, as a registry+v1 CSV version is not rendered into any object) is a revision of
// its own: installedRevision, status.history and resolvedSource agree on the new version.
func TestVersionChangeWithIdenticalObjectsIsARevision(t *testing.T) {
	const name = "same-objects"
	writeBundle(t, "example.com/same-objects:v1.0.0", map[string]string{"a.yaml": "# bundle version 1.0.0\n" + configMap("a", "1")})
	newBD(t, name, "example.com/same-objects:v1.0.0")
	bd := waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
	if bd.Status.InstalledRevision != 1 {
		t.Fatalf("after install: revision %d", bd.Status.InstalledRevision)
	}
	firstHash := bd.Status.ContentHash

	writeBundle(t, "example.com/same-objects:v1.0.4", map[string]string{"a.yaml": "# bundle version 1.0.4\n" + configMap("a", "1")})
	setRef(t, name, "example.com/same-objects:v1.0.4")
	waitFor(t, "revision 2", func(ctx context.Context) (bool, error) {
		bd = waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
		return bd.Status.InstalledRevision == 2, nil
	})
	if bd.Status.ContentHash == firstHash {
		t.Fatalf("contentHash did not change with the content: %s", firstHash)
	}
	if len(bd.Status.History) != 2 || bd.Status.History[0].Revision != 2 || bd.Status.History[1].Revision != 1 {
		t.Fatalf("history: %+v; want revisions [2, 1]", bd.Status.History)
	}
	h := bd.Status.History[0]
	if h.ContentHash != bd.Status.ContentHash || h.ResolvedSource == nil || bd.Status.ResolvedSource == nil ||
		h.ResolvedSource.String() != bd.Status.ResolvedSource.String() {
		t.Fatalf("history[0] (%s, %s) contradicts status (%s, %s)", h.ContentHash, h.ResolvedSource, bd.Status.ContentHash, bd.Status.ResolvedSource)
	}
	if bd.Status.History[1].ContentHash != firstHash {
		t.Fatalf("history[1] has content %s, want the first version's %s", bd.Status.History[1].ContentHash, firstHash)
	}
	// Re-applying the same version again (a resync) makes no revision.
	bd = waitCondition(t, name, rukpakv1alpha1.TypeHealthy, metav1.ConditionTrue, rukpakv1alpha1.ReasonHealthy)
	if bd.Status.InstalledRevision != 2 {
		t.Fatalf("revision %d after a resync, want 2", bd.Status.InstalledRevision)
	}
}

func TestFailedUpgradeRollsBack(t *testing.T) {
	const name = "rollback"
	writeBundle(t, "example.com/rollback:v1", map[string]string{"a.yaml": configMap("a", "1")})
	newBD(t, name, "example.com/rollback:v1")
	waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)

	// Revision 2 changes a, adds b, and carries a Service the API server rejects (port 0).
	badService := "apiVersion: v1\nkind: Service\nmetadata:\n  name: zz-bad\nspec:\n  ports:\n  - port: 0\n"
	writeBundle(t, "example.com/rollback:v2", map[string]string{"a.yaml": configMap("a", "2"), "b.yaml": configMap("b", "2"), "svc.yaml": badService})
	setRef(t, name, "example.com/rollback:v2")
	bd := waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, rukpakv1alpha1.ReasonUpgradeFailed)
	c := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled)
	for _, want := range []string{"rolled back to revision 1", "Service " + name + "/zz-bad", "revision 1 stays installed"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("Installed message %q does not say %q", c.Message, want)
		}
	}
	if bd.Status.InstalledRevision != 1 {
		t.Errorf("installedRevision %d, want 1", bd.Status.InstalledRevision)
	}
	if cm, err := getCM(t, name, "a"); err != nil || cm.Data["value"] != "1" {
		t.Errorf("ConfigMap a not rolled back: %v %v", cm.Data, err)
	}
	if _, err := getCM(t, name, "b"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap b of the failed revision was not removed: %v", err)
	}

	// Fixing the bundle installs the next revision.
	writeBundle(t, "example.com/rollback:v3", map[string]string{"a.yaml": configMap("a", "3")})
	setRef(t, name, "example.com/rollback:v3")
	bd = waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
	if bd.Status.InstalledRevision != 3 {
		t.Errorf("installedRevision %d, want 3 (revision 2 failed)", bd.Status.InstalledRevision)
	}
}

func TestDriftIsReverted(t *testing.T) {
	const name = "drift"
	writeBundle(t, "example.com/drift:v1", map[string]string{"a.yaml": configMap("a", "1")})
	newBD(t, name, "example.com/drift:v1")
	waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)

	cm, err := getCM(t, name, "a")
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["value"] = "changed by hand"
	if err := k8s.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the hand edit to be reverted", func(context.Context) (bool, error) {
		cm, err := getCM(t, name, "a")
		return err == nil && cm.Data["value"] == "1", nil
	})
	if err := k8s.Delete(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted ConfigMap to be re-created", func(context.Context) (bool, error) {
		_, err := getCM(t, name, "a")
		return err == nil, nil
	})
	bd := waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
	if bd.Status.InstalledRevision != 1 {
		t.Errorf("drift correction must not create revisions; installedRevision %d", bd.Status.InstalledRevision)
	}
}

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: example.com/web:1}
`

func TestHealthFollowsDeployment(t *testing.T) {
	const name = "health"
	writeBundle(t, "example.com/health:v1", map[string]string{"deploy.yaml": deployment})
	newBD(t, name, "example.com/health:v1")
	bd := waitCondition(t, name, rukpakv1alpha1.TypeHealthy, metav1.ConditionFalse, rukpakv1alpha1.ReasonUnhealthy)
	if c := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeHealthy); !strings.Contains(c.Message, "Deployment health/web") {
		t.Errorf("Healthy message %q does not name the Deployment", c.Message)
	}
	// envtest has no kube-controller-manager: play its part.
	d := &appsv1.Deployment{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: name, Name: "web"}, d); err != nil {
		t.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
			LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
	}
	if err := k8s.Status().Update(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, name, rukpakv1alpha1.TypeHealthy, metav1.ConditionTrue, rukpakv1alpha1.ReasonHealthy)
}

func TestInvalidBundleAndUnpackFailure(t *testing.T) {
	const name = "invalid"
	newBD(t, name, "example.com/missing:v1")
	bd := waitCondition(t, name, rukpakv1alpha1.TypeUnpacked, metav1.ConditionFalse, rukpakv1alpha1.ReasonUnpackFailed)
	if c := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeUnpacked); !strings.Contains(c.Message, "spec.source.image.ref") {
		t.Errorf("Unpacked message %q is not actionable", c.Message)
	}
	waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, rukpakv1alpha1.ReasonInstallPending)

	writeBundle(t, "example.com/invalid:v1", map[string]string{"broken.yaml": "kind: [\n"})
	setRef(t, name, "example.com/invalid:v1")
	bd = waitCondition(t, name, rukpakv1alpha1.TypeUnpacked, metav1.ConditionFalse, rukpakv1alpha1.ReasonInvalidBundle)
	if c := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeUnpacked); !strings.Contains(c.Message, "broken.yaml") {
		t.Errorf("InvalidBundle message %q does not name the file", c.Message)
	}
}

// TestFinalizerSetAtCreationIsRemovedWithoutAnInstall: a BundleDeployment created with rukpak's
// finalizer already on it (as operator-controller creates them) whose bundle never unpacked is
// deleted as soon as it is deleted: rukpak removes the finalizer although it installed nothing.
func TestFinalizerSetAtCreationIsRemovedWithoutAnInstall(t *testing.T) {
	const name = "finalizer-at-creation"
	ctx := t.Context()
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	bd := &rukpakv1alpha1.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{rukpakv1alpha1.UninstallFinalizer}},
		Spec: rukpakv1alpha1.BundleDeploymentSpec{
			ProvisionerClassName: rukpakv1alpha1.ProvisionerPlain,
			InstallNamespace:     name,
			Source:               rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: "example.com/never-pushed:v1"}},
		},
	}
	if err := k8s.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, name, rukpakv1alpha1.TypeUnpacked, metav1.ConditionFalse, rukpakv1alpha1.ReasonUnpackFailed)
	if err := k8s.Delete(ctx, bd); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the BundleDeployment to be gone", func(ctx context.Context) (bool, error) {
		err := k8s.Get(ctx, client.ObjectKey{Name: name}, bd)
		return apierrors.IsNotFound(err), nil
	})
}

func TestUninstall(t *testing.T) {
	const name = "uninstall"
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.uninstall.example.com
spec:
  group: uninstall.example.com
  scope: Namespaced
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`
	gadget := "apiVersion: uninstall.example.com/v1\nkind: Gadget\nmetadata:\n  name: g1\n"
	writeBundle(t, "example.com/uninstall:v1", map[string]string{"a.yaml": configMap("a", "1"), "crd.yaml": crd, "gadget.yaml": gadget})
	newBD(t, name, "example.com/uninstall:v1")
	waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)

	bd := &rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8s.Delete(t.Context(), bd); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the BundleDeployment to be gone", func(ctx context.Context) (bool, error) {
		err := k8s.Get(ctx, client.ObjectKey{Name: name}, bd)
		return apierrors.IsNotFound(err), nil
	})
	if _, err := getCM(t, name, "a"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap a left after uninstall: %v", err)
	}
	secrets, err := clientset.CoreV1().Secrets(systemNamespace).List(t.Context(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + name})
	if err != nil || len(secrets.Items) != 0 {
		t.Errorf("release Secrets left after uninstall: %d (%v)", len(secrets.Items), err)
	}
	// CRDs stay unless the BundleDeployment opts into deleting them; the kept CRD is released: no
	// owner labels (it is not tied to a BundleDeployment that is gone), the annotation says whose
	// uninstall kept it.
	kept := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}}
	if err := k8s.Get(t.Context(), client.ObjectKey{Name: "gadgets.uninstall.example.com"}, kept); err != nil {
		t.Fatalf("the CRD should stay after uninstall: %v", err)
	}
	if kept.Labels[apply.OwnerNameLabel] != "" || kept.Annotations[apply.ReleasedFromAnnotation] != name {
		t.Errorf("kept CRD: labels %v, annotations %v; want no owner labels and %s=%s", kept.Labels, kept.Annotations, apply.ReleasedFromAnnotation, name)
	}

	// Another BundleDeployment whose bundle has the same CRD takes it back (collisionPolicy Prevent):
	// OLM created it. Its UID is unchanged, so its custom resources (users' data) are kept.
	const again = "uninstall-again"
	writeBundle(t, "example.com/uninstall:v2", map[string]string{"crd.yaml": crd})
	newBD(t, again, "example.com/uninstall:v2")
	waitCondition(t, again, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
	taken := &metav1.PartialObjectMetadata{TypeMeta: kept.TypeMeta}
	if err := k8s.Get(t.Context(), client.ObjectKey{Name: "gadgets.uninstall.example.com"}, taken); err != nil {
		t.Fatal(err)
	}
	if taken.UID != kept.UID || taken.Labels[apply.OwnerNameLabel] != again {
		t.Errorf("the kept CRD was not taken back in place: UID %s → %s, owner label %q", kept.UID, taken.UID, taken.Labels[apply.OwnerNameLabel])
	}
}

func TestHealthWaitsForWebhookEndpoints(t *testing.T) {
	const name = "webhook"
	service := "apiVersion: v1\nkind: Service\nmetadata:\n  name: hook\nspec:\n  ports:\n  - port: 443\n  selector: {app: hook}\n"
	// The rules match a resource nobody creates, so the API server never calls the webhook.
	vwc := `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: webhook-health.example.com
webhooks:
- name: check.webhook-health.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Ignore
  clientConfig:
    service: {namespace: webhook, name: hook, port: 443}
  rules:
  - {apiGroups: [example.invalid], apiVersions: [v1], operations: [CREATE], resources: [nothings]}
`
	writeBundle(t, "example.com/webhook:v1", map[string]string{"svc.yaml": service, "vwc.yaml": vwc})
	newBD(t, name, "example.com/webhook:v1")
	bd := waitCondition(t, name, rukpakv1alpha1.TypeHealthy, metav1.ConditionFalse, rukpakv1alpha1.ReasonUnhealthy)
	if c := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeHealthy); !strings.Contains(c.Message, "Service webhook/hook") ||
		!strings.Contains(c.Message, "ValidatingWebhookConfiguration webhook-health.example.com") {
		t.Errorf("Healthy message %q does not name the Service and its webhook", c.Message)
	}
	ready := true
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "hook-1", Namespace: name, Labels: map[string]string{discoveryv1.LabelServiceName: "hook"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	}
	if err := k8s.Create(t.Context(), slice); err != nil {
		t.Fatal(err)
	}
	// This slice lacks its Service's labels (which the EndpointSlice controller would copy onto it), so
	// the label-scoped EndpointSlice watch does not see it (TestEndpointSliceWatchMakesWebhookHealthy
	// covers that): a change of the BundleDeployment, or the 30 s re-check, picks it up.
	bd = &rukpakv1alpha1.BundleDeployment{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Name: name}, bd); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(bd.DeepCopy())
	bd.Annotations = map[string]string{"test/nudge": "1"}
	if err := k8s.Patch(t.Context(), bd, patch); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, name, rukpakv1alpha1.TypeHealthy, metav1.ConditionTrue, rukpakv1alpha1.ReasonHealthy)
}

func TestLargeReleaseIsSplitOverSecrets(t *testing.T) {
	const name = "large"
	rnd := rand.New(rand.NewPCG(7, 7))
	files := map[string]string{}
	for i := 0; i < 3; i++ {
		b := make([]byte, 450<<10)
		for j := range b {
			b[j] = byte(rnd.UintN(256))
		}
		files[fmt.Sprintf("cm%d.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: blob-%d\nbinaryData:\n  blob: %s\n", i, base64.StdEncoding.EncodeToString(b))
	}
	writeBundle(t, "example.com/large:v1", files)
	newBD(t, name, "example.com/large:v1")
	waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
	heads, err := clientset.CoreV1().Secrets(systemNamespace).List(t.Context(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + name})
	if err != nil || len(heads.Items) != 1 {
		t.Fatalf("want 1 release Secret, got %d (%v)", len(heads.Items), err)
	}
	chunks, err := clientset.CoreV1().Secrets(systemNamespace).List(t.Context(), metav1.ListOptions{LabelSelector: "name=" + name + ",owner!=helm"})
	if err != nil || len(chunks.Items) == 0 {
		t.Fatalf("a %d KiB release should be split over several Secrets; found %d extra (%v)", 3*450*4/3, len(chunks.Items), err)
	}
	bd := &rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8s.Delete(t.Context(), bd); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every release Secret to be deleted", func(ctx context.Context) (bool, error) {
		l, err := clientset.CoreV1().Secrets(systemNamespace).List(ctx, metav1.ListOptions{LabelSelector: "name=" + name})
		return err == nil && len(l.Items) == 0, nil
	})
}
