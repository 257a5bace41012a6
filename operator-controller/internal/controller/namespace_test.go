package controller

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

func TestEnsureNamespaceIsSkippedWhileInstalled(t *testing.T) {
	reader := &countingReader{}
	r := &OperatorReconciler{APIReader: reader}
	op := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "op"}}
	installed := &rukpakv1alpha1.BundleDeployment{Spec: rukpakv1alpha1.BundleDeploymentSpec{InstallNamespace: "ns",
		DeletionPolicy: rukpakv1alpha1.DeletionPolicyDelete}}
	installed.Status.Conditions = []metav1.Condition{{Type: rukpakv1alpha1.TypeInstalled, Status: metav1.ConditionTrue}}

	if err := r.ensureNamespaceUnlessInstalled(t.Context(), op, installed, "ns"); err != nil || reader.gets != 0 {
		t.Fatalf("an installed BundleDeployment in the namespace: err %v, %d API reads; want none", err, reader.gets)
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
		reader.gets = 0
		if err := r.ensureNamespaceUnlessInstalled(t.Context(), op, bd, ns); !errors.Is(err, errNotHere) || reader.gets != 1 {
			t.Errorf("%s: err %v, %d API reads; want the namespace read", name, err, reader.gets)
		}
	}
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
