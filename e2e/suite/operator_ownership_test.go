package suite

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// The operator-controller spec of ownership: collisionPolicy and deletionPolicy on objects OLM did not
// install.
var _ = Describe("operator-controller", Label("operator-controller"), func() {
	var (
		dc dynamic.Interface
		c  client.Client
	)

	BeforeEach(func() {
		dc, c = operatorClients()
	})

	It("never takes over an object it did not install; IfNoController adopts it; Orphan leaves it and its namespace in place", Label("ownership"), func(ctx SpecContext) {
		const (
			pkg, opName, installNS = "ownership-operator", "ownership-operator", "ownership-e2e"
			// depName is the Deployment of the example-operator bundle; person is the field manager of
			// what the test creates by hand.
			depName, person = "example-operator", "a-person"
			ownerNameLabel  = "core.rukpak.io/owner-name"
		)
		img := pushBundleAs(ctx, "0.1.0", "ownership-operator:0.1.0")
		createServingCatalog(ctx, c, "ownership-catalog", newFixtureCatalog().SingleBundlePackage(pkg, "0.1.0", img).Push(ctx, "ownership-index", "v1"))

		By("pre-creating the install namespace, marked as created by OLM for an earlier Operator (so that the new Operator " +
			"becomes one of its owners, and the garbage collector would delete it with that Operator), and in it the bundle's " +
			"Deployment with the user's own labels, annotation and image")
		namespaces := env.clientset.CoreV1().Namespaces()
		_, err := namespaces.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: installNS, Labels: map[string]string{
			"operators.operatorframework.io/owner-kind": "Operator", "operators.operatorframework.io/owner-name": "an-earlier-operator",
		}}}, metav1.CreateOptions{FieldManager: person})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = namespaces.Delete(ctx, installNS, metav1.DeleteOptions{})
			Eventually(func() bool {
				_, err := namespaces.Get(ctx, installNS, metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			}).WithContext(ctx).WithTimeout(2*time.Minute).Should(BeTrue(), "namespace %s is removed", installNS)
		})
		deployments := env.clientset.AppsV1().Deployments(installNS)
		selector := map[string]string{"app": "example-operator"} // the bundle's: a selector cannot change
		mine, err := deployments.Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: depName, Labels: map[string]string{"team": "payments"},
				Annotations: map[string]string{"note": "installed by hand"}},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: selector},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: selector},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "registry.example.test/handmade:v1"}}},
				},
			},
		}, metav1.CreateOptions{FieldManager: person})
		Expect(err).NotTo(HaveOccurred())

		By("an Operator with the default collisionPolicy (Prevent) reports ObjectConflict naming the Deployment and leaves it alone")
		createOperator(ctx, c, opName, map[string]any{"packageName": pkg, "installNamespace": installNS})
		conflicted := waitCondition(ctx, c, operatorNamed(opName), "Installed", "False", 2*time.Minute, withReason("ObjectConflict"))
		Expect(conditionMessage(conflicted, "Installed")).To(And(ContainSubstring("Deployment"), ContainSubstring(installNS+"/"+depName),
			ContainSubstring("not managed by OLM")))
		got, err := deployments.Get(ctx, depName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		// Not the resourceVersion: the Deployment controller writes status and the revision annotation.
		Expect(got.UID).To(Equal(mine.UID))
		Expect(got.Generation).To(Equal(mine.Generation), "the spec was not changed")
		Expect(got.Labels).To(Equal(mine.Labels), "no rukpak labels")
		Expect(got.Annotations).To(HaveKeyWithValue("note", "installed by hand"))
		Expect(got.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.test/handmade:v1"))
		for _, mf := range got.ManagedFields {
			Expect(mf.Manager).To(BeElementOf(person, "kube-controller-manager"), "nobody else wrote the Deployment: %+v", mf)
		}

		By("collisionPolicy IfNoController adopts the Deployment (no controller owns it): Installed, and it carries rukpak's owner label")
		patchOperator(ctx, c, opName, `{"spec":{"collisionPolicy":"IfNoController"}}`)
		waitBundleDeploymentPolicies(ctx, c, opName, "IfNoController", "Delete")
		waitCondition(ctx, c, operatorNamed(opName), "Installed", "True", 2*time.Minute)
		got, err = deployments.Get(ctx, depName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.UID).To(Equal(mine.UID), "adopted, not re-created")
		Expect(got.Labels).To(HaveKeyWithValue(ownerNameLabel, opName))
		Expect(got.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.test/example-operator:v0.1.0"))
		ns, err := namespaces.Get(ctx, installNS, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(ns.OwnerReferences).To(ContainElement(HaveField("Name", opName)), "the Operator owns the namespace")

		By("deletionPolicy Orphan: operator-controller releases the namespace, then passes Orphan to the BundleDeployment")
		patchOperator(ctx, c, opName, `{"spec":{"deletionPolicy":"Orphan"}}`)
		waitBundleDeploymentPolicies(ctx, c, opName, "IfNoController", "Orphan")
		ns, err = namespaces.Get(ctx, installNS, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(ns.OwnerReferences).To(BeEmpty(), "released before the BundleDeployment said Orphan")

		By("deleting the Operator: its BundleDeployment goes, the Deployment and the namespace stay, without rukpak's owner label")
		Expect(dc.Resource(operatorGVR).Delete(ctx, opName, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Name: opName}, &rukpakv1alpha1.BundleDeployment{}))
		}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(250*time.Millisecond).Should(BeTrue(), "BundleDeployment %s is removed", opName)
		got, err = deployments.Get(ctx, depName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.UID).To(Equal(mine.UID))
		Expect(got.DeletionTimestamp).To(BeNil())
		Expect(got.Labels).NotTo(HaveKey(ownerNameLabel))
		Expect(got.Labels).NotTo(HaveKey("core.rukpak.io/owner-kind"))
		// The garbage collector acts on the Operator's deletion asynchronously: give it time to act.
		Consistently(func(g Gomega) {
			ns, err := namespaces.Get(ctx, installNS, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ns.DeletionTimestamp).To(BeNil(), "namespace %s is being deleted", installNS)
			dep, err := deployments.Get(ctx, depName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(dep.DeletionTimestamp).To(BeNil())
		}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	})
})
