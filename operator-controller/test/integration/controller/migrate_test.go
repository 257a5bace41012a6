package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	v0 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/command"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/migrate"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/migrate/v0fixture"
	"github.com/olmv1/olmv1/operator-controller/internal/controller"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// runMigrate runs kubectl olmv1 migrate's core for Subscription ns/gizmo.
func runMigrate(t *testing.T, ns string, dryRun bool, stopAfter int) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	o := &command.Options{Streams: command.Streams{Out: &out, ErrOut: &errOut}, Output: "table"}
	err := migrate.Run(context.Background(), k8s, o, migrate.Options{
		Subscriptions: []string{ns + "/gizmo"}, DryRun: dryRun, StopAfter: stopAfter,
		Timeout: timeout, PollInterval: 50 * time.Millisecond,
	})
	t.Logf("kubectl olmv1 migrate gizmo -n %s (dry run %v, stop after %d):\n%s%s", ns, dryRun, stopAfter, out.String(), errOut.String())
	return out.String(), err
}

func getDeployment(t *testing.T, ns string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "gizmo-operator-controller-manager"}, d); err != nil {
		t.Fatal(err)
	}
	return d
}

// checkMigrated checks that the OLM v0 installation of pkg in ns is now the Operator's: the
// Deployment is the same object with the same pod template (no rollout), OLM v1's render of the
// bundle reproduces that template, the custom resource is intact, OLM v0 let go and left no mark.
func checkMigrated(t *testing.T, pkg, ns string, before *appsv1.Deployment, cr *unstructured.Unstructured) *operatorsv1alpha1.Operator {
	t.Helper()
	return checkMigratedCSV(t, pkg, ns, "gizmo-operator.v1.2.0", before, cr)
}

