package cli

import (
	"bytes"
	"context"
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
	"github.com/olmv1/olmv1/operator-controller/internal/cli/command"
	"github.com/olmv1/olmv1/operator-controller/internal/controller"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
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

	s, err := command.Scheme()
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
		pc.writes = append(pc.writes, fmt.Sprintf("%s %T %s dryRun=%v", verb, obj, name, slices.Contains(dryRun, metav1.DryRunAll)))
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
	o := &options{&command.Options{Streams: command.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, PollInterval: 10 * time.Millisecond}}
	root := newRootCommand(o)
	o.NewClient = func() (client.Client, error) { return pc.client, nil }
	o.Pull = func(_ context.Context, image string, _ bool) (string, func(), error) {
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
