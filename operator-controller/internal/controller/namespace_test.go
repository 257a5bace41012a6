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
	installed := &rukpakv1alpha1.BundleDeployment{Spec: rukpakv1alpha1.BundleDeploymentSpec{InstallNamespace: "ns"}}
	installed.Status.Conditions = []metav1.Condition{{Type: rukpakv1alpha1.TypeInstalled, Status: metav1.ConditionTrue}}

	if err := r.ensureNamespaceUnlessInstalled(t.Context(), op, installed, "ns"); err != nil || reader.gets != 0 {
		t.Fatalf("an installed BundleDeployment in the namespace: err %v, %d API reads; want none", err, reader.gets)
	}
	for name, bd := range map[string]*rukpakv1alpha1.BundleDeployment{
		"no BundleDeployment yet": nil,
		"another namespace":       installed,
		"not installed":           {Spec: rukpakv1alpha1.BundleDeploymentSpec{InstallNamespace: "ns"}},
	} {
		ns := "ns"
		if name == "another namespace" {
			ns = "other"
		}
		reader.gets = 0
		if err := r.ensureNamespaceUnlessInstalled(t.Context(), op, bd, ns); !errors.Is(err, errNotHere) || reader.gets != 1 {
			t.Errorf("%s: err %v, %d API reads; want the namespace read", name, err, reader.gets)
		}
	}
}