// checkMigratedCSV is checkMigrated for the installation of CSV csvName, whose Deployment was before.
func checkMigratedCSV(t *testing.T, pkg, ns, csvName string, before *appsv1.Deployment, cr *unstructured.Unstructured) *operatorsv1alpha1.Operator {
	t.Helper()
	ctx := context.Background()
	// The last step changed the deletionPolicy: the Operator reports Installed for that generation.
	var op *operatorsv1alpha1.Operator
	eventually(t, "Operator "+pkg+" Installed", func() error {
		var err error
		if op, err = getOperator(pkg); err != nil {
			return err
		}
		return migrateInstalled(op)
	})
	if op.Annotations[migrate.AnnotationMigrationPhase] != migrate.PhaseComplete || op.Spec.DeletionPolicy != rukpakv1alpha1.DeletionPolicyDelete {
		t.Errorf("Operator phase %q, deletionPolicy %s: want Complete and Delete", op.Annotations[migrate.AnnotationMigrationPhase], op.Spec.DeletionPolicy)
	}
	if op.Spec.Version != gizmoVersion || op.Spec.Channel != "stable" || op.Spec.InstallNamespace != ns || op.Spec.CollisionPolicy != rukpakv1alpha1.CollisionPolicyIfNoController {
		t.Errorf("Operator spec %+v", op.Spec)
	}

	after := &appsv1.Deployment{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(before), after); err != nil {
		t.Fatal(err)
	}
	// The same object, with the same pod template: the same ReplicaSet keeps running (the
	// generation may move: apps counts changes of the Deployment's own annotations, which OLM v1 sets).
	if after.UID != before.UID {
		t.Errorf("Deployment replaced or rolled out: UID %s -> %s, generation %d -> %d\nspec before %s\nspec after  %s", before.UID, after.UID, before.Generation, after.Generation, asJSON(before.Spec), asJSON(after.Spec))
	}
	if !equality.Semantic.DeepEqual(before.Spec.Template, after.Spec.Template) {
		t.Errorf("pod template changed:\nbefore %+v\nafter  %+v", before.Spec.Template, after.Spec.Template)
	}
	if after.Labels[rukpakOwnerName] != pkg {
		t.Errorf("Deployment labels %v: not owned by OLM v1", after.Labels)
	}
	// OLM v1's own render of the bundle is the running template (not only what server-side apply kept).
	bd, err := getBD(pkg)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := renderGizmo(ctx, bd)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range objs {
		if u.GetKind() != "Deployment" {
			continue
		}
		var rendered appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &rendered); err != nil {
			t.Fatal(err)
		}
		if d := migrate.TemplateDiff("Deployment", &after.Spec.Template, &rendered.Spec.Template); len(d) > 0 {
			t.Errorf("OLM v1 renders another pod template than the one running:\n%s", strings.Join(d, "\n"))
		}
	}

	gotCR := &unstructured.Unstructured{}
	gotCR.SetGroupVersionKind(cr.GroupVersionKind())
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(cr), gotCR); err != nil || gotCR.GetUID() != cr.GetUID() {
		t.Errorf("custom resource: %v (UID %s, want %s)", err, gotCR.GetUID(), cr.GetUID())
	}

	// OLM v0 let go: Subscription deleted, CSV deleted with propagationPolicy Orphan (envtest runs no
	// garbage collector, so it waits there with the orphan finalizer), no mark left.
	sub := &unstructured.Unstructured{}
	sub.SetGroupVersionKind(migrate.GVKSubscription)
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "gizmo"}, sub); !apierrors.IsNotFound(err) {
		t.Errorf("Subscription still there: %v", err)
	}
	csv := &unstructured.Unstructured{}
	csv.SetGroupVersionKind(migrate.GVKCSV)
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: csvName}, csv); err == nil {
		if csv.GetDeletionTimestamp() == nil || !contains(csv.GetFinalizers(), "orphan") {
			t.Errorf("CSV not deleted with propagationPolicy Orphan: deletionTimestamp %v, finalizers %v", csv.GetDeletionTimestamp(), csv.GetFinalizers())
		}
	} else if !apierrors.IsNotFound(err) {
		t.Error(err)
	}
	st, err := migrate.ReadV0(ctx, k8s, ns, "gizmo", csvName, pkg)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range st.Marked {
		if u.GetDeletionTimestamp() != nil {
			continue
		}
		if u.GetKind() == "CustomResourceDefinition" && len(u.GetOwnerReferences()) == 0 && !hasV0Label(u, pkg, ns) {
			continue // the CRD is the CSV's owned CRD, found by name; it carries no mark
		}
		t.Errorf("%s %s/%s still carries OLM v0's marks: labels %v, ownerReferences %v", u.GetKind(), u.GetNamespace(), u.GetName(), u.GetLabels(), u.GetOwnerReferences())
	}
	// Every object OLM v1 renders exists and is OLM v1's (its RBAC replaced OLM v0's).
	for _, u := range objs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(u.GroupVersionKind())
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(u), live); err != nil || live.GetLabels()[rukpakOwnerName] != pkg {
			t.Errorf("%s %s: %v, labels %v", u.GetKind(), u.GetName(), err, live.GetLabels())
		}
	}
	roles := &rbacv1.RoleList{}
	if err := k8s.List(ctx, roles, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, r := range roles.Items {
		// operator-controller's Role for the Operator's OperatorCondition is OLM v1's too.
		if r.Labels[rukpakOwnerName] != pkg && r.Labels[controller.LabelOwnerName] != pkg {
			t.Errorf("Role %s is not OLM v1's: labels %v", r.Name, r.Labels)
		}
	}
	sa := &corev1.ServiceAccount{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "gizmo-operator"}, sa); err != nil || sa.Labels[rukpakOwnerName] != pkg || len(sa.OwnerReferences) != 0 {
		t.Errorf("ServiceAccount: %v, labels %v, ownerReferences %v", err, sa.Labels, sa.OwnerReferences)
	}
	return op
}

func hasV0Label(u *unstructured.Unstructured, pkg, ns string) bool {
	l := u.GetLabels()
	_, component := l[migrate.ComponentLabel(pkg, ns)]
	return component || l[migrate.LabelOwner] != ""
}

