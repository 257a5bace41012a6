package suite

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// The operator-controller specs (Describe "operator-controller") are split by feature:
// operator_upgrade_test.go, operator_dependencies_test.go, operator_install_test.go and
// operator_ownership_test.go. This file holds what they share.

var (
	operatorGVR = schema.GroupVersionResource{Group: "operators.operatorframework.io", Version: "v1alpha1", Resource: "operators"}
	crdGVR      = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// operatorClients are the clients of the operator-controller specs: a dynamic one and a
// controller-runtime one (newClient).
func operatorClients() (dynamic.Interface, client.Client) {
	dc, err := dynamic.NewForConfig(env.cfg)
	Expect(err).NotTo(HaveOccurred())
	return dc, newClient(env.cfg)
}

// waitBundleDeploymentRef waits until the Operator's BundleDeployment references ref.
func waitBundleDeploymentRef(ctx context.Context, c client.Client, name, ref string) *rukpakv1alpha1.BundleDeployment {
	bd := &rukpakv1alpha1.BundleDeployment{}
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKey{Name: name}, bd)).To(Succeed())
		g.Expect(bd.Spec.Source.Image).NotTo(BeNil())
		g.Expect(bd.Spec.Source.Image.Ref).To(Equal(ref))
	}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(250*time.Millisecond).Should(Succeed(), func() string {
		op := operatorNamed(name)
		if err := c.Get(ctx, client.ObjectKeyFromObject(op), op); err != nil {
			return err.Error()
		}
		return fmt.Sprintf("Operator status: %v", op.Object["status"])
	})
	return bd
}

// createServingCatalog creates a Catalog on an image and waits until it serves it.
func createServingCatalog(ctx context.Context, c client.Client, name, ref string) {
	Expect(c.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "catalogd.operatorframework.io/v1alpha1", "kind": "Catalog",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"source": map[string]any{"type": "Image", "image": map[string]any{"ref": ref}}},
	}})).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, catalogNamed(name)) })
	waitCondition(ctx, c, catalogNamed(name), "Serving", "True", 2*time.Minute, anyGeneration())
}

// createOperator creates an Operator with spec and deletes it when the spec ends, waiting until
// its BundleDeployment is gone.
func createOperator(ctx context.Context, c client.Client, name string, spec map[string]any) {
	Expect(c.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operators.operatorframework.io/v1alpha1", "kind": "Operator",
		"metadata": map[string]any{"name": name}, "spec": spec,
	}})).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		_ = c.Delete(ctx, operatorNamed(name))
		Eventually(func() bool {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Name: name}, &rukpakv1alpha1.BundleDeployment{}))
		}).WithContext(ctx).WithTimeout(2*time.Minute).Should(BeTrue(), "BundleDeployment %s is removed with its Operator", name)
	})
}

// waitBundleDeploymentPolicies waits until the Operator's BundleDeployment states the policies.
func waitBundleDeploymentPolicies(ctx context.Context, c client.Client, name, collision, deletion string) {
	bd := &rukpakv1alpha1.BundleDeployment{}
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKey{Name: name}, bd)).To(Succeed())
		g.Expect(bd.Spec.CollisionPolicy).To(BeEquivalentTo(collision))
		g.Expect(bd.Spec.DeletionPolicy).To(BeEquivalentTo(deletion))
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// patchOperator applies a JSON merge patch to the Operator.
func patchOperator(ctx context.Context, c client.Client, name, patch string) {
	Expect(c.Patch(ctx, operatorNamed(name), client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}
