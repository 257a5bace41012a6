package controller

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// countingReader counts Gets and fails them.
type countingReader struct{ gets int }

var errNotHere = errors.New("the API server was asked")

func (r *countingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	r.gets++
	return errNotHere
}

func (r *countingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errNotHere
}

// refusingCreates is a client whose Creates are counted and fail with err (nothing else is called).
type refusingCreates struct {
	client.Client
	creates int
	err     error
}

func (c *refusingCreates) Create(context.Context, client.Object, ...client.CreateOption) error {
	c.creates++
	return c.err
}

func TestEnsureNamespaceIsSkippedWhileInstalled(t *testing.T) {
	reader := &countingReader{}
	creates := &refusingCreates{err: errNotHere}
	r := &OperatorReconciler{APIReader: reader, Client: creates}
	op := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "op"}}
	installed := &rukpakv1alpha1.BundleDeployment{Spec: rukpakv1alpha1.BundleDeploymentSpec{InstallNamespace: "ns",
		DeletionPolicy: rukpakv1alpha1.DeletionPolicyDelete}}
	installed.Status.Conditions = []metav1.Condition{{Type: rukpakv1alpha1.TypeInstalled, Status: metav1.ConditionTrue}}

	if err := r.ensureNamespaceUnlessInstalled(t.Context(), op, installed, "ns"); err != nil || reader.gets+creates.creates != 0 {
		t.Fatalf("an installed BundleDeployment in the namespace: err %v, %d API requests; want none", err, reader.gets+creates.creates)
	}
	orphan := op.DeepCopy()
	orphan.Spec.DeletionPolicy = rukpakv1alpha1.DeletionPolicyOrphan
	for name, bd := range map[string]*rukpakv1alpha1.BundleDeployment{
		"no BundleDeployment yet": nil,
		"another namespace":       installed,
		"not installed":           {Spec: rukpakv1alpha1.BundleDeploymentSpec{InstallNamespace: "ns", DeletionPolicy: rukpakv1alpha1.DeletionPolicyDelete}},
		"deletionPolicy changed":  installed,
	} {
		ns, op := "ns", op
		switch name {
		case "another namespace":
			ns = "other"
		case "deletionPolicy changed":
			op = orphan // the namespace must be released before the BundleDeployment says Orphan
		}
		reader.gets, creates.creates = 0, 0
		if err := r.ensureNamespaceUnlessInstalled(t.Context(), op, bd, ns); !errors.Is(err, errNotHere) || creates.creates != 1 || reader.gets != 0 {
			t.Errorf("%s: err %v, %d creates and %d reads; want the namespace created (and the failure returned)", name, err, creates.creates, reader.gets)
		}
	}
}

// A new install namespace costs one request, the create; one that exists is read after the create is
// refused, and left alone when OLM did not make it.
func TestEnsureNamespaceCreatesFirst(t *testing.T) {
	op := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "op", UID: "uid-op"}}
	creates := &refusingCreates{}
	reader := &countingReader{}
	r := &OperatorReconciler{APIReader: reader, Client: creates}
	if err := r.ensureNamespace(t.Context(), op, "ns"); err != nil || creates.creates != 1 || reader.gets != 0 {
		t.Fatalf("a new namespace: err %v, %d creates, %d reads; want one create and no read", err, creates.creates, reader.gets)
	}

	existing := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"team": "a"}}}
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(existing).Build()
	r = &OperatorReconciler{APIReader: c, Client: c}
	if err := r.ensureNamespace(t.Context(), op, "ns"); err != nil {
		t.Fatalf("a namespace that existed: %v", err)
	}
	got := &corev1.Namespace{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: "ns"}, got); err != nil {
		t.Fatal(err)
	}
	if len(got.OwnerReferences) != 0 || len(got.Labels) != 1 || got.ResourceVersion != "999" {
		t.Errorf("a namespace that existed before was changed: %+v", got.ObjectMeta)
	}

	gone := &refusingCreates{err: apierrors.NewAlreadyExists(corev1.Resource("namespaces"), "ns")}
	r = &OperatorReconciler{APIReader: fakeNotFound{}, Client: gone}
	if err := r.ensureNamespace(t.Context(), op, "ns"); err == nil || !strings.Contains(err.Error(), "retrying") {
		t.Errorf("a namespace deleted between the create and the read: err %v; want one that says it retries", err)
	}
}

// fakeNotFound answers every Get with NotFound.
type fakeNotFound struct{ client.Reader }

func (fakeNotFound) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	return apierrors.NewNotFound(corev1.Resource("namespaces"), key.Name)
}

// With deletionPolicy Orphan the install namespace is created without owner, and a namespace OLM
// created loses every Operator's ownerReference and the owner labels, keeping everything else.
func TestNamespaceUnderOrphan(t *testing.T) {
	op := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "op", UID: "uid-op"}}
	if ns := desiredNamespace(op, "ns"); len(ns.OwnerReferences) != 1 || ns.Labels[LabelOwnerName] != "op" {
		t.Errorf("deletionPolicy Delete: the namespace must be owned by the Operator: %+v", ns.ObjectMeta)
	}
	op.Spec.DeletionPolicy = rukpakv1alpha1.DeletionPolicyOrphan
	if ns := desiredNamespace(op, "ns"); len(ns.OwnerReferences) != 0 || len(ns.Labels) != 0 {
		t.Errorf("deletionPolicy Orphan: the namespace must not be owned (the garbage collector would delete it): %+v", ns.ObjectMeta)
	}

	other := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Operator", Name: "not-olm", UID: "uid-x"}
	shared := desiredNamespace(&operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "first", UID: "uid-first"}}, "ns")
	second := ownerRef(op)
	second.Controller = nil
	shared.OwnerReferences = append(shared.OwnerReferences, second, other)
	shared.Labels["team"] = "a"
	before := shared.DeepCopy()
	got := released(shared)
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0] != other {
		t.Errorf("ownerReferences after release: %+v; want only %+v", got.OwnerReferences, other)
	}
	if len(got.Labels) != 1 || got.Labels["team"] != "a" {
		t.Errorf("labels after release: %v; want only team=a", got.Labels)
	}
	if len(shared.OwnerReferences) != len(before.OwnerReferences) || len(shared.Labels) != len(before.Labels) {
		t.Error("released modified its argument")
	}
}