func migrateInstalled(op *operatorsv1alpha1.Operator) error {
	for _, c := range op.Status.Conditions {
		if c.Type == operatorsv1alpha1.TypeInstalled && c.Status == "True" && c.ObservedGeneration == op.Generation {
			return nil
		}
	}
	return fmt.Errorf("Operator %s not Installed: %+v", op.Name, op.Status.Conditions)
}

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func TestMigrateAllNamespacesOperatorInPlace(t *testing.T) {
	playCatalogdAndRukpak(t)
	ctx := context.Background()
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mig-all-watched"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	_, cr := v0Install(t, "gizmo-all", "mig-all", v0fixture.Options{CopyTo: []string{"mig-all-watched"}})
	before := getDeployment(t, "mig-all")

	out, err := runMigrate(t, "mig-all", false, 0)
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	for _, want := range []string{
		"Migrate Subscription mig-all/gizmo (CSV gizmo-operator.v1.2.0) to Operator gizmo-all",
		"Catalog gizmo-all-catalog: image " + gizmoCatalogImage,
		"package gizmo-all, channel stable, version 1.2.0, upgradePolicy Automatic, installNamespace mig-all, watchNamespaces all namespaces, collisionPolicy IfNoController",
		"Pod templates: OLM v1 renders the running pod templates unchanged",
		"Subscription mig-all/gizmo: migrated to Operator gizmo-all",
		"Note: copied CSVs in mig-all-watched are ignored",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	op := checkMigrated(t, "gizmo-all", "mig-all", before, cr)
	copied := &unstructured.Unstructured{}
	copied.SetGroupVersionKind(migrate.GVKCSV)
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: "mig-all-watched", Name: "gizmo-operator.v1.2.0"}, copied); !apierrors.IsNotFound(err) {
		t.Errorf("the copied CSV is still there: %v", err)
	}
	if len(op.Spec.WatchNamespaces) != 0 || op.Spec.UpgradePolicy != operatorsv1alpha1.UpgradePolicyAutomatic {
		t.Errorf("watchNamespaces %v, upgradePolicy %s", op.Spec.WatchNamespaces, op.Spec.UpgradePolicy)
	}
	// A second run finds nothing left to do.
	if _, err := runMigrate(t, "mig-all", false, 0); err != nil {
		t.Errorf("second run: %v", err)
	}
}

// TestMigrateOwnNamespaceOperatorWithConfigInPlace: OwnNamespace, Manual approval,
// Subscription.spec.config, and a Deployment whose ownerReference to the CSV is marked controller.
func TestMigrateOwnNamespaceOperatorWithConfigInPlace(t *testing.T) {
	playCatalogdAndRukpak(t)
	_, cr := v0Install(t, "gizmo-own", "mig-own", v0fixture.Options{
		Targets: []string{"mig-own"}, Approval: v0.ApprovalManual, ControllerRef: true,
		Config: &v0.SubscriptionConfig{Env: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}, {Name: "EXTRA", Value: "1"}}},
	})
	before := getDeployment(t, "mig-own")
	if _, err := runMigrate(t, "mig-own", false, 0); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	op := checkMigrated(t, "gizmo-own", "mig-own", before, cr)
	if strings.Join(op.Spec.WatchNamespaces, ",") != "mig-own" || op.Spec.UpgradePolicy != operatorsv1alpha1.UpgradePolicyManual {
		t.Errorf("watchNamespaces %v, upgradePolicy %s", op.Spec.WatchNamespaces, op.Spec.UpgradePolicy)
	}
}

func TestMigrateDryRunChangesNothing(t *testing.T) {
	playCatalogdAndRukpak(t)
	v0Install(t, "gizmo-dry", "mig-dry", v0fixture.Options{})
	ctx := context.Background()
	versions := func() map[string]string {
		st, err := migrate.ReadV0(ctx, k8s, "mig-dry", "gizmo", "gizmo-operator.v1.2.0", "gizmo-dry")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{"Subscription": st.Subscription.ResourceVersion, "CSV": st.CSV.ResourceVersion}
		for _, u := range st.Marked {
			out[u.GetKind()+"/"+u.GetName()] = u.GetResourceVersion()
		}
		return out
	}
	before := versions()
	out, err := runMigrate(t, "mig-dry", true, 0)
	if err != nil {
		t.Fatalf("migrate --dry-run: %v", err)
	}
	for _, want := range []string{"adopt Deployment mig-dry gizmo-operator-controller-manager", "adopt ServiceAccount mig-dry gizmo-operator",
		"delete after Installed Role mig-dry gizmo-operator.v1.2.0-gizmo-operator-", "(dry run: nothing was changed in the cluster)", "Steps:"} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, want := range []string{} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if after := versions(); !equality.Semantic.DeepEqual(before, after) {
		t.Errorf("objects changed:\nbefore %v\nafter  %v", before, after)
	}
	if _, err := getOperator("gizmo-dry"); !apierrors.IsNotFound(err) {
		t.Errorf("an Operator was created: %v", err)
	}
}

