package apply

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

func existingObject(labels map[string]string, controller bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("precious")
	u.SetName("app-settings")
	u.SetLabels(labels)
	if controller {
		yes := true
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "u1", Controller: &yes}})
	}
	return u
}

func TestMayTake(t *testing.T) {
	mine := OwnerLabels("me")
	other := OwnerLabels("other")
	for _, tc := range []struct {
		name       string
		labels     map[string]string
		controller bool
		// want is whether Prevent, IfNoController and None may take the object.
		want [3]bool
	}{
		{name: "owned by this BundleDeployment", labels: mine, want: [3]bool{true, true, true}},
		{name: "not managed by OLM", labels: map[string]string{"team": "payments"}, want: [3]bool{false, true, true}},
		{name: "controlled by something else", controller: true, want: [3]bool{false, false, true}},
		{name: "owned by another BundleDeployment", labels: other, want: [3]bool{false, false, true}},
		{name: "owner-name label without the owner-kind label", labels: map[string]string{OwnerNameLabel: "me"}, want: [3]bool{false, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := ownershipOf(existingObject(tc.labels, tc.controller), "me")
			for i, p := range []rukpakv1alpha1.CollisionPolicy{rukpakv1alpha1.CollisionPolicyPrevent, rukpakv1alpha1.CollisionPolicyIfNoController, rukpakv1alpha1.CollisionPolicyNone} {
				if got := mayTake(p, o); got != tc.want[i] {
					t.Errorf("%s: mayTake = %v, want %v (owner %s)", p, got, tc.want[i], o)
				}
			}
		})
	}
	if mayTake(policyOrDefault(""), ownershipOf(existingObject(nil, false), "me")) {
		t.Error("an empty collisionPolicy must mean Prevent")
	}
}

func TestConflictErrorMessages(t *testing.T) {
	key := ObjectKey{Kind: "ConfigMap", Namespace: "precious", Name: "app-settings"}
	crd := ObjectKey{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}
	for _, tc := range []struct {
		name string
		err  *ConflictError
		want []string
	}{
		{name: "not managed by OLM", err: &ConflictError{BundleDeployment: "app", Policy: rukpakv1alpha1.CollisionPolicyPrevent,
			Collisions: []Collision{{Object: key, Owner: ownershipOf(existingObject(nil, false), "app").String()}}},
			want: []string{"ConfigMap precious/app-settings already exists and is owned by nobody: it is not managed by OLM", `not by BundleDeployment "app"`,
				"left untouched (collisionPolicy Prevent)", "set spec.collisionPolicy to IfNoController to adopt it"}},
		{name: "another BundleDeployment's CRD", err: &ConflictError{BundleDeployment: "b", Policy: rukpakv1alpha1.CollisionPolicyIfNoController,
			Collisions: []Collision{{Object: crd, Owner: `BundleDeployment "a"`, OtherBundleDeployment: "a"}, {Object: key}, {Object: key}, {Object: key}, {Object: key}, {Object: key}}},
			want: []string{`CustomResourceDefinition.apiextensions.k8s.io widgets.example.com already exists and is owned by BundleDeployment "a", not by BundleDeployment "b"`,
				"5 more object(s) collide too", "...", `delete BundleDeployment "a" first`}},
		{name: "controlled object under IfNoController", err: &ConflictError{BundleDeployment: "app", Policy: rukpakv1alpha1.CollisionPolicyIfNoController,
			Collisions: []Collision{{Object: key, Owner: ownershipOf(existingObject(nil, true), "app").String()}}},
			want: []string{`owned by Deployment "web" (its controller; not managed by OLM)`, "set spec.collisionPolicy to None"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := tc.err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
		})
	}
}
