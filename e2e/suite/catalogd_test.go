package suite

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

// catalogdNamespace is where catalogd reads the ConfigMaps of ConfigMaps sources.
const catalogdNamespace = "olmv1-system"

var catalogGVR = schema.GroupVersionResource{Group: "catalogd.operatorframework.io", Version: "v1alpha1", Resource: "catalogs"}

// catalogdHTTPAddr is where the catalogd process of this suite serves content (HTTPS, self-signed).
var catalogdHTTPAddr string

func init() {
	catalogdHTTPAddr = freePortOutsideEphemeralRange()
	dir, err := os.MkdirTemp("", "olmv1-e2e-catalogd-")
	if err != nil {
		panic(err)
	}
	controllerArgs["catalogd"] = append(controllerArgs["catalogd"],
		"--http-bind-address="+catalogdHTTPAddr,
		"--storage-dir="+filepath.Join(dir, "storage"),
		"--cache-dir="+filepath.Join(dir, "cache"),
		"--namespace="+catalogdNamespace,
	)
}

// The seed's example, verbatim apart from the apiVersion.
const seedCatalog = `
apiVersion: catalogd.operatorframework.io/v1alpha1
kind: Catalog
metadata:
  name: my-catalog
spec:
  source:
    type: ConfigMaps
    configMaps:
    - configMap:
        name: my-catalog-content
      path: configs
`