// TestMigrateResumesAfterACrashBetweenSteps stops migrate after each step in turn, then runs it
// again: every run converges to the same migrated state.
func TestMigrateResumesAfterACrashBetweenSteps(t *testing.T) {
	playCatalogdAndRukpak(t)
	for k := 1; k < len(migrate.Steps); k++ {
		t.Run(fmt.Sprintf("stopped after step %d", k), func(t *testing.T) {
			pkg, ns := fmt.Sprintf("gizmo-crash-%d", k), fmt.Sprintf("mig-crash-%d", k)
			_, cr := v0Install(t, pkg, ns, v0fixture.Options{})
			before := getDeployment(t, ns)
			if _, err := runMigrate(t, ns, false, k); !errors.Is(err, migrate.ErrStopped) {
				t.Fatalf("first run: %v, want it stopped", err)
			}
			if _, err := runMigrate(t, ns, false, 0); err != nil {
				t.Fatalf("second run: %v", err)
			}
			checkMigrated(t, pkg, ns, before, cr)
		})
	}
}

func TestMigrateRefusesASharedOperatorGroup(t *testing.T) {
	playCatalogdAndRukpak(t)
	v0Install(t, "gizmo-shared", "mig-shared", v0fixture.Options{ExtraSubscriptions: []string{"other-operator"}})
	out, err := runMigrate(t, "mig-shared", false, 0)
	if !command.IsSilent(err) {
		t.Fatalf("migrate: %v, want it refused", err)
	}
	want := "OperatorGroup mig-shared/og is shared by Subscription gizmo and other-operator: OLM v0 resolves the operators of one OperatorGroup together"
	if !strings.Contains(out, want) || !strings.Contains(out, "Cannot migrate:") {
		t.Errorf("output lacks %q", want)
	}
	if _, err := getOperator("gizmo-shared"); !apierrors.IsNotFound(err) {
		t.Errorf("an Operator was created: %v", err)
	}
}

// OLM v0 installs a package once per namespace, OLM v1 once per cluster: of the same package in two
// namespaces, the first is moved and the second refused, naming the first and what to do.
func TestMigrateSamePackageInTwoNamespaces(t *testing.T) {
	playCatalogdAndRukpak(t)
	pkg := "gizmo-twice"
	_, crA := v0Install(t, pkg, "mig-twice-a", v0fixture.Options{Targets: []string{"mig-twice-a"}})
	v0Install(t, pkg, "mig-twice-b", v0fixture.Options{Targets: []string{"mig-twice-b"}})
	before := getDeployment(t, "mig-twice-a")
	if _, err := runMigrate(t, "mig-twice-a", false, 0); err != nil {
		t.Fatalf("migrate mig-twice-a: %v", err)
	}
	checkMigrated(t, pkg, "mig-twice-a", before, crA)

	beforeB := getDeployment(t, "mig-twice-b")
	out, err := runMigrate(t, "mig-twice-b", false, 0)
	if !command.IsSilent(err) {
		t.Fatalf("migrate mig-twice-b: %v, want it refused", err)
	}
	want := "package gizmo-twice is installed by OLM v0 in namespace mig-twice-a too, and was migrated from there (Subscription mig-twice-a/gizmo) to Operator gizmo-twice: OLM v1 installs a package once per cluster"
	if flat := strings.Join(strings.Fields(out), " "); !strings.Contains(flat, want) || !strings.Contains(flat, "keep it on OLM v0, or uninstall it with OLM v0") {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	// Nothing of mig-twice-b changed.
	afterB := getDeployment(t, "mig-twice-b")
	if afterB.UID != beforeB.UID || afterB.ResourceVersion != beforeB.ResourceVersion {
		t.Errorf("mig-twice-b's Deployment changed")
	}
	sub := &unstructured.Unstructured{}
	sub.SetGroupVersionKind(migrate.GVKSubscription)
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: "mig-twice-b", Name: "gizmo"}, sub); err != nil || sub.GetAnnotations()["operators.operatorframework.io/migrating-to"] != "" {
		t.Errorf("mig-twice-b's Subscription: %v, annotations %v", err, sub.GetAnnotations())
	}
}

func TestMigrateRefusesAnAddressOnlyCatalogSource(t *testing.T) {
	playCatalogdAndRukpak(t)
	v0Install(t, "gizmo-addr", "mig-addr", v0fixture.Options{CatalogImage: "-"})
	out, err := runMigrate(t, "mig-addr", true, 0)
	if !command.IsSilent(err) {
		t.Fatalf("migrate: %v, want it refused", err)
	}
	if !strings.Contains(out, "has no image (served from address") {
		t.Errorf("output lacks the address-only CatalogSource")
	}
}

