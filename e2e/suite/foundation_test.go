package suite

import (
	"archive/tar"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

var _ = Describe("Foundation", Label("foundation"), func() {
	It("establishes the Catalog, BundleDeployment and Operator CRDs", func(ctx SpecContext) {
		client, err := apiextensionsclient.NewForConfig(env.cfg)
		Expect(err).NotTo(HaveOccurred())
		for _, crd := range []string{
			"catalogs.catalogd.operatorframework.io",
			"bundledeployments.core.rukpak.io",
			"operators.operators.operatorframework.io",
		} {
			got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred(), crd)
			Expect(got.Spec.Scope).To(Equal(apiextensionsv1.ClusterScoped), crd)
			Expect(got.Status.Conditions).To(ContainElement(And(
				HaveField("Type", apiextensionsv1.Established),
				HaveField("Status", apiextensionsv1.ConditionTrue),
			)), crd)
		}
	})

	It("runs the three controllers as separate, ready processes", func() {
		Expect(env.controllers).To(HaveLen(3))
		pids := map[int]string{}
		for _, c := range env.controllers {
			Expect(c.Exited()).To(BeFalse(), c.Name)
			Expect(pids).NotTo(HaveKey(c.PID), "each controller is its own process")
			pids[c.PID] = c.Name
			resp, err := http.Get(c.HealthURL)
			Expect(err).NotTo(HaveOccurred())
			resp.Body.Close()
			Expect(resp.StatusCode).To(Equal(http.StatusOK), c.Name)
		}
	})

	It("serves each controller's metrics over HTTPS only to authorized callers", func(ctx SpecContext) {
		token := metricsReaderToken(ctx)
		insecure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			// The controllers serve a self-signed certificate in this set-up; the point here is authn/authz.
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec
		}}
		for _, c := range env.controllers {
			url := "https://" + c.MetricsAddr + "/metrics"
			// The metrics server starts beside the probes; give it a moment to listen.
			Eventually(func(g Gomega) {
				resp, err := insecure.Get(url)
				g.Expect(err).NotTo(HaveOccurred(), c.Name)
				resp.Body.Close()
				g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized), "%s without a token", c.Name)
			}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

			// RBAC reaches the authorizer through an informer: allow it a moment to see the new binding.
			Eventually(func(g Gomega) {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				g.Expect(err).NotTo(HaveOccurred())
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := insecure.Do(req)
				g.Expect(err).NotTo(HaveOccurred(), c.Name)
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "%s with an authorized token: %s", c.Name, body)
				g.Expect(string(body)).To(ContainSubstring("controller_runtime_"), c.Name)
			}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
		}
	})

	It("makes a Deployment Available with pods on kwok nodes", func(ctx SpecContext) {
		ns := createNamespace(ctx, "e2e-deploy-")
		labels := map[string]string{"app": "hello"}
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: ns},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						Containers: []corev1.Container{{Name: "hello", Image: "registry.invalid/hello:1"}},
						// On kind there are no kwok nodes and the toleration is harmless.
						Tolerations: []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
					},
				},
			},
		}
		_, err := env.clientset.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			got, err := env.clientset.AppsV1().Deployments(ns).Get(ctx, "hello", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status.Conditions).To(ContainElement(And(
				HaveField("Type", appsv1.DeploymentAvailable),
				HaveField("Status", corev1.ConditionTrue),
			)))
			g.Expect(got.Status.AvailableReplicas).To(BeEquivalentTo(2))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

		if env.ownCluster != nil {
			pods, err := env.clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=hello"})
			Expect(err).NotTo(HaveOccurred())
			Expect(pods.Items).To(HaveLen(2))
			for _, p := range pods.Items {
				node, err := env.clientset.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
				Expect(err).NotTo(HaveOccurred())
				Expect(node.Annotations).To(HaveKeyWithValue("kwok.x-k8s.io/node", "fake"), "pod %s runs on a kwok node", p.Name)
				Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
			}
		}
	})

	It("pushes an image built in Go from testdata to the local registry and pulls it back", func(ctx SpecContext) {
		img, err := imagebuild.CatalogImage(filepath.Join(env.repoRoot, "e2e", "testdata", "catalogs", "demo"))
		Expect(err).NotTo(HaveOccurred())
		digest, err := imagebuild.Push(ctx, img, env.registry.Addr+"/catalogs/demo:v1", imagebuild.WithInsecure())
		Expect(err).NotTo(HaveOccurred())
		want, err := img.Digest()
		Expect(err).NotTo(HaveOccurred())
		Expect(digest.DigestStr()).To(Equal(want.String()))

		ref, err := name.ParseReference(env.registry.Addr+"/catalogs/demo:v1", name.Insecure)
		Expect(err).NotTo(HaveOccurred())
		pulled, err := remote.Image(ref, remote.WithContext(ctx))
		Expect(err).NotTo(HaveOccurred())
		got, err := pulled.Digest()
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal(want), "the tag resolves to the pushed digest")
		files := imageFiles(pulled)
		Expect(files).To(HaveKey("configs/catalog.yaml"))
		Expect(files["configs/catalog.yaml"]).To(ContainSubstring("name: hello-operator"))
	})
})

// imageFiles flattens an image and returns its regular files and their content.
func imageFiles(img v1.Image) map[string]string {
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		Expect(err).NotTo(HaveOccurred())
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			Expect(err).NotTo(HaveOccurred())
			files[h.Name] = string(b)
		}
	}
}

// metricsReaderToken returns a ServiceAccount token that RBAC allows to GET /metrics.
func metricsReaderToken(ctx context.Context) string {
	ns := createNamespace(ctx, "e2e-metrics-")
	sa, err := env.clientset.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	role, err := env.clientset.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-metrics-reader-"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	binding, err := env.clientset.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-metrics-reader-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		_ = env.clientset.RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})
		_ = env.clientset.RbacV1().ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{})
	})
	tr, err := env.clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}
