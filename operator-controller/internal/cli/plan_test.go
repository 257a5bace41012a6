package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/catalogs"
	"github.com/olmv1/olmv1/operator-controller/internal/controller"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/bundlerender"
)

// compositeBundles is the composite fixture of the e2e tier: hub-operator (1.0.0 needs the APIs of
// alpha-operator and beta-operator, 1.1.0 only alpha-operator's).
var compositeBundles = filepath.Join("..", "..", "..", "e2e", "testdata", "composite-operator", "bundles")

// previewCluster is a fake cluster with one serving Catalog of the composite fixture, served through
// the CatalogMetadata API as catalogd serves it (status.contentHash is catalogd's hash of it), and
// the bundle images as local directories. It records every write the commands send.
type previewCluster struct {
	client client.Client
	images map[string]string // image → bundle directory

	mu     sync.Mutex
	writes []string // "verb kind name dryRun=<bool>"
}

const testCatalog = "composite"

func newPreviewCluster(t *testing.T, objs ...client.Object) *previewCluster {
	t.Helper()
	pc := &previewCluster{images: map[string]string{}}
	catalogDir := t.TempDir()
	for _, b := range []string{"alpha-operator/1.0.0", "beta-operator/1.0.0", "hub-operator/1.0.0", "hub-operator/1.1.0"} {
		image := "registry.test/bundles/" + strings.Replace(b, "/", ":", 1)
		pc.images[image] = filepath.Join(compositeBundles, b)
		mustRun(t, "catalog", "add-bundle", catalogDir, pc.images[image], "--image", image)
	}
	var (
		mu    sync.Mutex // WalkMetasFS calls back from several goroutines
		metas []*declcfg.Meta
	)
	if err := declcfg.WalkMetasFS(context.Background(), os.DirFS(catalogDir), func(_ string, m *declcfg.Meta, err error) error {
		if err == nil {
			mu.Lock()
			metas = append(metas, m)
			mu.Unlock()
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	hash, err := catalogs.ContentHash(context.Background(), metas)
	if err != nil {
		t.Fatal(err)
	}
	cat := &catalogdv1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: testCatalog},
		Status: catalogdv1alpha1.CatalogStatus{ContentHash: hash, Conditions: []metav1.Condition{{
			Type: catalogdv1alpha1.TypeServing, Status: metav1.ConditionTrue, Reason: "Serving", LastTransitionTime: metav1.Now(),
		}}},
	}
	objs = append(objs, cat)
	for i, m := range metas {
		objs = append(objs, &metadatav1alpha1.CatalogMetadata{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%03d", testCatalog, i)},
			Spec:       metadatav1alpha1.CatalogMetadataSpec{Catalog: testCatalog, Schema: m.Schema, Package: m.Package, Name: m.Name, Content: runtime.RawExtension{Raw: m.Blob}},
		})
	}

	s, err := scheme()
	if err != nil {
		t.Fatal(err)
	}
	// The fixture's custom resources, so that the CRD upgrade-safety check can list them.
	s.AddKnownTypeWithName(schema.GroupVersionKind{Group: "composite.olmv1.io", Version: "v1", Kind: "Hub"}, &unstructured.Unstructured{})
	s.AddKnownTypeWithName(schema.GroupVersionKind{Group: "composite.olmv1.io", Version: "v1", Kind: "HubList"}, &unstructured.UnstructuredList{})
	record := func(verb string, obj runtime.Object, dryRun []string) {
		pc.mu.Lock()
		defer pc.mu.Unlock()
		name := ""
		if o, ok := obj.(client.Object); ok {
			name = o.GetName()
		}
		pc.writes = append(pc.writes, fmt.Sprintf("%s %T %s dryRun=%v", verb, obj, name, isDryRun(dryRun)))
	}
	pc.client = fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithIndex(&metadatav1alpha1.CatalogMetadata{}, metadatav1alpha1.FieldCatalog, func(o client.Object) []string {
			return []string{o.(*metadatav1alpha1.CatalogMetadata).Spec.Catalog}
		}).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				o := &client.CreateOptions{}
				o.ApplyOptions(opts)
				record("create", obj, o.DryRun)
				return c.Create(ctx, obj, opts...)
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				o := &client.UpdateOptions{}
				o.ApplyOptions(opts)
				record("update", obj, o.DryRun)
				return c.Update(ctx, obj, opts...)
			},
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				o := &client.PatchOptions{}
				o.ApplyOptions(opts)
				record("patch", obj, o.DryRun)
				return c.Patch(ctx, obj, patch, opts...)
			},
			Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
				o := &client.ApplyOptions{}
				o.ApplyOptions(opts)
				record("apply", nil, o.DryRun)
				return c.Apply(ctx, obj, opts...)
			},
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				o := &client.DeleteOptions{}
				o.ApplyOptions(opts)
				record("delete", obj, o.DryRun)
				return c.Delete(ctx, obj, opts...)
			},
		}).Build()
	return pc
}