// TestMigrateFailedAdoptionLeavesOLMv0Working: when the Operator does not become Installed (here
// the catalog no longer has the installed version), migrate stops before touching OLM v0, says how
// to roll back, and a later run finishes once the Operator installs.
func TestMigrateFailedAdoptionLeavesOLMv0Working(t *testing.T) {
	playCatalogdAndRukpak(t)
	ctx := context.Background()
	pkg, ns := "gizmo-fail", "mig-fail"
	_, cr := v0Install(t, pkg, ns, v0fixture.Options{})
	fixtures.set(pkg+"-catalog", packageFBC(pkg, bundleFBC{version: "1.3.0"}))
	before := getDeployment(t, ns)

	var out, errOut bytes.Buffer
	o := &command.Options{Streams: command.Streams{Out: &out, ErrOut: &errOut}, Output: "table"}
	err := migrate.Run(ctx, k8s, o, migrate.Options{Subscriptions: []string{ns + "/gizmo"}, Timeout: 3 * time.Second, PollInterval: 50 * time.Millisecond})
	t.Logf("migrate:\n%s%s", out.String(), errOut.String())
	if !command.IsSilent(err) {
		t.Fatalf("migrate: %v, want it to fail", err)
	}
	for _, want := range []string{"OLM v0's installation is untouched", "kubectl delete operator " + pkg} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// OLM v0's installation is as it was: its marks, its Subscription, its CSV, its RBAC.
	d := getDeployment(t, ns)
	if len(d.OwnerReferences) != 1 || d.OwnerReferences[0].Kind != "ClusterServiceVersion" || d.Labels[migrate.LabelOwner] != "gizmo-operator.v1.2.0" ||
		!equality.Semantic.DeepEqual(d.Spec.Template, before.Spec.Template) {
		t.Errorf("Deployment changed: ownerReferences %v, labels %v", d.OwnerReferences, d.Labels)
	}
	st, err := migrate.ReadV0(ctx, k8s, ns, "gizmo", "", pkg)
	if err != nil {
		t.Fatal(err)
	}
	if st.Subscription == nil || st.CSV == nil || st.CSV.DeletionTimestamp != nil {
		t.Fatalf("Subscription %v, CSV %v", st.Subscription, st.CSV)
	}
	roles := 0
	for _, u := range st.Marked {
		if u.GetKind() == "Role" {
			roles++
		}
	}
	if roles != 1 {
		t.Errorf("OLM v0's Roles: %d, want 1", roles)
	}

	// The catalog serves the version again: the next run finishes the migration.
	serveCatalog(t, pkg+"-catalog", "hash-again", packageFBC(pkg, bundleFBC{version: gizmoVersion}), nil)
	if _, err := runMigrate(t, ns, false, 0); err != nil {
		t.Fatalf("second run: %v", err)
	}
	checkMigrated(t, pkg, ns, before, cr)
}

// TestMigrateCommandAllNamespacesDryRun runs the cobra command as kubectl does, with
// --all-namespaces: every Subscription of the cluster is planned, nothing is changed.
func TestMigrateCommandAllNamespacesDryRun(t *testing.T) {
	playCatalogdAndRukpak(t)
	v0Install(t, "gizmo-cmd", "mig-cmd", v0fixture.Options{Targets: []string{"mig-cmd"}})
	var out, errOut bytes.Buffer
	cmd := migrate.NewCommand(&command.Options{
		Streams: command.Streams{Out: &out, ErrOut: &errOut}, Output: "table",
		NewClient: func() (client.Client, error) { return k8s, nil },
	})
	cmd.SetArgs([]string{"--all-namespaces", "--dry-run"})
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.ExecuteContext(context.Background())
	t.Logf("kubectl olmv1 migrate -A --dry-run: %v\n%s%s", err, out.String(), errOut.String())
	// Subscriptions other tests left may be refused; this one is planned.
	if err != nil && !command.IsSilent(err) {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Migrate Subscription mig-cmd/gizmo (CSV gizmo-operator.v1.2.0) to Operator gizmo-cmd",
		"installNamespace mig-cmd, watchNamespaces mig-cmd",
		"(dry run: nothing was changed in the cluster)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if _, err := getOperator("gizmo-cmd"); !apierrors.IsNotFound(err) {
		t.Errorf("an Operator was created: %v", err)
	}
	// Naming Subscriptions and --all-namespaces together is refused.
	cmd.SetArgs([]string{"gizmo", "--all-namespaces"})
	if err := cmd.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), "name SUBSCRIPTIONs (with -n NAMESPACE) or use --all-namespaces") {
		t.Errorf("both: %v", err)
	}
}
