package controller

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
)

// The ownership tests: rukpak never takes over or deletes an object it does not own (issue 15).

// userConfigMap creates namespace ns (if needed) and a ConfigMap in it holding a team's data, and
// returns it as created.
func userConfigMap(t *testing.T, ns, name string, mutate func(*corev1.ConfigMap)) *corev1.ConfigMap {
	t.Helper()
	if err := k8s.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"team": "payments"}},
		Data:       map[string]string{"dbPassword": "s3cret"},
	}
	if mutate != nil {
		mutate(cm)
	}
	if err := k8s.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	return cm
}

// assertUntouched fails unless the ConfigMap still exists exactly as want (same UID, resourceVersion
// and data, no rukpak label).
func assertUntouched(t *testing.T, want *corev1.ConfigMap) {
	t.Helper()
	got, err := getCM(t, want.Namespace, want.Name)
	if err != nil {
		t.Fatalf("the user's ConfigMap %s/%s is gone: %v", want.Namespace, want.Name, err)
	}
	if got.UID != want.UID || got.ResourceVersion != want.ResourceVersion || got.Data["dbPassword"] != "s3cret" || got.Labels[apply.OwnerNameLabel] != "" {
		t.Fatalf("the user's ConfigMap %s/%s was changed: uid %s→%s, resourceVersion %s→%s, data %v, labels %v",
			want.Namespace, want.Name, want.UID, got.UID, want.ResourceVersion, got.ResourceVersion, got.Data, got.Labels)
	}
}

// newPolicyBD creates a namespace and a plain BundleDeployment of ref with the given policies.
func newPolicyBD(t *testing.T, name, ref string, collision rukpakv1alpha1.CollisionPolicy, deletion rukpakv1alpha1.DeletionPolicy) {
	t.Helper()
	if err := k8s.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	bd := &rukpakv1alpha1.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: rukpakv1alpha1.BundleDeploymentSpec{
			ProvisionerClassName: rukpakv1alpha1.ProvisionerPlain,
			InstallNamespace:     name,
			Source:               rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: ref}},
			CollisionPolicy:      collision,
			DeletionPolicy:       deletion,
		},
	}
	if err := k8s.Create(t.Context(), bd); err != nil {
		t.Fatal(err)
	}
}

func deleteBD(t *testing.T, name string) {
	t.Helper()
	bd := &rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8s.Delete(t.Context(), bd); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	waitFor(t, "BundleDeployment "+name+" to be gone", func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: name}, bd)), nil
	})
}

func installedMessage(t *testing.T, name string) string {
	t.Helper()
	bd := &rukpakv1alpha1.BundleDeployment{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Name: name}, bd); err != nil {
		t.Fatal(err)
	}
	return meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled).Message
}

func wantMessage(t *testing.T, msg string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("message %q does not contain %q", msg, p)
		}
	}
}

func namespacedConfigMap(ns, name, value string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: " + ns + "\ndata:\n  dbPassword: " + value + "\n  extra: from-bundle\n"
}

// TestConflictLeavesUserConfigMapAlone is the scenario of issue 15: a team's ConfigMap is neither
// changed by a bundle that contains an object of the same name nor deleted with it.
func TestConflictLeavesUserConfigMapAlone(t *testing.T) {
	const name = "conflict-cm"
	user := userConfigMap(t, "precious", "app-settings", nil)
	writeBundle(t, "example.com/conflict-cm:v1", map[string]string{
		"cm.yaml": namespacedConfigMap("precious", "app-settings", "overwritten"), "mine.yaml": configMap("mine", "1"),
	})
	newBD(t, name, "example.com/conflict-cm:v1")
	bd := waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, rukpakv1alpha1.ReasonObjectConflict)
	wantMessage(t, meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled).Message,
		"ConfigMap precious/app-settings", "not managed by OLM", `BundleDeployment "conflict-cm"`, "collisionPolicy Prevent", "IfNoController")
	if bd.Status.InstalledRevision != 0 || len(bd.Status.History) != 0 {
		t.Errorf("a conflicting install recorded revision %d, history %v", bd.Status.InstalledRevision, bd.Status.History)
	}
	if _, err := getCM(t, name, "mine"); !apierrors.IsNotFound(err) {
		t.Errorf("nothing may be applied when an object collides, but ConfigMap mine exists (%v)", err)
	}
	secrets, err := clientset.CoreV1().Secrets(systemNamespace).List(t.Context(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + name})
	if err != nil || len(secrets.Items) != 0 {
		t.Errorf("a conflicting install left %d release records (%v)", len(secrets.Items), err)
	}
	assertUntouched(t, user)

	deleteBD(t, name)
	assertUntouched(t, user)
}