// run runs the CLI against the fake cluster.
func (pc *previewCluster) run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := &options{Streams: Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, pollInterval: 10 * time.Millisecond}
	root := newRootCommand(o)
	o.newClient = func() (client.Client, error) { return pc.client, nil }
	o.pull = func(_ context.Context, image string, _ bool) (string, func(), error) {
		dir, ok := pc.images[image]
		if !ok {
			return "", nil, fmt.Errorf("image %s not in the test registry", image)
		}
		return dir, func() {}, nil
	}
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// realWrites are the writes that were not dry runs.
func (pc *previewCluster) realWrites() []string {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	var out []string
	for _, w := range pc.writes {
		if strings.HasSuffix(w, "dryRun=false") {
			out = append(out, w)
		}
	}
	return out
}

func TestInstallDryRunPlansWithoutWriting(t *testing.T) {
	pc := newPreviewCluster(t)
	out, errOut, err := pc.run(t, "install", "hub-operator", "--name", "hub", "--version", "1.0.0", "--dependency-policy", "Install", "--dry-run")
	if err != nil {
		t.Fatalf("install --dry-run: %v\n%s\n%s", err, out, errOut)
	}
	t.Logf("kubectl olmv1 install hub-operator --name hub --version 1.0.0 --dependency-policy Install --dry-run\n%s", out)
	for _, want := range []string{
		"Install package hub-operator as Operator hub: version 1.0.0",
		"(dry run: nothing was changed in the cluster)",
		// The resolution: the three bundles, the dependencies' Operators created by operator-controller.
		"hub              hub-operator.v1.0.0     1.0.0     install   composite   kubectl olmv1",
		"alpha-operator   alpha-operator.v1.0.0   1.0.0     install   composite   operator-controller",
		"beta-operator    beta-operator.v1.0.0    1.0.0     install   composite   operator-controller",
		// Why.
		`requirement: Operator hub asks for package hub-operator, version "1.0.0", any channel`,
		"requirement: hub-operator.v1.0.0 (Operator hub) requires olm.gvk.required composite.olmv1.io/v1 Alpha",
		"channel: stable (the default channel)",
		"version: 1.0.0; newer in the catalogs: 1.1.0 (outside spec.version)",
		"catalog: composite (priority 0)",
		// The objects, in the order they would be written.
		"create   Operator                   -                hub",
		"create   Operator                   -                alpha-operator",
		"create   Namespace                  -                hub-operator",
		"create   BundleDeployment           -                hub",
		"create   CustomResourceDefinition   -                hubs.composite.olmv1.io",
		"create   Deployment                 hub-operator     hub-operator",
	} {
		if !containsText(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "RBAC\nClusterRole ") || !strings.Contains(out, "get,list,watch,update hubs.composite.olmv1.io") ||
		!strings.Contains(out, "bound cluster-wide by ClusterRoleBinding ") || !strings.Contains(out, "to ServiceAccount hub-operator/hub-operator") {
		t.Errorf("RBAC section:\n%s", out)
	}
	if !strings.Contains(out, "CRD UPGRADE SAFETY\nhubs.composite.olmv1.io: new, nothing installed to break [Operator hub]") {
		t.Errorf("CRD section:\n%s", out)
	}

	// Nothing was written: every write was a dry run, and nothing exists afterwards.
	if w := pc.realWrites(); len(w) > 0 {
		t.Fatalf("a dry run wrote: %q", w)
	}
	assertEmpty(t, pc.client, &operatorsv1alpha1.OperatorList{}, &rukpakv1alpha1.BundleDeploymentList{}, &corev1.NamespaceList{}, &apiextensionsv1.CustomResourceDefinitionList{})

	// -o json prints the same plan as data.
	out, errOut, err = pc.run(t, "install", "hub-operator", "--name", "hub", "--version", "1.0.0", "--dependency-policy", "Install", "--dry-run", "-o", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	var plan Plan
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var got []string
	for _, b := range plan.Bundles {
		got = append(got, b.Operator+"="+b.Bundle+"/"+b.OperatorCreated)
	}
	if want := []string{"hub=hub-operator.v1.0.0/kubectl olmv1", "alpha-operator=alpha-operator.v1.0.0/operator-controller", "beta-operator=beta-operator.v1.0.0/operator-controller"}; !slices.Equal(got, want) {
		t.Errorf("bundles %q, want %q", got, want)
	}
	if plan.Objects[0].Kind != "Operator" || plan.Objects[0].Object.Object["spec"].(map[string]any)["dependencyPolicy"] != "Install" {
		t.Errorf("first object: %+v", plan.Objects[0])
	}

	// Without the Install policy nothing resolves: the message names the Operators to create, and
	// the exit is an error.
	out, _, err = pc.run(t, "install", "hub-operator", "--name", "hub", "--version", "1.0.0", "--dry-run")
	if err == nil || !IsSilent(err) || !strings.Contains(out, "Resolution fails: ") || !strings.Contains(out, `"alpha-operator", "beta-operator"`) {
		t.Errorf("Require policy: err %v\n%s", err, out)
	}
	if w := pc.realWrites(); len(w) > 0 {
		t.Fatalf("a dry run wrote: %q", w)
	}
}

// TestInstallDryRunWithExistingDependencyOperators: a dependency Operator another Operator created is
// joined, not created again; an Operator of another package holding a dependency's name is reported.
func TestInstallDryRunWithExistingDependencyOperators(t *testing.T) {
	other := installedOperator("other", "other-package", "1.0.0", nil)
	alpha := installedOperator("alpha-operator", "alpha-operator", "1.0.0", other)
	clash := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "beta-operator", UID: "uid-clash"}, Spec: operatorsv1alpha1.OperatorSpec{PackageName: "gadget"}}
	pc := newPreviewCluster(t, alpha, installedBundleDeployment(alpha, "registry.test/bundles/alpha-operator:1.0.0"), clash)
	out, errOut, err := pc.run(t, "install", "hub-operator", "--name", "hub", "--version", "1.0.0", "--dependency-policy", "Install", "--dry-run")
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errOut)
	}
	for _, want := range []string{
		"alpha-operator   alpha-operator.v1.0.0   1.0.0     unchanged   composite   -",
		"update   Operator   -   alpha-operator   alpha-operator   operator-controller   a dependency another Operator created: Operator hub becomes one more owner",
		`- Operator hub: package "beta-operator" is needed but the Operator "beta-operator" that would install it exists for package "gadget"`,
	} {
		if !containsText(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if containsText(out, "create Operator - alpha-operator") || containsText(out, "create Operator - beta-operator") {
		t.Errorf("a dependency Operator that exists is planned again:\n%s", out)
	}
	if w := pc.realWrites(); len(w) > 0 {
		t.Fatalf("a dry run wrote: %q", w)
	}
}

// TestUpgradePreviewDiffsAgainstLiveObjects: hub installed on 1.0.0 with its dependencies (the
// objects rukpak applied are in the cluster); the preview of 1.1.0 shows the spec change, the
// diffs, the Operator of beta-operator that nothing needs any more, and writes nothing.
func TestUpgradePreviewDiffsAgainstLiveObjects(t *testing.T) {
	hub := installedOperator("hub", "hub-operator", "1.0.0", nil)
	hub.Spec.Version, hub.Spec.DependencyPolicy = "1.0.0", operatorsv1alpha1.DependencyPolicyInstall
	alpha := installedOperator("alpha-operator", "alpha-operator", "1.0.0", hub)
	beta := installedOperator("beta-operator", "beta-operator", "1.0.0", hub)
	var objs []client.Object
	for _, op := range []*operatorsv1alpha1.Operator{hub, alpha, beta} {
		objs = append(objs, op, installedBundleDeployment(op, "registry.test/bundles/"+op.Spec.PackageName+":1.0.0"))
	}
	objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hub-operator"}})
	// What rukpak applied for hub 1.0.0.
	rendered, err := bundlerender.Render(context.Background(), filepath.Join(compositeBundles, "hub-operator", "1.0.0"), bundlerender.Options{Name: "hub", InstallNamespace: "hub-operator"})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range rendered.Objects {
		objs = append(objs, u)
	}
	pc := newPreviewCluster(t, objs...)
	get := func() (int64, string) {
		op, bd := &operatorsv1alpha1.Operator{}, &rukpakv1alpha1.BundleDeployment{}
		if err := pc.client.Get(context.Background(), client.ObjectKey{Name: "hub"}, op); err != nil {
			t.Fatal(err)
		}
		if err := pc.client.Get(context.Background(), client.ObjectKey{Name: "hub"}, bd); err != nil {
			t.Fatal(err)
		}
		return op.Generation, bd.ResourceVersion + "/" + op.ResourceVersion
	}
	gen, rv := get()

	out, errOut, err := pc.run(t, "upgrade", "hub", "--version", "1.1.0", "--preview")
	if err != nil {
		t.Fatalf("upgrade --preview: %v\n%s\n%s", err, out, errOut)
	}
	t.Logf("kubectl olmv1 upgrade hub --version 1.1.0 --preview\n%s", out)
	for _, want := range []string{
		"Upgrade Operator hub (package hub-operator): 1.0.0 -> 1.1.0",
		"(preview: nothing was changed in the cluster)",
		"hub              hub-operator.v1.1.0     1.1.0     upgrade from 1.0.0   composite",
		"upgrade: from hub-operator.v1.0.0 (1.0.0): the catalog's upgrade edge replaces hub-operator.v1.0.0 in channel stable",
		"update      Operator                   -               hub",
		"delete      Operator                   -               beta-operator",
		"update      BundleDeployment           -               hub",
		"update      Deployment                 hub-operator    hub-operator",
		"unchanged   CustomResourceDefinition   -               hubs.composite.olmv1.io",
		// The diffs: the spec, the BundleDeployment's image, the Deployment's image.
		"--- Operator hub (live)\n+++ Operator hub (after)\n",
		"-  version: 1.0.0\n+  version: 1.1.0\n",
		"-      ref: registry.test/bundles/hub-operator:1.0.0\n+      ref: registry.test/bundles/hub-operator:1.1.0\n",
		"--- Deployment hub-operator/hub-operator (live)\n+++ Deployment hub-operator/hub-operator (after)\n",
		"-        image: registry.example.test/hub-operator:v1.0.0\n",
		"+        image: registry.example.test/hub-operator:v1.1.0\n",
		"(unchanged), bound cluster-wide by ClusterRoleBinding",
		"hubs.composite.olmv1.io: safe: no scope change, no stored version removed, every existing object valid under the new schema [Operator hub]",
	} {
		if !containsText(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if w := pc.realWrites(); len(w) > 0 {
		t.Fatalf("a preview wrote: %q", w)
	}
	if g, r := get(); g != gen || r != rv {
		t.Fatalf("the preview changed the Operator or its BundleDeployment: generation %d→%d, resourceVersions %s→%s", gen, g, rv, r)
	}

	// An Automatic Operator without a new version or channel has nothing to upgrade.
	if _, _, err := pc.run(t, "upgrade", "hub", "--preview"); err == nil || !strings.Contains(err.Error(), "upgrades by itself within its spec") {
		t.Errorf("upgrade without a change: %v", err)
	}

	// The upgrade itself writes the spec change, and only that.
	if _, errOut, err := pc.run(t, "upgrade", "hub", "--version", "1.1.0"); err != nil || !strings.Contains(errOut, "operator hub: upgrading: spec.version 1.0.0 -> 1.1.0") {
		t.Fatalf("upgrade: %v\n%s", err, errOut)
	}
	if w := pc.realWrites(); len(w) != 1 || !strings.HasPrefix(w[0], "patch *v1alpha1.Operator hub") {
		t.Errorf("upgrade wrote %q, want one patch of the Operator", w)
	}
	op := &operatorsv1alpha1.Operator{}
	if err := pc.client.Get(context.Background(), client.ObjectKey{Name: "hub"}, op); err != nil || op.Spec.Version != "1.1.0" {
		t.Errorf("spec.version after the upgrade: %q (%v)", op.Spec.Version, err)
	}
}

// TestUpgradePreviewApprovesTheManualUpgrade: a Manual Operator without --version is previewed with
// the upgrade it waits for approved.
func TestUpgradePreviewApprovesTheManualUpgrade(t *testing.T) {
	alpha := installedOperator("alpha-operator", "alpha-operator", "1.0.0", nil)
	hub := installedOperator("hub", "hub-operator", "1.0.0", nil)
	hub.Spec.UpgradePolicy = operatorsv1alpha1.UpgradePolicyManual
	beta := installedOperator("beta-operator", "beta-operator", "1.0.0", nil)
	pc := newPreviewCluster(t, alpha, beta, hub,
		installedBundleDeployment(alpha, "registry.test/bundles/alpha-operator:1.0.0"),
		installedBundleDeployment(beta, "registry.test/bundles/beta-operator:1.0.0"),
		installedBundleDeployment(hub, "registry.test/bundles/hub-operator:1.0.0"))
	out, errOut, err := pc.run(t, "upgrade", "hub", "--preview")
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errOut)
	}
	for _, want := range []string{"1.0.0 -> 1.1.0", "+  approvedVersion: 1.1.0\n", "approved version 1.1.0 (upgradePolicy Manual)"} {
		if !containsText(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if w := pc.realWrites(); len(w) > 0 {
		t.Fatalf("a preview wrote: %q", w)
	}
}

func TestReadOnlyClientRefusesWrites(t *testing.T) {
	pc := newPreviewCluster(t)
	ro := readOnlyClient{Client: pc.client}
	ctx := context.Background()
	ns := func() *corev1.Namespace { return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x"}} }
	for name, write := range map[string]func() error{
		"create": func() error { return ro.Create(ctx, ns()) },
		"update": func() error { return ro.Update(ctx, ns()) },
		"patch": func() error {
			return ro.Patch(ctx, ns(), client.RawPatch("application/merge-patch+json", []byte(`{}`)))
		},
		"delete":        func() error { return ro.Delete(ctx, ns()) },
		"delete all of": func() error { return ro.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace("x")) },
		"status":        func() error { return ro.Status().Update(ctx, ns(), client.DryRunAll) },
	} {
		if err := write(); err == nil || !strings.Contains(err.Error(), "refusing to") {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
	}
	if len(pc.writes) != 0 {
		t.Errorf("refused writes reached the client: %q", pc.writes)
	}
	if err := ro.Create(ctx, ns(), client.DryRunAll); err != nil {
		t.Errorf("a dry run is allowed: %v", err)
	}
	if w := pc.realWrites(); len(w) != 0 || len(pc.writes) != 1 {
		t.Errorf("writes %q", pc.writes)
	}
	assertEmpty(t, pc.client, &corev1.NamespaceList{})
}

func TestWritePlan(t *testing.T) {
	plan := &Plan{
		Action: "upgrade", Operator: "w", Package: "widgets", From: "1.0.0", To: "1.1.0",
		Bundles: []PlannedBundle{{Operator: "w", Package: "widgets", Bundle: "widgets.v1.1.0", Version: "1.1.0", Catalog: "main", Image: "r/w:1.1.0", Installed: "1.0.0", Change: "upgrade", Why: []string{"requirement: x", "channel: stable"}}},
		Objects: []PlannedObject{
			{Action: "update", Kind: "Deployment", Namespace: "ops", Name: "w", Operator: "w", By: byRukpak, Diff: "--- a\n+++ b\n-x\n+y\n"},
			{Action: "unchanged", Kind: "ServiceAccount", Namespace: "ops", Name: "w", Operator: "w", By: byRukpak},
			{Action: "create", Kind: "ConfigMap", Namespace: "ops", Name: "c", Operator: "w", By: byRukpak},
		},
		RBAC: []RBACGrant{{Operator: "w", Role: "ClusterRole w", Binding: "ClusterRoleBinding w", Scope: "cluster-wide", Subjects: []string{"ServiceAccount ops/w"},
			Rules:  ruleLines([]rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}}, {Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}}}),
			Change: "changed (+1 -0 rules)", Warnings: ruleWarnings([]rbacv1.PolicyRule{{Verbs: []string{"*"}}}, true)}},
	}
	plan.CRDs = append(plan.CRDs, CRDFinding{Operator: "w"})
	plan.CRDs[0].CRD, plan.CRDs[0].Installed, plan.CRDs[0].Problems = "widgets.example.com", true, []string{"CRD widgets.example.com changes scope from Namespaced to Cluster"}
	var b bytes.Buffer
	if err := writePlan(&b, plan); err != nil {
		t.Fatal(err)
	}
	want := `Upgrade Operator w (package widgets): 1.0.0 -> 1.1.0
(preview: nothing was changed in the cluster)

RESOLUTION
OPERATOR   BUNDLE           VERSION   CHANGE               CATALOG   OPERATOR CREATED BY
w          widgets.v1.1.0   1.1.0     upgrade from 1.0.0   main      -

WHY
widgets.v1.1.0 (Operator w, image r/w:1.1.0)
  requirement: x
  channel: stable

OBJECTS
ACTION      KIND             NAMESPACE   NAME   OPERATOR   BY       NOTE
update      Deployment       ops         w      w          rukpak   
unchanged   ServiceAccount   ops         w      w          rukpak   
create      ConfigMap        ops         c      w          rukpak   
1 to create, 1 to update, 1 unchanged

DIFF
--- a
+++ b
-x
+y

RBAC
ClusterRole w (changed (+1 -0 rules)), bound cluster-wide by ClusterRoleBinding w to ServiceAccount ops/w [Operator w]
    * deployments.apps
    get /metrics
    ! wildcard rule (* in verbs, resources or API groups)

CRD UPGRADE SAFETY
widgets.example.com: UNSAFE: rukpak would refuse the upgrade (Installed=False, reason UpgradeBlocked) and keep the installed bundle [Operator w]
    CRD widgets.example.com changes scope from Namespaced to Cluster
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// installedOperator is an Operator whose BundleDeployment installed version v of pkg; dependent,
// when set, is the Operator it was created for (dependencyPolicy Install).
func installedOperator(name, pkg, v string, dependent *operatorsv1alpha1.Operator) *operatorsv1alpha1.Operator {
	op := &operatorsv1alpha1.Operator{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), Generation: 1},
		Spec:       operatorsv1alpha1.OperatorSpec{PackageName: pkg},
		Status:     operatorsv1alpha1.OperatorStatus{InstallNamespace: pkg},
	}
	if dependent != nil {
		d := controller.DependencyOperator(dependent, pkg)
		op.Labels, op.OwnerReferences, op.Spec = d.Labels, d.OwnerReferences, d.Spec
		op.CreationTimestamp.Time = op.CreationTimestamp.Add(time.Second)
	}
	op.Status.InstalledBundle = &operatorsv1alpha1.BundleMetadata{Name: pkg + ".v" + v, Version: v, Catalog: testCatalog}
	return op
}

// installedBundleDeployment is the BundleDeployment operator-controller wrote for op on image.
func installedBundleDeployment(op *operatorsv1alpha1.Operator, image string) *rukpakv1alpha1.BundleDeployment {
	return &rukpakv1alpha1.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:   op.Name,
			Labels: map[string]string{controller.LabelOwnerKind: "Operator", controller.LabelOwnerName: op.Name},
			Annotations: map[string]string{
				controller.AnnotationPackage: op.Spec.PackageName, controller.AnnotationBundleName: op.Status.InstalledBundle.Name,
				controller.AnnotationBundleVersion: op.Status.InstalledBundle.Version, controller.AnnotationCatalog: testCatalog,
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: operatorsv1alpha1.GroupVersion.String(), Kind: "Operator", Name: op.Name, UID: op.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: rukpakv1alpha1.BundleDeploymentSpec{
			ProvisionerClassName: rukpakv1alpha1.ProvisionerRegistry,
			Source:               rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: image}},
			InstallNamespace:     op.Status.InstallNamespace,
			CollisionPolicy:      rukpakv1alpha1.CollisionPolicyPrevent,
			DeletionPolicy:       rukpakv1alpha1.DeletionPolicyDelete,
		},
	}
}

func assertEmpty(t *testing.T, c client.Client, lists ...client.ObjectList) {
	t.Helper()
	for _, l := range lists {
		if err := c.List(context.Background(), l); err != nil {
			t.Fatal(err)
		}
		if n := len(mustItems(t, l)); n != 0 {
			t.Errorf("%T has %d items after a dry run", l, n)
		}
	}
}

func mustItems(t *testing.T, l client.ObjectList) []runtime.Object {
	t.Helper()
	items, err := apimeta.ExtractList(l)
	if err != nil {
		t.Fatal(err)
	}
	return items
}

// containsText reports whether out contains want, table columns aligned however wide they are.
func containsText(out, want string) bool {
	squeeze := func(s string) string { return regexp.MustCompile(` {2,}`).ReplaceAllString(s, " ") }
	return strings.Contains(out, want) || strings.Contains(squeeze(out), squeeze(want))
}