var _ = Describe("catalogd", Label("catalogd"), func() {
	var (
		catalogs dynamic.NamespaceableResourceInterface
		c        client.Client
	)

	BeforeEach(func(ctx SpecContext) {
		dc, err := dynamic.NewForConfig(env.cfg)
		Expect(err).NotTo(HaveOccurred())
		catalogs = dc.Resource(catalogGVR)
		c = newClient(env.cfg)
		_, err = env.clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: catalogdNamespace}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	})

	createCatalog := func(ctx context.Context, obj *unstructured.Unstructured) {
		_, err := catalogs.Create(ctx, obj, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			err := catalogs.Delete(ctx, obj.GetName(), metav1.DeleteOptions{})
			if apierrors.IsNotFound(err) {
				return
			}
			Expect(err).NotTo(HaveOccurred())
			Eventually(func() bool {
				_, err := catalogs.Get(ctx, obj.GetName(), metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue(), "catalogd removes its finalizer")
		})
	}

	imageCatalog := func(name, ref string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "catalogd.operatorframework.io/v1alpha1", "kind": "Catalog",
			"metadata": map[string]any{"name": name},
			"spec":     map[string]any{"source": map[string]any{"type": "Image", "image": map[string]any{"ref": ref}}},
		}}
	}

	It("unpacks the seed's ConfigMap catalog and serves its package, channel and bundle", Label("seed-configmap-source"), func(ctx SpecContext) {
		content, err := os.ReadFile(filepath.Join(env.repoRoot, "e2e", "testdata", "catalogs", "demo", "catalog.yaml"))
		Expect(err).NotTo(HaveOccurred())
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "my-catalog-content", Namespace: catalogdNamespace},
			Data:       map[string]string{"catalog.yaml": string(content)},
		}
		_, err = env.clientset.CoreV1().ConfigMaps(catalogdNamespace).Create(ctx, cm, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = env.clientset.CoreV1().ConfigMaps(catalogdNamespace).Delete(ctx, cm.Name, metav1.DeleteOptions{})
		})

		obj := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(seedCatalog), &obj.Object)).To(Succeed())
		createCatalog(ctx, obj)

		got := waitCondition(ctx, c, catalogNamed("my-catalog"), "Serving", "True", 2*time.Minute, withReason("Serving"))
		Expect(findCondition(got, "Unpacked")).To(HaveKeyWithValue("status", "True"))
		counts, _, _ := unstructured.NestedMap(got.Object, "status", "counts")
		Expect(counts).To(Equal(map[string]any{"packages": int64(1), "channels": int64(2), "bundles": int64(3)}))
		hash, _, _ := unstructured.NestedString(got.Object, "status", "contentHash")
		Expect(hash).To(HavePrefix("sha256:"))
		resolved, _, _ := unstructured.NestedSlice(got.Object, "status", "resolvedSource", "configMaps")
		Expect(resolved).To(HaveLen(1))

		contentURL, _, _ := unstructured.NestedString(got.Object, "status", "contentURL")
		Expect(contentURL).To(Equal("https://" + catalogdHTTPAddr + "/catalogs/my-catalog/all.json"))
		all := httpsGet(ctx, contentURL)
		Expect(sha256Hex(all)).To(Equal(hash), "the content hash is the sha256 of all.json")
		for _, want := range []string{`"schema":"olm.package"`, `"schema":"olm.channel"`, `"name":"hello-operator.v1.2.0"`} {
			Expect(string(all)).To(ContainSubstring(want))
		}

		base := "https://" + catalogdHTTPAddr + "/catalogs/my-catalog/api/v1/metas"
		Expect(strings.Count(string(httpsGet(ctx, base+"?schema=olm.bundle&package=hello-operator")), "\n")).To(Equal(3))
		Expect(string(httpsGet(ctx, base+"?schema=olm.channel&name=stable"))).To(ContainSubstring(`"name":"stable","package":"hello-operator"`))
		Expect(string(httpsGet(ctx, base+"?schema=olm.package"))).To(ContainSubstring(`"defaultChannel":"stable"`))
	})

	It("reports an image that does not exist in the registry", Label("seed-failure-reporting"), func(ctx SpecContext) {
		ref := env.registry.Addr + "/catalogs/does-not-exist:v1"
		createCatalog(ctx, imageCatalog("missing-image", ref))
		got := waitCondition(ctx, c, catalogNamed("missing-image"), "Unpacked", "False", 2*time.Minute, withReason("UnpackFailed"))
		msg := findCondition(got, "Unpacked")["message"].(string)
		Expect(msg).To(ContainSubstring("does-not-exist"), "the message names the image")
		fmt.Fprintf(GinkgoWriter, "Unpacked message: %s\n", msg)
		waitCondition(ctx, c, catalogNamed("missing-image"), "Serving", "False", 2*time.Minute, withReason("NotServing"))
		code, _ := httpsStatus(ctx, "https://"+catalogdHTTPAddr+"/catalogs/missing-image/all.json")
		Expect(code).To(Equal(http.StatusNotFound))
	})

	It("gives the same content the same hash: index 0.1.0 → 0.2.0 → 0.1.0 is hash A, B, A", Label("seed-hash"), func(ctx SpecContext) {
		refs := map[string]string{}
		for _, v := range []string{"0.1.0", "0.2.0"} {
			img, err := imagebuild.CatalogImage(filepath.Join(env.repoRoot, "e2e", "testdata", "catalogs", "seed-hash-"+v))
			Expect(err).NotTo(HaveOccurred())
			ref := env.registry.Addr + "/catalogs/hash-index:" + v
			_, err = imagebuild.Push(ctx, img, ref, imagebuild.WithInsecure())
			Expect(err).NotTo(HaveOccurred())
			refs[v] = ref
		}
		const name = "hash-index"
		createCatalog(ctx, imageCatalog(name, refs["0.1.0"]))
		hashes := []string{}
		for i, v := range []string{"0.1.0", "0.2.0", "0.1.0"} {
			if i > 0 {
				patch := fmt.Sprintf(`{"spec":{"source":{"image":{"ref":%q}}}}`, refs[v])
				_, err := catalogs.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
				Expect(err).NotTo(HaveOccurred())
			}
			var got *unstructured.Unstructured
			Eventually(func(g Gomega) {
				got = waitCondition(ctx, c, catalogNamed(name), "Serving", "True", 2*time.Minute, withReason("Serving"))
				served, _, _ := unstructured.NestedInt64(got.Object, "status", "servedGeneration")
				g.Expect(served).To(Equal(got.GetGeneration()))
				resolved, _, _ := unstructured.NestedString(got.Object, "status", "resolvedSource", "image", "ref")
				g.Expect(resolved).To(ContainSubstring("@sha256:"))
				g.Expect(resolved).To(HavePrefix(env.registry.Addr + "/catalogs/hash-index"))
			}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
			hash, _, _ := unstructured.NestedString(got.Object, "status", "contentHash")
			hashes = append(hashes, hash)
			fmt.Fprintf(GinkgoWriter, "index %s: %s\n", v, hash)
		}
		Expect(hashes[0]).NotTo(Equal(hashes[1]))
		Expect(hashes[2]).To(Equal(hashes[0]), "A/B/A")
	})

	It("serves five copies of community-v4.20 with counts matching the files, and reports catalogd's RSS", Label("realdata", "slow"), func(ctx SpecContext) {
		root := os.Getenv("OLMV1_TESTDATA")
		if root == "" {
			root = filepath.Join(env.repoRoot, "..", "shared", "testdata")
		}
		dir := filepath.Join(root, "catalogs", "community-v4.20")
		if _, err := os.Stat(dir); err != nil {
			Skip(fmt.Sprintf("real test data %s is absent (set OLMV1_TESTDATA): %v", dir, err))
		}
		img, err := imagebuild.CatalogImage(dir)
		Expect(err).NotTo(HaveOccurred())
		ref := env.registry.Addr + "/catalogs/community:v4.20"
		_, err = imagebuild.Push(ctx, img, ref, imagebuild.WithInsecure())
		Expect(err).NotTo(HaveOccurred())
		for i := range 5 {
			createCatalog(ctx, imageCatalog(fmt.Sprintf("community-%d", i), ref))
		}
		var hash string
		for i := range 5 {
			got := waitCondition(ctx, c, catalogNamed(fmt.Sprintf("community-%d", i)), "Serving", "True", 2*time.Minute, withReason("Serving"))
			counts, _, _ := unstructured.NestedMap(got.Object, "status", "counts")
			Expect(counts).To(Equal(map[string]any{"packages": int64(37), "channels": int64(85), "bundles": int64(803)}))
			h, _, _ := unstructured.NestedString(got.Object, "status", "contentHash")
			if i > 0 {
				Expect(h).To(Equal(hash), "same content, same hash")
			}
			hash = h
		}
		for _, c := range env.controllers {
			if c.Name != "catalogd" {
				continue
			}
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.PID))
			if err != nil {
				Skip("cannot read catalogd's RSS: " + err.Error())
			}
			for _, line := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(line, "VmRSS:") || strings.HasPrefix(line, "VmHWM:") {
					AddReportEntry("catalogd "+line, line)
					fmt.Fprintf(GinkgoWriter, "catalogd serving 5 x community-v4.20: %s\n", line)
				}
			}
		}
	})
})

// freePortOutsideEphemeralRange picks a free 127.0.0.1 port below Linux's ephemeral range
// (32768-60999), so that no port the suite later asks the kernel for (port 0) can be the same one.
func freePortOutsideEphemeralRange() string {
	start := 20000 + os.Getpid()%10000
	for i := 0; i < 10000; i++ {
		addr := fmt.Sprintf("127.0.0.1:%d", 20000+(start-20000+i)%10000)
		l, err := net.Listen("tcp", addr)
		if err == nil {
			_ = l.Close()
			return addr
		}
	}
	panic("no free port between 20000 and 29999 for catalogd's content endpoint")
}

var catalogdHTTP = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
	// catalogd serves a generated self-signed certificate in this set-up.
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec
}}

func httpsStatus(ctx context.Context, url string) (int, []byte) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	Expect(err).NotTo(HaveOccurred())
	resp, err := catalogdHTTP.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, b
}

func httpsGet(ctx context.Context, url string) []byte {
	code, b := httpsStatus(ctx, url)
	Expect(code).To(Equal(http.StatusOK), "GET %s: %s", url, b)
	return b
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}