// TestConflictOnNamespace: a bundle that contains an existing Namespace does not take it, and
// deleting the BundleDeployment does not delete the Namespace (with everything in it).
func TestConflictOnNamespace(t *testing.T) {
	const name = "conflict-ns"
	user := userConfigMap(t, "team-ns", "data", nil)
	writeBundle(t, "example.com/conflict-ns:v1", map[string]string{"ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-ns\n"})
	newBD(t, name, "example.com/conflict-ns:v1")
	bd := waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, rukpakv1alpha1.ReasonObjectConflict)
	wantMessage(t, meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled).Message, "Namespace team-ns", "not managed by OLM")
	deleteBD(t, name)
	ns := &corev1.Namespace{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Name: "team-ns"}, ns); err != nil || !ns.DeletionTimestamp.IsZero() || ns.Labels[apply.OwnerNameLabel] != "" {
		t.Fatalf("the user's Namespace was touched: %v, deletionTimestamp %v, labels %v", err, ns.DeletionTimestamp, ns.Labels)
	}
	assertUntouched(t, user)
}

// TestTwoBundleDeploymentsClaimOneCRD: the second BundleDeployment reports the conflict naming the
// first; deleting the second leaves the CRD; the first stays Installed and Healthy.
func TestTwoBundleDeploymentsClaimOneCRD(t *testing.T) {
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.shared.example.com
spec:
  group: shared.example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`
	shared := namespacedConfigMap("shared-objects", "shared", "first")
	if err := k8s.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shared-objects"}}); err != nil {
		t.Fatal(err)
	}
	writeBundle(t, "example.com/claim-first:v1", map[string]string{"crd.yaml": crd, "cm.yaml": shared})
	writeBundle(t, "example.com/claim-second:v1", map[string]string{"crd.yaml": crd, "cm.yaml": shared, "own.yaml": configMap("own", "1")})
	newBD(t, "claim-first", "example.com/claim-first:v1")
	waitCondition(t, "claim-first", rukpakv1alpha1.TypeHealthy, metav1.ConditionTrue, rukpakv1alpha1.ReasonHealthy)

	// Prevent and IfNoController both refuse another BundleDeployment's objects.
	for _, policy := range []rukpakv1alpha1.CollisionPolicy{rukpakv1alpha1.CollisionPolicyPrevent, rukpakv1alpha1.CollisionPolicyIfNoController} {
		name := "claim-second-" + strings.ToLower(string(policy))
		newPolicyBD(t, name, "example.com/claim-second:v1", policy, "")
		bd := waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, rukpakv1alpha1.ReasonObjectConflict)
		wantMessage(t, meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled).Message,
			"CustomResourceDefinition.apiextensions.k8s.io widgets.shared.example.com", `BundleDeployment "claim-first"`, `BundleDeployment "`+name+`"`,
			"ConfigMap shared-objects/shared", "Two BundleDeployments cannot own one object")
		deleteBD(t, name)
	}

	crdObj := &apiextensionsv1.CustomResourceDefinition{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Name: "widgets.shared.example.com"}, crdObj); err != nil || crdObj.Labels[apply.OwnerNameLabel] != "claim-first" {
		t.Fatalf("the CRD of claim-first: %v, labels %v", err, crdObj.Labels)
	}
	if cm, err := getCM(t, "shared-objects", "shared"); err != nil || cm.Labels[apply.OwnerNameLabel] != "claim-first" {
		t.Fatalf("the ConfigMap of claim-first was deleted or taken: %v, labels %v", err, cm.Labels)
	}
	waitCondition(t, "claim-first", rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
	waitCondition(t, "claim-first", rukpakv1alpha1.TypeHealthy, metav1.ConditionTrue, rukpakv1alpha1.ReasonHealthy)
}

// TestIfNoControllerAdopts: an object without a controller and without another BundleDeployment
// owner is adopted (and from then on owned: deleted with the BundleDeployment); one with a
// controller ownerReference is not.
func TestIfNoControllerAdopts(t *testing.T) {
	const name = "adopt"
	userConfigMap(t, "adopt-ns", "legacy", nil)
	writeBundle(t, "example.com/adopt:v1", map[string]string{"cm.yaml": namespacedConfigMap("adopt-ns", "legacy", "from-bundle")})
	newPolicyBD(t, name, "example.com/adopt:v1", rukpakv1alpha1.CollisionPolicyIfNoController, "")
	waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
	cm, err := getCM(t, "adopt-ns", "legacy")
	if err != nil || cm.Labels[apply.OwnerNameLabel] != name || cm.Data["extra"] != "from-bundle" || cm.Data["dbPassword"] != "from-bundle" {
		t.Fatalf("not adopted: %v, labels %v, data %v", err, cm.Labels, cm.Data)
	}
	deleteBD(t, name)
	if _, err := getCM(t, "adopt-ns", "legacy"); !apierrors.IsNotFound(err) {
		t.Errorf("an adopted object is owned and deleted with the BundleDeployment, but it is still there (%v)", err)
	}

	// A controlled object is not adopted.
	owner := userConfigMap(t, "adopt-ns", "owner", nil)
	yes := true
	controlled := userConfigMap(t, "adopt-ns", "controlled", func(cm *corev1.ConfigMap) {
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: &yes}}
	})
	writeBundle(t, "example.com/adopt-controlled:v1", map[string]string{"cm.yaml": namespacedConfigMap("adopt-ns", "controlled", "from-bundle")})
	newPolicyBD(t, "adopt-controlled", "example.com/adopt-controlled:v1", rukpakv1alpha1.CollisionPolicyIfNoController, "")
	bd := waitCondition(t, "adopt-controlled", rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, rukpakv1alpha1.ReasonObjectConflict)
	wantMessage(t, meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled).Message,
		"ConfigMap adopt-ns/controlled", `ConfigMap "owner" (its controller`, "collisionPolicy IfNoController")
	assertUntouched(t, controlled)

	// Changing the policy to None takes it over at once (the spec change is reconciled).
	patchBD(t, "adopt-controlled", func(bd *rukpakv1alpha1.BundleDeployment) {
		bd.Spec.CollisionPolicy = rukpakv1alpha1.CollisionPolicyNone
	})
	waitCondition(t, "adopt-controlled", rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
	if cm, err := getCM(t, "adopt-ns", "controlled"); err != nil || cm.Labels[apply.OwnerNameLabel] != "adopt-controlled" {
		t.Fatalf("collisionPolicy None did not take the object: %v, labels %v", err, cm.Labels)
	}
	deleteBD(t, "adopt-controlled")
}

func patchBD(t *testing.T, name string, mutate func(*rukpakv1alpha1.BundleDeployment)) {
	t.Helper()
	bd := &rukpakv1alpha1.BundleDeployment{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Name: name}, bd); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(bd.DeepCopy())
	mutate(bd)
	if err := k8s.Patch(t.Context(), bd, patch); err != nil {
		t.Fatal(err)
	}
}

// TestOrphanDeletion: deletionPolicy Orphan leaves every object in place without the owner labels,
// and removes the release records.
func TestOrphanDeletion(t *testing.T) {
	const name = "orphan"
	writeBundle(t, "example.com/orphan:v1", map[string]string{"a.yaml": configMap("a", "1"), "b.yaml": configMap("b", "1")})
	newPolicyBD(t, name, "example.com/orphan:v1", "", rukpakv1alpha1.DeletionPolicyOrphan)
	waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
	deleteBD(t, name)
	for _, n := range []string{"a", "b"} {
		cm, err := getCM(t, name, n)
		if err != nil {
			t.Fatalf("ConfigMap %s was deleted under deletionPolicy Orphan: %v", n, err)
		}
		if cm.Labels[apply.OwnerNameLabel] != "" || cm.Labels[apply.OwnerKindLabel] != "" || cm.Data["value"] != "1" {
			t.Errorf("orphaned ConfigMap %s: labels %v, data %v", n, cm.Labels, cm.Data)
		}
	}
	secrets, err := clientset.CoreV1().Secrets(systemNamespace).List(t.Context(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + name})
	if err != nil || len(secrets.Items) != 0 {
		t.Errorf("release Secrets left after an orphaning uninstall: %d (%v)", len(secrets.Items), err)
	}
	// A new BundleDeployment of the same name does not silently take the orphans back.
	newPolicyBD(t, name, "example.com/orphan:v1", "", "")
	waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, rukpakv1alpha1.ReasonObjectConflict)
	deleteBD(t, name)
	if _, err := getCM(t, name, "a"); err != nil {
		t.Errorf("orphaned ConfigMap deleted by a later BundleDeployment: %v", err)
	}
}

// TestMovedOwnershipIsLeftAlone: an object whose ownership moved to someone else after it was
// installed is neither pruned by an upgrade nor deleted on uninstall, and the status says so.
func TestMovedOwnershipIsLeftAlone(t *testing.T) {
	const name = "moved"
	writeBundle(t, "example.com/moved:v1", map[string]string{"a.yaml": configMap("a", "1"), "b.yaml": configMap("b", "1"), "c.yaml": configMap("c", "1")})
	newBD(t, name, "example.com/moved:v1")
	waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
	for _, n := range []string{"b", "c"} { // a team takes b and c over (relabels them as theirs)
		cm, err := getCM(t, name, n)
		if err != nil {
			t.Fatal(err)
		}
		cm.Labels = map[string]string{"team": "payments"}
		if err := k8s.Update(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
	}
	// Revision 2 drops b: it is not pruned.
	writeBundle(t, "example.com/moved:v2", map[string]string{"a.yaml": configMap("a", "2"), "c.yaml": configMap("c", "1")})
	setRef(t, name, "example.com/moved:v2")
	// c is still in the bundle and now someone else's: the upgrade collides on it.
	bd := waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, rukpakv1alpha1.ReasonObjectConflict)
	wantMessage(t, meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled).Message, "ConfigMap moved/c", "revision 1 stays installed")
	writeBundle(t, "example.com/moved:v3", map[string]string{"a.yaml": configMap("a", "3")})
	setRef(t, name, "example.com/moved:v3")
	waitFor(t, "revision 2", func(ctx context.Context) (bool, error) {
		bd = waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
		return bd.Status.InstalledRevision == 2, nil
	})
	wantMessage(t, installedMessage(t, name), "left in place because another owner holds them now", "ConfigMap moved/b", "ConfigMap moved/c")
	for _, n := range []string{"b", "c"} {
		if cm, err := getCM(t, name, n); err != nil || cm.Labels["team"] != "payments" {
			t.Errorf("ConfigMap %s, which another owner holds now, was pruned or changed: %v", n, err)
		}
	}
	deleteBD(t, name)
	if _, err := getCM(t, name, "a"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap a, still owned, was not deleted: %v", err)
	}
	for _, n := range []string{"b", "c"} {
		if _, err := getCM(t, name, n); err != nil {
			t.Errorf("ConfigMap %s, which another owner holds now, was deleted on uninstall: %v", n, err)
		}
	}
}
