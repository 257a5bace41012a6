package controller

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operators "github.com/olmv1/olmv1/deppy/pkg/operators"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// A catalog bundle whose olm.bundle.mediatype says helm or kustomize gets that provisioner, with the
// Operator's config (values, path) passed through.
func TestDesiredBundleDeploymentHelmAndKustomize(t *testing.T) {
	for _, tc := range []struct {
		mediaType string
		cfg       *rukpakv1alpha1.BundleConfig
		want      rukpakv1alpha1.ProvisionerClassName
	}{
		{"helm", &rukpakv1alpha1.BundleConfig{Values: &apiextensionsv1.JSON{Raw: []byte(`{"replicaCount":2}`)},
			ValuesFrom: []rukpakv1alpha1.ValuesReference{{Kind: "Secret", Name: "vals"}}}, rukpakv1alpha1.ProvisionerHelm},
		{"Helm+v3", nil, rukpakv1alpha1.ProvisionerHelm},
		{"kustomize+v1", &rukpakv1alpha1.BundleConfig{Path: "overlays/prod"}, rukpakv1alpha1.ProvisionerKustomize},
	} {
		op := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "op", UID: "uid"},
			Spec: operatorsv1alpha1.OperatorSpec{PackageName: "pkg", Config: tc.cfg}}
		b := &operators.Bundle{Name: "pkg.v1", Package: "pkg", Version: "1.0.0", Image: "r/pkg:1", MediaType: tc.mediaType}
		bd, err := desiredBundleDeployment(op, b, "ns", nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.mediaType, err)
		}
		if bd.Spec.ProvisionerClassName != tc.want || bd.Spec.Source.Image.Ref != "r/pkg:1" {
			t.Errorf("%s: %+v", tc.mediaType, bd.Spec)
		}
		if tc.cfg != nil && (bd.Spec.Config == nil || bd.Spec.Config.Path != tc.cfg.Path || len(bd.Spec.Config.ValuesFrom) != len(tc.cfg.ValuesFrom)) {
			t.Errorf("%s: config not passed: %+v", tc.mediaType, bd.Spec.Config)
		}

		// watchNamespaces selects a registry+v1 install mode; the BundleDeployment API rejects it for
		// other provisioners, so the Operator gets an error that says so instead.
		op.Spec.WatchNamespaces = []string{"a"}
		if _, err := desiredBundleDeployment(op, b, "ns", nil); err == nil || !strings.Contains(err.Error(), "does not use watchNamespaces") {
			t.Errorf("%s with watchNamespaces: %v", tc.mediaType, err)
		}
	}

	// Settings of another provisioner are named in the error.
	op := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "op"}, Spec: operatorsv1alpha1.OperatorSpec{PackageName: "pkg",
		Config: &rukpakv1alpha1.BundleConfig{Path: "overlays/prod", DeploymentConfig: &rukpakv1alpha1.DeploymentConfig{}}}}
	_, err := desiredBundleDeployment(op, &operators.Bundle{Name: "pkg.v1", MediaType: "helm"}, "ns", nil)
	if err == nil || !strings.Contains(err.Error(), "core-rukpak-io-helm, which does not use config.deploymentConfig, config.path") {
		t.Errorf("helm bundle with registry and kustomize settings: %v", err)
	}
	if unused := configUnusedBy(rukpakv1alpha1.ProvisionerRegistry, &rukpakv1alpha1.BundleConfig{WatchNamespaces: []string{"a"},
		DeploymentConfig: &rukpakv1alpha1.DeploymentConfig{}}); len(unused) != 0 {
		t.Errorf("registry+v1 uses watchNamespaces and deploymentConfig: %v", unused)
	}
}

// The Operator's collisionPolicy and deletionPolicy reach the BundleDeployment, always written out
// (an Operator without them, e.g. created before they existed, gets the defaults), so that a
// BundleDeployment written before is not rewritten on every reconcile.
func TestDesiredBundleDeploymentPassesOwnershipPolicies(t *testing.T) {
	b := &operators.Bundle{Name: "pkg.v1", Package: "pkg", Version: "1.0.0", Image: "r/pkg:1"}
	for _, tc := range []struct {
		collision rukpakv1alpha1.CollisionPolicy
		deletion  rukpakv1alpha1.DeletionPolicy
		wantC     rukpakv1alpha1.CollisionPolicy
		wantD     rukpakv1alpha1.DeletionPolicy
	}{
		{"", "", rukpakv1alpha1.CollisionPolicyPrevent, rukpakv1alpha1.DeletionPolicyDelete},
		{rukpakv1alpha1.CollisionPolicyPrevent, rukpakv1alpha1.DeletionPolicyDelete, rukpakv1alpha1.CollisionPolicyPrevent, rukpakv1alpha1.DeletionPolicyDelete},
		{rukpakv1alpha1.CollisionPolicyIfNoController, rukpakv1alpha1.DeletionPolicyOrphan, rukpakv1alpha1.CollisionPolicyIfNoController, rukpakv1alpha1.DeletionPolicyOrphan},
		{rukpakv1alpha1.CollisionPolicyNone, "", rukpakv1alpha1.CollisionPolicyNone, rukpakv1alpha1.DeletionPolicyDelete},
	} {
		op := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "op", UID: "uid"},
			Spec: operatorsv1alpha1.OperatorSpec{PackageName: "pkg", CollisionPolicy: tc.collision, DeletionPolicy: tc.deletion}}
		bd, err := desiredBundleDeployment(op, b, "ns", nil)
		if err != nil {
			t.Fatal(err)
		}
		if bd.Spec.CollisionPolicy != tc.wantC || bd.Spec.DeletionPolicy != tc.wantD {
			t.Errorf("Operator %q/%q: BundleDeployment has collisionPolicy %q, deletionPolicy %q; want %q/%q",
				tc.collision, tc.deletion, bd.Spec.CollisionPolicy, bd.Spec.DeletionPolicy, tc.wantC, tc.wantD)
		}
		if have := bd.DeepCopy(); mergeBundleDeployment(have, bd) {
			t.Errorf("Operator %q/%q: merging the same BundleDeployment reported a change", tc.collision, tc.deletion)
		}
	}

	// An Operator without the fields and one with the defaults written by the API server want the
	// same BundleDeployment: no update when the CRD defaults appear.
	empty := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "op", UID: "uid"}, Spec: operatorsv1alpha1.OperatorSpec{PackageName: "pkg"}}
	defaulted := empty.DeepCopy()
	defaulted.Spec.CollisionPolicy, defaulted.Spec.DeletionPolicy = rukpakv1alpha1.CollisionPolicyPrevent, rukpakv1alpha1.DeletionPolicyDelete
	have, _ := desiredBundleDeployment(empty, b, "ns", nil)
	want, _ := desiredBundleDeployment(defaulted, b, "ns", nil)
	if mergeBundleDeployment(have, want) {
		t.Error("an empty policy and its default produced different BundleDeployments")
	}

	// Changing a policy updates the BundleDeployment.
	orphan := defaulted.DeepCopy()
	orphan.Spec.DeletionPolicy = rukpakv1alpha1.DeletionPolicyOrphan
	want, _ = desiredBundleDeployment(orphan, b, "ns", nil)
	if !mergeBundleDeployment(have, want) || have.Spec.DeletionPolicy != rukpakv1alpha1.DeletionPolicyOrphan {
		t.Errorf("deletionPolicy Orphan was not merged: %+v", have.Spec)
	}
}
