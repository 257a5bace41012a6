package suite

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/olmv1/olmv1/e2e/localcluster"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

var (
	catalogMetadataGVR = schema.GroupVersionResource{Group: "metadata.catalogd.operatorframework.io", Version: "v1alpha1", Resource: "catalogmetadata"}
	apiServiceGVR      = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
)

func init() {
	port, err := localcluster.FreePort()
	if err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "olmv1-e2e-metadata-")
	if err != nil {
		panic(err)
	}
	controllerArgs["catalogd"] = append(controllerArgs["catalogd"],
		"--metadata-bind-address=127.0.0.1:"+strconv.Itoa(port),
		"--metadata-cert-dir="+dir,
		"--metadata-apiservice=local",
	)
}

var _ = Describe("CatalogMetadata API", Label("catalogmetadata"), Ordered, func() {
	const catalogName = "metadata-demo"
	var (
		dc       dynamic.Interface
		metadata dynamic.NamespaceableResourceInterface
		refV2    string
	)

	BeforeAll(func(ctx SpecContext) {
		var err error
		dc, err = dynamic.NewForConfig(env.cfg)
		Expect(err).NotTo(HaveOccurred())
		metadata = dc.Resource(catalogMetadataGVR)
		c := newClient(env.cfg)

		By("waiting for the APIService to be Available through kube-apiserver")
		waitCondition(ctx, c, apiServiceNamed("v1alpha1.metadata.catalogd.operatorframework.io"), "Available", "True", 2*time.Minute, anyGeneration())

		By("serving a catalog built from testdata")
		refs := map[string]string{}
		for tag, dir := range map[string]string{"v1": "demo", "v2": "demo-v2"} {
			img, err := imagebuild.CatalogImage(filepath.Join(env.repoRoot, "e2e", "testdata", "catalogs", dir))
			Expect(err).NotTo(HaveOccurred())
			refs[tag] = env.registry.Addr + "/catalogs/metadata-demo:" + tag
			_, err = imagebuild.Push(ctx, img, refs[tag], imagebuild.WithInsecure())
			Expect(err).NotTo(HaveOccurred())
		}
		refV2 = refs["v2"]
		catalogs := dc.Resource(catalogGVR)
		_, err = catalogs.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "catalogd.operatorframework.io/v1alpha1", "kind": "Catalog",
			"metadata": map[string]any{"name": catalogName},
			"spec":     map[string]any{"source": map[string]any{"type": "Image", "image": map[string]any{"ref": refs["v1"]}}},
		}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = catalogs.Delete(ctx, catalogName, metav1.DeleteOptions{})
		})
		Eventually(func(g Gomega) {
			l, err := metadata.List(ctx, metav1.ListOptions{LabelSelector: "catalog=" + catalogName})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(l.Items).To(HaveLen(6))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	})

	names := func(l *unstructured.UnstructuredList) []string {
		var out []string
		for _, i := range l.Items {
			n, _, _ := unstructured.NestedString(i.Object, "spec", "name")
			out = append(out, n)
		}
		return out
	}

	It("lists packages, channels and bundles by catalog and schema (the seed's kubectl get catalogmetadata -l)", func(ctx SpecContext) {
		for schema, want := range map[string][]string{
			"olm.package": {"hello-operator"},
			"olm.channel": {"stable", "candidate"},
			"olm.bundle":  {"hello-operator.v1.0.0", "hello-operator.v1.1.0", "hello-operator.v1.2.0"},
		} {
			l, err := metadata.List(ctx, metav1.ListOptions{LabelSelector: "catalog=" + catalogName + ",schema=" + schema})
			Expect(err).NotTo(HaveOccurred())
			Expect(names(l)).To(ConsistOf(want), schema)
		}
	})

	It("selects by package and name with field selectors and gets one object with its blob unchanged", func(ctx SpecContext) {
		l, err := metadata.List(ctx, metav1.ListOptions{FieldSelector: "spec.catalog=" + catalogName + ",spec.package=hello-operator,spec.name=hello-operator.v1.1.0"})
		Expect(err).NotTo(HaveOccurred())
		Expect(l.Items).To(HaveLen(1))
		got, err := metadata.Get(ctx, l.Items[0].GetName(), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		content, _, _ := unstructured.NestedMap(got.Object, "spec", "content")
		Expect(content).To(HaveKeyWithValue("schema", "olm.bundle"))
		Expect(content).To(HaveKeyWithValue("image", "127.0.0.1:5001/bundles/hello-operator:v1.1.0"))
		_, err = metadata.Get(ctx, "no-such-object", metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
	})

	It("paginates with limit and continue", func(ctx SpecContext) {
		var all []string
		opts := metav1.ListOptions{LabelSelector: "catalog=" + catalogName, Limit: 4}
		pages := 0
		for {
			l, err := metadata.List(ctx, opts)
			Expect(err).NotTo(HaveOccurred())
			Expect(len(l.Items)).To(BeNumerically("<=", 4))
			all = append(all, names(l)...)
			pages++
			if l.GetContinue() == "" {
				break
			}
			opts.Continue = l.GetContinue()
		}
		Expect(pages).To(Equal(2))
		Expect(all).To(HaveLen(6))
	})

	It("is described through kube-apiserver: discovery, kubectl tables and the merged OpenAPI documents", func(ctx SpecContext) {
		disc, err := discovery.NewDiscoveryClientForConfig(env.cfg)
		Expect(err).NotTo(HaveOccurred())

		By("discovery lists the resource with its verbs")
		resources, err := disc.ServerResourcesForGroupVersion(catalogMetadataGVR.GroupVersion().String())
		Expect(err).NotTo(HaveOccurred())
		Expect(resources.APIResources).To(ContainElement(SatisfyAll(
			HaveField("Name", "catalogmetadata"), HaveField("Kind", "CatalogMetadata"), HaveField("Namespaced", false),
			HaveField("Verbs", ConsistOf("get", "list", "watch")))))

		By("kube-apiserver's aggregated discovery (what kubectl api-resources and kubectl get read) has the resource")
		Eventually(func(g Gomega) {
			_, lists, err := disc.ServerGroupsAndResources()
			g.Expect(err).NotTo(HaveOccurred())
			var found bool
			for _, l := range lists {
				for _, r := range l.APIResources {
					found = found || (l.GroupVersion == catalogMetadataGVR.GroupVersion().String() && r.Name == "catalogmetadata")
				}
			}
			g.Expect(found).To(BeTrue(), "catalogmetadata is not in kube-apiserver's discovery")
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

		By("kubectl get's Table has the columns and a row per object")
		raw, err := disc.RESTClient().Get().AbsPath("/apis", catalogMetadataGVR.Group, catalogMetadataGVR.Version, "catalogmetadata").
			Param("labelSelector", "catalog="+catalogName).SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json").DoRaw(ctx)
		Expect(err).NotTo(HaveOccurred())
		var table metav1.Table
		Expect(json.Unmarshal(raw, &table)).To(Succeed())
		var columns []string
		for _, c := range table.ColumnDefinitions {
			columns = append(columns, c.Name)
		}
		Expect(columns).To(Equal([]string{"Catalog", "Schema", "Package", "Name", "Object"}))
		Expect(table.Rows).To(HaveLen(6))

		By("kube-apiserver's OpenAPI v3 serves the group version's document with the kind (kubectl explain reads it)")
		Eventually(func(g Gomega) {
			paths, err := disc.OpenAPIV3().Paths()
			g.Expect(err).NotTo(HaveOccurred())
			gv, ok := paths["apis/"+catalogMetadataGVR.Group+"/"+catalogMetadataGVR.Version]
			g.Expect(ok).To(BeTrue(), "the v3 index has no %s", catalogMetadataGVR.GroupVersion())
			doc, err := gv.Schema("application/json")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(doc)).To(ContainSubstring(`"kind":"CatalogMetadata"`))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

		By("kube-apiserver merged the definitions into its OpenAPI v2 document")
		Eventually(func(g Gomega) {
			v2, err := disc.OpenAPISchema()
			g.Expect(err).NotTo(HaveOccurred())
			var found bool
			for _, d := range v2.GetDefinitions().GetAdditionalProperties() {
				found = found || strings.HasSuffix(d.GetName(), "metadata.v1alpha1.CatalogMetadata")
			}
			g.Expect(found).To(BeTrue(), "no CatalogMetadata definition in kube-apiserver's /openapi/v2")
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	})

	It("denies a user whom RBAC does not allow to read catalog metadata", func(ctx SpecContext) {
		cfg := rest.CopyConfig(env.cfg)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "e2e-nobody", Groups: []string{"system:authenticated"}}
		nobody, err := dynamic.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		_, err = nobody.Resource(catalogMetadataGVR).List(ctx, metav1.ListOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
	})

	It("sends watch events when the catalog's image changes, and removes everything when the Catalog is deleted", func(ctx SpecContext) {
		l, err := metadata.List(ctx, metav1.ListOptions{LabelSelector: "catalog=" + catalogName})
		Expect(err).NotTo(HaveOccurred())
		w, err := metadata.Watch(ctx, metav1.ListOptions{LabelSelector: "catalog=" + catalogName + ",schema=olm.bundle", ResourceVersion: l.GetResourceVersion()})
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()

		patch := fmt.Sprintf(`{"spec":{"source":{"image":{"ref":%q}}}}`, refV2)
		_, err = dc.Resource(catalogGVR).Patch(ctx, catalogName, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(w.ResultChan()).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Receive(
			Satisfy(func(ev watch.Event) bool {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					return false
				}
				n, _, _ := unstructured.NestedString(u.Object, "spec", "name")
				return ev.Type == watch.Added && n == "hello-operator.v1.3.0"
			})))

		Expect(dc.Resource(catalogGVR).Delete(ctx, catalogName, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(g Gomega) {
			l, err := metadata.List(ctx, metav1.ListOptions{LabelSelector: "catalog=" + catalogName})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(l.Items).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	})
})
